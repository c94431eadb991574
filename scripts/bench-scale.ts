/**
 * npm run bench:scale -- <vaults>x<days>: how backfill time, database size and the jobs' full
 * recompute grow with vaults and days (docs/performance.md, "Scaling benchmark").
 *
 * For one size, on fresh processes: anvil chains (two vaults each, the demo's pairs, with their
 * protocol world) simulated over <days> days by the devnet simulator, then
 *   1. the indexer (Ponder, cold RPC cache) timed from spawn until every chain is indexed to its
 *      head and the `indexer` views point at the deployment (publishAtHead, as `npm run indexer`);
 *   2. the workers' first computation of every derived table from empty (the start-up fan-out's
 *      full comparison, then the points rollup: `settle`, as the demo waits for it);
 *   3. the size of every schema (pg_total_relation_size: tables, their indexes and TOAST), rows
 *      per table, and bytes per vault-day.
 * The result is kept in .data/bench-scale/results/<vaults>x<days>.json; the table printed at the
 * end lists every kept result and the straight-line fit of each measure against vault-days.
 * The last line is `scale-bench: <size>: backfill=<s> events=<n> db=<bytes> per_vault_day=<bytes>
 * recompute=<s>`.
 */
import { existsSync, mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { loadavg } from "node:os";
import { join } from "node:path";
import type pg from "pg";
import type { WorkerHandle } from "../jobs/runtime.js";
import { type Command, HELP_OPTION, parseCommandLine, refuse, settings } from "./lib/cli.js";
import type { IndexerOptions } from "./lib/indexer.js";
import { REPO_ROOT } from "./lib/paths.js";
import { errMessage, installSignalHandlers, stopAll } from "./lib/procs.js";
import {
  chainsFor,
  chainVaultDayFit,
  formatBytes,
  type LinearFit,
  linearFit,
  parseSize,
  type ScaleSize,
  VAULTS_PER_CHAIN,
} from "./lib/scale.js";

const CMD: Command = {
  name: "bench:scale",
  usage: "usage: npm run bench:scale -- <vaults>x<days>   (e.g. 8x60)\n       npm run bench:scale -- --report",
  help:
    `
Simulates <vaults> vaults (two per anvil chain, up to 16 on 8 chains) over <days> days (7 to 365),
then times the indexer's backfill to the chain heads and the workers' first full computation of
the derived tables, and measures the database (bytes per schema and per vault-day, rows per
table). Everything runs on fresh processes under .data/bench-scale/run (wiped first); the result
is kept in .data/bench-scale/results/<size>.json, and the table printed at the end lists every
kept result with the straight-line fit of each measure against vault-days, and apart per chain
and per vault-day when the sizes allow it. --report prints that table only. ` +
    `Run one size at a time on an otherwise idle machine (flock /tmp/bench.lock ...).

Environment (optional): BENCH_SCALE_PG_PORT (54390), BENCH_SCALE_ANVIL_PORT (18900; chain i takes
this + i), BENCH_SCALE_REDIS_PORT (63797), BENCH_SCALE_INDEXER_PORT (42195), BENCH_SCALE_SEED
("scale"), BENCH_SCALE_WALLETS (50 per chain), BENCH_SCALE_TIMEOUT_S (600 per phase).`,
};

const BENCH_DIR = join(REPO_ROOT, ".data", "bench-scale");
const RUN_DIR = join(BENCH_DIR, "run");
const LOG_DIR = join(RUN_DIR, "logs");
const RESULTS_DIR = join(BENCH_DIR, "results");
const DATABASE = "bench_scale";

const t0 = Date.now();
const say = (msg: string) => console.log(`[scale ${((Date.now() - t0) / 1000).toFixed(1).padStart(6)}s] ${msg}`);

interface SchemaSize {
  schema: string;
  bytes: number;
  tables: { name: string; rows: number; bytes: number }[];
}

interface ScaleResult {
  size: ScaleSize;
  vaultDays: number;
  code: string;
  date: string;
  /** load average (1 min) when the run started and ended */
  load: [number, number];
  chains: { chainId: number; head: number; txs: number }[];
  simulateSeconds: number;
  backfillSeconds: number;
  /** Ponder's completed log events (block and setup events excluded) and block (snapshot) events */
  logEvents: number;
  blockEvents: number;
  recomputeSeconds: number;
  recomputeRuns: number;
  deploymentSchema: string;
  /** the deployment schema (indexed rows), derived, registry, ops, ponder_sync (Ponder's RPC cache) */
  schemas: SchemaSize[];
  databaseBytes: number;
}

async function main(): Promise<void> {
  const { values, positionals } = parseCommandLine(CMD, {
    options: { ...HELP_OPTION, report: { type: "boolean" } },
    allowPositionals: true,
  });
  // loaded after the command line, the bench's modules after its settings: --help and refusals load nothing else
  const cfg = await settings(CMD, ({ z, envNum }) =>
    z.object({
      BENCH_SCALE_PG_PORT: envNum((n) => n.int().min(1).max(65535)).default(54390),
      BENCH_SCALE_ANVIL_PORT: envNum((n) => n.int().min(1).max(65520)).default(18900),
      BENCH_SCALE_REDIS_PORT: envNum((n) => n.int().min(1).max(65535)).default(63797),
      BENCH_SCALE_INDEXER_PORT: envNum((n) => n.int().min(1).max(65535)).default(42195),
      BENCH_SCALE_SEED: z.string().min(1).default("scale"),
      BENCH_SCALE_WALLETS: envNum((n) => n.int().min(50).max(500)).default(50),
      BENCH_SCALE_TIMEOUT_S: envNum((n) => n.int().positive()).default(600),
    }),
  );
  if (values.report) {
    if (positionals.length > 0) refuse(CMD, "--report takes no size");
    printTable(readResults());
    return;
  }
  if (positionals.length !== 1) refuse(CMD, "give one size, <vaults>x<days> (e.g. 8x60)");
  const size = parseSize(positionals[0]!);
  if (typeof size === "string") refuse(CMD, size);
  const [
    { default: pg },
    { parseMetrics, summarise },
    { loadRegistry },
    { DEVNET_CHAINS, genesisTimestamp, runDevnet, VAULT_SPECS },
    { createDb, createPool, migrateToLatest },
    { loadRegistryData },
    { jobsConfig },
    { settle, startWorkers },
    { assertPortFree, startAnvil },
    { gitDescribe },
    { publishAtHead, startIndexer, VIEWS_SCHEMA },
    { recreateDatabase, startEmbeddedPostgres },
    { startRedis },
  ] = await Promise.all([
    import("pg"),
    import("../bench/metrics.js"),
    import("../config/registry.js"),
    import("../contracts/devnet/index.js"),
    import("../db/client.js"),
    import("../db/registry-load.js"),
    import("../jobs/config.js"),
    import("../jobs/runtime.js"),
    import("./lib/anvil.js"),
    import("./lib/git.js"),
    import("./lib/indexer.js"),
    import("./lib/postgres.js"),
    import("./lib/redis.js"),
  ]);

  installSignalHandlers();
  rmSync(RUN_DIR, { recursive: true, force: true });
  mkdirSync(LOG_DIR, { recursive: true });
  mkdirSync(RESULTS_DIR, { recursive: true });
  const load0 = loadavg()[0]!;
  const code = gitDescribe();
  say(
    `size ${size.vaults}x${size.days}: ${size.vaults} vaults x ${size.days} days; code ${code}; load ` +
      `${load0.toFixed(2)}`,
  );

  const plan = chainsFor(size);
  const ports = plan.map((_, i) => cfg.BENCH_SCALE_ANVIL_PORT + i);
  for (const p of [cfg.BENCH_SCALE_PG_PORT, cfg.BENCH_SCALE_REDIS_PORT, cfg.BENCH_SCALE_INDEXER_PORT, ...ports])
    await assertPortFree("127.0.0.1", p, "bench:scale");

  // ---- processes ------------------------------------------------------------------------------
  say(`starting embedded Postgres on 127.0.0.1:${cfg.BENCH_SCALE_PG_PORT} (data .data/bench-scale/run/postgres)`);
  const pgi = await startEmbeddedPostgres({
    port: cfg.BENCH_SCALE_PG_PORT,
    dataDir: join(RUN_DIR, "postgres"),
    database: "postgres",
    logFile: join(LOG_DIR, "postgres.log"),
  });
  const dbUrl = await recreateDatabase(pgi.adminUrl, DATABASE);

  const endTime = Math.floor(Date.now() / 1000);
  const devnet = await Promise.all(
    plan.map(async (c, i) => {
      const template = DEVNET_CHAINS.find((d) => d.chainId === c.template)!;
      const a = await startAnvil({
        chainId: c.chainId,
        port: ports[i]!,
        genesisTimestamp: genesisTimestamp(endTime, size.days),
        logFile: join(LOG_DIR, `anvil-${c.chainId}.log`),
      });
      return {
        chainId: c.chainId,
        rpcUrl: a.rpcUrl,
        blockTime: template.blockTime,
        snapshotInterval: template.snapshotInterval,
        vaultSpecs: VAULT_SPECS.filter((v) => v.chainId === c.template).map((v) => ({ ...v, chainId: c.chainId })),
      };
    }),
  );
  say(`anvil chains ${devnet.map((c) => `${c.chainId}@${c.rpcUrl}`).join(", ")}`);

  // ---- chain data -----------------------------------------------------------------------------
  const registryFile = join(RUN_DIR, "vaults.json");
  const simStart = performance.now();
  const manifest = await runDevnet({
    seed: cfg.BENCH_SCALE_SEED,
    days: size.days,
    endTime,
    wallets: cfg.BENCH_SCALE_WALLETS,
    chains: devnet,
    manifestPath: join(RUN_DIR, "manifest.json"),
    registryPath: registryFile,
    log: (m) => {
      if (!/: day \d+\//.test(m) || /day (\d+)\/\d+ .*/.exec(m)?.[1]?.endsWith("0")) say(m);
    },
  });
  const simulateSeconds = (performance.now() - simStart) / 1000;
  const evmVaults = loadRegistry(registryFile).evm.length;
  if (evmVaults !== size.vaults) throw new Error(`the simulator deployed ${evmVaults} vaults, not ${size.vaults}`);
  say(
    `simulated in ${simulateSeconds.toFixed(0)} s: ` +
      `${manifest.chains.map((c) => `chain ${c.chainId} ${c.headBlock} blocks, ${c.txCount} txs`).join("; ")}`,
  );

  // ---- 1. backfill ----------------------------------------------------------------------------
  let exited: string | undefined;
  const indexerOptions: IndexerOptions = {
    databaseUrl: dbUrl,
    registryFile,
    chains: devnet.map((c) => ({ chainId: c.chainId, rpcUrl: c.rpcUrl, snapshotInterval: c.snapshotInterval })),
    port: cfg.BENCH_SCALE_INDEXER_PORT,
    logFile: join(LOG_DIR, "indexer.log"),
    onExit: (c, s) => (exited = s ?? `code ${c}`),
  };
  say("indexing (cold RPC cache, fresh database)");
  const backfillStart = performance.now();
  const indexer = startIndexer(indexerOptions);
  let lastNote = 0;
  const { progress } = await publishAtHead(indexerOptions, indexer, {
    timeoutMs: cfg.BENCH_SCALE_TIMEOUT_S * 1000,
    isAlive: () => exited === undefined,
    onProgress: (p, ready) => {
      const now = performance.now();
      if (now - lastNote < 15_000) return;
      lastNote = now;
      say(
        `indexing: ` +
          `${p.map((c) => `${c.chainId} ${c.indexed}/${c.head ?? "?"}`).join(", ")}${ready ? " (backfill done)" : ""}`,
      );
    },
  });
  const backfillSeconds = (performance.now() - backfillStart) / 1000;
  const metricsText = await (await fetch(`${indexer.url}/metrics`)).text();
  writeFileSync(join(LOG_DIR, "indexer-metrics.txt"), metricsText);
  const m = summarise(parseMetrics(metricsText));
  say(
    `indexed to the heads in ${backfillSeconds.toFixed(1)} s: ${m.logEvents} log events, ${m.blockEvents} block ` +
      `events ` +
      `(${Math.round(m.logEvents / backfillSeconds)} log events/s); views "${VIEWS_SCHEMA}" show ${indexer.schema}`,
  );
  await indexer.stop();

  // ---- 2. the workers' first full computation ----------------------------------------------------
  const redis = await startRedis({
    port: cfg.BENCH_SCALE_REDIS_PORT,
    dataDir: join(RUN_DIR, "redis"),
    logFile: join(LOG_DIR, "redis.log"),
    name: "bench-scale-redis",
  });
  const jobsCfg = {
    ...jobsConfig({ DATABASE_URL: dbUrl, INDEXER_SCHEMA: VIEWS_SCHEMA, VAULT_REGISTRY: registryFile }),
    redisUrl: redis.url,
  };
  // The registry tables, as `npm run indexer` loads them before indexing (migrations first).
  const regDb = createDb(createPool(dbUrl, 1, "bench-scale-registry"));
  await migrateToLatest(regDb);
  await loadRegistryData(regDb, loadRegistry(registryFile));
  await regDb.destroy();
  say("workers: first computation of every derived table (start-up fan-out, then settle)");
  const recomputeStart = performance.now();
  const workers: WorkerHandle = await startWorkers(jobsCfg, (line) => say(`[jobs] ${line}`), Date.now, {
    schedule: false,
  });
  let recompute: { runs: number };
  try {
    recompute = await settle(redis.url, cfg.BENCH_SCALE_TIMEOUT_S * 1000, (l) => say(`jobs: ${l}`));
  } finally {
    await workers.close();
  }
  const recomputeSeconds = (performance.now() - recomputeStart) / 1000;
  say(`derived tables computed in ${recomputeSeconds.toFixed(1)} s (${recompute.runs} run(s) with work)`);

  // ---- 3. sizes -------------------------------------------------------------------------------
  const client = new pg.Client({ connectionString: dbUrl });
  await client.connect();
  let schemas: SchemaSize[];
  let databaseBytes: number;
  try {
    await client.query("CHECKPOINT");
    schemas = await schemaSizes(client, [indexer.schema, "derived", "registry", "ops", "ponder_sync"]);
    databaseBytes = Number(
      (await client.query<{ b: string }>("SELECT pg_database_size(current_database()) AS b")).rows[0]!.b,
    );
  } finally {
    await client.end();
  }

  const result: ScaleResult = {
    size,
    vaultDays: size.vaults * size.days,
    code,
    date: new Date().toISOString(),
    load: [load0, loadavg()[0]!],
    chains: manifest.chains.map((c) => ({
      chainId: c.chainId,
      head: progress.find((p) => p.chainId === c.chainId)?.head ?? c.headBlock,
      txs: c.txCount,
    })),
    simulateSeconds,
    backfillSeconds,
    logEvents: m.logEvents,
    blockEvents: m.blockEvents,
    recomputeSeconds,
    recomputeRuns: recompute.runs,
    deploymentSchema: indexer.schema,
    schemas,
    databaseBytes,
  };
  for (const s of schemas) {
    say(
      `${s.schema}: ${formatBytes(s.bytes)} (${formatBytes(s.bytes / result.vaultDays)} per vault-day); ` +
        s.tables
          .filter((t) => t.rows > 0)
          .map((t) => `${t.name} ${t.rows}`)
          .join(", "),
    );
  }
  const file = join(RESULTS_DIR, `${size.vaults}x${size.days}.json`);
  writeFileSync(file, JSON.stringify(result, null, 2));
  say(`kept in ${file}`);
  say("stopping everything");
  await stopAll();
  printTable(readResults());
  const idx = schemas.find((s) => s.schema === indexer.schema)!;
  const der = schemas.find((s) => s.schema === "derived")!;
  console.log(
    `scale-bench: ${size.vaults}x${size.days}: backfill=${backfillSeconds.toFixed(1)}s events=${m.logEvents} ` +
      `db=${databaseBytes} per_vault_day=${Math.round((idx.bytes + der.bytes) / result.vaultDays)} ` +
      `recompute=${recomputeSeconds.toFixed(1)}s`,
  );
}

/** Bytes and rows of every table of each schema (a table's bytes include its indexes and TOAST). */
async function schemaSizes(client: pg.Client, names: string[]): Promise<SchemaSize[]> {
  const out: SchemaSize[] = [];
  for (const schema of names) {
    const res = await client.query<{ name: string; bytes: string }>(
      `SELECT c.relname AS name, pg_total_relation_size(c.oid) AS bytes
         FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
        WHERE n.nspname = $1 AND c.relkind IN ('r', 'p', 'm')
        ORDER BY c.relname`,
      [schema],
    );
    const tables: SchemaSize["tables"] = [];
    for (const r of res.rows) {
      const q = `SELECT count(*) AS n FROM ${client.escapeIdentifier(schema)}.${client.escapeIdentifier(r.name)}`;
      const rows = Number((await client.query<{ n: string }>(q)).rows[0]!.n);
      tables.push({ name: r.name, rows, bytes: Number(r.bytes) });
    }
    out.push({ schema, bytes: tables.reduce((s, t) => s + t.bytes, 0), tables });
  }
  return out;
}

function readResults(): ScaleResult[] {
  if (!existsSync(RESULTS_DIR)) return [];
  return readdirSync(RESULTS_DIR)
    .filter((f) => f.endsWith(".json"))
    .map((f) => JSON.parse(readFileSync(join(RESULTS_DIR, f), "utf8")) as ScaleResult)
    .sort((a, b) => a.vaultDays - b.vaultDays);
}

const bytesOf = (r: ScaleResult, pick: (schema: string) => boolean) =>
  r.schemas.filter((s) => pick(s.schema)).reduce((a, s) => a + s.bytes, 0);
const isDeployment = (s: string) => s.startsWith("app_");

/** The table of every kept result, then each measure's straight-line fit against vault-days. */
function printTable(results: ScaleResult[]): void {
  if (results.length === 0) {
    console.log("bench:scale: no results kept yet (.data/bench-scale/results is empty)");
    return;
  }
  const head = [
    "size",
    "vault-days",
    "log events",
    "backfill s",
    "events/s",
    "indexed",
    "derived",
    "registry+ops",
    "ponder_sync",
    "database",
    "recompute s",
    "load",
    "code",
  ];
  const rows = results.map((r) => [
    `${r.size.vaults}x${r.size.days}`,
    String(r.vaultDays),
    String(r.logEvents),
    r.backfillSeconds.toFixed(1),
    String(Math.round(r.logEvents / r.backfillSeconds)),
    formatBytes(bytesOf(r, isDeployment)),
    formatBytes(bytesOf(r, (s) => s === "derived")),
    formatBytes(bytesOf(r, (s) => s === "registry" || s === "ops")),
    formatBytes(bytesOf(r, (s) => s === "ponder_sync")),
    formatBytes(r.databaseBytes),
    r.recomputeSeconds.toFixed(1),
    `${r.load[0].toFixed(1)}/${r.load[1].toFixed(1)}`,
    r.code,
  ]);
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)));
  const line = (cells: string[]) => `| ${cells.map((c, i) => c.padEnd(widths[i]!)).join(" | ")} |`;
  console.log(line(head));
  console.log(`| ${widths.map((w) => "-".repeat(w)).join(" | ")} |`);
  for (const r of rows) console.log(line(r));

  // Against vault-days alone, then apart from what each simulated chain (deployment, protocol
  // world, ENS) costs once, when the sizes allow it (chains and vault-days not proportional).
  const fit = (label: string, y: (r: ScaleResult) => number, unit: (n: number) => string) => {
    const f: LinearFit | null = linearFit(results.map((r) => ({ x: r.vaultDays, y: y(r) })));
    if (!f) return;
    const two = chainVaultDayFit(
      results.map((r) => ({ chains: r.size.vaults / VAULTS_PER_CHAIN, vaultDays: r.vaultDays, y: y(r) })),
    );
    console.log(
      `fit ${label}: ${unit(f.fixed)} + ${unit(f.perUnit)} per vault-day (r² ${f.r2.toFixed(3)}, ` +
        `${results.length} sizes)` +
        (two
          ? `; ${unit(two.fixed)} + ${unit(two.perChain)} per chain + ${unit(two.perVaultDay)} per vault-day` +
            (two.points === 3 ? " (exact through 3 sizes)" : ` (least squares, ${two.points} sizes)`)
          : ""),
    );
  };
  fit("indexed schema", (r) => bytesOf(r, isDeployment), formatBytes);
  fit("derived", (r) => bytesOf(r, (s) => s === "derived"), formatBytes);
  fit("ponder_sync", (r) => bytesOf(r, (s) => s === "ponder_sync"), formatBytes);
  fit("database", (r) => r.databaseBytes, formatBytes);
  fit(
    "log events",
    (r) => r.logEvents,
    (n) => n.toFixed(2),
  );
  fit(
    "backfill",
    (r) => r.backfillSeconds,
    (n) => `${n.toFixed(3)} s`,
  );
  fit(
    "recompute",
    (r) => r.recomputeSeconds,
    (n) => `${n.toFixed(4)} s`,
  );
}

main().then(
  () => process.exit(0),
  async (err: unknown) => {
    console.error(`bench:scale failed: ${errMessage(err)}`);
    await stopAll().catch(() => {});
    process.exit(1);
  },
);
