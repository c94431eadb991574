/**
 * A short-lived in-process cache of successful GET answers (RESPONSE_CACHE_MS, default 1000 ms;
 * 0 turns it off), with concurrent identical requests sharing one computation. The key is the
 * full URL plus the `x-api-key` header as sent: an answer is only reused for a request with the
 * same key string, and only 200s (which passed the key check) are stored. The tables behind the
 * API change when a block is indexed or a job finishes, so a second of reuse changes no figure
 * materially; every figure still carries its freshness. A write through this process clears it.
 */
import { createMiddleware } from "hono/factory";
import type { AppEnv } from "../lib/router.js";

interface Entry {
  at: number;
  status: number;
  headers: [string, string][];
  body: ArrayBuffer;
}

const MAX_ENTRIES = 2000;
const MAX_BODY = 2 * 1024 * 1024;
const KEPT_HEADERS = new Set(["content-type", "deprecation", "sunset", "link"]);

export function responseCache(ttlMs: number) {
  const entries = new Map<string, Entry>();
  const inflight = new Map<string, Promise<Entry | null>>();
  const replay = (e: Entry) => new Response(e.body.slice(0), { status: e.status, headers: [...e.headers, ["x-cache", "hit"]] });
  return createMiddleware<AppEnv>(async (c, next) => {
    if (ttlMs <= 0) return next();
    if (c.req.method !== "GET") {
      await next();
      if (c.res.status < 400) entries.clear();
      return;
    }
    const key = `${c.req.url}\u0000${c.req.header("x-api-key") ?? ""}`;
    const now = Date.now();
    const hit = entries.get(key);
    if (hit && now - hit.at < ttlMs) {
      c.res = replay(hit);
      return;
    }
    const pending = inflight.get(key);
    if (pending) {
      const e = await pending;
      if (e) {
        c.res = replay(e);
        return;
      }
    }
    let resolve!: (e: Entry | null) => void;
    inflight.set(key, new Promise<Entry | null>((r) => (resolve = r)));
    try {
      await next();
      const res = c.res;
      let entry: Entry | null = null;
      if (res.status === 200) {
        const body = await res.clone().arrayBuffer();
        if (body.byteLength <= MAX_BODY) {
          entry = { at: now, status: 200, headers: [...res.headers].filter(([k]) => KEPT_HEADERS.has(k.toLowerCase())), body };
          if (entries.size >= MAX_ENTRIES) entries.delete(entries.keys().next().value!);
          entries.delete(key);
          entries.set(key, entry);
        }
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
