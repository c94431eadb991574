/**
 * A short-lived in-process cache of successful GET answers (RESPONSE_CACHE_MS, default 1000 ms;
 * 0 turns it off), with concurrent identical requests sharing one computation. The key is the
 * full URL plus the `x-api-key` header as sent: an answer is only reused for a request with the
 * same key string, and only 200s (which passed the key check) are stored. The tables behind the
 * API change when a block is indexed or a job finishes, so a second of reuse changes no figure
 * materially; every figure still carries its freshness. A write through this process that
 * committed (runWrite) clears it. HEAD requests share the GET's entry.
 *
 * When an answer expires, the first request recomputes it and the others meanwhile get the
 * expired one (`x-cache: stale`, for at most 5 TTLs), so no request waits for the recomputation but
 * the one making it.
 *
 * At most MAX_ENTRIES answers of at most MAX_BODY each are kept, MAX_CACHE_BYTES together, the
 * least recently used dropped first. A larger answer is not kept; the identical requests that
 * waited for it are answered from it.
 *
 * Stored answers are Buffers, which @hono/node-server writes straight to the socket. An answer of
 * 1 KiB or more is also gzipped once when stored, in zlib's thread pool so the event loop does not
 * wait for it, and from then on served gzipped to clients that accept it (`Accept-Encoding: gzip`;
 * `Vary: Accept-Encoding` on every stored answer); until the copy is ready they get the plain one.
 *
 * Every stored answer has a weak `ETag`, a hash of its body (the same for its gzip copy), kept from
 * one computation to the next while the body is the same: a request whose `If-None-Match` names
 * it gets a 304 without a body, so a client polling a series or a vault list downloads it again
 * only when it changed.
 *
 * Answers carry their headers as a plain object, merged with those the other middlewares
 * collected (response-headers.ts), so @hono/node-server writes them without building undici
 * `Headers`: nothing touches `c.res.headers` on this path.
 */
import { createHash } from "node:crypto";
import { gzip as gzipAsync } from "node:zlib";
import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { LRUCache } from "lru-cache";
import type { AppEnv } from "../lib/router.js";
import { mergedResponseHeaders } from "./response-headers.js";

interface Entry {
  at: number;
  status: number;
  /** the answer's own headers worth keeping, lower-case names */
  headers: Record<string, string>;
  body: Buffer;
  /** the gzip copy, once made */
  gzip: Buffer | null;
  /** W/"<hash of body>" */
  etag: string;
}

const MAX_ENTRIES = 2000;
const MAX_BODY = 2 * 1024 * 1024;
/**
 * What the stored answers may hold together (bodies, gzip copies, keys): a client varying an
 * ignored query parameter fills the cache with copies of one answer, and 2,000 of the largest
 * would be gigabytes. The least recently used go first.
 */
export const MAX_CACHE_BYTES = 128 * 1024 * 1024;
/** an entry's bytes: its body, room for its gzip copy (never much larger), its key */
const entryBytes = (e: Entry, key: string) =>
  e.body.byteLength * (e.body.byteLength >= GZIP_MIN ? 2 : 1) + key.length * 2 + 512;
const GZIP_MIN = 1024;
/** an expired answer is still served, for at most this many TTLs, while its recomputation runs */
const STALE_FACTOR = 5;
const KEPT_HEADERS = new Set(["content-type", "deprecation", "sunset", "link", "x-vault-chain", "x-next-before"]);

/** gzip is acceptable unless the client sent none, or gave it q=0 */
export function acceptsGzip(header: string | undefined): boolean {
  if (!header) return false;
  for (const part of header.split(",")) {
    const [coding, ...params] = part.trim().toLowerCase().split(";");
    if (coding !== "gzip" && coding !== "*") continue;
    const q = params.map((p) => p.trim()).find((p) => p.startsWith("q="));
    return !q || Number(q.slice(2)) > 0;
  }
  return false;
}

/** Whether an `If-None-Match` header names `etag` (weak comparison, as RFC 9110 has it for GET). */
export function matchesEtag(header: string | undefined, etag: string): boolean {
  if (!header) return false;
  const bare = etag.replace(/^W\//, "");
  return header.split(",").some((t) => {
    const tag = t.trim();
    return tag === "*" || tag.replace(/^W\//, "") === bare;
  });
}

/** `clock` is the time source in ms (tests pass their own, so ages do not depend on the machine's speed) */
export function responseCache(
  ttlMs: number,
  clock: () => number = Date.now,
  /** paths never cached (a health check must read the state it reports, every time) */
  uncached: (path: string) => boolean = () => false,
  maxBytes = MAX_CACHE_BYTES,
) {
  const entries = new LRUCache<string, Entry>({
    max: MAX_ENTRIES,
    maxSize: maxBytes,
    sizeCalculation: entryBytes,
  });
  const inflight = new Map<string, Promise<Entry | null>>();
  /** a stored answer with `own` headers, plus those every answer of this request gets */
  const answer = (c: Context<AppEnv>, e: Entry, gzip: boolean, own: Record<string, string>) => {
    const h: Record<string, string> = {
      ...own,
      vary: own.vary ? `${own.vary}, Accept-Encoding` : "Accept-Encoding",
      etag: e.etag,
    };
    if (matchesEtag(c.req.header("if-none-match"), e.etag)) {
      delete h["content-type"];
      return new Response(null, { status: 304, headers: mergedResponseHeaders(c, h) });
    }
    const zipped = gzip && e.gzip != null;
    if (zipped) h["content-encoding"] = "gzip";
    return new Response(zipped ? e.gzip : e.body, { status: e.status, headers: mergedResponseHeaders(c, h) });
  };
  return createMiddleware<AppEnv>(async (c, next) => {
    if (ttlMs <= 0 || uncached(c.req.path)) return next();
    // HEAD is a GET without the body (hono runs the GET handler): it shares the GET's entry, so
    // a load balancer's HEAD checks are answered from it with the same headers
    if (c.req.method !== "GET" && c.req.method !== "HEAD") {
      await next();
      // only a write that committed empties it: a POST that reads (pending redemptions, a
      // build, a token) or a refused write changed nothing the reads serve
      if (c.get("wrote")) entries.clear();
      return;
    }
    const key = `${c.req.url}\u0000${c.req.header("x-api-key") ?? ""}`;
    const gzip = acceptsGzip(c.req.header("accept-encoding"));
    const now = clock();
    const hit = entries.get(key);
    if (hit && now - hit.at < ttlMs) {
      c.res = answer(c, hit, gzip, { ...hit.headers, "x-cache": "hit" });
      return;
    }
    const pending = inflight.get(key);
    // while one request recomputes an expired answer, the others get the previous one
    if (pending && hit && now - hit.at < ttlMs * STALE_FACTOR) {
      c.res = answer(c, hit, gzip, { ...hit.headers, "x-cache": "stale" });
      return;
    }
    if (pending) {
      const e = await pending;
      if (e) {
        c.res = answer(c, e, gzip, { ...e.headers, "x-cache": "hit" });
        return;
      }
    }
    let resolve!: (e: Entry | null) => void;
    inflight.set(key, new Promise<Entry | null>((r) => (resolve = r)));
    try {
      await next();
      const res = c.res;
      let entry: Entry | null = null;
      // an answer that says it is too large is not read (a static bundle of megabytes)
      const declared = Number(res.headers.get("content-length") ?? Number.NaN);
      if (res.status === 200 && !res.headers.has("content-encoding") && !(declared > MAX_BODY)) {
        const body = Buffer.from(await res.clone().arrayBuffer());
        entry = {
          at: now,
          status: 200,
          headers: Object.fromEntries([...res.headers].filter(([k]) => KEPT_HEADERS.has(k))),
          body,
          gzip: null,
          etag: `W/"${createHash("sha1").update(body).digest("base64url")}"`,
        };
        if (body.byteLength <= MAX_BODY) {
          if (body.byteLength >= GZIP_MIN) {
            const e = entry;
            gzipAsync(body, { level: 6 }, (err, zipped) => {
              if (!err) e.gzip = zipped;
            });
          }
          entries.set(key, entry);
          // the first answer is the stored one, as later ones will be, with all its own headers
          const own = Object.fromEntries([...res.headers].filter(([k]) => k !== "content-length"));
          c.res = undefined;
          c.res = answer(c, entry, gzip, own);
        }
        // a larger one is not kept, but the requests that waited for it share it
      }
      resolve(entry);
    } catch (err) {
      resolve(null);
      throw err;
    } finally {
      inflight.delete(key);
    }
  });
}
