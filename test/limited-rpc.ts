/**
 * JSON-RPC pass-throughs to `target` that refuse some requests as a real node or provider does:
 * `limitedRpc`, a hosted provider's cap on eth_getLogs ranges; `prunedRpc`, a full node without
 * old state.
 */
import { createServer } from "node:http";

export interface LimitedRpc {
  url: string;
  /** the requests refused, and those of the refusable kind answered */
  refusals: number;
  answered: number;
  close(): Promise<void>;
}

interface RpcRequest {
  id: number;
  method: string;
  params: unknown[];
}

/**
 * A pass-through that answers a request with `refuse(request)`'s error when it gives one, and
 * sends the others to `target`. `counts(request)`: whether the request is of the kind that may
 * be refused (those answered are counted in `answered`).
 */
async function passThrough(
  target: string,
  refuse: (r: RpcRequest) => Promise<{ code: number; message: string } | null>,
  counts: (r: RpcRequest) => boolean,
): Promise<LimitedRpc> {
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString();
    const body = JSON.parse(text) as RpcRequest;
    const error = await refuse(body);
    if (error) {
      out.refusals++;
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", id: body.id, error }));
      return;
    }
    if (counts(body)) out.answered++;
    const r = await fetch(target, { method: "POST", headers: { "content-type": "application/json" }, body: text });
    res.writeHead(r.status, { "content-type": "application/json" });
    res.end(await r.text());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as { port: number };
  const out: LimitedRpc = {
    url: `http://127.0.0.1:${port}`,
    refusals: 0,
    answered: 0,
    close: () => new Promise<void>((resolve) => server.close(() => resolve())),
  };
  return out;
}

/**
 * Refuses, as a hosted provider does, an eth_getLogs spanning `limit` blocks or more with error
 * `code` ("range too wide"): -32602 by default, as Alchemy answers a block range too large (viem
 * does not retry it); -32005, a limit exceeded, as Infura answers too many results (viem retries
 * it twice first). `refusals` and `answered` count the eth_getLogs with a numbered range.
 */
export function limitedRpc(target: string, limit: bigint, code = -32602): Promise<LimitedRpc> {
  const range = (r: RpcRequest) => {
    const q = r.method === "eth_getLogs" ? (r.params[0] as { fromBlock?: string; toBlock?: string }) : undefined;
    return q?.fromBlock?.startsWith("0x") && q.toBlock?.startsWith("0x")
      ? { from: BigInt(q.fromBlock), to: BigInt(q.toBlock) }
      : null;
  };
  return passThrough(
    target,
    async (r) => {
      const q = range(r);
      return q && q.to - q.from >= limit ? { code, message: "range too wide" } : null;
    },
    (r) => range(r) != null,
  );
}

/**
 * A node that keeps the state of its last `keep` blocks only (a full node, not an archive one):
 * an eth_call at an older block number is refused with geth's "missing trie node".
 * `refusals` and `answered` count the eth_calls.
 */
export function prunedRpc(target: string, keep: bigint): Promise<LimitedRpc> {
  const head = async () => {
    const r = await fetch(target, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] }),
    });
    return BigInt(((await r.json()) as { result: string }).result);
  };
  return passThrough(
    target,
    async (r) => {
      const block = r.method === "eth_call" ? r.params[1] : undefined;
      const old = typeof block === "string" && block.startsWith("0x") && BigInt(block) < (await head()) - keep;
      return old ? { code: -32000, message: "missing trie node" } : null;
    },
    (r) => r.method === "eth_call",
  );
}
