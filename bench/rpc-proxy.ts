/**
 * A JSON-RPC pass-through in front of one chain's node, for bench:builders: it forwards every
 * request unchanged and, while recording, keeps each call (method, params) with when it was sent
 * and answered. A recording of one build is the list of RPC calls the builder made and how they
 * overlapped, which the floor replays directly with viem (`stagesOf`).
 *
 * It stands for the network between the clients and the node, on both sides of the comparison,
 * so it should cost as little as it can: it forwards with undici's `request`, not `fetch`, whose
 * answers are tracked until a full collection and made this process stall 10–17 ms in every
 * scavenge while the clients waited. With `latencyMs` it also stands for distance: each answer
 * is held that long before it is sent, as a node a round trip away (a hosted provider) would
 * answer.
 */
import { createServer, type Server } from "node:http";
import { Agent, request } from "undici";

export interface RecordedCall {
  method: string;
  params: unknown;
  start: number;
  end: number;
}

export interface RpcProxy {
  url: string;
  /** starts a new recording; `stop` returns its calls */
  record(): void;
  stop(): RecordedCall[];
  close(): Promise<void>;
}

export async function startRpcProxy(target: string, port: number, latencyMs = 0): Promise<RpcProxy> {
  let recording: RecordedCall[] | null = null;
  const agent = new Agent({ connections: 64 });
  const server: Server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const body = Buffer.concat(chunks).toString("utf8");
      const start = performance.now();
      try {
        const upstream = await request(target, {
          method: "POST",
          dispatcher: agent,
          headers: { "content-type": "application/json" },
          body,
        });
        const text = await upstream.body.text();
        if (latencyMs > 0) await new Promise((r) => setTimeout(r, latencyMs));
        const end = performance.now();
        if (recording) {
          const parsed = JSON.parse(body) as
            | { method: string; params: unknown }
            | { method: string; params: unknown }[];
          for (const p of Array.isArray(parsed) ? parsed : [parsed]) {
            recording.push({ method: p.method, params: p.params, start, end });
          }
        }
        res.writeHead(upstream.statusCode, { "content-type": "application/json" });
        res.end(text);
      } catch (err) {
        res.writeHead(502, { "content-type": "text/plain" });
        res.end(String(err));
      }
    });
  });
  await new Promise<void>((resolve, reject) => {
    server.once("error", reject);
    server.listen(port, "127.0.0.1", () => resolve());
  });
  return {
    url: `http://127.0.0.1:${port}`,
    record: () => {
      recording = [];
    },
    stop: () => {
      const out = recording ?? [];
      recording = null;
      return out;
    },
    close: async () => {
      await new Promise<void>((resolve) => server.close(() => resolve()));
      await agent.close();
    },
  };
}

/**
 * The recorded calls as stages: calls the builder had in flight together form one stage; a call
 * sent after every call of the current stage was answered starts the next one.
 */
export function stagesOf(calls: readonly RecordedCall[]): RecordedCall[][] {
  const sorted = [...calls].sort((a, b) => a.start - b.start);
  const stages: RecordedCall[][] = [];
  let current: RecordedCall[] = [];
  let lastEnd = -Infinity;
  for (const c of sorted) {
    if (current.length > 0 && c.start >= lastEnd) {
      stages.push(current);
      current = [];
      lastEnd = -Infinity;
    }
    current.push(c);
    lastEnd = Math.max(lastEnd, c.end);
  }
  if (current.length) stages.push(current);
  return stages;
}
