/**
 * npm run bench:index: indexer throughput benchmark (docs/performance.md, "Indexer benchmark").
 *
 * Starts embedded Postgres and two anvil chains (ids 1 and 8453) on non-default ports, deploys the
 * devnet vaults with a short simulated history, adds bulk deposits and share transfers packed many
 * per block, then times on the same chain data, each from process start until every chain is
 * indexed to its head, with a cold Ponder RPC cache (a fresh database per run):
 *   - bare: a generated Ponder app with our config and an empty handler per indexing function;
 *   - ours: this repository's indexer.
 * The last line printed is `index-bench: ours=<events/s> bare=<events/s> ratio=<ours/bare>`.
 *
 * Settings (environment, all optional): BENCH_BLOCKS (bulk blocks per chain, 800),
 * BENCH_SNAPSHOT_INTERVAL_1 / BENCH_SNAPSHOT_INTERVAL_8453 (snapshot block interval; default: the
 * indexer's own default, 300 and 1800 blocks),
 * BENCH_TXS_PER_BLOCK (40), BENCH_WALLETS (200), BENCH_DEPOSIT_SHARE (0.65), BENCH_MIN_EVENTS
 * (100000), BENCH_ORDER (bare-first | ours-first), BENCH_INDEX_TIMEOUT_S (900), BENCH_PG_PORT
 * (54340), BENCH_ANVIL_PORT_1 (18645), BENCH_ANVIL_PORT_8453 (18646), BENCH_INDEXER_PORT (42169),
 * BENCH_SEED ("bench").
 */
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { availableParallelism } from "node:os";
import { join } from "node:path";
import type { Address, Hex } from "viem";
import type { BulkResult } from "../bench/activity.js";
import type { CpuClass } from "../bench/cpu.js";
import type { RunMetrics } from "../bench/metrics.js";
import type { ChainResult } from "../contracts/devnet/index.js";
import { type Command, HELP_OPTION, parseCommandLine, settings } from "./lib/cli.js";
import { errMessage, installSignalHandlers, stopAll } from "./lib/procs.js";

const CMD: Command = {
  name: "bench:index",
  usage: "usage: npm run bench:index   (settings from the environment; no arguments)",
  help: `
Times the indexer against bare Ponder on the same simulated chains (two anvil chains, 800 bulk
blocks of 40 transactions each by default) and prints their events per second and the ratio.
Settings (environment, all optional): BENCH_BLOCKS, BENCH_TXS_PER_BLOCK, BENCH_WALLETS,
BENCH_DEPOSIT_SHARE, BENCH_MIN_EVENTS, BENCH_ORDER (bare-first | ours-first), BENCH_INDEX_TIMEOUT_S,
BENCH_PG_PORT, BENCH_ANVIL_PORT_1, BENCH_ANVIL_PORT_8453, BENCH_INDEXER_PORT, BENCH_SEED,
BENCH_SNAPSHOT_INTERVAL_1, BENCH_SNAPSHOT_INTERVAL_8453 (scripts/bench-index.ts says what each is).
A bad value is refused with a message (exit 2). Figures: docs/performance.md.`,
};
parseCommandLine(CMD, { options: { ...HELP_OPTION } });

// loaded after the command line, the bench's modules after its settings: --help and refusals load nothing else
const cfg = await settings(CMD, ({ z, envNum }) =>
  z.object({
    BENCH_BLOCKS: envNum((n) => n.int().min(1).max(1800)).default(800),
    BENCH_TXS_PER_BLOCK: envNum((n) => n.int().min(1).max(180)).default(40),
    BENCH_WALLETS: envNum((n) => n.int().min(1).max(5000)).default(200),
    BENCH_DEPOSIT_SHARE: envNum((n) => n.min(0).max(1)).default(0.65),
    BENCH_MIN_EVENTS: envNum((n) => n.int().min(0)).default(100_000),
    BENCH_ORDER: z.enum(["bare-first", "ours-first"]).default("bare-first"),
    BENCH_INDEX_TIMEOUT_S: envNum((n) => n.int().positive()).default(900),
    BENCH_PG_PORT: envNum((n) => n.int().min(1).max(65535)).default(54340),
    BENCH_ANVIL_PORT_1: envNum((n) => n.int().min(1).max(65535)).default(18645),
    BENCH_ANVIL_PORT_8453: envNum((n) => n.int().min(1).max(65535)).default(18646),
    BENCH_INDEXER_PORT: envNum((n) => n.int().min(1).max(65535)).default(42169),
    BENCH_SEED: z.string().min(1).default("bench"),
    BENCH_SNAPSHOT_INTERVAL_1: envNum((n) => n.int().positive()).optional(),
    BENCH_SNAPSHOT_INTERVAL_8453: envNum((n) => n.int().positive()).optional(),
  }),
);
const [
  { default: pg },
  { toEventSelector },
  { bulkActivity },
  { writeBareApp },
  { cpuDelta, cpuSnapshot },
  { handledSelectors, registeredHandlerNames },
  { parseMetrics, summarise },
  { watchedFiles },
  { DEVNET_CHAINS, genesisTimestamp, runDevnet },
  { assertPortFree, startAnvil },
  { gitDescribe },
  { httpOk, indexedBlocks, REPO_ROOT, startIndexer },
  { recreateDatabase, startEmbeddedPostgres },
] = await Promise.all([
  import("pg"),
  import("viem"),
  import("../bench/activity.js"),
  import("../bench/bare-app.js"),
  import("../bench/cpu.js"),
  import("../bench/handlers.js"),
  import("../bench/metrics.js"),
  import("../bench/watched.js"),
  import("../contracts/devnet/index.js"),
  import("./lib/anvil.js"),
  import("./lib/git.js"),
  import("./lib/indexer.js"),
  import("./lib/postgres.js"),
]);

const BENCH_DIR = join(REPO_ROOT, ".data", "bench");
const LOG_DIR = join(BENCH_DIR, "logs");
const BARE_DIR = join(BENCH_DIR, "bare");
const REGISTRY_FILE = join(BENCH_DIR, "vaults.json");
/** Simulated history before the bulk activity (days) and its wallets. */
const HISTORY_DAYS = 3;
const HISTORY_WALLETS = 50;
/** Ponder indexes the last 65 (chain 1) / 30 (other chains) blocks on its live path; pad past that. */
const PADDING_BLOCKS = 70;
const BLOCK_SPACING: Record<number, number> = { 1: 12, 8453: 2 };
const ANVIL_PORT: Record<number, number> = { 1: cfg.BENCH_ANVIL_PORT_1, 8453: cfg.BENCH_ANVIL_PORT_8453 };
const SNAPSHOT_INTERVAL: Record<number, number | undefined> = {
  1: cfg.BENCH_SNAPSHOT_INTERVAL_1,
  8453: cfg.BENCH_SNAPSHOT_INTERVAL_8453,
};

const t0 = Date.now();
const say = (msg: string) => console.log(`[bench ${((Date.now() - t0) / 1000).toFixed(1).padStart(6)}s] ${msg}`);

interface BenchChain {
  chainId: number;
  rpcUrl: string;
  /** undefined: the indexer's default (config/indexer.ts) */
  snapshotInterval?: number;
  head: number;
}

type App = "ours" | "bare";

interface RunResult {
  app: App;
  seconds: number;
  /** seconds from process start until /health answered (build, database setup, HTTP server) */
  startupSeconds: number;
  /** seconds from process start until /ready (backfill of every chain done) */
  readySeconds: number;
  /** CPU seconds used during the run, per process class */
  cpu: Record<CpuClass, number>;
  /** files under the app root that Ponder's (Vite's) file watcher covers, at the end of the run */
  watched: { files: number; top: [string, number][] };
  metrics: RunMetrics;
  logLines: string[];
  rows?: Record<string, number>;
}

async function main(): Promise<void> {
  installSignalHandlers();
  rmSync(BENCH_DIR, { recursive: true, force: true });
  mkdirSync(LOG_DIR, { recursive: true });

  // ---- handlers and the logs they receive --------------------------------------------------
  say(`code: ${gitDescribe()}`);
  const handlerNames = registeredHandlerNames(REPO_ROOT);
  const selectors = handledSelectors(handlerNames);
  say(`our app registers ${handlerNames.length} indexing functions`);

  // ---- processes -------------------------------------------------------------------------------
  say(`starting embedded Postgres on 127.0.0.1:${cfg.BENCH_PG_PORT} (data dir .data/bench/postgres)`);
  const pgi = await startEmbeddedPostgres({
    port: cfg.BENCH_PG_PORT,
    dataDir: join(BENCH_DIR, "postgres"),
    database: "postgres",
    logFile: join(LOG_DIR, "postgres.log"),
  });

  const endTime = Math.floor(Date.now() / 1000) - 6 * 3600; // leaves room for the bulk blocks before now
  const anvils = await Promise.all(
    DEVNET_CHAINS.map(async (c) => {
      const a = await startAnvil({
        chainId: c.chainId,
        port: ANVIL_PORT[c.chainId]!,
        genesisTimestamp: genesisTimestamp(endTime, HISTORY_DAYS),
        logFile: join(LOG_DIR, `anvil-${c.chainId}.log`),
        extraArgs: ["--order", "fifo"],
      });
      return { chainId: c.chainId, rpcUrl: a.rpcUrl, blockTime: c.blockTime, snapshotInterval: c.snapshotInterval };
    }),
  );
  say(`anvil chains ${anvils.map((a) => `${a.chainId}@${a.rpcUrl}`).join(", ")}`);

  // ---- chain data ------------------------------------------------------------------------------
  say(`deploying the vaults and simulating ${HISTORY_DAYS} days of history (${HISTORY_WALLETS} wallets)`);
  const manifest = await runDevnet({
    seed: cfg.BENCH_SEED,
    days: HISTORY_DAYS,
    endTime,
    wallets: HISTORY_WALLETS,
    chains: anvils,
    manifestPath: join(BENCH_DIR, "manifest.json"),
    registryPath: REGISTRY_FILE,
  });

  const contractsOf = (c: ChainResult): Map<string, Set<string>> =>
    new Map([
      ["LendingPool", new Set(c.vaults.filter((v) => v.family === "lendingPool").map((v) => v.address.toLowerCase()))],
      [
        "TokenizedVaultV2",
        new Set(c.vaults.filter((v) => v.family === "tokenizedVaultV2").map((v) => v.address.toLowerCase())),
      ],
      ["ReceiptToken", new Set(c.vaults.flatMap((v) => (v.receiptToken ? [v.receiptToken.toLowerCase()] : [])))],
      ["Timelock", new Set(c.vaults.map((v) => v.timelock.toLowerCase()))],
      ["Loan", new Set(c.loans.map((l) => l.toLowerCase()))],
    ]);
  const indexedFilter = (c: ChainResult) => {
    const byContract = contractsOf(c);
    return (address: Address, topic0: Hex | undefined): boolean => {
      if (!topic0) return false;
      const a = address.toLowerCase();
      for (const [contract, addrs] of byContract) {
        if (addrs.has(a) && selectors.get(contract)?.has(topic0.toLowerCase() as Hex)) return true;
      }
      return false;
    };
  };

  let historyEvents = 0;
  for (const c of manifest.chains) {
    const isIndexed = indexedFilter(c);
    const n = c.events.filter((e) => isIndexed(e.address, toEventSelector(e.signature))).length;
    historyEvents += n;
    say(`chain ${c.chainId}: history ${c.headBlock} blocks, ${c.txCount} txs, ${n} indexed events`);
  }

  say(
    `bulk activity: ${cfg.BENCH_BLOCKS} blocks x ${cfg.BENCH_TXS_PER_BLOCK} txs per chain, ${cfg.BENCH_WALLETS} ` +
      `wallets, ` +
      `${Math.round(cfg.BENCH_DEPOSIT_SHARE * 100)}% deposits / rest share transfers, then ${PADDING_BLOCKS} ` +
      `padding blocks`,
  );
  const bulk: BulkResult[] = await Promise.all(
    manifest.chains.map((c) =>
      bulkActivity({
        chain: c,
        rpcUrl: anvils.find((a) => a.chainId === c.chainId)!.rpcUrl,
        seed: cfg.BENCH_SEED,
        wallets: cfg.BENCH_WALLETS,
        blocks: cfg.BENCH_BLOCKS,
        txsPerBlock: cfg.BENCH_TXS_PER_BLOCK,
        depositShare: cfg.BENCH_DEPOSIT_SHARE,
        blockSpacing: BLOCK_SPACING[c.chainId] ?? 2,
        paddingBlocks: PADDING_BLOCKS,
        isIndexed: indexedFilter(c),
        log: say,
      }),
    ),
  );
  const events = historyEvents + bulk.reduce((a, b) => a + b.indexedLogs, 0);
  for (const b of bulk) {
    say(
      `chain ${b.chainId}: head ${b.headBlock}; bulk ${b.txs} txs (${b.deposits} deposits, ${b.transfers} share ` +
        `transfers) ` +
        `in ${b.blocks} blocks, ${b.indexedLogs} indexed events, ${b.seconds.toFixed(1)} s`,
    );
  }
  say(`${events} indexed events in total (history ${historyEvents})`);
  if (events < cfg.BENCH_MIN_EVENTS) {
    throw new Error(
      `only ${events} indexed events generated, fewer than BENCH_MIN_EVENTS=${cfg.BENCH_MIN_EVENTS} (raise ` +
        `BENCH_BLOCKS or BENCH_TXS_PER_BLOCK)`,
    );
  }
  const chains: BenchChain[] = anvils.map((a) => ({
    chainId: a.chainId,
    rpcUrl: a.rpcUrl,
    ...(SNAPSHOT_INTERVAL[a.chainId] ? { snapshotInterval: SNAPSHOT_INTERVAL[a.chainId] } : {}),
    head: bulk.find((b) => b.chainId === a.chainId)!.headBlock,
  }));
  say(
    `snapshot block interval: ` +
      `${chains.map((c) => `chain ${c.chainId} ${c.snapshotInterval ?? "indexer default"}`).join(", ")}`,
  );

  // ---- the two runs ----------------------------------------------------------------------------
  writeBareApp(BARE_DIR, REPO_ROOT, handlerNames);
  const order: App[] = cfg.BENCH_ORDER === "bare-first" ? ["bare", "ours"] : ["ours", "bare"];
  const results = new Map<App, RunResult>();
  for (const app of order) {
    say(
      `indexing with ${app === "ours" ? "our indexer" : "the bare app (no-op handlers)"}, cold cache (fresh ` +
        `database bench_${app})`,
    );
    const r = await runIndexer(app, pgi.adminUrl, chains);
    results.set(app, r);
    say(
      `${app}: head reached after ${r.seconds.toFixed(1)} s (server up ${r.startupSeconds.toFixed(1)} s, backfill ` +
        `done ${r.readySeconds.toFixed(1)} s); ` +
        `${Math.round(events / r.seconds)} events/s`,
    );
  }
  const ours = results.get("ours")!;
  const bare = results.get("bare")!;

  // Ponder's own count of the log events it delivered must match ours.
  for (const r of [ours, bare]) {
    if (r.metrics.logEvents !== events) {
      say(
        `WARNING: ${r.app}: Ponder reports ${r.metrics.logEvents} log events processed, the receipts count ${events}`,
      );
    }
  }

  report(events, chains, ours, bare);
  writeFileSync(
    join(BENCH_DIR, "results.json"),
    JSON.stringify(
      {
        code: gitDescribe(),
        events,
        historyEvents,
        bulk,
        chains,
        order,
        settings: cfg,
        runs: [ours, bare].map((r) => ({ ...r, metrics: jsonMetrics(r.metrics) })),
      },
      null,
      2,
    ),
  );

  const oursRate = events / ours.seconds;
  const bareRate = events / bare.seconds;
  const ratio = oursRate / bareRate;
  say(
    `targets: ratio >= 0.8 ${ratio >= 0.8 ? "MET" : "NOT MET"} (${ratio.toFixed(2)}); ours >= 4000 events/s ` +
      `${oursRate >= 4000 ? "MET" : "NOT MET"} (${Math.round(oursRate)})`,
  );
  say(`details: .data/bench/results.json, logs and /metrics snapshots in .data/bench/logs`);
  say("stopping everything");
  await stopAll();
  console.log(`index-bench: ours=${Math.round(oursRate)} bare=${Math.round(bareRate)} ratio=${ratio.toFixed(2)}`);
}

async function runIndexer(app: App, adminUrl: string, chains: BenchChain[]): Promise<RunResult> {
  const schema = `bench_${app}`;
  // A fresh database per run: empty user schema and an empty ponder_sync (cold RPC cache).
  const databaseUrl = await recreateDatabase(adminUrl, schema);
  const port = cfg.BENCH_INDEXER_PORT;
  await assertPortFree("127.0.0.1", port, `the ${app} indexer`); // Ponder would silently take the next port
  const logFile = join(LOG_DIR, `indexer-${app}.log`);
  let exit: string | undefined;

  const cpuBefore = cpuSnapshot();
  const start = performance.now();
  const handle = startIndexer({
    databaseUrl,
    registryFile: REGISTRY_FILE,
    chains,
    port,
    schema,
    logFile,
    root: app === "ours" ? REPO_ROOT : BARE_DIR,
    onExit: (code, signal) => (exit = signal ?? `code ${code}`),
  });
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    let startup: number | undefined;
    let ready: number | undefined;
    const deadline = Date.now() + cfg.BENCH_INDEX_TIMEOUT_S * 1000;
    let lastNote = 0;
    for (;;) {
      if (exit !== undefined) {
        throw new Error(
          `the ${app} indexer exited (${exit}) before reaching the chain heads; last ` +
            `output:\n${handle.process.recentOutput()}\n(log: ${logFile})`,
        );
      }
      const now = (performance.now() - start) / 1000;
      if (startup === undefined && (await httpOk(`${handle.url}/health`))) startup = now;
      if (startup !== undefined && ready === undefined && (await httpOk(`${handle.url}/ready`))) ready = now;
      const indexed = ready === undefined ? null : await indexedBlocks(client, schema);
      if (ready !== undefined && indexed && chains.every((c) => (indexed.get(c.chainId) ?? -1) >= c.head)) break;
      if (Date.now() > deadline) {
        throw new Error(
          `the ${app} indexer did not reach the chain heads within ${cfg.BENCH_INDEX_TIMEOUT_S} s ` +
            `(BENCH_INDEX_TIMEOUT_S); log: ${logFile}`,
        );
      }
      if (now - lastNote >= 30) {
        lastNote = now;
        const progress = (await indexedBlocks(client, schema)) ?? new Map<number, number>();
        say(
          `${app}: ${now.toFixed(0)} s, indexed ` +
            `${chains.map((c) => `${c.chainId}: ${progress.get(c.chainId) ?? 0}/${c.head}`).join(", ")}`,
        );
      }
      await new Promise((r) => setTimeout(r, 100));
    }
    const seconds = (performance.now() - start) / 1000;
    const cpu = cpuDelta(cpuBefore, cpuSnapshot());
    const w = watchedFiles(app === "ours" ? REPO_ROOT : BARE_DIR);
    const watched = { files: w.files, top: [...w.byTopDir].sort((a, b) => b[1] - a[1]).slice(0, 4) };
    const metricsText = await (await fetch(`${handle.url}/metrics`)).text();
    writeFileSync(join(LOG_DIR, `metrics-${app}.txt`), metricsText);
    let rows: Record<string, number> | undefined;
    if (app === "ours") {
      rows = {};
      for (const t of [
        "vault_event",
        "share_transfer",
        "share_ratio_snapshot",
        "governance_event",
        "timelock_operation",
      ]) {
        const res = await client.query<{ n: string }>(`SELECT count(*) AS n FROM "${schema}"."${t}"`);
        rows[t] = Number(res.rows[0]!.n);
      }
    }
    return {
      app,
      seconds,
      startupSeconds: startup ?? seconds,
      readySeconds: ready ?? seconds,
      cpu,
      watched,
      metrics: summarise(parseMetrics(metricsText)),
      logLines: [],
      ...(rows ? { rows } : {}),
    };
  } finally {
    await client.end().catch(() => {});
    await handle.stop();
  }
}

function readLog(file: string): string[] {
  try {
    return readFileSync(file, "utf8")
      .split("\n")
      .filter((l) =>
        /Finished fetching backfill|Completed backfill indexing|Started live indexing|Failed|ERROR/.test(l),
      );
  } catch {
    return [];
  }
}

const ms = (n: number) => `${(n / 1000).toFixed(1)} s`;
const cpus = availableParallelism();

function report(events: number, chains: BenchChain[], ours: RunResult, bare: RunResult): void {
  say(`--- results (${events} indexed events; heads ${chains.map((c) => `${c.chainId}: ${c.head}`).join(", ")}) ---`);
  for (const r of [bare, ours]) {
    const m = r.metrics;
    r.logLines = readLog(join(LOG_DIR, `indexer-${r.app}.log`));
    say(
      `${r.app}: ${r.seconds.toFixed(1)} s = startup ${r.startupSeconds.toFixed(1)} + backfill ` +
        `${(r.readySeconds - r.startupSeconds).toFixed(1)} + live tail ${(r.seconds - r.readySeconds).toFixed(1)}; ` +
        `${m.logEvents} log + ${m.blockEvents} block events; handlers ${ms(m.handlerMs)}`,
    );
    const mc = m.rpcActions.get("multicall");
    const c = r.cpu;
    say(
      `  ${r.app}: CPU seconds: indexer ${c.indexer.toFixed(1)}, postgres ${c.postgres.toFixed(1)}, anvil ` +
        `${c.anvil.toFixed(1)}, other ${(c.other + c.bench + c.api + c.redis).toFixed(1)} ` +
        `(machine capacity ${(r.seconds * cpus).toFixed(0)} = ${r.seconds.toFixed(1)} s x ${cpus} cores)`,
    );
    say(
      `  ${r.app}: files under the app root watched by Ponder's Vite watcher: ${r.watched.files} ` +
        `(${r.watched.top.map(([d, n]) => `${d} ${n}`).join(", ")})`,
    );
    if (mc)
      say(
        `  ${r.app}: context.client.multicall ${mc.count} calls, ${ms(mc.ms)} ` +
          `(${(mc.ms / Math.max(1, mc.count)).toFixed(2)} ms each)`,
      );
    const req = [...m.rpcRequestsByType].map(([k, v]) => `${k} ${v}`).join(", ");
    if (req) say(`  ${r.app}: eth_call sub-requests by source: ${req}`);
    const pre = [...m.prefetchByType].map(([k, v]) => `${k} ${v}`).join(", ");
    say(`  ${r.app}: prefetch predictions: ${pre || "none"}`);
    const rpcs = [...m.rpcByMethod].map(([k, v]) => `${k} ${v.count} (${ms(v.ms)})`).join(", ");
    say(`  ${r.app}: JSON-RPC requests: ${rpcs}`);
    const tr = [...m.transformMs].map(([k, v]) => `${k} ${ms(v)}`).join(", ");
    say(`  ${r.app}: historical transform: ${tr}`);
    const ex = [...m.extractMs].map(([k, v]) => `${k} ${ms(v)}`).join(", ");
    say(`  ${r.app}: historical extract: ${ex}`);
    const top = [...m.handlerMsByEvent].sort((a, b) => b[1] - a[1]).slice(0, 5);
    if (r.app === "ours") say(`  ours: slowest handlers: ${top.map(([k, v]) => `${k} ${ms(v)}`).join(", ")}`);
    if (r.rows)
      say(
        `  ours: rows ${Object.entries(r.rows)
          .map(([k, v]) => `${k} ${v}`)
          .join(", ")}`,
      );
    for (const l of r.logLines) say(`  ${l}`);
  }
}

function jsonMetrics(m: RunMetrics) {
  const obj = (x: Map<string, unknown>) => Object.fromEntries(x);
  return {
    logEvents: m.logEvents,
    blockEvents: m.blockEvents,
    handlerMs: m.handlerMs,
    handlerMsByEvent: obj(m.handlerMsByEvent),
    rpcActions: obj(m.rpcActions),
    rpcRequestsByType: obj(m.rpcRequestsByType),
    prefetchByType: obj(m.prefetchByType),
    rpcByMethod: obj(m.rpcByMethod),
    transformMs: obj(m.transformMs),
    extractMs: obj(m.extractMs),
    groupMs: obj(m.groupMs),
    historicalBlocks: m.historicalBlocks,
  };
}

main().then(
  () => process.exit(0),
  async (err: unknown) => {
    console.error(`index-bench failed: ${errMessage(err)}`);
    await stopAll().catch(() => {});
    process.exit(1);
  },
);
