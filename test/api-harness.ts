/**
 * The API under test: the app created by createApp over the devnet's database (indexed by the
 * global setup; derived tables computed here if no earlier test file did), the registry loaded
 * from the devnet's registry file, a real Redis for rate limits, and API keys (one active, one
 * revoked). Requests go through app.request().
 */
import { join } from "node:path";
import type { Redis } from "ioredis";
import type { Kysely } from "kysely";
import { expect, inject } from "vitest";
import { type App, type CreateAppOptions, createApp } from "../api/app.js";
import { ensureTokenSecret } from "../api/auth/tokens.js";
import { createKey, revokeKey } from "../api/keys.js";
import { createReadDb } from "../api/lib/db.js";
import type { AppDeps } from "../api/lib/router.js";
import { rateLimitRedis, redisReady } from "../api/middleware/rate-limit.js";
import { loadRegistry } from "../config/registry.js";
import { createDb, createPool, migrateToLatest } from "../db/client.js";
import { loadRegistryData } from "../db/registry-load.js";
import type { Database } from "../db/schema.js";
import { jobsConfig } from "../jobs/config.js";
import { fanoutRequester } from "../jobs/request.js";
import { settle, startWorkers } from "../jobs/runtime.js";
import { type RedisInstance, startRedis } from "../scripts/lib/redis.js";
import { PORT_OFFSET, rows, withDb } from "./helpers.js";

export const ALLOWED_ORIGIN = "https://app.example.com";

export interface ApiHarness {
  app: App;
  key: string;
  revokedKey: string;
  /** a writable Kysely on the test database, for setting up and checking rows */
  db: Kysely<Database>;
  devnet: ReturnType<typeof inject<"devnet">>;
  /** GET (or another method) with the active key */
  req(path: string, init?: RequestInit & { key?: string | null }): Promise<Response>;
  json<T = unknown>(
    path: string,
    init?: RequestInit & { key?: string | null },
  ): Promise<{ status: number; body: T; res: Response }>;
  q<T>(sql: string, params?: unknown[]): Promise<T[]>;
  /** another app over the same database and Redis, with some settings changed */
  appWith(config: Partial<AppDeps["config"]>): App;
  /**
   * The key policy of a read the spec leaves unmarked: it answers without a key as with one, a
   * revoked or unknown key is refused (403), and with API_READS_REQUIRE_KEY=1 no key is a 401.
   * With a key it answers `status` (default 200).
   */
  expectOpenRead(path: string, init?: RequestInit, status?: number): Promise<void>;
  /** another app with some dependencies (e.g. the clock) and settings changed */
  appWithDeps(
    deps: Partial<Omit<AppDeps, "config">> & { config?: Partial<AppDeps["config"]> },
    opts?: CreateAppOptions,
  ): App;
  /**
   * another app with its own read pool, as another API process has: nothing the others keep in
   * memory per database handle (the registry's subaccounts, the chains' protocols) is shared
   */
  appApart(config: Partial<AppDeps["config"]>): App;
  redisUrl: string;
  close(): Promise<void>;
}

export interface Answer<T> {
  status: number;
  body: T;
  res: Response;
}

/** An answer's status and body, parsed as JSON when it is JSON (else the text). */
export async function readAnswer<T>(res: Response): Promise<Answer<T>> {
  const text = await res.text();
  let body: unknown = text;
  try {
    body = JSON.parse(text);
  } catch {
    // not JSON: the test sees the text
  }
  return { status: res.status, body: body as T, res };
}

export async function setupApi(opts: { rateLimitPerMinute?: number } = {}): Promise<ApiHarness> {
  const devnet = inject("devnet");
  let redis: RedisInstance;
  try {
    redis = await startRedis({
      port: 63792 + PORT_OFFSET,
      dataDir: join(devnet.dir, "redis-api"),
      logFile: join(devnet.dir, "redis-api.log"),
      replaceLeftover: true, // never the state of a killed run
    });
  } catch (err) {
    throw new Error(`api harness: cannot start Redis: ${(err as Error).message}`);
  }
  const db = createDb(createPool(devnet.dbUrl, 4, "vault-api-test"));
  await migrateToLatest(db);
  await loadRegistryData(db, loadRegistry(devnet.registryFile));
  const [m] = await withDb(devnet.dbUrl, (c) =>
    rows<{ n: string }>(c, "SELECT count(*) AS n FROM derived.vault_metrics"),
  );
  if (Number(m!.n) < 4) {
    const cfg = jobsConfig({ DATABASE_URL: devnet.dbUrl, VAULT_REGISTRY: devnet.registryFile });
    const workers = await startWorkers({ ...cfg, redisUrl: redis.url }, () => {}, Date.now, { schedule: false });
    try {
      await settle(redis.url, 300_000);
    } finally {
      await workers.close();
    }
  }
  const key = (await createKey(db, "api-test")).key;
  const revoked = await createKey(db, "api-test-revoked");
  await revokeKey(db, revoked.id);
  const read = createReadDb(devnet.dbUrl, 10);
  const client: Redis = rateLimitRedis(redis.url); // as npm run api connects
  if (!(await redisReady(client, 10_000))) throw new Error(`api harness: Redis ${redis.url} does not answer`);
  const config: AppDeps["config"] = {
    indexerSchema: "indexer",
    rpcUrls: new Map(devnet.chains.map((c) => [c.chainId, c.rpcUrl])),
    ensResolvers: new Map(devnet.chains.map((c) => [c.chainId, c.ensUniversalResolver])),
    corsOrigins: [ALLOWED_ORIGIN],
    rateLimitPerMinute: opts.rateLimitPerMinute ?? 1_000_000,
    tokenSecret: await ensureTokenSecret(db),
    tokenTtlS: 900,
  };
  const fanout = fanoutRequester(redis.url);
  const deps = (over: Partial<AppDeps> = {}): AppDeps => ({
    db: read.db,
    wdb: db,
    config,
    redis: client,
    requestRecompute: () => fanout.request(),
    now: () => new Date(),
    ...over,
  });
  const app = createApp(deps());
  const req = (path: string, init: RequestInit & { key?: string | null } = {}) => {
    const headers = new Headers(init.headers);
    const k = init.key === undefined ? key : init.key;
    if (k) headers.set("x-api-key", k);
    return Promise.resolve(app.request(path, { ...init, headers }));
  };
  const appWith = (over: Partial<AppDeps["config"]>) => createApp(deps({ config: { ...config, ...over } }));
  const apart: { destroy: () => Promise<void> }[] = [];
  let closedApp: App | undefined;
  const withKey = (k: string | null, init: RequestInit = {}) => {
    const headers = new Headers(init.headers);
    if (k) headers.set("x-api-key", k);
    return { ...init, headers };
  };
  async function expectOpenRead(path: string, init: RequestInit = {}, status = 200) {
    const keyed = await req(path, init);
    expect(keyed.status, `${path} with a key`).toBe(status);
    const none = await req(path, { ...init, key: null });
    expect(none.status, `${path} without a key`).toBe(keyed.status);
    expect(none.status, `${path} without a key`).not.toBe(401);
    for (const k of [revoked.key, `vk_000000000000_${"0".repeat(40)}`]) {
      const r = await readAnswer<{ detail: string }>(await req(path, { ...init, key: k }));
      expect(r.status, `${path} with a bad key`).toBe(403);
      expect(typeof r.body.detail).toBe("string");
    }
    closedApp ??= appWith({ readsRequireKey: true });
    const closed = await readAnswer<{ detail: string }>(await closedApp.request(path, withKey(null, init)));
    expect(closed.status, `${path} without a key, reads closed`).toBe(401);
    expect(closed.res.headers.get("content-type")).toMatch(/application\/json/);
    expect(closed.body.detail).toMatch(/x-api-key/);
    expect((await closedApp.request(path, withKey(key, init))).status).toBe(keyed.status);
  }
  return {
    app,
    key,
    expectOpenRead,
    revokedKey: revoked.key,
    db,
    devnet,
    req,
    async json<T>(path: string, init: RequestInit & { key?: string | null } = {}) {
      return readAnswer<T>(await req(path, init));
    },
    q: <T>(sql: string, params: unknown[] = []) => withDb(devnet.dbUrl, (c) => rows<T>(c, sql, params)),
    appWith,
    appWithDeps: (over, opts) => createApp(deps({ ...over, config: { ...config, ...over.config } }), opts),
    appApart(over) {
      const own = createReadDb(devnet.dbUrl, 2);
      apart.push(own);
      return createApp(deps({ db: own.db, config: { ...config, ...over } }));
    },
    redisUrl: redis.url,
    async close() {
      client.disconnect();
      await fanout.close();
      for (const own of apart) await own.destroy();
      await read.destroy();
      await db.destroy();
      if (!redis.reused) await redis.stop();
    },
  };
}
