/**
 * A JSON-RPC pass-through that refuses, as a hosted provider does, an eth_getLogs spanning
 * `limit` blocks or more with error `code` ("range too wide"): -32602 by default, as Alchemy
 * answers a block range too large (viem does not retry it); -32005, a limit exceeded, as Infura
 * answers too many results (viem retries it twice first). Everything else goes to `target`.
 */
import { createServer } from "node:http";

export interface LimitedRpc {
  url: string;
  /** the eth_getLogs refused, and those answered */
  refusals: number;
  answered: number;
  close(): Promise<void>;
}

export async function limitedRpc(target: string, limit: bigint, code = -32602): Promise<LimitedRpc> {
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString();
    const body = JSON.parse(text) as { id: number; method: string; params: { fromBlock?: string; toBlock?: string }[] };
    const q = body.method === "eth_getLogs" ? body.params[0] : undefined;
    if (q?.fromBlock?.startsWith("0x") && q.toBlock?.startsWith("0x")) {
      if (BigInt(q.toBlock) - BigInt(q.fromBlock) >= limit) {
        out.refusals++;
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", id: body.id, error: { code, message: "range too wide" } }));
        return;
      }
      out.answered++;
    }
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
 * A pass-through to a node that keeps the state of its last `keep` blocks only (a full node, not
 * an archive one): an eth_call at an older block number is refused with geth's "missing trie
 * node". `refusals` counts them.
 */
export async function prunedRpc(target: string, keep: bigint): Promise<LimitedRpc> {
  const head = async () => {
    const r = await fetch(target, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] }),
    });
    return BigInt(((await r.json()) as { result: string }).result);
  };
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const text = Buffer.concat(chunks).toString();
    const body = JSON.parse(text) as { id: number; method: string; params: unknown[] };
    const block = body.method === "eth_call" ? body.params[1] : undefined;
    if (typeof block === "string" && block.startsWith("0x") && BigInt(block) < (await head()) - keep) {
      out.refusals++;
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", id: body.id, error: { code: -32000, message: "missing trie node" } }));
      return;
    }
    out.answered++;
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
