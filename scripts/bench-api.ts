/**
 * npm run bench:api: loads 1,000,000 vault events and 100,000 points users into a scratch
 * database, starts a live local chain with the protocol world for the institutional routes that
 * read the chain (bench/api-world.ts: a subaccount in every venue, a lending pool's loans, a block
 * every 2 s), starts the API (its own process, as in production) and a bare Hono route, and drives
 * each route with autocannon at 50 connections. Last line:
 *   api-bench: p99_ms=<worst route p99> rps_ratio=<slowest route rps / bare rps>
 * BENCH_API_EVENTS, BENCH_API_USERS, BENCH_API_SECONDS (per route) override the sizes;
 * BENCH_API_ONLY (a comma-separated list of route names' prefixes) drives only those routes.
 *
 * Requests ask for uncompressed answers, as autocannon does by default. BENCH_API_ENCODING sets
 * an Accept-Encoding (e.g. "gzip, deflate, br", as browsers send), but then the figures measure
 * the load generator: autocannon 9 turns every answer body into a JS string
 * (`req.body += data`), and a binary (gzip) body takes V8's slow UTF-8 decoding path. A bare
 * server returning a fixed 13.5 KB buffer gave 25,500 req/s with ASCII bytes and 2,700 with random
 * bytes (docs/performance.md, API benchmark).
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { EvmVault } from "../config/registry.js";
import { type Command, HELP_OPTION, parseCommandLine, settings } from "./lib/cli.js";
import { errMessage, installSignalHandlers, spawnManaged, stopAll } from "./lib/procs.js";

const CMD: Command = {
  name: "bench:api",
  usage: "usage: npm run bench:api   (settings from the environment; no arguments)",
  help: `
Loads 1,000,000 vault events and 100,000 points users into a scratch database, starts a live local
chain for the institutional routes that read it, the API (its own process) and a bare Hono route,
and drives each route with autocannon at 50 connections. Last line:
  api-bench: p99_ms=<worst route p99> rps_ratio=<slowest route rps / bare rps>
Settings (environment, all optional): BENCH_API_EVENTS (1000000), BENCH_API_USERS (100000),
BENCH_API_SECONDS (10, per route), BENCH_API_ONLY (comma-separated prefixes of route names),
BENCH_API_ENCODING (an Accept-Encoding; default identity), BENCH_API_ANVIL_PORT (18670). A bad
value is refused with a message (exit 2). Figures: docs/performance.md.`,
};
parseCommandLine(CMD, { options: { ...HELP_OPTION } });
// loaded after the command line, the bench's modules after its settings: --help and refusals load nothing else
const env = await settings(CMD, ({ z, envNum }) =>
  z.object({
    BENCH_API_EVENTS: envNum((n) => n.int().min(1000).max(50_000_000)).default(1_000_000),
    BENCH_API_USERS: envNum((n) => n.int().min(100).max(10_000_000)).default(100_000),
    BENCH_API_SECONDS: envNum((n) => n.int().min(1).max(3600)).default(10),
    BENCH_API_ANVIL_PORT: envNum((n) => n.int().min(1).max(65535)).default(18670),
  }),
);
const [
  { default: autocannon },
  { sql },
  { default: pg },
  { createKey },
  { buildApiBenchData, buildInstitutionalBenchData, buildSubaccountDays, subaccountAddress, vaultAddress },
  { buildApiBenchWorld },
  { cpuByTree, cpuSeconds },
  { createDb, createPool, migrateToLatest },
  { loadRegistryData },
  { replaceLendingVaultDays },
  { runPortfolio },
  { httpOk, REPO_ROOT },
  { recreateDatabase, startEmbeddedPostgres },
  { startRedis },
  { startApiProcess, tsxNode },
] = await Promise.all([
  import("autocannon"),
  import("kysely"),
  import("pg"),
  import("../api/keys.js"),
  import("../bench/api-data.js"),
  import("../bench/api-world.js"),
  import("../bench/cpu.js"),
  import("../db/client.js"),
  import("../db/registry-load.js"),
  import("../jobs/lending/lending-vault-day-write.js"),
  import("../jobs/portfolio/job.js"),
  import("./lib/indexer.js"),
  import("./lib/postgres.js"),
  import("./lib/redis.js"),
  import("./lib/workers.js"),
]);
const EVENTS = env.BENCH_API_EVENTS;
const USERS = env.BENCH_API_USERS;
const SECONDS = env.BENCH_API_SECONDS;
// uncompressed answers unless asked (see above)
const ACCEPT_ENCODING = process.env.BENCH_API_ENCODING || "identity";
const ONLY = (process.env.BENCH_API_ONLY ?? "")
  .split(",")
  .map((x) => x.trim())
  .filter(Boolean);
const ANVIL_PORT = env.BENCH_API_ANVIL_PORT;
const VAULTS = 20;
const DAYS = 400;
const SCHEMA = "bench_api";
// the live chain: the first vault on it is the lending pool of the loans and the world's
// subaccount's vault; 35 days of history, 3,000 blocks besides the transactions', 24 pool loans
const CHAIN = 8453;
const POOL = 1;
const WORLD_DAYS = 35;
const PERP_DEPOSITS = 100_000;
const t0 = Date.now();
const say = (m: string) => console.log(`[bench:api ${((Date.now() - t0) / 1000).toFixed(1).padStart(6)}s] ${m}`);

interface Result {
  name: string;
  bytes: number;
  rps: number;
  p50: number;
  p99: number;
  errors: number;
  non2xx: number;
  /** cores the bench's processes used on average during the measured run, and the others */
  oursCores: number;
  othersCores: number;
}

async function drive(name: string, url: string, headers: Record<string, string>, seconds: number): Promise<Result> {
  // a short warm-up (JIT, connection pools, Postgres caches), then the measured run
  await autocannon({ url, connections: 50, duration: 2, headers });
  const before = cpuByTree(process.pid);
  const t = performance.now();
  const r = await autocannon({ url, connections: 50, duration: seconds, headers });
  const after = cpuByTree(process.pid);
  const wall = (performance.now() - t) / 1000;
  return {
    name,
    bytes: r.throughput.average / Math.max(1, r.requests.average),
    rps: r.requests.average,
    p50: r.latency.p50,
    p99: r.latency.p99,
    errors: r.errors + r.timeouts,
    non2xx: r.non2xx,
    oursCores: cpuSeconds(before.ours, after.ours) / wall,
    othersCores: cpuSeconds(before.others, after.others) / wall,
  };
}

async function main(): Promise<void> {
  installSignalHandlers();
  const dir = join(REPO_ROOT, ".data", "bench-api");
  mkdirSync(dir, { recursive: true });
  const pgi = await startEmbeddedPostgres({
    port: 54370,
    dataDir: join(dir, "postgres"),
    database: "postgres",
    logFile: join(dir, "postgres.log"),
  });
  const dbUrl = await recreateDatabase(pgi.adminUrl, "bench_api");
  const redis = await startRedis({
    port: 63798,
    dataDir: join(dir, "redis"),
    logFile: join(dir, "redis.log"),
    replaceLeftover: true,
  });
  const admin = createDb(createPool(dbUrl, 2, "bench-api"));
  await migrateToLatest(admin);
  const client = new pg.Client({ connectionString: dbUrl });
  await client.connect();
  say(`generating ${EVENTS} vault events over ${VAULTS} vaults and ${DAYS} days, ${USERS} points users`);
  await buildApiBenchData(client, { schema: SCHEMA, vaults: VAULTS, events: EVENTS, days: DAYS, users: USERS }, say);
  const pool = vaultAddress(POOL) as `0x${string}`;
  const world = await buildApiBenchWorld(
    { port: ANVIL_PORT, chainId: CHAIN, pool, loans: 24, days: WORLD_DAYS, blocks: 3000, blockSeconds: 2 },
    say,
  );
  const safe = world.subaccount;
  const subaccounts = [...Array.from({ length: VAULTS }, (_, i) => subaccountAddress(i)), safe];
  const hashes = await buildInstitutionalBenchData(client, {
    schema: SCHEMA,
    chainId: CHAIN,
    pool,
    loans: world.poolLoans,
    bridges: {
      a: world.protocols.perp!.bridgeA,
      b: world.protocols.perp!.bridgeB,
      usdc: world.world.token("USDC").toLowerCase(),
      weth: world.world.token("WETH").toLowerCase(),
    },
    coreChainId: 1,
    deposits: PERP_DEPOSITS,
    days: DAYS,
    depositors: subaccounts,
  });
  await client.end();
  const evm: EvmVault[] = Array.from({ length: VAULTS }, (_, i) => ({
    chainId: i % 2 === 0 ? 1 : 8453,
    address: vaultAddress(i) as `0x${string}`,
    family: i % 2 ? "tokenizedVaultV2" : "lendingPool",
    kind: ["stablecoin", "tokenized_eth", "wrapped_staked_eth", "restaked_eth"][i % 4]!,
    name: `Bench vault ${i}`,
    symbol: `BV${i}`,
    status: "active",
    startBlock: 1,
    asset: {
      address: `0x${(0xb000 + i).toString(16).padStart(40, "0")}` as `0x${string}`,
      symbol: i % 3 === 0 ? "USDC" : "WETH",
      decimals: i % 3 === 0 ? 6 : 18,
    },
    strategist: { name: `Strategist ${i % 3}`, address: null },
    subaccounts: [subaccountAddress(i) as `0x${string}`, ...(i === POOL ? [safe] : [])],
    subaccountSettings: i === POOL ? { [safe]: { friendlyName: "World subaccount", minHealthFactor: 1.3 } } : {},
    metadata: { description: `Bench vault ${i}`, risk: "low", default_apy_horizon: 7 },
  }));
  await loadRegistryData(admin, { path: "bench", evm, nonEvm: [], protocols: new Map([[CHAIN, world.protocols]]) });
  const rpcUrls = new Map([[CHAIN, world.rpcUrl]]);
  // the portfolio cache through its job (every subaccount of the chain read at the head), the
  // valuation series through its writer
  const portfolio = await runPortfolio(admin, rpcUrls);
  const seriesRows = await buildSubaccountDays(admin, subaccounts, DAYS, CHAIN);
  // the lending vault's indexed snapshots (one a day, its share price growing 5 % a year) and
  // its day series through the job's writer
  await sql`
    CREATE TABLE ${sql.id(SCHEMA, "lending_vault_snapshot")} (id text PRIMARY KEY, chain_id integer, vault text,
      source text, total_assets numeric(78), total_supply numeric(78), asset_share_ratio numeric(78,18),
      block_number numeric(78), timestamp numeric(78), tx_hash text, log_index integer)`.execute(admin);
  const now = Math.floor(Date.now() / 1000);
  for (let d = DAYS; d >= 0; d--) {
    const supply = 10n ** 12n;
    const ratio = 1.05 ** ((DAYS - d) / 365);
    const assets = BigInt(Math.round(Number(supply) * ratio));
    await sql`INSERT INTO ${sql.id(SCHEMA, "lending_vault_snapshot")} VALUES (${`bench-lv-${d}`}, ${CHAIN},
      ${world.lendingVault.toLowerCase()}, 'interval', ${assets.toString()}, ${supply.toString()},
      ${(Number(assets) / Number(supply)).toFixed(18)}, ${DAYS - d}, ${now - d * 86_400}, null, null)`.execute(admin);
  }
  await replaceLendingVaultDays(admin, SCHEMA);
  say(
    `institutional: ${world.poolLoans.length} pool loans, ${PERP_DEPOSITS} perp deposits, ${portfolio.subaccounts} ` +
      `portfolios, ${seriesRows} subaccount days`,
  );
  // a key per route: at this machine's rates a few routes in a row would otherwise spend one
  // key's RATE_LIMIT_PER_MINUTE (at most 1,000,000) and be answered 429
  const keys: string[] = [];
  for (let i = 0; i < 20; i++) keys.push((await createKey(admin, `bench-${i}`)).key);
  await admin.destroy();

  const api = startApiProcess({
    databaseUrl: dbUrl,
    redisUrl: redis.url,
    port: 8097,
    chains: [{ chainId: CHAIN, rpcUrl: world.rpcUrl }],
    logFile: join(dir, "api.log"),
    env: { INDEXER_SCHEMA: SCHEMA, LOG_LEVEL: "warn", RATE_LIMIT_PER_MINUTE: "1000000" },
  });
  const bare = spawnManaged("bare", ...tsxNode("bench/bare-api.ts"), {
    cwd: REPO_ROOT,
    env: { ...process.env, PORT: "8098" },
    logFile: join(dir, "bare.log"),
  });
  for (const [name, url, proc] of [
    ["api", "http://127.0.0.1:8097/v1/", api],
    ["bare", "http://127.0.0.1:8098/", bare],
  ] as const) {
    for (let i = 0; !(await httpOk(url)); i++) {
      if (proc.exitInfo() || i > 600) throw new Error(`${name} did not start:\n${proc.recentOutput()}`);
      await new Promise((r) => setTimeout(r, 100));
    }
  }
  const v = vaultAddress(0);
  const base = "http://127.0.0.1:8097/api/v1";
  // what an answer must hold, so no route is timed answering an empty book or an unknown hash
  type J = Record<string, unknown> & { length?: number };
  const len = (x: unknown) => (Array.isArray(x) ? x.length : -1);
  const expected: Record<string, (b: J) => boolean> = {
    "subaccount list": (b) => len(b) === subaccounts.length,
    "subaccount health factor": (b) => typeof b.health_factor === "number",
    "subaccount summary": (b) => len((b.loanbook as J).loans) === 2 && len((b.portfolio as J).defi_positions) >= 3,
    "pool loan book": (b) => len(b.loans) === world.poolLoans.length,
    "subaccounts loan book": (b) => len(b.loans) === 1,
    "lending vault APY": (b) => typeof b.apy === "number",
    "portfolio data": (b) => safe in b,
    "revert reason": (b) => b.status === "reverted" && len(b.universal_subaccount_errors) === 1,
    "perp deposit status": (b) => b.status === "credited",
  };
  const all: [string, string][] = [
    ["vault list", `${base}/tokenized_vault?load_snapshots=false`],
    ["vault by address", `${base}/tokenized_vault/${v}?load_snapshots=false`],
    ["vault history limit=100", `${base}/platform/vault_history/${v}?limit=100`],
    ["time series n_days=365", `${base}/tokenized_vault/${v}/historical-timeseries?n_days=365`],
    ["leaderboard page", `${base}/platform/points/leaderboard?page=50&perPage=20`],
    ["pending redemptions", `${base}/vaults/${v}/pending-redemptions`],
    // the institutional reads: the registry and series, and the live chain
    ["subaccount list", `${base}/subaccounts`],
    ["subaccount health factor", `${base}/subaccounts/health_factor?address=${safe}`],
    ["subaccount summary", `${base}/subaccounts/summary?address=${safe}&denomination_address=USD`],
    ["pool loan book", `${base}/platform/lending_pool/loanbook?address=${pool}&chain=${CHAIN}`],
    ["subaccounts loan book", `${base}/platform/lending_pool/subaccounts_loanbook?address=${pool}&chain=${CHAIN}`],
    [
      "lending vault APY",
      `${base}/integrations/lending_vault/apy?vault_address=${world.lendingVault}&subaccount_address=${safe}&chain=${CHAIN}`,
    ],
    ["portfolio data", `${base}/tokenized_vault/${pool}/portfolio_data`],
    ["revert reason", `${base}/revert_reason?tx_hash=${world.revertedTx}&chain=${CHAIN}`],
    ["perp deposit status", `${base}/integrations/perp_relayer_a/check_status?core_hash=${hashes.credited}`],
  ];
  const routes = all.filter(([name]) => ONLY.length === 0 || ONLY.some((o) => name.startsWith(o)));
  const results: Result[] = [];
  // every route must answer 200 before it is timed
  if (all.length > keys.length) throw new Error("more routes than keys");
  const keyOf = (name: string) => keys[all.findIndex(([n]) => n === name)]!;
  for (const [name, url] of routes) {
    const res = await fetch(url, { headers: { "x-api-key": keyOf(name) } });
    const text = await res.text();
    if (res.status !== 200) throw new Error(`${name}: ${url} answered ${res.status}: ${text.slice(0, 300)}`);
    if (expected[name] && !expected[name](JSON.parse(text) as J))
      throw new Error(`${name}: ${url} answered without what the bench set up: ${text.slice(0, 300)}`);
  }
  const bareResult = await drive("bare hono", "http://127.0.0.1:8098/", {}, SECONDS);
  const cores = (r: Result) => `cores: bench ${r.oursCores.toFixed(2)}, other processes ${r.othersCores.toFixed(2)}`;
  say(
    `bare hono: ${bareResult.rps.toFixed(0)} req/s, p50 ${bareResult.p50} ms, p99 ${bareResult.p99} ms, ` +
      `${cores(bareResult)}`,
  );
  for (const [name, url] of routes) {
    const r = await drive(name, url, { "x-api-key": keyOf(name), "accept-encoding": ACCEPT_ENCODING }, SECONDS);
    results.push(r);
    say(
      `${name}: ${r.rps.toFixed(0)} req/s, p50 ${r.p50} ms, p99 ${r.p99} ms, ${(r.bytes / 1024).toFixed(1)} KiB ` +
        `per answer (${ACCEPT_ENCODING}), errors ${r.errors}, non-2xx ${r.non2xx}, ${cores(r)}`,
    );
  }
  const worst = Math.max(...results.map((r) => r.p99));
  const slowest = Math.min(...results.map((r) => r.rps));
  world.stopBlocks();
  await stopAll();
  console.log(`api-bench: p99_ms=${worst.toFixed(2)} rps_ratio=${(slowest / bareResult.rps).toFixed(3)}`);
  process.exit(results.some((r) => r.errors > 0 || r.non2xx > 0) ? 1 : 0);
}

main().catch(async (err) => {
  console.error(`bench:api failed: ${errMessage(err)}`);
  await stopAll();
  process.exit(1);
});
