/**
 * Request bodies are at most `MAX_BODY_BYTES` (1 MiB): the largest a route takes is a batch of
 * 1,000 strategy APY snapshots, about 300 KiB. A larger body is refused with 413 before anything
 * reads it, so a client cannot make a process buffer gigabytes. A declared Content-Length is
 * checked at once; a chunked body is counted as it arrives (hono's bodyLimit), which only
 * bodies without a length pay for.
 */
import type { Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../lib/router.js";

export const MAX_BODY_BYTES = 1 << 20;

const tooLarge = (c: Context) =>
  c.json({ detail: `Request body too large: at most ${MAX_BODY_BYTES} bytes (1 MiB)` }, 413);

const chunked = bodyLimit({ maxSize: MAX_BODY_BYTES, onError: tooLarge });

export const limitBody = createMiddleware<AppEnv>(async (c, next) => {
  const method = c.req.method;
  if (method === "GET" || method === "HEAD" || method === "OPTIONS") return next();
  const length = c.req.header("content-length");
  if (length !== undefined && !c.req.header("transfer-encoding")) {
    return Number(length) > MAX_BODY_BYTES ? tooLarge(c) : next();
  }
  return chunked(c, next);
});
