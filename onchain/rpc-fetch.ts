/**
 * How the service reaches its chains' JSON-RPC nodes: POSTs through one undici `Agent` (kept
 * connections, per origin), in two forms.
 *
 * - `rpcFetch`, the `fetchFn` of the service's viem clients (`rpcClient`): it answers the few
 *   fields of a `Response` viem reads (`ok`, `status`, `statusText`, `headers.get`, `text()`), and
 *   viem keeps the rest (ids, timeouts, retries, error classes).
 * - `rpcCall`, one JSON-RPC call without viem's client around it, for the transaction builders'
 *   hot calls (their read stage's `eth_call` and their `eth_simulateV1`). viem's transport
 *   builds three `Headers`, an abort signal and a timeout race per call; measured against a
 *   local node with eight calls in flight, rpcCall costs 62 µs of CPU per call where viem over
 *   rpcFetch costs about 160 and viem over node's `fetch` about 360. Its errors are viem's
 *   classes (`RpcRequestError`, `HttpRequestError`, `TimeoutError`), so messages read the same.
 *
 * A chain given several URLs (`PONDER_RPC_URL_<id>=a,b`, `useRpcUrlLists` at start-up) is called
 * by its first: both forms then fail over, in the list's order, to the next URL when one cannot
 * be reached or answers 429 or 5xx (rpcCall: or does not answer in time), and keep calling the
 * URL that answered until it fails in turn. A JSON-RPC error is the chain's answer, not a failure.
 */
import { STATUS_CODES } from "node:http";
import { Agent, errors, request } from "undici";
import { HttpRequestError, RpcRequestError, TimeoutError } from "viem";

/** viem's default limit on an RPC answer's body (`maxResponseBodySize`). */
const MAX_BODY_BYTES = 10 * 1024 * 1024;
const agent = new Agent({ connections: 64, maxResponseSize: MAX_BODY_BYTES });
const JSON_HEADERS = { "content-type": "application/json" };

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

interface Posted {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  text: string;
}

/** A request that trying again would not mend: a URL that is not HTTP, an answer too large. */
class RpcRefusal extends Error {}

function checkUrl(url: string | URL): string | URL {
  const protocol = typeof url === "string" ? url.slice(0, url.indexOf(":") + 1) : url.protocol;
  if (protocol !== "http:" && protocol !== "https:") throw new RpcRefusal(`unsupported RPC URL scheme ${protocol}`);
  return url;
}

function tooLarge(err: unknown): unknown {
  return err instanceof errors.ResponseExceededMaxSizeError
    ? new RpcRefusal(`the RPC answered more than ${MAX_BODY_BYTES} bytes`)
    : err;
}

async function post(
  url: string | URL,
  body: string,
  opts: { headers?: Record<string, string>; signal?: AbortSignal | null; timeoutMs?: number },
): Promise<Posted> {
  try {
    const res = await request(checkUrl(url), {
      method: "POST",
      dispatcher: agent,
      headers: opts.headers ?? JSON_HEADERS,
      body,
      ...(opts.signal ? { signal: opts.signal } : {}),
      ...(opts.timeoutMs ? { headersTimeout: opts.timeoutMs, bodyTimeout: opts.timeoutMs } : {}),
    });
    return { status: res.statusCode, headers: res.headers, text: await res.body.text() };
  } catch (err) {
    throw tooLarge(err);
  }
}

/** A chain's URLs in order, and the one that answered last while it is not the first. */
interface UrlList {
  chainId: number;
  urls: readonly string[];
  preferred: string | null;
}
/** Each chain's list, by its first URL as given and as viem writes it (`new URL(u).href`). */
const lists = new Map<string, UrlList>();

/**
 * Told of each call to one of a chain's URLs (`url`: its index in the list) that failed on the
 * way (unreachable, 429 or 5xx, rpcCall's timeout), for chains given several URLs.
 */
export type RpcUrlFailureListener = (chainId: number, url: number) => void;
const listeners: RpcUrlFailureListener[] = [];
export function onRpcUrlFailure(listener: RpcUrlFailureListener): void {
  listeners.push(listener);
}

/**
 * Says in the process's log when one of a chain's URLs fails, at most once per URL every
 * `everyMs`, with how many failures the line stands for. The URL is named by its index in
 * `PONDER_RPC_URL_<id>`, never written out: it may hold a provider's key.
 */
export function logRpcUrlFailures(log: (line: string) => void, everyMs = 60_000, now = Date.now): void {
  const said = new Map<string, { at: number; since: number }>();
  onRpcUrlFailure((chainId, url) => {
    const key = `${chainId}:${url}`;
    const s = said.get(key);
    if (s && now() - s.at < everyMs) {
      s.since++;
      return;
    }
    const more = s && s.since > 0 ? ` (${s.since + 1} failures since the last line)` : "";
    log(
      `the RPC URL at index ${url} of PONDER_RPC_URL_${chainId} failed${more}; the chain's other URLs take its calls`,
    );
    said.set(key, { at: now(), since: 0 });
  });
}

/**
 * The process's chains' URL lists, chain id to URLs (`RpcUrls.urls`): calls to each first URL
 * fail over to the rest.
 */
export function useRpcUrlLists(urls: Iterable<readonly [number, readonly string[]]>): void {
  for (const [chainId, list] of urls) {
    if (list.length < 2) continue;
    const entry = { chainId, urls: list, preferred: null };
    lists.set(list[0]!, entry);
    lists.set(new URL(list[0]!).href, entry);
  }
}

/** A failure of `by`, one of `list`'s URLs. */
function urlFailed(list: UrlList | undefined, by: string): void {
  if (!list) return;
  for (const l of listeners) l(list.chainId, list.urls.indexOf(by));
}

/** The URLs to try for a call to `url`, the one that answered last first. */
function urlsFor(list: UrlList | undefined, url: string): readonly string[] {
  if (!list) return [url];
  const last = list.preferred;
  return last ? [last, ...list.urls.filter((u) => u !== last)] : list.urls;
}

function answered(list: UrlList | undefined, by: string): void {
  if (list) list.preferred = by === list.urls[0] ? null : by;
}

const RETRY_STATUS = new Set([429, 502, 503, 504]);

/** A `fetch` for JSON-RPC POSTs (viem's `http(url, { fetchFn })`). */
export async function rpcFetch(url: string | URL, init: Init = {}): Promise<RpcResponse> {
  const list = lists.get(String(url));
  const urls = urlsFor(list, String(url));
  const opts = { headers: { ...JSON_HEADERS, ...init.headers }, signal: init.signal ?? null };
  let res: Posted | undefined;
  for (const [i, u] of urls.entries()) {
    const last = i === urls.length - 1;
    try {
      res = await post(u, init.body ?? "", opts);
    } catch (err) {
      // a connection error: the next URL; an abort (viem's timeout) or a refusal ends the call
      if (init.signal?.aborted || err instanceof RpcRefusal) throw err;
      urlFailed(list, u);
      if (last) throw err;
      continue;
    }
    if (res.status === 429 || res.status >= 500) {
      urlFailed(list, u);
      if (!last) continue;
    } else answered(list, u);
    break;
  }
  const { status, headers, text } = res!;
  return {
    ok: status >= 200 && status < 300,
    status,
    statusText: STATUS_CODES[status] ?? "",
    headers: {
      get: (name) => {
        const v = headers[name.toLowerCase()];
        return v === undefined ? null : Array.isArray(v) ? v.join(", ") : v;
      },
    },
    body: null,
    text: async () => text,
  };
}

export interface RpcCallOptions {
  /** the longest wait for the answer's headers, and between parts of its body (default 15 s) */
  timeoutMs?: number;
  /** tries again after a transport error or a 429/502/503/504, this many times (default 2) */
  retries?: number;
}

let nextId = 0;
const RETRY_DELAY_MS = 150;

class Retryable extends Error {
  constructor(override readonly cause: Error) {
    super(cause.message);
  }
}

async function callOnce(url: string, method: string, params: unknown, timeoutMs: number): Promise<unknown> {
  const payload = { jsonrpc: "2.0", id: ++nextId, method, params };
  const body = JSON.stringify(payload);
  let res: Posted;
  try {
    res = await post(url, body, { timeoutMs });
  } catch (err) {
    if (err instanceof errors.HeadersTimeoutError || err instanceof errors.BodyTimeoutError) {
      throw new TimeoutError({ body: payload, url });
    }
    if (err instanceof RpcRefusal) throw err;
    const e = err as Error;
    throw new Retryable(new HttpRequestError({ body: payload, url, details: e.message, cause: e }));
  }
  let data: { result?: unknown; error?: { code: number; message: string; data?: unknown } } | undefined;
  try {
    data = JSON.parse(res.text);
  } catch {
    data = undefined;
  }
  if (data && typeof data === "object" && data.error && typeof data.error === "object") {
    throw new RpcRequestError({ body: payload, error: data.error, url });
  }
  if (res.status < 200 || res.status >= 300 || !data || typeof data !== "object") {
    const err = new HttpRequestError({ body: payload, url, status: res.status, details: res.text.slice(0, 200) });
    throw RETRY_STATUS.has(res.status) ? new Retryable(err) : err;
  }
  return data.result;
}

/** One JSON-RPC call: its `result`; a JSON-RPC error, an HTTP error or a timeout throws. */
export async function rpcCall<T>(url: string, method: string, params: unknown, opts: RpcCallOptions = {}): Promise<T> {
  const retries = opts.retries ?? 2;
  const timeoutMs = opts.timeoutMs ?? 15_000;
  const list = lists.get(url);
  const urls = urlsFor(list, url);
  for (let attempt = 0; ; attempt++) {
    let failure: unknown;
    for (const u of urls) {
      try {
        const result = (await callOnce(u, method, params, timeoutMs)) as T;
        answered(list, u);
        return result;
      } catch (err) {
        // the next URL after a failure on the way, or a node that did not answer in time
        if (!(err instanceof Retryable) && !(err instanceof TimeoutError && urls.length > 1)) throw err;
        failure = err;
        urlFailed(list, u);
      }
    }
    // every URL failed: again after a pause, unless they timed out (that wait was long enough)
    if (!(failure instanceof Retryable) || attempt >= retries) {
      throw failure instanceof Retryable ? failure.cause : failure;
    }
    await new Promise((r) => setTimeout(r, RETRY_DELAY_MS * 2 ** attempt));
  }
}
