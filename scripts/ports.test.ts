/**
 * assertPortFree: a listening port fails at once; one held only by a TIME_WAIT connection is
 * waited for. listeningPort: the port Ponder took, which the indexer handle follows.
 */
import { connect, createServer, type Server } from "node:net";
import { describe, expect, it } from "vitest";
import { assertPortFree } from "./lib/anvil.js";
import { listeningPort, reachableHost } from "./lib/indexer.js";

const listen = (port: number) =>
  new Promise<Server>((resolve, reject) => {
    const s = createServer((sock) => sock.on("error", () => {}));
    s.once("error", reject);
    s.listen({ host: "127.0.0.1", port }, () => resolve(s));
  });
const close = (s: Server) => new Promise<void>((r) => s.close(() => r()));

describe("assertPortFree", () => {
  it("passes for a free port and fails at once for a port something listens on", async () => {
    const s = await listen(0);
    const port = (s.address() as { port: number }).port;
    const t0 = Date.now();
    await expect(assertPortFree("127.0.0.1", port, "test server", 10_000)).rejects.toThrow(
      /127\.0\.0\.1:\d+ is already in use/,
    );
    expect(Date.now() - t0).toBeLessThan(3000);
    await close(s);
    await assertPortFree("127.0.0.1", port, "test server");
  });

  it("waits while a closed client connection holds the port in TIME_WAIT, then reports it", async () => {
    const server = await listen(0);
    const serverPort = (server.address() as { port: number }).port;
    // a client connection (on an ephemeral port, as the kernel picks it), closed by the client
    // first: its side stays in TIME_WAIT for 60 s, and nothing listens on its port
    const localPort = await new Promise<number>((resolve, reject) => {
      const c = connect({ host: "127.0.0.1", port: serverPort });
      let port = 0;
      c.once("error", reject);
      c.once("connect", () => {
        port = c.localPort!;
        c.end();
      });
      c.once("close", () => resolve(port));
    });
    await close(server);
    const t0 = Date.now();
    await expect(assertPortFree("127.0.0.1", localPort, "test server", 2000)).rejects.toThrow(/already in use/);
    expect(Date.now() - t0).toBeGreaterThanOrEqual(1900);
  });
});

describe("listeningPort: the port Ponder reports it took", () => {
  it("reads the pretty and the JSON form of its line, and nothing from other lines", () => {
    expect(listeningPort("18:45:33.794 INFO  Created HTTP server port=42195 (78ms)")).toBe(42195);
    const json = '{"level":30,"time":1,"msg":"Created HTTP server","port":42070,"hostname":"::"}';
    expect(listeningPort(json)).toBe(42070);
    expect(listeningPort("18:45:33.700 WARN  Port in use port=42069")).toBeUndefined();
    expect(listeningPort("Created HTTP server")).toBeUndefined();
  });
});

describe("reachableHost: where this host reaches a server listening on an address", () => {
  it("is loopback for every interface, the address itself otherwise", () => {
    expect(reachableHost("0.0.0.0")).toBe("127.0.0.1");
    expect(reachableHost("::")).toBe("127.0.0.1");
    expect(reachableHost("127.0.0.1")).toBe("127.0.0.1");
    expect(reachableHost("10.1.2.3")).toBe("10.1.2.3");
    expect(reachableHost("::1")).toBe("[::1]");
  });
});
