/**
 * The `fetchFn` of the service's viem clients (`rpcClient`): a JSON-RPC POST over node:http(s)
 * with keep-alive connections, answering the few fields of a `Response` viem reads (`ok`,
 * `status`, `statusText`, `headers.get`, `text()`). viem keeps everything else: ids, timeouts
 * (through `signal`), retries, error classes. Node's `fetch` (undici) builds Request, Headers,
 * Response and web streams around every call; measured against a local node with eight calls in
 * flight, this costs a fifth of its CPU per call (74 against 356 µs), and a build makes two to
 * four calls.
 */
import { Agent as HttpAgent, request as httpRequest, type IncomingMessage } from "node:http";
import { Agent as HttpsAgent, request as httpsRequest } from "node:https";

/** viem's default limit on an RPC answer's body (`maxResponseBodySize`). */
const MAX_BODY_BYTES = 10 * 1024 * 1024;
const agents = {
  http: new HttpAgent({ keepAlive: true, maxSockets: 64 }),
  https: new HttpsAgent({ keepAlive: true, maxSockets: 64 }),
};

export interface RpcResponse {
  ok: boolean;
  status: number;
  statusText: string;
  headers: { get(name: string): string | null };
  body: null;
  text(): Promise<string>;
}

interface Init {
  method?: string;
  headers?: Record<string, string>;
  body?: string;
  signal?: AbortSignal | null;
}

const urls = new Map<string, URL>();

function parsed(url: string | URL): URL {
  if (url instanceof URL) return url;
  let u = urls.get(url);
  if (!u) {
    u = new URL(url);
    if (urls.size > 1000) urls.clear();
    urls.set(url, u);
  }
  return u;
}

function answer(res: IncomingMessage, text: string): RpcResponse {
  const status = res.statusCode ?? 0;
  return {
    ok: status >= 200 && status < 300,
    status,
    statusText: res.statusMessage ?? "",
    headers: {
      get: (name) => {
        const v = res.headers[name.toLowerCase()];
        return v === undefined ? null : Array.isArray(v) ? v.join(", ") : v;
      },
    },
    body: null,
    text: async () => text,
  };
}

/** A `fetch` for JSON-RPC POSTs (viem's `http(url, { fetchFn })`). */
export function rpcFetch(url: string | URL, init: Init = {}): Promise<RpcResponse> {
  const u = parsed(url);
  const https = u.protocol === "https:";
  if (!https && u.protocol !== "http:") return Promise.reject(new Error(`unsupported RPC URL scheme ${u.protocol}`));
  const body = init.body ?? "";
  return new Promise((resolve, reject) => {
    const req = (https ? httpsRequest : httpRequest)(
      u,
      {
        method: init.method ?? "POST",
        agent: https ? agents.https : agents.http,
        headers: { ...init.headers, "content-length": Buffer.byteLength(body) },
        ...(init.signal ? { signal: init.signal } : {}),
      },
      (res) => {
        const chunks: Buffer[] = [];
        let size = 0;
        res.on("data", (c: Buffer) => {
          size += c.length;
          if (size > MAX_BODY_BYTES) {
            reject(new Error(`the RPC answered more than ${MAX_BODY_BYTES} bytes`));
            res.destroy();
            return;
          }
          chunks.push(c);
        });
        res.on("end", () => resolve(answer(res, Buffer.concat(chunks).toString("utf8"))));
        res.on("error", reject);
        res.on("aborted", () => reject(new Error("the RPC closed the connection mid-answer")));
      },
    );
    req.on("error", reject);
    req.end(body);
  });
}
