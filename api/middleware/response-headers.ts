/**
 * Headers that middlewares give every answer (the request id, the rate-limit figures, `Vary`),
 * collected in a plain object and written once.
 *
 * Why not `c.header()` / `c.res.headers.set()`: on @hono/node-server a response whose headers are
 * a plain object goes straight to `writeHead`, while touching `Headers` builds an undici `Headers`
 * object (validating every name and value) for each request. On cached answers, which cost
 * little else, that was the largest part of the API's own CPU time under load
 * (docs/performance.md, API benchmark). The response cache merges these headers into the answer
 * it builds (`mergedResponseHeaders`); any other answer gets them applied here after the handler.
 *
 * The request id is the client's `X-Request-Id` when it is a plausible id (at most 255 word
 * characters, `-` or `=`, as hono's request-id middleware accepts), else a random UUID.
 */
import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../lib/router.js";

const CLIENT_ID = /^[\w\-=]{1,255}$/;

/** this request's collected headers (an empty set when the app runs without `responseHeaders`) */
function collected(c: Context<AppEnv>): Record<string, string> {
  let bag = c.get("responseHeaders");
  if (!bag) {
    bag = {};
    c.set("responseHeaders", bag);
  }
  return bag;
}

/** Adds headers to this request's answer; `vary` values accumulate. */
export function addResponseHeaders(c: Context<AppEnv>, headers: Record<string, string>): void {
  const bag = collected(c);
  for (const k in headers) {
    const key = k.toLowerCase();
    const v = headers[k]!;
    bag[key] = key === "vary" && bag.vary ? `${bag.vary}, ${v}` : v;
  }
}

/**
 * The collected headers plus `own` (the answer's own, which win except for `vary`, which
 * accumulates), as one plain object; marks them written, so they are not applied again.
 */
export function mergedResponseHeaders(c: Context<AppEnv>, own: Record<string, string>): Record<string, string> {
  const bag = collected(c);
  c.set("responseHeadersWritten", true);
  const out: Record<string, string> = { ...bag, ...own };
  if (bag.vary && own.vary) out.vary = `${own.vary}, ${bag.vary}`;
  return out;
}

export const responseHeaders = createMiddleware<AppEnv>(async (c, next) => {
  const sent = c.req.header("x-request-id");
  const id = sent && CLIENT_ID.test(sent) ? sent : crypto.randomUUID();
  c.set("requestId", id);
  c.set("responseHeaders", { "x-request-id": id });
  c.set("responseHeadersWritten", false);
  await next();
  if (c.get("responseHeadersWritten")) return;
  const h = c.res.headers;
  const bag = c.get("responseHeaders");
  for (const k in bag) {
    if (k === "vary") h.append("vary", bag[k]!);
    else h.set(k, bag[k]!);
  }
});
