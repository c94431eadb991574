/**
 * rpcFetch under viem's http transport, and rpcCall on its own, against a local HTTP server
 * playing a JSON-RPC node: answers, JSON-RPC errors, HTTP errors (retried or not), a node that
 * never answers, one that answers too much, one that is not there, and connections kept between
 * calls.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { createPublicClient, HttpRequestError, http, RpcRequestError, TimeoutError } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { logRpcUrlFailures, onRpcUrlFailure, rpcCall, rpcFetch, useRpcUrlLists } from "./rpc-fetch.js";

let server: Server;
let base: string;
const sockets = new Set<unknown>();
let handle: (body: { id: number; method: string }, res: ServerResponse) => void;

beforeAll(async () => {
  server = createServer((req: IncomingMessage, res) => {
    sockets.add(req.socket);
    let text = "";
    req.on("data", (c: Buffer) => {
      text += c.toString("utf8");
    });
    req.on("end", () => handle(JSON.parse(text), res));
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  base = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const client = (timeout = 2_000) =>
  createPublicClient({ transport: http(base, { timeout, retryCount: 0, fetchFn: rpcFetch as never }) });
/** A node answering 11 MiB, over viem's (and our) 10 MiB limit. */
const elevenMiB = (_b: unknown, res: ServerResponse) => {
  res.writeHead(200, { "content-type": "application/json" });
  const chunk = "0".repeat(1 << 20);
  for (let i = 0; i < 11; i++) res.write(chunk);
  res.end();
};
const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
};

describe("rpcFetch", () => {
  it("answers a call, and keeps its connection for the next ones", async () => {
    handle = (b, res) => json(res, 200, { jsonrpc: "2.0", id: b.id, result: "0x2a" });
    sockets.clear();
    const c = client();
    for (let i = 0; i < 20; i++) expect(await c.getBlockNumber({ cacheTime: 0 })).toBe(42n);
    // kept: undici may open a second one while the first is being released
    expect(sockets.size).toBeLessThanOrEqual(2);
  });

  it("a JSON-RPC error is viem's RpcRequestError, with the node's code and message", async () => {
    handle = (b, res) =>
      json(res, 200, { jsonrpc: "2.0", id: b.id, error: { code: -32601, message: "no such method" } });
    const err = await client()
      .request({ method: "eth_nothing" as never })
      .catch((e: unknown) => e);
    expect((err as Error).message).toMatch(/no such method/);
    expect(
      (err as { walk(f: (e: unknown) => boolean): unknown }).walk((e) => e instanceof RpcRequestError),
    ).toBeTruthy();
  });

  it("an HTTP error is viem's HttpRequestError with the status", async () => {
    handle = (_b, res) => {
      res.writeHead(503, { "content-type": "text/plain" });
      res.end("overloaded");
    };
    const err = await client()
      .getBlockNumber({ cacheTime: 0 })
      .catch((e: unknown) => e);
    const http = (err as { walk(f: (e: unknown) => boolean): unknown }).walk((e) => e instanceof HttpRequestError);
    expect((http as HttpRequestError).status).toBe(503);
  });

  it("a node that never answers times out, and the request is aborted", async () => {
    let closed = false;
    handle = (_b, res) => {
      res.on("close", () => {
        closed = true;
      });
    };
    const err = await client(200)
      .getBlockNumber({ cacheTime: 0 })
      .catch((e: unknown) => e);
    expect((err as { walk(f: (e: unknown) => boolean): unknown }).walk((e) => e instanceof TimeoutError)).toBeTruthy();
    await new Promise((r) => setTimeout(r, 100));
    expect(closed).toBe(true);
  });

  it("refuses an answer over 10 MiB", async () => {
    handle = elevenMiB;
    await expect(rpcFetch(base, { body: "{}" })).rejects.toThrow(/more than 10485760 bytes/);
  });

  it("no node there: the connection error", async () => {
    await expect(rpcFetch("http://127.0.0.1:1", { body: "{}" })).rejects.toThrow(/ECONNREFUSED/);
    await expect(rpcFetch("ws://127.0.0.1:1", { body: "{}" })).rejects.toThrow(/unsupported RPC URL scheme/);
  });
});

describe("rpcCall", () => {
  const isA = (err: unknown, cls: abstract new (...a: never[]) => unknown) => err instanceof cls;

  it("answers the result, and keeps its connection for the next calls", async () => {
    const seen: { method: string; params: unknown }[] = [];
    handle = (b, res) => {
      seen.push(b as never);
      json(res, 200, { jsonrpc: "2.0", id: b.id, result: "0x2a" });
    };
    sockets.clear();
    for (let i = 0; i < 20; i++) expect(await rpcCall(base, "eth_call", [{ to: "0x01" }, "latest"])).toBe("0x2a");
    // kept: undici may open a second one while the first is being released
    expect(sockets.size).toBeLessThanOrEqual(2);
    expect(seen[0]).toMatchObject({ jsonrpc: "2.0", method: "eth_call", params: [{ to: "0x01" }, "latest"] });
    expect(new Set(seen.map((b) => (b as unknown as { id: number }).id)).size).toBe(20);
  });

  it("a JSON-RPC error is viem's RpcRequestError with the node's code and message, not retried", async () => {
    let calls = 0;
    handle = (b, res) => {
      calls++;
      json(res, 200, { jsonrpc: "2.0", id: b.id, error: { code: -32000, message: "execution reverted" } });
    };
    const err = await rpcCall(base, "eth_call", []).catch((e: unknown) => e);
    expect(isA(err, RpcRequestError)).toBe(true);
    expect((err as RpcRequestError).code).toBe(-32000);
    expect((err as Error).message).toMatch(/execution reverted/);
    expect(calls).toBe(1);
  });

  it("a 503 is tried again, and answers once the node does", async () => {
    let calls = 0;
    handle = (b, res) => {
      if (++calls < 3) {
        res.writeHead(503, { "content-type": "text/plain" });
        res.end("overloaded");
      } else json(res, 200, { jsonrpc: "2.0", id: b.id, result: "0x1" });
    };
    expect(await rpcCall(base, "eth_blockNumber", [])).toBe("0x1");
    expect(calls).toBe(3);
  });

  it("an HTTP error that persists is viem's HttpRequestError with the status; a 400 is not retried", async () => {
    let calls = 0;
    handle = (_b, res) => {
      calls++;
      res.writeHead(503, { "content-type": "text/plain" });
      res.end("overloaded");
    };
    const err = await rpcCall(base, "eth_blockNumber", [], { retries: 1 }).catch((e: unknown) => e);
    expect(isA(err, HttpRequestError)).toBe(true);
    expect((err as HttpRequestError).status).toBe(503);
    expect((err as Error).message).toMatch(/overloaded/);
    expect(calls).toBe(2);
    calls = 0;
    handle = (_b, res) => {
      calls++;
      res.writeHead(400, { "content-type": "text/plain" });
      res.end("bad request");
    };
    const bad = await rpcCall(base, "eth_blockNumber", []).catch((e: unknown) => e);
    expect((bad as HttpRequestError).status).toBe(400);
    expect(calls).toBe(1);
  });

  it("a node that never answers is viem's TimeoutError, and the connection is closed", async () => {
    let closed = false;
    handle = (_b, res) => {
      res.on("close", () => {
        closed = true;
      });
    };
    const err = await rpcCall(base, "eth_blockNumber", [], { timeoutMs: 200 }).catch((e: unknown) => e);
    expect(isA(err, TimeoutError)).toBe(true);
    await new Promise((r) => setTimeout(r, 100));
    expect(closed).toBe(true);
  });

  it("an answer over 10 MiB, an answer that is not JSON, no node, a URL that is not HTTP", async () => {
    handle = elevenMiB;
    await expect(rpcCall(base, "eth_blockNumber", [])).rejects.toThrow(/more than 10485760 bytes/);
    handle = (_b, res) => {
      res.writeHead(200, { "content-type": "text/html" });
      res.end("<html>a proxy's page</html>");
    };
    await expect(rpcCall(base, "eth_blockNumber", [])).rejects.toThrow(/a proxy's page/);
    const refused = await rpcCall("http://127.0.0.1:1", "eth_blockNumber", [], { retries: 1 }).catch((e: unknown) => e);
    expect(isA(refused, HttpRequestError)).toBe(true);
    expect((refused as Error).message).toMatch(/ECONNREFUSED/);
    await expect(rpcCall("ws://127.0.0.1:1", "eth_blockNumber", [])).rejects.toThrow(/unsupported RPC URL scheme/);
  });
});

/** A local server playing one of a chain's nodes, counting the calls it gets. */
async function node(answer: (b: { id: number }, res: ServerResponse) => void) {
  const n = { url: "", calls: 0, answer, server: createServer() };
  n.server.on("request", (req: IncomingMessage, res: ServerResponse) => {
    let text = "";
    req.on("data", (c: Buffer) => {
      text += c.toString("utf8");
    });
    req.on("end", () => {
      n.calls++;
      n.answer(JSON.parse(text), res);
    });
  });
  await new Promise<void>((r) => n.server.listen(0, "127.0.0.1", () => r()));
  n.url = `http://127.0.0.1:${(n.server.address() as AddressInfo).port}`;
  return n;
}

describe("a chain with several URLs (useRpcUrlLists)", () => {
  const nodes: Awaited<ReturnType<typeof node>>[] = [];
  let chain = 1000; // each test's lists a chain of their own
  const failures: string[] = [];
  onRpcUrlFailure((chainId, url) => failures.push(`${chainId}:${url}`));
  const result = (value: string) => (b: { id: number }, res: ServerResponse) =>
    json(res, 200, { jsonrpc: "2.0", id: b.id, result: value });
  const status = (code: number) => (_b: unknown, res: ServerResponse) => {
    res.writeHead(code, { "content-type": "text/plain" });
    res.end(`status ${code}`);
  };
  const pair = async (a: Parameters<typeof node>[0], b: Parameters<typeof node>[0]) => {
    const [first, second] = [await node(a), await node(b)];
    nodes.push(first, second);
    useRpcUrlLists([[++chain, [first.url, second.url]]]);
    return [first, second] as const;
  };
  afterAll(async () => {
    for (const n of nodes) {
      n.server.closeAllConnections();
      await new Promise((r) => n.server.close(r));
    }
  });

  it("rpcCall fails over to the next URL, keeps to it, and comes back when it fails", async () => {
    const [a, b] = await pair(status(503), result("0xb"));
    failures.length = 0;
    expect(await rpcCall(a.url, "eth_blockNumber", [])).toBe("0xb");
    expect([a.calls, b.calls]).toEqual([1, 1]);
    expect(failures).toEqual([`${chain}:0`]); // each failure of a URL, by its index
    expect(await rpcCall(a.url, "eth_blockNumber", [])).toBe("0xb"); // the one that answered
    expect([a.calls, b.calls]).toEqual([1, 2]);
    a.answer = result("0xa");
    b.answer = status(502);
    expect(await rpcCall(a.url, "eth_blockNumber", [])).toBe("0xa");
    expect([a.calls, b.calls]).toEqual([2, 3]);
    expect(failures).toEqual([`${chain}:0`, `${chain}:1`]);
    expect(await rpcCall(a.url, "eth_blockNumber", [])).toBe("0xa");
    expect([a.calls, b.calls]).toEqual([3, 3]);
  });

  it("a URL's failures said in the log at most once a minute, by index, with the count since", async () => {
    const lines: string[] = [];
    let t = 0;
    logRpcUrlFailures(
      (l) => lines.push(l),
      60_000,
      () => t,
    );
    const [a, b] = await pair(status(503), result("0xb"));
    for (let i = 0; i < 3; i++) {
      b.answer = status(502); // both fail this round: each URL once
      await rpcCall(a.url, "eth_blockNumber", [], { retries: 0 }).catch(() => undefined);
    }
    b.answer = result("0xb");
    expect(lines).toEqual([
      `the RPC URL at index 0 of PONDER_RPC_URL_${chain} failed; the chain's other URLs take its calls`,
      `the RPC URL at index 1 of PONDER_RPC_URL_${chain} failed; the chain's other URLs take its calls`,
    ]);
    t += 60_000;
    expect(await rpcCall(a.url, "eth_blockNumber", [])).toBe("0xb");
    expect(lines.slice(2)).toEqual([
      `the RPC URL at index 0 of PONDER_RPC_URL_${chain} failed (3 failures since the last line); the chain's other URLs take its calls`,
    ]);
    expect(lines.join("\n")).not.toContain(a.url); // never the URL itself
  });

  it("rpcCall: a JSON-RPC error is the chain's answer; a node that does not answer is passed", async () => {
    const [a, b] = await pair(
      (r, res) => json(res, 200, { jsonrpc: "2.0", id: r.id, error: { code: 3, message: "execution reverted" } }),
      result("0xb"),
    );
    await expect(rpcCall(a.url, "eth_call", [])).rejects.toThrow(/execution reverted/);
    expect([a.calls, b.calls]).toEqual([1, 0]);
    a.answer = () => undefined; // never answers
    expect(await rpcCall(a.url, "eth_blockNumber", [], { timeoutMs: 200 })).toBe("0xb");
    expect([a.calls, b.calls]).toEqual([2, 1]);
  });

  it("rpcCall: when every URL fails, the list is tried again, then the last URL's error", async () => {
    const [a, b] = await pair(status(503), status(504));
    const err = await rpcCall(a.url, "eth_blockNumber", [], { retries: 1 }).catch((e: unknown) => e);
    expect((err as HttpRequestError).status).toBe(504);
    expect([a.calls, b.calls]).toEqual([2, 2]);
    // a URL nothing listens on, first in its list
    const live = await node(result("0x2a"));
    nodes.push(live);
    useRpcUrlLists([[++chain, ["http://127.0.0.1:1", live.url]]]);
    expect(await rpcCall("http://127.0.0.1:1", "eth_blockNumber", [])).toBe("0x2a");
  });

  it("viem over rpcFetch fails over too: no node at the first URL, or a 5xx", async () => {
    const [a, b] = await pair(status(500), result("0x7"));
    const viaFirst = (url: string) =>
      createPublicClient({ transport: http(url, { retryCount: 0, fetchFn: rpcFetch as never }) });
    failures.length = 0;
    expect(await viaFirst(a.url).getBlockNumber({ cacheTime: 0 })).toBe(7n);
    expect([a.calls, b.calls]).toEqual([1, 1]);
    expect(failures).toEqual([`${chain}:0`]);
    const live = await node(result("0x8"));
    nodes.push(live);
    useRpcUrlLists([[++chain, ["http://127.0.0.1:2", live.url]]]);
    expect(await viaFirst("http://127.0.0.1:2").getBlockNumber({ cacheTime: 0 })).toBe(8n);
    // b answered last, and is asked first: its 503 passes the call to a, whose JSON-RPC error
    // is the answer (not passed on), and a is asked first again
    a.answer = (r, res) => json(res, 200, { jsonrpc: "2.0", id: r.id, error: { code: -32601, message: "no method" } });
    b.answer = status(503);
    [a.calls, b.calls] = [0, 0];
    await expect(viaFirst(a.url).getBlockNumber({ cacheTime: 0 })).rejects.toThrow(/no method/);
    expect([a.calls, b.calls]).toEqual([1, 1]);
    await expect(viaFirst(a.url).getBlockNumber({ cacheTime: 0 })).rejects.toThrow(/no method/);
    expect([a.calls, b.calls]).toEqual([2, 1]);
  });
});
