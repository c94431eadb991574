/**
 * The API's cross-cutting rules through its real app: health and ping (against Ponder's checkpoint
 * and the jobs' recorded progress), Prometheus metrics, 404s, API keys, CORS, rate-limit headers
 * and 429 (and a Redis that hangs or goes away), malformed JSON, and the OpenAPI documents listing
 * exactly the served routes.
 */
import { randomBytes } from "node:crypto";
import { mkdtempSync, rmSync } from "node:fs";
import type { AddressInfo } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { gunzipSync } from "node:zlib";
import { type Kysely, sql } from "kysely";
import pino from "pino";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createApp, isDatabaseDown } from "../../api/app.js";
import { createKey } from "../../api/keys.js";
import { createReadDb } from "../../api/lib/db.js";
import { REDIS_BACKOFF_MS, REDIS_TIMEOUT_MS, rateLimitRedis, redisReady } from "../../api/middleware/rate-limit.js";
import { PING_DB_TIMEOUT_MS } from "../../api/routes/system/system.handlers.js";
import { jobsConfig } from "../../jobs/config.js";
import { settle, startWorkers } from "../../jobs/runtime.js";
import { startRedis } from "../../scripts/lib/redis.js";
import { ALLOWED_ORIGIN, type ApiHarness, setupApi } from "../api-harness.js";
import { freePort, rpcCall, sleep, tcpRelay, until } from "../helpers.js";
import { dropCredentialTraces } from "../write-helpers.js";

interface Ping {
  status: string;
  checks: {
    database: { ok: boolean; error?: string | null };
    rpc: { chain_id: number; ok: boolean; head: number | null; head_time: string | null }[];
    indexer: {
      chain_id: number;
      indexed_block: number | null;
      indexed_block_time: string | null;
      head: number | null;
      lag_blocks: number | null;
      lag_seconds: number | null;
    }[];
    jobs: {
      last_computed_at: string | null;
      lag_seconds: number | null;
      chains: {
        chain_id: number;
        computed_block: number | null;
        computed_block_time: string | null;
        computed_at: string | null;
        lag_blocks: number | null;
        lag_seconds: number | null;
      }[];
    };
  };
}

/** The indexer's checkpoint per chain, decoded in SQL (docs/schema.md), not by the code under test. */
const checkpoints = () =>
  h.q<{ chain_id: number; block: number; time: string }>(
    `SELECT chain_id::int, substr(latest_checkpoint, 27, 16)::int AS block,
       to_char(to_timestamp(left(latest_checkpoint, 10)::bigint) AT TIME ZONE 'UTC',
         'YYYY-MM-DD"T"HH24:MI:SS.000"Z"') AS time
     FROM indexer._ponder_checkpoint ORDER BY chain_id`,
  );

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

  it("GET /api/v1/ping: database, RPC per chain, indexer lag from Ponder's checkpoint to the head", async () => {
    const r = await h.json<Ping>("/api/v1/ping", { key: null });
    expect(r.status).toBe(200);
    expect(r.body.status).toBe("ok");
    expect(r.body.checks.database.ok).toBe(true);
    expect(r.body.checks.rpc.map((x) => x.chain_id).sort()).toEqual([1, 8453]);
    expect(r.body.checks.rpc.every((x) => x.ok)).toBe(true);
    const cps = await checkpoints();
    expect(cps.map((c) => c.chain_id)).toEqual([1, 8453]);
    for (const cp of cps) {
      const chain = h.devnet.chains.find((c) => c.chainId === cp.chain_id)!;
      const head = Number(BigInt(await rpcCall<string>(chain.rpcUrl, "eth_blockNumber")));
      const i = r.body.checks.indexer.find((x) => x.chain_id === cp.chain_id)!;
      expect(i).toMatchObject({
        indexed_block: cp.block,
        indexed_block_time: cp.time,
        head,
        lag_blocks: head - cp.block,
      });
      expect(i.lag_seconds).toBeGreaterThanOrEqual(0);
      expect(r.body.checks.rpc.find((x) => x.chain_id === cp.chain_id)!.head).toBe(head);
    }
  });

  it("GET /api/v1/ping: jobs say which checkpoint the derived tables are computed from, and their lag", async () => {
    const cfg = jobsConfig({ DATABASE_URL: h.devnet.dbUrl, VAULT_REGISTRY: h.devnet.registryFile });
    const workers = await startWorkers({ ...cfg, redisUrl: h.redisUrl }, () => {}, Date.now, { schedule: false });
    try {
      await settle(h.redisUrl, 300_000); // a fan-out that finds nothing new records the checkpoint it saw
    } finally {
      await workers.close();
    }
    const cps = await checkpoints();
    const progress = await h.q<{ chain_id: number; block: number; computed_at: Date }>(
      "SELECT chain_id, block_number::int AS block, computed_at FROM derived.jobs_progress ORDER BY chain_id",
    );
    expect(progress.map((p) => [p.chain_id, p.block])).toEqual(cps.map((c) => [c.chain_id, c.block]));
    const newest = new Date(Math.max(...progress.map((p) => p.computed_at.getTime()))).toISOString();

    // Up to date: no lag, however long ago the chains' last blocks were (a quiet chain, the clock days on).
    for (const app of [h.app, h.appWithDeps({ now: () => new Date(Date.now() + 7 * 86_400_000) })]) {
      const { jobs } = ((await (await app.request("/api/v1/ping")).json()) as Ping).checks;
      expect(jobs.last_computed_at).toBe(newest);
      expect(jobs.lag_seconds).toBe(0);
      for (const cp of cps) {
        expect(jobs.chains.find((j) => j.chain_id === cp.chain_id)).toMatchObject({
          computed_block: cp.block,
          computed_block_time: cp.time,
          lag_blocks: 0,
          lag_seconds: 0,
        });
      }
    }

    // Derived tables computed from 5 blocks and 60 s before the indexer's checkpoint on chain 1.
    const shift = (sign: "+" | "-") =>
      h.q(`UPDATE derived.jobs_progress
           SET block_number = block_number ${sign} 5, block_time = block_time ${sign} interval '60 s'
           WHERE chain_id = 1`);
    await shift("-");
    try {
      const { jobs } = (await h.json<Ping>("/api/v1/ping", { key: null })).body.checks;
      const chain1 = jobs.chains.find((j) => j.chain_id === 1);
      expect(chain1).toMatchObject({ computed_block: cps[0]!.block - 5, lag_blocks: 5, lag_seconds: 60 });
      expect(jobs.chains.find((j) => j.chain_id === 8453)).toMatchObject({ lag_blocks: 0, lag_seconds: 0 });
      expect(jobs.lag_seconds).toBe(60);
    } finally {
      await shift("+");
    }
  });

  it("GET /metrics: Prometheus text, requests counted by route pattern, no key, no rate limit", async () => {
    const app = h.appWith({}); // an app counts into its own registry
    const vaults = await h.q<{ address: string }>(
      "SELECT DISTINCT address FROM indexer.vault ORDER BY address LIMIT 2",
    );
    expect(vaults).toHaveLength(2);
    for (const v of vaults) {
      const url = `/api/v1/vaults/${v.address}/pending-redemptions`;
      const r = await app.request(url, { headers: { "x-api-key": h.key } });
      expect(r.status).toBe(200);
    }
    expect((await app.request("/api/v1/no/such/route", { headers: { "x-api-key": h.key } })).status).toBe(404);
    for (let i = 0; i < 3; i++) expect((await app.request("/metrics")).status).toBe(200);
    const limited = h.appWith({ rateLimitPerMinute: 1 });
    for (let i = 0; i < 3; i++) expect((await limited.request("/metrics")).status).toBe(200); // no key, no limit
    const res = await app.request("/metrics");
    expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    const count = (labels: string) =>
      Number(text.match(new RegExp(`^http_requests_total\\{${labels}\\} (\\d+)$`, "m"))?.[1] ?? 0);
    const route = "/api/v1/vaults/:vault_address/pending-redemptions";
    expect(count(`method="GET",route="${route}",status="200"`)).toBe(2);
    expect(count(`method="GET",route="unmatched",status="404"`)).toBe(1);
    expect(count(`method="GET",route="/metrics",status="200"`)).toBe(3);
    const inf = `http_request_duration_seconds_bucket\\{le="\\+Inf",method="GET",route="${route}",status="200"\\}`;
    expect(text).toMatch(new RegExp(`^${inf} 2$`, "m"));
    for (const v of vaults) expect(text).not.toContain(v.address);
    expect(text).toMatch(/^process_cpu_user_seconds_total /m);
    expect((await h.appWith({ metrics: false }).request("/metrics")).status).toBe(404);
  });

  it("with the database down, ping says so with 503 and routes answer 503, never 500", async () => {
    const dead = createReadDb("postgresql://nobody@127.0.0.1:1/none", 1);
    try {
      const app = createApp({
        db: dead.db,
        config: { indexerSchema: "indexer", rpcUrls: new Map(), corsOrigins: [], rateLimitPerMinute: 1000 },
        redis: null,
        now: () => new Date(),
      });
      const ping = await app.request("/api/v1/ping");
      expect(ping.status).toBe(503);
      const body = (await ping.json()) as { status: string; checks: { database: { ok: boolean; error: string } } };
      expect(body.status).toBe("down");
      expect(body.checks.database.ok).toBe(false);
      const list = await app.request("/v1/tokenized_vaults");
      expect(list.status).toBe(503);
      expect(((await list.json()) as { detail: string }).detail).toMatch(/database/);
      // every read of both surfaces, asked well-formed: 503, never a 404 or 200 made of a failed query
      const vault = `0x${"12".repeat(20)}`;
      const fill: Record<string, string> = {
        chain: "1",
        tx_hash: `0x${"ab".repeat(32)}`,
        core_hash: `0x${"ab".repeat(32)}`,
      };
      for (const prefix of ["/v1", "/api/v1"]) {
        const doc = (await (await app.request(`${prefix}/openapi.json`)).json()) as {
          paths: Record<string, Record<string, { parameters?: { name: string; in: string; required?: boolean }[] }>>;
        };
        for (const [path, ops] of Object.entries(doc.paths)) {
          const op = ops.get;
          if (!op || path === "/" || path === "/ping") continue;
          const q = new URLSearchParams();
          for (const p of op.parameters ?? []) if (p.in === "query" && p.required) q.set(p.name, fill[p.name] ?? vault);
          const url = `${prefix}${path.replace(/\{[a-z_]+\}/g, (m) => (m === "{chain}" ? "1" : vault))}?${q}`;
          // the open reads without a key, so their own queries are the ones that fail; the routes
          // that want a key with one (its check is then the query that fails)
          let r = await app.request(url);
          if (r.status === 401) r = await app.request(url, { headers: { "x-api-key": h.key } });
          expect(r.status, url).toBe(503);
        }
      }
    } finally {
      await dead.destroy();
    }
  });

  it("ping states what failed without the URLs or credentials it failed with", async () => {
    const dead = createReadDb("postgresql://nobody:pw-SECRET@127.0.0.1:1/none", 1);
    try {
      const rpcUrls = new Map([[8453, "http://127.0.0.1:1/v2/KEY-SECRET"]]);
      const app = createApp({
        db: dead.db,
        config: { indexerSchema: "indexer", rpcUrls, corsOrigins: [], rateLimitPerMinute: 1000 },
        redis: null,
        now: () => new Date(),
      });
      const ping = await app.request("/api/v1/ping");
      expect(ping.status).toBe(503);
      const text = await ping.text();
      expect(text).not.toMatch(/SECRET|127\.0\.0\.1|nobody/);
      const { checks } = JSON.parse(text) as Ping;
      expect(checks.database.error).toBe("the database cannot be reached (ECONNREFUSED)");
      expect(checks.rpc).toEqual([expect.objectContaining({ chain_id: 8453, ok: false, error: expect.any(String) })]);
    } finally {
      await dead.destroy();
    }
  });

  it("with the database hanging (connected, answering nothing), ping and routes answer 503 within their bounds", async () => {
    // a relay to the devnet's Postgres that can stop passing bytes on: connections stay open
    const { server: relay, hold, release } = tcpRelay(new URL(h.devnet.dbUrl));
    await new Promise<void>((r) => relay.listen(0, "127.0.0.1", () => r()));
    const port = (relay.address() as AddressInfo).port;
    const dbUrl = new URL(h.devnet.dbUrl);
    dbUrl.host = `127.0.0.1:${port}`;
    // the API's bounds, shorter: the same mechanism in less time
    const timeouts = { connectMs: 1_000, statementMs: 1_000, queryMs: 1_500 };
    const read = createReadDb(dbUrl.toString(), 2, timeouts);
    const pools = [read];
    try {
      const app = h.appWithDeps({ db: read.db });
      expect((await app.request("/v1/tokenized_vaults")).status).toBe(200); // connected through the relay
      hold();
      const timed = async (path: string) => {
        const t0 = performance.now();
        const r = await app.request(path, { headers: { "x-api-key": h.key } });
        return { status: r.status, ms: performance.now() - t0, body: (await r.json()) as Record<string, unknown> };
      };
      // a key no request has sent yet, so its lookup reaches the database: the liveness root
      // does not look it up (the rate limiter waits for it briefly), a read waits for one lookup
      const unseen = `vk_${randomBytes(6).toString("hex")}_${"0".repeat(40)}`;
      const t1 = performance.now();
      expect((await app.request("/v1/", { headers: { "x-api-key": unseen } })).status).toBe(200);
      expect(performance.now() - t1).toBeLessThan(1_000);
      const t2 = performance.now();
      const keyed = await app.request("/v1/tokenized_vaults", { headers: { "x-api-key": unseen } });
      expect(keyed.status).toBe(503);
      expect(performance.now() - t2).toBeLessThan(timeouts.queryMs + 800); // one lookup's bound, not two
      // the ping's own bound, shorter than a pool's, whatever key it is sent
      const patient = createReadDb(dbUrl.toString(), 1, { connectMs: 20_000, statementMs: 20_000, queryMs: 20_000 });
      pools.push(patient);
      const t0 = performance.now();
      const ping = await h.appWithDeps({ db: patient.db }).request("/api/v1/ping", {
        headers: { "x-api-key": `vk_${randomBytes(6).toString("hex")}_${"1".repeat(40)}` },
      });
      expect(performance.now() - t0).toBeLessThan(PING_DB_TIMEOUT_MS + 1_000);
      expect(ping.status).toBe(503);
      const body = (await ping.json()) as { status: string; checks: { database: { error: string } } };
      expect(body.status).toBe("down");
      expect(body.checks.database.error).toBe("the database did not answer within 3 s");
      // a read: its connection's answer is late (query timeout), then no connection is free (connect)
      for (const path of ["/v1/tokenized_vaults", "/api/v1/platform/strategist", "/v1/tokenized_vaults"]) {
        const r = await timed(path);
        expect(r.status, path).toBe(503);
        expect(r.body.detail, path).toMatch(/database/);
        expect(r.ms, path).toBeLessThan(timeouts.queryMs + timeouts.connectMs + 1_000);
      }
      // it answers again: the held bytes pass, the connections come back
      release();
      await until("an answer again", 15_000, async () =>
        (await app.request("/v1/tokenized_vaults")).status === 200 ? true : undefined,
      );
    } finally {
      release();
      for (const p of pools) await p.destroy();
      relay.close();
    }
  });

  it("the API's pool has the server cancel a statement past its statement_timeout, which answers 503", async () => {
    const read = createReadDb(h.devnet.dbUrl, 1, { connectMs: 1_000, statementMs: 100, queryMs: 5_000 });
    try {
      const db = read.db as unknown as Kysely<unknown>;
      const code = await sql`SELECT pg_sleep(0.5)`.execute(db).then(
        () => "answered",
        (e: { code?: string }) => e.code,
      );
      expect(code).toBe("57014"); // query_canceled
      expect(isDatabaseDown({ code })).toBe(true);
      expect((await sql<{ one: number }>`SELECT 1 AS one`.execute(db)).rows).toEqual([{ one: 1 }]);
    } finally {
      await read.destroy();
    }
  });

  it("unknown paths answer 404 with a JSON body", async () => {
    const r = await h.json<{ detail: string }>("/api/v1/no/such/route");
    expect(r.status).toBe(404);
    expect(r.body.detail).toBe("Not Found");
  });

  it("a served path asked with another method answers 405 with the methods it takes", async () => {
    for (const [method, path, allow] of [
      ["POST", "/api/v1/tokenized_vault", "GET, HEAD"],
      ["DELETE", "/v1/tokenized_vaults/", "GET, HEAD"],
      ["GET", "/api/v1/token", "POST"],
      ["PUT", "/api/v1/platform/strategy_apy", "GET, HEAD, POST"],
      ["PATCH", "/api/v1/integrations/perp_relayer_a/deposit", "POST"],
    ] as const) {
      const r = await h.app.request(path, { method });
      expect(r.status, `${method} ${path}`).toBe(405);
      expect(r.headers.get("allow"), `${method} ${path}`).toBe(allow);
      expect(await r.json()).toEqual({ detail: "Method Not Allowed" });
    }
    // the methods a path takes still answer
    expect((await h.app.request("/api/v1/tokenized_vault", { method: "HEAD" })).status).toBe(200);
    expect((await h.app.request("/api/v1/no/such/route", { method: "POST" })).status).toBe(404);
  });

  it("a body that is not JSON, or not sent as JSON, answers 422", async () => {
    const url = "/api/v1/vaults/pending-redemptions";
    const bad = await h.json<{ detail: { loc: string[]; type: string }[] }>(url, {
      method: "POST",
      body: "{not json",
      headers: { "content-type": "application/json" },
    });
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0]!.loc).toEqual(["body"]);
    const text = await h.json<{ detail: { loc: string[] }[] }>(url, {
      method: "POST",
      body: "vault_addresses=x",
      headers: { "content-type": "text/plain" },
    });
    expect(text.status).toBe(422);
    expect(text.body.detail[0]!.loc).toEqual(["body"]);
  });

  it("API keys on a read: open without, 403 with a wrong or revoked one, 401 when reads are closed", async () => {
    const url = "/api/v1/platform/unrealized_pnl/latest";
    expect((await h.json(url)).status).toBe(200);
    expect((await h.json(url, { key: null })).status).toBe(200);
    await h.expectOpenRead(url);
    expect((await h.json(url, { key: h.revokedKey })).status).toBe(403);
    expect((await h.json(url, { key: `vk_000000000000_${"0".repeat(40)}` })).status).toBe(403);
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
    for (const app of [a, b, a, b])
      statuses.push((await app.request("/v1/", { headers: { "x-api-key": key } })).status);
    expect(statuses).toEqual([200, 200, 200, 429]);
    const r = await a.request("/v1/", { headers: { "x-api-key": key } });
    expect(r.status).toBe(429);
    expect(((await r.json()) as { detail: string }).detail).toMatch(/Rate limit exceeded/);
    expect(Number(r.headers.get("retry-after"))).toBeGreaterThan(0);
    expect(r.headers.get("ratelimit-remaining")).toBe("0");
  });

  it("made-up keys count against the client's address: a new key per request gets no limit of its own", async () => {
    const app = h.appWith({ rateLimitPerMinute: 3, trustProxyHops: 1 });
    const client = `10.77.${Date.now() % 250}.${Math.floor(Math.random() * 250)}`; // a fresh address
    const headers = (key?: string) => ({ "x-forwarded-for": client, ...(key ? { "x-api-key": key } : {}) });
    const statuses: number[] = [];
    for (let i = 0; i < 4; i++) {
      const key = `vk_${String(i).padStart(12, "0")}_${"0".repeat(40)}`;
      statuses.push((await app.request("/v1/tokenized_vaults", { headers: headers(key) })).status);
    }
    expect(statuses).toEqual([403, 403, 403, 429]);
    // the token route too, which reads no key: a password guess per made-up key is still counted
    const guess = await app.request("/api/v1/token", {
      method: "POST",
      headers: { ...headers("vk_made_up"), "content-type": "application/x-www-form-urlencoded" },
      body: "grant_type=password&username=nobody&password=guess",
    });
    expect(guess.status).toBe(429);
    // a genuine key keeps a counter of its own
    const { key } = await createKey(h.db, `rate-limit-genuine-${Date.now()}`);
    expect((await app.request("/v1/", { headers: headers(key) })).status).toBe(200);
  });

  it("a Redis that hangs, then goes away: requests answer at once, counted in the process, then in Redis again", async () => {
    const dir = mkdtempSync(join(tmpdir(), "api-rl-redis-"));
    const inst = await startRedis({ port: await freePort(), dataDir: dir, logFile: join(dir, "redis.log") });
    const redis = rateLimitRedis(inst.url);
    expect(await redisReady(redis, 5000)).toBe(true);
    const logged: string[] = [];
    const logger = pino({ level: "warn" }, { write: (line: string) => logged.push(JSON.parse(line).msg) });
    const limit = 100; // batches of one: every request asks Redis
    const app = h.appWithDeps({ redis, config: { rateLimitPerMinute: limit } }, { logger });
    const { key } = await createKey(h.db, `rate-limit-redis-${Date.now()}`);
    const timed = async () => {
      const t0 = performance.now();
      const r = await app.request("/v1/", { headers: { "x-api-key": key } });
      return { status: r.status, ms: performance.now() - t0 };
    };
    try {
      expect((await timed()).status).toBe(200);
      expect(await redis.keys("vaults:api-rl:key:*")).toHaveLength(1); // the key's counter, in Redis
      const pid = inst.process!.pid;
      process.kill(pid, "SIGSTOP"); // hung: connected, answering nothing
      try {
        // one request waits out the command timeout; the rest, counted in the process, do not wait
        const hung = [];
        for (let i = 0; i < 30; i++) hung.push(await timed());
        expect(hung.map((r) => r.status)).toEqual(hung.map(() => 200));
        expect(Math.max(...hung.map((r) => r.ms))).toBeLessThan(REDIS_TIMEOUT_MS + 1500);
        expect(hung.filter((r) => r.ms >= REDIS_TIMEOUT_MS).length).toBeLessThanOrEqual(1);
        expect(logged.filter((m) => m.startsWith("rate limits: Redis failed"))).toHaveLength(1);
        expect(logged[0]).toMatch(/timed out/i);
      } finally {
        process.kill(pid, "SIGCONT");
      }
      // back: after the backoff, counted in Redis again
      await sleep(REDIS_BACKOFF_MS + 200);
      await until("a request counted in Redis", 10_000, async () => {
        await timed();
        return logged.includes("rate limits: Redis answers again; counting there") ? true : undefined;
      });
      // gone: refused at once (no offline queue), counted in the process
      await inst.stop();
      await sleep(REDIS_BACKOFF_MS + 200);
      const gone = [];
      for (let i = 0; i < 30; i++) gone.push(await timed());
      expect(gone.map((r) => r.status)).toEqual(gone.map(() => 200));
      expect(Math.max(...gone.map((r) => r.ms))).toBeLessThan(1000);
      expect(logged.filter((m) => m.startsWith("rate limits: Redis failed"))).toHaveLength(2);
    } finally {
      redis.disconnect();
      await inst.stop();
      rmSync(dir, { recursive: true, force: true });
    }
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
    // a POST that reads (the pending redemptions) and a HEAD keep it
    const read = await app.request("/api/v1/vaults/pending-redemptions", {
      method: "POST",
      body: "{}",
      headers: { "x-api-key": h.key, "content-type": "application/json" },
    });
    expect(read.status).toBe(200);
    const head = await app.request("/api/v1/platform/strategist", { method: "HEAD", headers: { "x-api-key": h.key } });
    expect(head.headers.get("x-cache")).toBe("hit");
    expect(head.headers.get("etag")).toBe(again.headers.get("etag"));
    expect((await get(h.key)).headers.get("x-cache")).toBe("hit");
    // a write that commits clears it
    const rk = await createKey(h.db, "cache-test-rewards", ["rewards:write"]);
    const [v] = await h.q<{ chain_id: number; address: string }>(
      "SELECT chain_id, address FROM indexer.vault ORDER BY chain_id, address LIMIT 1",
    );
    const write = await app.request("/api/v1/tokenized_vault/rewards", {
      method: "POST",
      body: JSON.stringify({
        vault_address: v!.address,
        chain_id: v!.chain_id,
        text: "cache test",
        multiplier: 2,
        start_datetime: "2031-01-01T00:00:00Z",
        end_datetime: "2031-02-01T00:00:00Z",
      }),
      headers: { "x-api-key": rk.key, "content-type": "application/json" },
    });
    expect(write.status, await write.clone().text()).toBe(200);
    const fresh = await get(h.key);
    expect(fresh.headers.get("x-cache")).toBeNull();
    expect(await fresh.text()).not.toBe(before);
    await h.q("DELETE FROM registry.strategist WHERE name LIKE 'Cache test %'");
    await h.q("DELETE FROM registry.reward WHERE id = $1", [((await write.json()) as { id: string }).id]);
    await dropCredentialTraces(h, [rk.id]);
  });

  it("the ping is never a stored answer: it reads the state it reports each time", async () => {
    const app = h.appWith({ responseCacheMs: 60_000 });
    for (let i = 0; i < 2; i++) {
      const r = await app.request("/api/v1/ping");
      expect(r.status).toBe(200);
      expect(r.headers.get("x-cache")).toBeNull();
      expect(r.headers.get("etag")).toBeNull();
    }
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
    const refused = await app.request(url, {
      headers: { "x-api-key": h.key, "accept-encoding": "gzip;q=0, identity" },
    });
    expect(refused.headers.get("content-encoding")).toBeNull();
    expect(await refused.text()).toBe(text);
  });

  it("CORS headers only for whitelisted origins; other preflights are refused", async () => {
    const ok = await h.req("/v1/", { key: null, headers: { origin: ALLOWED_ORIGIN } });
    expect(ok.headers.get("access-control-allow-origin")).toBe(ALLOWED_ORIGIN);
    const other = await h.req("/v1/", { key: null, headers: { origin: "https://evil.example" } });
    expect(other.headers.get("access-control-allow-origin")).toBeNull();
    // no CORS header at all for it, exposed headers included
    expect([...other.headers.keys()].filter((k) => k.startsWith("access-control-"))).toEqual([]);
    expect(other.headers.get("vary")).toMatch(/Origin/);
    const pre = await h.req("/api/v1/ping", {
      key: null,
      method: "OPTIONS",
      headers: { origin: "https://evil.example", "access-control-request-method": "GET" },
    });
    expect(pre.status).toBe(403);
    const pre2 = await h.req("/api/v1/ping", {
      key: null,
      method: "OPTIONS",
      headers: { origin: ALLOWED_ORIGIN, "access-control-request-method": "GET" },
    });
    expect(pre2.status).toBe(204);
    expect(pre2.headers.get("access-control-allow-headers")).toMatch(/x-api-key/);
  });

  it("OpenAPI 3.1 documents, version 0.1.0, and reference pages", async () => {
    for (const base of ["/v1", "/api/v1"]) {
      const r = await h.json<{ openapi: string; info: { version: string }; paths: Record<string, unknown> }>(
        `${base}/openapi.json`,
        { key: null },
      );
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
      if (
        r.method === "ALL" ||
        r.path.endsWith("/openapi.json") ||
        /\/docs(\/|$)/.test(r.path) ||
        r.path.endsWith("/*")
      )
        continue;
      if (r.path === "/metrics") continue; // Prometheus, outside both surfaces and their documents
      served.add(`${r.method} ${r.path.replace(/:([A-Za-z_]+)/g, "{$1}")}`);
    }
    const documented = new Set<string>();
    for (const base of ["/v1", "/api/v1"]) {
      const doc = (
        await h.json<{ paths: Record<string, Record<string, unknown>> }>(`${base}/openapi.json`, { key: null })
      ).body;
      for (const [p, ops] of Object.entries(doc.paths))
        for (const m of Object.keys(ops)) documented.add(`${m.toUpperCase()} ${base}${p === "/" ? "/" : p}`);
    }
    const norm = (s: Set<string>) => [...s].map((x) => x.replace(/\/$/, "")).sort();
    expect(norm(documented)).toEqual(norm(served));
  });
});
