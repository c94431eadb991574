/**
 * Stopping an HTTP server as a rolling restart needs it stopped. `server.close()` alone stops
 * new connections but leaves the kept-alive ones open: a client that keeps sending (a front end's
 * server, a load balancer) is served by the stopping process until it is killed, and the
 * requests in flight then are cut. Closing idle kept-alive connections at once (what
 * `server.close()` also does) races with a client sending its next request on one: a reset.
 */
import type { Server, ServerResponse } from "node:http";
import { Server as NetServer } from "node:net";

/**
 * Follows `server`'s answers from now on, and returns how to stop it: no new connections; every
 * answer not yet sent says `Connection: close` (its client reconnects, to another process) and
 * its connection closes once it is sent; an idle connection closes at its keep-alive timeout (its
 * client, told that timeout, stops using it first) or on its next request, answered with
 * `Connection: close`; whatever is still open after `graceMs` is cut. Resolves once closed.
 */
export function gracefulCloser(server: Server): (graceMs: number) => Promise<void> {
  const open = new Set<ServerResponse>();
  let closing = false;
  const lastAnswer = (res: ServerResponse) => {
    if (!res.headersSent) res.setHeader("Connection", "close");
  };
  server.prependListener("request", (_req, res) => {
    if (closing) return lastAnswer(res);
    open.add(res);
    res.once("close", () => open.delete(res));
  });
  return (graceMs) =>
    new Promise((resolve) => {
      closing = true;
      for (const res of open) lastAnswer(res);
      open.clear();
      const cut = setTimeout(() => server.closeAllConnections(), graceMs);
      // net's close: stop listening and wait for the connections, without http's closing of the
      // idle ones at once
      NetServer.prototype.close.call(server, () => {
        clearTimeout(cut);
        resolve();
      });
    });
}
