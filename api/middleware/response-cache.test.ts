/** The response cache on a real Hono app: hits, stale answers during a recomputation, gzip. */
import { gunzipSync } from "node:zlib";
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import type { AppEnv } from "../lib/router.js";
import { acceptsGzip, responseCache } from "./response-cache.js";
import { addResponseHeaders, responseHeaders } from "./response-headers.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/** `hold`, when given, is awaited by /slow instead of its 80 ms sleep */
function app(
  ttlMs: number,
  opts: {
    clock?: () => number;
    hold?: () => Promise<void>;
    uncached?: (path: string) => boolean;
    maxBytes?: number;
  } = {},
) {
  let n = 0;
  const a = new Hono<AppEnv>();
  a.use(responseHeaders);
  a.use(async (c, next) => {
    addResponseHeaders(c, { vary: "Origin", "x-extra": "1" });
    await next();
  });
  a.use(responseCache(ttlMs, opts.clock, opts.uncached, opts.maxBytes));
  a.post("/read", (c) => c.json({ read: true }));
  a.post("/write", (c) => {
    c.set("wrote", true);
    return c.json({ wrote: true });
  });
  a.post("/refused", (c) => c.json({ detail: "no" }, 409));
  a.get("/ping", (c) => c.json({ n: ++n }));
  a.get("/fail", (c) => c.json({ detail: "no" }, 404, { "x-own": "yes" }));
  a.get("/same", (c) => {
    ++n;
    return c.json({ pad: "y".repeat(4000) });
  });
  a.get("/big/:i", (c) => {
    ++n;
    return c.json({ i: c.req.param("i"), pad: "b".repeat(100_000) });
  });
  a.get("/huge", async (c) => {
    const mine = ++n;
    await (opts.hold ? opts.hold() : sleep(80));
    return c.json({ n: mine, pad: "h".repeat(3 * 1024 * 1024) });
  });
  a.get("/declared", (c) => {
    ++n;
    return c.body("d".repeat(3 * 1024 * 1024), 200, { "content-length": String(3 * 1024 * 1024) });
  });
  a.get("/slow", async (c) => {
    const mine = ++n;
    await (opts.hold ? opts.hold() : sleep(80));
    return c.json({ n: mine, pad: "x".repeat(4000) });
  });
  return { request: a.request.bind(a), calls: () => n };
}

describe("response cache", () => {
  it("reuses an answer within the TTL; after it, one request recomputes while the others get the expired answer", async () => {
    // a clock of the test's own: the answer's age does not depend on how busy the machine is
    let t = 1_000_000;
    let gate: Promise<void> | null = null;
    let open = () => {};
    const a = app(100, { clock: () => t, hold: () => gate ?? Promise.resolve() });
    const body = async (r: Response | Promise<Response>) => ((await (await r).json()) as { n: number }).n;
    expect(await body(a.request("/slow"))).toBe(1);
    t += 99;
    const hit = await a.request("/slow");
    expect(hit.headers.get("x-cache")).toBe("hit");
    expect(await body(hit)).toBe(1);
    t += 21; // expired, within 5 TTLs
    gate = new Promise<void>((r) => (open = r));
    const recompute = a.request("/slow");
    while (a.calls() < 2) await sleep(1); // the recomputation is in the handler, held there
    const stale = await a.request("/slow");
    expect(stale.headers.get("x-cache")).toBe("stale");
    expect(stale.headers.get("x-request-id")).toBeTruthy();
    expect(await body(stale)).toBe(1);
    expect(a.calls()).toBe(2);
    open();
    expect(await body(recompute)).toBe(2);
    expect(await body(a.request("/slow"))).toBe(2);
    t += 600; // past 5 TTLs: no stale answer, the request computes
    gate = null;
    expect(await body(a.request("/slow"))).toBe(3);
  });

  it("serves the gzip copy to clients that accept it", async () => {
    const a = app(1000, { clock: () => 0 }); // a clock that stands still: the answer never expires
    const plain = await (await a.request("/slow")).text();
    // the copy is made in the background: until it is ready the plain answer is served
    let z = await a.request("/slow", { headers: { "accept-encoding": "gzip" } });
    for (let i = 0; i < 1000 && z.headers.get("content-encoding") !== "gzip"; i++) {
      await sleep(10);
      z = await a.request("/slow", { headers: { "accept-encoding": "gzip" } });
    }
    expect(z.headers.get("content-encoding")).toBe("gzip");
    expect(a.calls()).toBe(1);
    expect(gunzipSync(Buffer.from(await z.arrayBuffer())).toString()).toBe(plain);
  });

  it("every answer carries the collected headers once: computed, hit, stale and uncached ones", async () => {
    const a = app(1000, { clock: () => 0 });
    const first = await a.request("/slow", { headers: { "x-request-id": "client-id-1" } });
    const hit = await a.request("/slow", { headers: { "accept-encoding": "gzip" } });
    for (const r of [first, hit]) {
      expect(r.headers.get("vary")).toBe("Accept-Encoding, Origin");
      expect(r.headers.get("x-extra")).toBe("1");
      expect(r.headers.get("content-type")).toMatch(/application\/json/);
    }
    expect(first.headers.get("x-request-id")).toBe("client-id-1");
    expect(hit.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
    expect(hit.headers.get("x-cache")).toBe("hit");
    // not cached (404): the collected headers are applied after the handler, beside its own
    const miss = await a.request("/fail", { headers: { "x-request-id": "bad id!" } });
    expect(miss.status).toBe(404);
    expect(miss.headers.get("vary")).toBe("Origin");
    expect(miss.headers.get("x-own")).toBe("yes");
    expect(miss.headers.get("x-extra")).toBe("1");
    expect(miss.headers.get("x-request-id")).toMatch(/^[0-9a-f-]{36}$/);
  });

  it("an ETag per body, the same from one computation to the next; If-None-Match naming it gets a 304", async () => {
    let t = 0;
    const a = app(100, { clock: () => t });
    const first = await a.request("/slow");
    const tag = first.headers.get("etag")!;
    expect(tag).toMatch(/^W\/"[A-Za-z0-9_-]{27}"$/);
    // a hit, and the gzip copy: the same tag
    let z = await a.request("/slow", { headers: { "accept-encoding": "gzip" } });
    for (let i = 0; i < 1000 && z.headers.get("content-encoding") !== "gzip"; i++) {
      await sleep(10);
      z = await a.request("/slow", { headers: { "accept-encoding": "gzip" } });
    }
    expect(z.headers.get("etag")).toBe(tag);
    // named (strong or weak, in a list, or *): 304, no body, the headers every answer gets
    for (const inm of [tag, tag.slice(2), `"other", ${tag}`, "*"]) {
      const r = await a.request("/slow", { headers: { "if-none-match": inm, "accept-encoding": "gzip" } });
      expect(r.status, inm).toBe(304);
      expect(await r.text()).toBe("");
      expect(r.headers.get("etag")).toBe(tag);
      expect(r.headers.get("vary")).toBe("Accept-Encoding, Origin");
      expect(r.headers.get("x-extra")).toBe("1");
      expect(r.headers.get("content-encoding")).toBeNull();
    }
    expect((await a.request("/slow", { headers: { "if-none-match": '"other"' } })).status).toBe(200);
    // recomputed with another body: another tag, and the old one gets the new body
    t += 1000;
    const next = await a.request("/slow", { headers: { "if-none-match": tag } });
    expect(next.status).toBe(200);
    expect(((await next.json()) as { n: number }).n).toBe(2);
    expect(next.headers.get("etag")).not.toBe(tag);
    // recomputed with the same body: the same tag, so the first request after it is a 304 too
    const same = (await a.request("/same")).headers.get("etag")!;
    t += 1000;
    const again = await a.request("/same", { headers: { "if-none-match": same } });
    expect(again.status).toBe(304);
    expect(a.calls()).toBe(4);
    // not stored (a 404, or the cache off): no tag
    expect((await a.request("/fail")).headers.get("etag")).toBeNull();
    expect((await app(0).request("/slow")).headers.get("etag")).toBeNull();
  });

  it("only a committed write empties it: not a POST that reads, a refusal or a HEAD", async () => {
    const a = app(60_000);
    const etag = (await a.request("/slow")).headers.get("etag");
    for (const path of ["/read", "/refused"]) {
      await a.request(path, { method: "POST" });
      expect((await a.request("/slow")).headers.get("x-cache"), path).toBe("hit");
    }
    // HEAD: the GET's entry and headers, no body
    const head = await a.request("/slow", { method: "HEAD" });
    expect(head.status).toBe(200);
    expect(head.headers.get("x-cache")).toBe("hit");
    expect(head.headers.get("etag")).toBe(etag);
    expect(await head.text()).toBe("");
    expect((await a.request("/slow")).headers.get("x-cache")).toBe("hit");
    expect(a.calls()).toBe(1);
    await a.request("/write", { method: "POST" });
    expect((await a.request("/slow")).headers.get("x-cache")).toBeNull();
    expect(a.calls()).toBe(2);
  });

  it("a HEAD first computes the entry the GET then reuses", async () => {
    const a = app(60_000);
    expect((await a.request("/slow", { method: "HEAD" })).status).toBe(200);
    const get = await a.request("/slow");
    expect(get.headers.get("x-cache")).toBe("hit");
    expect(((await get.json()) as { n: number }).n).toBe(1);
  });

  it("a path it is told not to cache is computed every time", async () => {
    const a = app(60_000, { uncached: (p) => p.endsWith("/ping") });
    await a.request("/ping");
    const second = await a.request("/ping");
    expect(second.headers.get("x-cache")).toBeNull();
    expect(a.calls()).toBe(2);
  });

  it("keeps answers within its byte budget, the least recently used dropped first", async () => {
    // 100 kB answers count twice (room for the gzip copy): five fit in 1 MiB, not ten
    const a = app(60_000, { maxBytes: 1024 * 1024 });
    for (let i = 0; i < 10; i++) await a.request(`/big/${i}`);
    expect(a.calls()).toBe(10);
    for (const i of [9, 8, 7, 6]) expect((await a.request(`/big/${i}`)).headers.get("x-cache"), `${i}`).toBe("hit");
    expect((await a.request("/big/0")).headers.get("x-cache")).toBeNull();
    expect(a.calls()).toBe(11);
    // /big/0 took the place of the least recently used, /big/5
    expect((await a.request("/big/5")).headers.get("x-cache")).toBeNull();
    expect((await a.request("/big/6")).headers.get("x-cache")).toBe("hit");
  });

  it("does not keep an answer over 2 MiB, but the identical requests waiting for it share it", async () => {
    let open = () => {};
    const gate = new Promise<void>((r) => (open = r));
    const a = app(60_000, { hold: () => gate });
    const first = a.request("/huge");
    while (a.calls() < 1) await sleep(1);
    const waiting = [a.request("/huge"), a.request("/huge")];
    open();
    const answers = await Promise.all([first, ...waiting]);
    expect(a.calls()).toBe(1);
    for (const r of answers) expect(((await r.json()) as { n: number }).n).toBe(1);
    expect(answers.slice(1).map((r) => r.headers.get("x-cache"))).toEqual(["hit", "hit"]);
    const later = await a.request("/huge");
    expect(later.headers.get("x-cache")).toBeNull();
    expect(a.calls()).toBe(2);
  });

  it("an answer that declares more than 2 MiB is passed through as it is", async () => {
    const a = app(60_000);
    const r = await a.request("/declared");
    expect(r.headers.get("etag")).toBeNull();
    expect((await r.text()).length).toBe(3 * 1024 * 1024);
    expect((await a.request("/declared")).headers.get("x-cache")).toBeNull();
    expect(a.calls()).toBe(2);
  });

  it("Accept-Encoding parsing", () => {
    expect(acceptsGzip("gzip, deflate, br")).toBe(true);
    expect(acceptsGzip("br;q=1.0, gzip;q=0.8")).toBe(true);
    expect(acceptsGzip("gzip;q=0")).toBe(false);
    expect(acceptsGzip("*")).toBe(true);
    expect(acceptsGzip("identity")).toBe(false);
    expect(acceptsGzip(undefined)).toBe(false);
  });
});
