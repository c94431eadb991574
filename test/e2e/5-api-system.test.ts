/**
 * The API's cross-cutting rules through its real app: health and ping, 404s, API keys, CORS,
 * rate-limit headers and 429, malformed JSON, and the OpenAPI documents listing exactly the
 * served routes.
 */
import { gunzipSync } from "node:zlib";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { ALLOWED_ORIGIN, setupApi, type ApiHarness } from "../api-harness.js";
import { createApp } from "../../api/app.js";
import { createKey } from "../../api/keys.js";
import { createReadDb } from "../../api/lib/db.js";

let h: ApiHarness;
beforeAll(async () => {
  h = await setupApi();
}, 400_000);
afterAll(async () => h?.close());

describe("system routes", () => {
  it("GET /v1/ answers without a key", async () => {
    const r = await h.json<{ status: string; version: string }>("/v1/", { key: null });
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: "ok", version: "0.1.0" });
  });

  it("GET /api/v1/ping: database, RPC per chain, indexer lag, job freshness", async () => {
    const r = await h.json<{ status: string; checks: { database: { ok: boolean }; rpc: { chain_id: number; ok: boolean }[]; indexer: { chain_id: number; lag_blocks: number }[]; jobs: { last_computed_at: string | null } } }>("/api/v1/ping", { key: null });
    expect(r.status).toBe(200);
    expect(r.body.status).toBe("ok");
    expect(r.body.checks.database.ok).toBe(true);
    expect(r.body.checks.rpc.map((x) => x.chain_id).sort()).toEqual([1, 8453]);
    expect(r.body.checks.rpc.every((x) => x.ok)).toBe(true);
    for (const i of r.body.checks.indexer) expect(i.lag_blocks).toBeGreaterThanOrEqual(0);
    expect(r.body.checks.jobs.last_computed_at).not.toBeNull();
  });

  it("with the database down, ping says so with 503 and routes answer 503, never 500", async () => {
    const dead = createReadDb("postgresql://nobody@127.0.0.1:1/none", 1);
    try {
      const app = createApp({ db: dead.db, config: { indexerSchema: "indexer", rpcUrls: new Map(), corsOrigins: [], rateLimitPerMinute: 1000 }, redis: null, now: () => new Date() });
      const ping = await app.request("/api/v1/ping");
      expect(ping.status).toBe(503);
      const body = (await ping.json()) as { status: string; checks: { database: { ok: boolean; error: string } } };
      expect(body.status).toBe("down");
      expect(body.checks.database.ok).toBe(false);
      const list = await app.request("/v1/tokenized_vaults");
      expect(list.status).toBe(503);
      expect(((await list.json()) as { detail: string }).detail).toMatch(/database/);
    } finally {
      await dead.destroy();
    }
  });

  it("unknown paths answer 404 with a JSON body", async () => {
    const r = await h.json<{ detail: string }>("/api/v1/no/such/route");
    expect(r.status).toBe(404);
    expect(r.body.detail).toBe("Not Found");
  });

  it("a body that is not JSON, or not sent as JSON, answers 422", async () => {
    const url = "/api/v1/vaults/pending-redemptions";
    const bad = await h.json<{ detail: { loc: string[]; type: string }[] }>(url, { method: "POST", body: "{not json", headers: { "content-type": "application/json" } });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0]!.loc).toEqual(["body"]);
    const text = await h.json<{ detail: { loc: string[] }[] }>(url, { method: "POST", body: "vault_addresses=x", headers: { "content-type": "text/plain" } });
    expect(text.status).toBe(422);
    expect(text.body.detail[0]!.loc).toEqual(["body"]);
  });

  it("API keys on a read: open without, 403 with a wrong or revoked one, 401 when reads are closed", async () => {
    const url = "/api/v1/platform/unrealized_pnl/latest";
    expect((await h.json(url)).status).toBe(200);
    expect((await h.json(url, { key: null })).status).toBe(200);
    await h.expectOpenRead(url);
    expect((await h.json(url, { key: h.revokedKey })).status).toBe(403);
    expect((await h.json(url, { key: "vk_000000000000_" + "0".repeat(40) })).status).toBe(403);
    expect((await h.json(url, { key: "nonsense" })).status).toBe(403);
  });

  it("rate-limit headers on every answer", async () => {
    const r = await h.req("/v1/", { key: null });
    expect(r.headers.get("ratelimit-limit")).toBe("1000000");
    expect(Number(r.headers.get("ratelimit-remaining"))).toBeLessThan(1_000_000);
    expect(r.headers.get("ratelimit-policy")).toBe("1000000;w=60");
  });

  it("past the limit: 429 with a JSON body and Retry-After; counted in Redis, so two API processes share it", async () => {
    const limit = 3;
    const a = h.appWith({ rateLimitPerMinute: limit });
    const b = h.appWith({ rateLimitPerMinute: limit });
    const { key } = await createKey(h.db, `rate-limit-${Date.now()}`); // a fresh counter (a key that is sent is checked)
    const statuses: number[] = [];
    for (const app of [a, b, a, b]) statuses.push((await app.request("/v1/", { headers: { "x-api-key": key } })).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    const r = await a.request("/v1/", { headers: { "x-api-key": key } });
    expect(r.status).toBe(429);
    expect(((await r.json()) as { detail: string }).detail).toMatch(/Rate limit exceeded/);
    expect(Number(r.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(r.headers.get("ratelimit-remaining")).toBe("0");
  });

  it("the response cache: identical GETs within the TTL reuse the answer, never across keys; a write clears it", async () => {
    const app = h.appWith({ responseCacheMs: 60_000 });
    const get = (key: string) => app.request("/api/v1/platform/strategist", { headers: { "x-api-key": key } });
    const first = await get(h.key);
    expect(first.status).toBe(200);
    const before = await first.text();
    await h.q("INSERT INTO registry.strategist (name) VALUES ($1)", [`Cache test ${Date.now()}`]);
    const again = await get(h.key);
    expect(again.headers.get("x-cache")).toBe("hit");
    expect(await again.text()).toBe(before);
    expect((await get(h.revokedKey)).headers.get("x-cache")).toBeNull();
    // a caller without a key gets its own answer, never one cached for a key
    expect((await app.request("/api/v1/platform/strategist")).headers.get("x-cache")).toBeNull();
    const write = await app.request("/api/v1/vaults/pending-redemptions", { method: "POST", body: "{}", headers: { "x-api-key": h.key, "content-type": "application/json" } });
    expect(write.status).toBe(200);
    const fresh = await get(h.key);
    expect(fresh.headers.get("x-cache")).toBeNull();
    expect(await fresh.text()).not.toBe(before);
    await h.q("DELETE FROM registry.strategist WHERE name LIKE 'Cache test %'");
  });

  it("the response cache serves big answers gzipped to clients that accept gzip, identical once decompressed", async () => {
    const app = h.appWith({ responseCacheMs: 60_000 });
    const url = "/api/v1/tokenized_vault?load_snapshots=false";
    const plain = await app.request(url, { headers: { "x-api-key": h.key } });
    expect(plain.status).toBe(200);
    expect(plain.headers.get("content-encoding")).toBeNull();
    expect(plain.headers.get("vary")).toMatch(/Accept-Encoding/);
    expect(plain.headers.get("x-request-id")).toBeTruthy();
    const text = await plain.text();
    expect(text.length).toBeGreaterThan(1024);
    await new Promise((r) => setTimeout(r, 100)); // the gzip copy is made in the background
    for (const accept of ["gzip, deflate, br", "br;q=1.0, gzip;q=0.8"]) {
      const zipped = await app.request(url, { headers: { "x-api-key": h.key, "accept-encoding": accept } });
      expect(zipped.status).toBe(200);
      expect(zipped.headers.get("content-encoding")).toBe("gzip");
      expect(zipped.headers.get("content-type")).toMatch(/application\/json/);
      expect(zipped.headers.get("x-request-id")).toBeTruthy();
      expect(zipped.headers.get("ratelimit-limit")).toBeTruthy();
      const bytes = Buffer.from(await zipped.arrayBuffer());
      expect(bytes.length).toBeLessThan(text.length / 3);
      expect(gunzipSync(bytes).toString("utf8")).toBe(text);
    }
    const refused = await app.request(url, { headers: { "x-api-key": h.key, "accept-encoding": "gzip;q=0, identity" } });
    expect(refused.headers.get("content-encoding")).toBeNull();
    expect(await refused.text()).toBe(text);
  });

  it("CORS headers only for whitelisted origins; other preflights are refused", async () => {
    const ok = await h.req("/v1/", { key: null, headers: { origin: ALLOWED_ORIGIN } });
    expect(ok.headers.get("access-control-allow-origin")).toBe(ALLOWED_ORIGIN);
    const other = await h.req("/v1/", { key: null, headers: { origin: "https://evil.example" } });
    expect(other.headers.get("access-control-allow-origin")).toBeNull();
    const pre = await h.req("/api/v1/ping", { key: null, method: "OPTIONS", headers: { origin: "https://evil.example", "access-control-request-method": "GET" } });
    expect(pre.status).toBe(403);
    const pre2 = await h.req("/api/v1/ping", { key: null, method: "OPTIONS", headers: { origin: ALLOWED_ORIGIN, "access-control-request-method": "GET" } });
    expect(pre2.status).toBe(204);
    expect(pre2.headers.get("access-control-allow-headers")).toMatch(/x-api-key/);
  });

  it("OpenAPI 3.1 documents, version 0.1.0, and reference pages", async () => {
    for (const base of ["/v1", "/api/v1"]) {
      const r = await h.json<{ openapi: string; info: { version: string }; paths: Record<string, unknown> }>(`${base}/openapi.json`, { key: null });
      expect(r.status).toBe(200);
      expect(r.body.openapi).toBe("3.1.0");
      expect(r.body.info.version).toBe("0.1.0");
      const docs = await h.req(`${base}/docs`, { key: null });
      expect(docs.status).toBe(200);
      expect(await docs.text()).toMatch(/openapi\.json/);
    }
  });

  it("the OpenAPI documents list exactly the served routes", async () => {
    const served = new Set<string>();
    for (const r of h.app.routes) {
      if (r.method === "ALL" || r.path.endsWith("/openapi.json") || /\/docs(\/|$)/.test(r.path) || r.path.endsWith("/*")) continue;
      served.add(`${r.method} ${r.path.replace(/:([A-Za-z_]+)/g, "{$1}")}`);
    }
    const documented = new Set<string>();
    for (const base of ["/v1", "/api/v1"]) {
      const doc = (await h.json<{ paths: Record<string, Record<string, unknown>> }>(`${base}/openapi.json`, { key: null })).body;
      for (const [p, ops] of Object.entries(doc.paths)) for (const m of Object.keys(ops)) documented.add(`${m.toUpperCase()} ${base}${p === "/" ? "/" : p}`);
    }
    const norm = (s: Set<string>) => [...s].map((x) => x.replace(/\/$/, "")).sort();
    expect(norm(documented)).toEqual(norm(served));
  });
});
