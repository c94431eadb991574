/**
 * rpcFetch under viem's http transport, against a local HTTP server playing a JSON-RPC node:
 * answers, JSON-RPC errors, HTTP errors, a node that never answers, one that answers too much,
 * one that is not there, and connections kept between calls.
 */
import { createServer, type IncomingMessage, type Server, type ServerResponse } from "node:http";
import type { AddressInfo } from "node:net";
import { createPublicClient, HttpRequestError, http, RpcRequestError, TimeoutError } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { rpcFetch } from "./rpc-fetch.js";

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
const json = (res: ServerResponse, status: number, body: unknown) => {
  res.writeHead(status, { "content-type": "application/json" });
  res.end(JSON.stringify(body));
};

describe("rpcFetch", () => {
  it("answers a call, and keeps its connection for the next ones", async () => {
    handle = (b, res) => json(res, 200, { jsonrpc: "2.0", id: b.id, result: "0x2a" });
    sockets.clear();
    const c = client();
    for (let i = 0; i < 5; i++) expect(await c.getBlockNumber({ cacheTime: 0 })).toBe(42n);
    expect(sockets.size).toBe(1);
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
    handle = (_b, res) => {
      res.writeHead(200, { "content-type": "application/json" });
      const chunk = "0".repeat(1 << 20);
      for (let i = 0; i < 11; i++) res.write(chunk);
      res.end();
    };
    await expect(rpcFetch(base, { body: "{}" })).rejects.toThrow(/more than 10485760 bytes/);
  });

  it("no node there: the connection error", async () => {
    await expect(rpcFetch("http://127.0.0.1:1", { body: "{}" })).rejects.toThrow(/ECONNREFUSED/);
    await expect(rpcFetch("ws://127.0.0.1:1", { body: "{}" })).rejects.toThrow(/unsupported RPC URL scheme/);
  });
});
