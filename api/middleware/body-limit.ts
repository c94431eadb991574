/**
 * Limits on request bodies, before any route reads them:
 * - at most `MAX_BODY_BYTES` (1 MiB): the largest a route takes is a batch of 1,000 strategy APY
 *   snapshots, about 300 KiB. Beyond, 413, so a client cannot make a process buffer gigabytes. A
 *   declared Content-Length is checked at once; a chunked body is counted as it arrives (hono's
 *   bodyLimit), which only bodies without a length pay for;
 * - JSON nested at most `MAX_JSON_DEPTH` levels (no route's body has more than four): deeper, a
 *   422. JSON.parse takes any depth, but JSON.stringify (the audit row, the idempotency hash)
 *   overflows the stack on a few thousand levels. The text read here is what the route's
 *   validator parses (hono caches it).
 */
import type { Context } from "hono";
import { bodyLimit } from "hono/body-limit";
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../lib/router.js";

export const MAX_BODY_BYTES = 1 << 20;
export const MAX_JSON_DEPTH = 64;

/** Whether JSON text nests arrays and objects deeper than `max` (strings skipped; stops early). */
export function nestedDeeper(text: string, max: number): boolean {
  let depth = 0;
  let inString = false;
  for (let i = 0; i < text.length; i++) {
    const ch = text.charCodeAt(i);
    if (inString) {
      if (ch === 92)
        i++; // a backslash escapes the next character
      else if (ch === 34) inString = false;
    } else if (ch === 34) inString = true;
    else if (ch === 91 || ch === 123) {
      if (++depth > max) return true;
    } else if (ch === 93 || ch === 125) depth--;
  }
  return false;
}

const tooLarge = (c: Context) =>
  c.json({ detail: `Request body too large: at most ${MAX_BODY_BYTES} bytes (1 MiB)` }, 413);

const chunked = bodyLimit({ maxSize: MAX_BODY_BYTES, onError: tooLarge });

const tooDeep = createMiddleware<AppEnv>(async (c, next) => {
  if (!c.req.header("content-type")?.includes("json")) return next();
  let text: string;
  try {
    text = await c.req.text();
  } catch {
    return next(); // unreadable: the route's own parsing reports it
  }
  if (nestedDeeper(text, MAX_JSON_DEPTH)) {
    const msg = `JSON nested deeper than ${MAX_JSON_DEPTH} levels`;
    return c.json({ detail: [{ loc: ["body"], msg, type: "json_invalid" }] }, 422);
  }
  return next();
});

export const limitBody = createMiddleware<AppEnv>(async (c, next) => {
  const method = c.req.method;
  if (method === "GET" || method === "HEAD" || method === "OPTIONS") return next();
  const length = c.req.header("content-length");
  if (length !== undefined && !c.req.header("transfer-encoding")) {
    return Number(length) > MAX_BODY_BYTES ? tooLarge(c) : tooDeep(c, next);
  }
  return chunked(c, async () => {
    const refused = await tooDeep(c, next);
    if (refused instanceof Response) c.res = refused;
  });
});
