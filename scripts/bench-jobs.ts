/**
 * npm run bench:jobs: derived-jobs benchmark (docs/performance.md, "Derived jobs benchmark").
 *
 * Starts an embedded Postgres (127.0.0.1:54350, data in .data/bench-jobs/postgres) and a Redis
 * (127.0.0.1:63799) of its own, both recreated each run, and fills a schema `bench_indexer`
 * with tables shaped like the indexer's (the columns the jobs read, Ponder's types and
 * indexes): 100 vaults on chains 1 and 8453 (6- and 18-decimal assets), 730 days ending today
 * (UTC) of snapshots every 6 hours, weekly management fees, and 100,000 wallets that each
 * deposit into one vault (some later move half their shares to another wallet, ~40% withdraw).
 * The registry gets a few rewards and registrations with referrers. Then it times, with the
 * real workers (jobs/runtime.ts) running in this process:
 *   - full: a recompute of every derived table from empty, as `npm run recompute -- --all`
 *     does (one vault-days job per vault over its whole history, which also writes its
 *     summary, then the points rollup), over the history up to yesterday;
 *   - incremental: today's data (snapshots, fees, transfers) is appended, then one fan-out
 *     run (the job the schedule queues: every vault's one-day range in batches of 50 vaults)
 *     until its points rollup has finished;
 *   - copy: COPY FROM STDIN of as many rows as the full recompute wrote (`rows`, every stored
 *     derived table) into a logged table shaped like a per-day points ledger (wallet, day,
 *     source, vault, points, shares, USD value), with a primary key and a wallet index.
 * It also times what the points views cost when read (not part of the figures above): every
 * wallet's balance with ranks (derived.points_balance), one wallet's totals and pools.
 * The last line printed is
 *   `jobs-bench: full=<s> incremental=<s> rows=<n> copy=<s> ratio=<full/copy>`.
 *
 * Settings (environment, all optional): BENCH_JOBS_VAULTS (100), BENCH_JOBS_DAYS (730),
 * BENCH_JOBS_WALLETS (100000), BENCH_JOBS_DEPOSIT_AGE_DAYS (mean age of a deposit at the end of
 * the history, exponential, 60), BENCH_JOBS_WITHDRAW_SHARE (0.4), BENCH_JOBS_HOLD_DAYS (mean
 * holding period before a withdrawal, 75), BENCH_JOBS_TRANSFER_SHARE (0.1), BENCH_JOBS_REFERRERS
 * (50), BENCH_JOBS_REFEREES (950), BENCH_JOBS_CONCURRENCY (vault-days worker concurrency, 2 as
 * WORKER_CONCURRENCY), BENCH_JOBS_CPU_PROFILE (a file: write a V8 CPU profile of this process, which
 * runs the workers, over the incremental day; open it in Chrome DevTools), BENCH_JOBS_PG_STATS (1: load
 * pg_stat_statements and print the top statements per phase; default 0), BENCH_JOBS_PG_PORT (54350),
 * BENCH_JOBS_REDIS_PORT (63799), BENCH_JOBS_SEED ("bench-jobs"), BENCH_JOBS_TIMEOUT_S (3600, per phase).
 */
import { createHash } from "node:crypto";
import { mkdirSync, readdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type * as bullmq from "bullmq";
import type pg from "pg";
import type { CopyValue } from "../db/copy.js";
import type { ChangedRange } from "../jobs/fanout.js";
import type { QueueKey } from "../jobs/queues.js";
import type { WorkerHandle } from "../jobs/runtime.js";
import { type Command, HELP_OPTION, parseCommandLine, settings } from "./lib/cli.js";
import { errMessage, installSignalHandlers, stopAll } from "./lib/procs.js";

const CMD: Command = {
  name: "bench:jobs",
  usage: "usage: npm run bench:jobs   (settings from the environment; no arguments)",
  help: `
Times the jobs on a synthetic history (100 vaults x 730 days and 100,000 wallets by default): a
full recompute of every derived table against COPY of as many rows, then one incremental day.
Settings (environment, all optional): BENCH_JOBS_VAULTS, BENCH_JOBS_DAYS, BENCH_JOBS_WALLETS,
BENCH_JOBS_DEPOSIT_AGE_DAYS, BENCH_JOBS_WITHDRAW_SHARE, BENCH_JOBS_HOLD_DAYS,
BENCH_JOBS_TRANSFER_SHARE, BENCH_JOBS_REFERRERS, BENCH_JOBS_REFEREES, BENCH_JOBS_CONCURRENCY,
BENCH_JOBS_CPU_PROFILE, BENCH_JOBS_PG_STATS, BENCH_JOBS_PG_PORT, BENCH_JOBS_REDIS_PORT,
BENCH_JOBS_SEED, BENCH_JOBS_TIMEOUT_S (scripts/bench-jobs.ts says what each is). A bad value is
refused with a message (exit 2). Figures: docs/performance.md.`,
};
parseCommandLine(CMD, { options: { ...HELP_OPTION } });

// loaded after the command line, the bench's modules after its settings: --help and refusals load nothing else
const cfg = await settings(CMD, ({ z, envNum }) =>
  z.object({
    BENCH_JOBS_VAULTS: envNum((n) => n.int().min(1).max(1000)).default(100),
    BENCH_JOBS_DAYS: envNum((n) => n.int().min(10).max(3650)).default(730),
    BENCH_JOBS_WALLETS: envNum((n) => n.int().min(1000).max(2_000_000)).default(100_000),
    BENCH_JOBS_DEPOSIT_AGE_DAYS: envNum((n) => n.positive()).default(60),
    BENCH_JOBS_WITHDRAW_SHARE: envNum((n) => n.min(0).max(1)).default(0.4),
    BENCH_JOBS_HOLD_DAYS: envNum((n) => n.positive()).default(75),
    BENCH_JOBS_TRANSFER_SHARE: envNum((n) => n.min(0).max(1)).default(0.1),
    BENCH_JOBS_REFERRERS: envNum((n) => n.int().min(1)).default(50),
    BENCH_JOBS_REFEREES: envNum((n) => n.int().min(0)).default(950),
    BENCH_JOBS_CONCURRENCY: envNum((n) => n.int().min(1).max(64)).default(2),
    BENCH_JOBS_PG_STATS: z.enum(["0", "1"]).default("0"),
    BENCH_JOBS_CPU_PROFILE: z.string().min(1).optional(),
    BENCH_JOBS_PG_PORT: envNum((n) => n.int().min(1).max(65535)).default(54350),
    BENCH_JOBS_REDIS_PORT: envNum((n) => n.int().min(1).max(65535)).default(63799),
    BENCH_JOBS_SEED: z.string().min(1).default("bench-jobs"),
    BENCH_JOBS_TIMEOUT_S: envNum((n) => n.int().positive()).default(3600),
  }),
);
if (cfg.BENCH_JOBS_WALLETS < cfg.BENCH_JOBS_VAULTS + cfg.BENCH_JOBS_REFERRERS + cfg.BENCH_JOBS_REFEREES) {
  console.error("jobs-bench: BENCH_JOBS_WALLETS must exceed vaults + referrers + referees");
  process.exit(2);
}
const [
  { Job, QueueEvents },
  {
    default: { Client: PgClient },
  },
  { vaultKey },
  { copyRows },
  { dayToDate },
  { formatFixed },
  { jobsConfig },
  { addFlow, buildFlow, extrasHash },
  { PREFIX, QUEUES },
  { loadFirstDays, loadVaultMetas },
  { openQueues, redisConnection, startWorkers },
  { REPO_ROOT },
  { startEmbeddedPostgres },
  { startRedis },
] = await Promise.all([
  import("bullmq"),
  import("pg"),
  import("../db/batch.js"),
  import("../db/copy.js"),
  import("../db/days.js"),
  import("../db/fixed.js"),
  import("../jobs/config.js"),
  import("../jobs/fanout.js"),
  import("../jobs/queues.js"),
  import("../jobs/repo.js"),
  import("../jobs/runtime.js"),
  import("./lib/indexer.js"),
  import("./lib/postgres.js"),
  import("./lib/redis.js"),
]);
type QueueEvents = bullmq.QueueEvents;

const BENCH_DIR = join(REPO_ROOT, ".data", "bench-jobs");
const LOG_DIR = join(BENCH_DIR, "logs");
const SCHEMA = "bench_indexer";
const DAY = 86_400;
const SCALE = 10n ** 18n;
const ZERO = "0x0000000000000000000000000000000000000000";
const TIMEOUT_MS = cfg.BENCH_JOBS_TIMEOUT_S * 1000;

const t0 = Date.now();
const say = (msg: string) => console.log(`[bench-jobs ${((Date.now() - t0) / 1000).toFixed(1).padStart(6)}s] ${msg}`);
const secs = (ms: number) => (ms / 1000).toFixed(2);
const fmt = (n: number) => n.toLocaleString("en-US");

// ---------------------------------------------------------------------------------------------
// Deterministic randomness
// ---------------------------------------------------------------------------------------------

function rng(seed: string): () => number {
  let a = createHash("sha256").update(seed).digest().readUInt32LE(0);
  return () => {
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}
const expo = (r: () => number, mean: number) => -mean * Math.log(1 - r());
function normal(r: () => number): number {
  const u = Math.max(r(), 1e-12);
  return Math.sqrt(-2 * Math.log(u)) * Math.cos(2 * Math.PI * r());
}
const addr = (kind: string, i: number) =>
  `0x${createHash("sha256").update(`${cfg.BENCH_JOBS_SEED}:${kind}:${i}`).digest("hex").slice(0, 40)}`;

// ---------------------------------------------------------------------------------------------
// Synthetic history
// ---------------------------------------------------------------------------------------------

interface Chain {
  id: number;
  baseBlock: number;
  blockSeconds: number;
}
const CHAINS: Chain[] = [
  { id: 1, baseBlock: 18_500_000, blockSeconds: 12 },
  { id: 8453, baseBlock: 12_000_000, blockSeconds: 2 },
];

interface AssetKind {
  symbol: string;
  decimals: number;
  startPrice: number;
  volatility: number; // daily log-price sigma
}
const ASSETS: AssetKind[] = [
  { symbol: "USDC", decimals: 6, startPrice: 1, volatility: 0.0005 },
  { symbol: "USDT", decimals: 6, startPrice: 1, volatility: 0.0005 },
  { symbol: "WETH", decimals: 18, startPrice: 2500, volatility: 0.03 },
  { symbol: "DAI", decimals: 18, startPrice: 1, volatility: 0.0005 },
  { symbol: "USDC", decimals: 6, startPrice: 1, volatility: 0.0005 },
];

interface BenchVault {
  idx: number;
  chain: Chain;
  address: string;
  asset: AssetKind;
  assetAddress: string;
  /** ratio (raw assets per raw share) at the start of day k (k = 0..days), float */
  ratio: Float64Array;
  /** asset USD price on day k */
  price: Float64Array;
  missing: Set<number>;
  /** seconds after 00:00, 06:00, 12:00, 18:00 at which the day's snapshots are taken */
  offset: number;
}

/** One share movement; kind mint/burn also gives a vault_event row. */
interface Flow {
  ts: number;
  kind: "mint" | "burn" | "xfer";
  from: string;
  to: string;
  shares: bigint;
  assets: bigint;
}

type Row = CopyValue[];
interface Tables {
  share_ratio_snapshot: Row[];
  share_transfer: Row[];
  vault_event: Row[];
  fee_event: Row[];
}
const emptyTables = (): Tables => ({ share_ratio_snapshot: [], share_transfer: [], vault_event: [], fee_event: [] });

const COLUMNS: { [K in keyof Tables]: string[] } = {
  share_ratio_snapshot: [
    "id",
    "chain_id",
    "vault",
    "source",
    "total_assets",
    "total_supply",
    "asset_share_ratio",
    "idle_assets",
    "subaccount_assets",
    "asset_usd_price",
    "block_number",
    "timestamp",
  ],
  share_transfer: [
    "id",
    "chain_id",
    "vault",
    "from_address",
    "to_address",
    "shares",
    "block_number",
    "timestamp",
    "log_index",
  ],
  vault_event: [
    "id",
    "chain_id",
    "vault",
    "kind",
    "owner",
    "receiver",
    "asset",
    "assets",
    "shares",
    "snapshot_id",
    "block_number",
    "timestamp",
  ],
  fee_event: ["id", "chain_id", "vault", "kind", "amount", "timestamp"],
};

interface History {
  firstDay: number;
  lastDay: number;
  vaults: BenchVault[];
  wallets: string[];
  vaultRows: Row[];
  /** rows of days before lastDay, and of lastDay (the incremental day) */
  past: Tables;
  last: Tables;
  /** (wallet, vault) days with shares held at some time of the day, up to lastDay-1 and lastDay */
  holdingDaysPast: number;
  holdingDaysLast: number;
  deposits: number;
  withdrawals: number;
  transfers: number;
  referees: { wallet: string; referrer: string; day: number }[];
  referrers: string[];
}

function ratioFixed(r: number): bigint {
  return BigInt(Math.round(r * 1e15)) * 1000n;
}
function priceFixed(p: number): bigint {
  return BigInt(Math.round(p * 1e8)) * 10n ** 10n;
}

function generate(lastDay: number): History {
  const V = cfg.BENCH_JOBS_VAULTS;
  const DAYS = cfg.BENCH_JOBS_DAYS;
  const firstDay = lastDay - DAYS + 1;
  const t0s = firstDay * DAY;
  const endTs = (lastDay + 1) * DAY;

  // ---- vaults: ratio and price paths ----
  const vaults: BenchVault[] = [];
  for (let i = 0; i < V; i++) {
    const r = rng(`${cfg.BENCH_JOBS_SEED}:vault:${i}`);
    const asset = ASSETS[i % ASSETS.length]!;
    const apy = 0.02 + r() * 0.13;
    const ratio = new Float64Array(DAYS + 1);
    const price = new Float64Array(DAYS + 1);
    ratio[0] = 1 + r() * 0.05;
    price[0] = asset.startPrice;
    for (let k = 1; k <= DAYS; k++) {
      const u = r();
      if (u < 0.05)
        ratio[k] = ratio[k - 1]!; // flat day
      else if (u < 0.07)
        ratio[k] = ratio[k - 1]! * (1 - 0.001 - r() * 0.009); // loss day
      else ratio[k] = ratio[k - 1]! * (1 + (apy / 365) * (0.5 + r()));
      price[k] = price[k - 1]! * Math.exp(asset.volatility * normal(r));
    }
    const missing = new Set<number>();
    const nMissing = Math.floor(r() * 5); // 0..4 days without any snapshot
    for (let m = 0; m < nMissing; m++) missing.add(1 + Math.floor(r() * (DAYS - 3)));
    vaults.push({
      idx: i,
      chain: CHAINS[i % 2]!,
      address: addr("vault", i),
      asset,
      assetAddress: addr(`asset-${asset.symbol}`, i % 2),
      ratio,
      price,
      missing,
      offset: 60 + Math.floor(r() * 600),
    });
  }
  const ratioAt = (v: BenchVault, ts: number): number => {
    const x = (ts - t0s) / DAY;
    const k = Math.min(Math.max(Math.floor(x), 0), DAYS - 1);
    return v.ratio[k]! + (v.ratio[k + 1]! - v.ratio[k]!) * (x - k);
  };
  const vaultRows: Row[] = vaults.map((v) => [
    v.chain.id,
    v.address,
    v.idx % 3 === 0 ? "lendingPool" : "tokenizedVaultV2",
    "evm",
    `Bench ${v.asset.symbol} Vault ${v.idx}`,
    `bv${v.asset.symbol}${v.idx}`,
    v.asset.decimals,
    v.assetAddress,
    v.asset.symbol,
    v.asset.decimals,
    v.chain.baseBlock,
  ]);

  // ---- wallets and their flows ----
  const W = cfg.BENCH_JOBS_WALLETS;
  const wallets = Array.from({ length: W }, (_, i) => addr("wallet", i));
  const r = rng(`${cfg.BENCH_JOBS_SEED}:wallets`);
  // Popularity: Zipf-like weights over the vaults.
  const weights = vaults.map((_, i) => 1 / (1 + i) ** 0.8);
  const cum: number[] = [];
  weights.reduce((s, w, i) => (cum[i] = s + w), 0);
  const total = cum[cum.length - 1]!;
  const pickVault = (): BenchVault => {
    const x = r() * total;
    let lo = 0;
    let hi = cum.length - 1;
    while (lo < hi) {
      const mid = (lo + hi) >> 1;
      if (cum[mid]! < x) lo = mid + 1;
      else hi = mid;
    }
    return vaults[lo]!;
  };
  const flows: Flow[][] = vaults.map(() => []);
  // wallet|vault -> [firstDay, lastDay] with shares held (an exit day included)
  const intervals = new Map<string, [number, number][]>();
  const hold = (w: string, v: BenchVault, a: number, b: number) => {
    if (b < a) return;
    const k = `${w}|${v.idx}`;
    const l = intervals.get(k);
    if (l) l.push([a, b]);
    else intervals.set(k, [[a, b]]);
  };
  const assetsFor = (v: BenchVault, usd: number, k: number): bigint => {
    const units = usd / v.price[k]!;
    const d = Math.min(v.asset.decimals, 6);
    return BigInt(Math.max(1, Math.round(units * 10 ** d))) * 10n ** BigInt(v.asset.decimals - d);
  };
  let deposits = 0;
  let withdrawals = 0;
  let transfers = 0;
  const depositDay = new Int32Array(W);
  for (let w = 0; w < W; w++) {
    const wallet = wallets[w]!;
    let v: BenchVault;
    let day: number;
    let ts: number;
    let usd: number;
    if (w < V) {
      // Seed deposit: wallet w opens vault w on the first day, before its first snapshot.
      v = vaults[w]!;
      day = firstDay;
      ts = t0s + 1;
      usd = 1_000_000;
    } else {
      v = pickVault();
      let age: number;
      do age = Math.floor(expo(r, cfg.BENCH_JOBS_DEPOSIT_AGE_DAYS));
      while (age > DAYS - 2);
      day = lastDay - age;
      ts = day * DAY + Math.floor(r() * DAY);
      usd = Math.min(2_000_000, Math.max(10, 2000 * Math.exp(1.2 * normal(r))));
    }
    depositDay[w] = day;
    const k = day - firstDay;
    const assets = assetsFor(v, usd, k);
    const shares = (assets * SCALE) / ratioFixed(ratioAt(v, ts));
    flows[v.idx]!.push({ ts, kind: "mint", from: ZERO, to: wallet, shares, assets });
    deposits++;
    if (w < V) {
      hold(wallet, v, day, lastDay);
      continue;
    }
    // A later transfer of half the shares to another wallet, and maybe a withdrawal of the rest.
    let xfer: { ts: number; to: string; shares: bigint } | null = null;
    if (r() < cfg.BENCH_JOBS_TRANSFER_SHARE) {
      const xd = day + 1 + Math.floor(expo(r, 30));
      const to = wallets[V + Math.floor(r() * (W - V))]!;
      if (xd <= lastDay && to !== wallet) xfer = { ts: xd * DAY + Math.floor(r() * DAY), to, shares: shares / 2n };
    }
    let burnTs: number | null = null;
    if (r() < cfg.BENCH_JOBS_WITHDRAW_SHARE) {
      const wd = day + Math.max(1, Math.round(expo(r, cfg.BENCH_JOBS_HOLD_DAYS)));
      if (wd <= lastDay) burnTs = wd * DAY + Math.floor(r() * DAY);
    }
    if (xfer && burnTs != null && xfer.ts >= burnTs) xfer = null;
    if (xfer) {
      flows[v.idx]!.push({ ts: xfer.ts, kind: "xfer", from: wallet, to: xfer.to, shares: xfer.shares, assets: 0n });
      hold(xfer.to, v, Math.floor(xfer.ts / DAY), lastDay);
      transfers++;
    }
    if (burnTs != null) {
      const left = shares - (xfer?.shares ?? 0n);
      const out = (left * ratioFixed(ratioAt(v, burnTs))) / SCALE;
      flows[v.idx]!.push({ ts: burnTs, kind: "burn", from: wallet, to: ZERO, shares: left, assets: out });
      hold(wallet, v, day, Math.floor(burnTs / DAY)); // the exit day earns for the time held
      withdrawals++;
    } else {
      hold(wallet, v, day, lastDay);
    }
  }
  // Holding days (what the points ledger will hold): union of each (wallet, vault)'s intervals.
  let holdingDaysPast = 0;
  let holdingDaysLast = 0;
  for (const list of intervals.values()) {
    list.sort((a, b) => a[0] - b[0]);
    let [a, b] = list[0]!;
    const flush = () => {
      holdingDaysPast += Math.max(0, Math.min(b, lastDay - 1) - a + 1);
      if (b >= lastDay) holdingDaysLast++;
    };
    for (const [c, d] of list.slice(1)) {
      if (c <= b + 1) b = Math.max(b, d);
      else {
        flush();
        [a, b] = [c, d];
      }
    }
    flush();
  }

  // ---- rows: sweep each vault's snapshots, fees and flows in time order ----
  const past = emptyTables();
  const last = emptyTables();
  let txSeq = 0;
  const checkpoint = (ts: number, chain: Chain, block: number, eventType: number, logIndex: number) =>
    `${String(ts).padStart(10, "0")}${String(chain.id).padStart(16, "0")}${String(block).padStart(16, "0")}` +
    `${String(txSeq++).padStart(16, "0")}${eventType}${String(logIndex).padStart(16, "0")}`;
  const blockOf = (chain: Chain, ts: number) => chain.baseBlock + Math.floor((ts - t0s) / chain.blockSeconds);
  for (const v of vaults) {
    const vr = rng(`${cfg.BENCH_JOBS_SEED}:rows:${v.idx}`);
    type Item =
      | { ts: number; order: number; kind: "snapshot" | "fee" | "collected" }
      | { ts: number; order: number; kind: "flow"; flow: Flow };
    const items: Item[] = flows[v.idx]!.map((flow) => ({ ts: flow.ts, order: 0, kind: "flow" as const, flow }));
    for (let k = 0; k < DAYS; k++) {
      const day = firstDay + k;
      if (!v.missing.has(k))
        for (let s = 0; s < 4; s++) items.push({ ts: day * DAY + s * 6 * 3600 + v.offset, order: 2, kind: "snapshot" });
      if (k > 0 && k % 7 === v.idx % 7) items.push({ ts: day * DAY + 1800 + v.offset, order: 1, kind: "fee" });
      if (k % 30 === 15) items.push({ ts: day * DAY + 3600 + v.offset, order: 1, kind: "collected" });
    }
    items.sort((a, b) => a.ts - b.ts || a.order - b.order);
    let supply = 0n;
    let logIndex = 0;
    let lastBlock = -1;
    for (const it of items) {
      if (it.ts >= endTs) continue;
      const out = Math.floor(it.ts / DAY) === lastDay ? last : past;
      const block = blockOf(v.chain, it.ts);
      logIndex = block === lastBlock ? logIndex + 1 : Math.floor(vr() * 50);
      lastBlock = block;
      const k = Math.floor(it.ts / DAY) - firstDay;
      if (it.kind === "flow") {
        const f = it.flow;
        supply += f.kind === "mint" ? f.shares : f.kind === "burn" ? -f.shares : 0n;
        const id = checkpoint(it.ts, v.chain, block, 5, logIndex);
        out.share_transfer.push([id, v.chain.id, v.address, f.from, f.to, f.shares.toString(), block, it.ts, logIndex]);
        if (f.kind !== "xfer") {
          const wallet = f.kind === "mint" ? f.to : f.from;
          const evId = checkpoint(it.ts, v.chain, block, 5, logIndex + 1);
          out.vault_event.push([
            evId,
            v.chain.id,
            v.address,
            f.kind === "mint" ? "deposit" : "withdraw",
            wallet,
            wallet,
            v.assetAddress, // every flow in the vault's asset
            f.assets.toString(),
            f.shares.toString(),
            null, // no flow snapshot: only a second-asset deposit reads it
            block,
            it.ts,
          ]);
          logIndex++;
        }
        continue;
      }
      const ratio = ratioFixed(ratioAt(v, it.ts));
      const totalAssets = (supply * ratio) / SCALE;
      if (it.kind === "fee") {
        const amount = (totalAssets * 2n) / 5200n; // 2% a year, charged weekly
        out.fee_event.push([
          checkpoint(it.ts, v.chain, block, 5, logIndex),
          v.chain.id,
          v.address,
          "management_fee_charged",
          amount.toString(),
          it.ts,
        ]);
        continue;
      }
      if (it.kind === "collected") {
        out.fee_event.push([
          checkpoint(it.ts, v.chain, block, 5, logIndex),
          v.chain.id,
          v.address,
          "fees_collected",
          ((totalAssets * 2n) / 1200n).toString(),
          it.ts,
        ]);
        continue;
      }
      const idle = totalAssets / 20n;
      // Off-vault positions drift a little around the reported total (unrealized PnL).
      const sub = totalAssets - idle + (totalAssets * BigInt(Math.round((vr() - 0.5) * 2000))) / 1_000_000n;
      const snapRatio = supply === 0n ? null : formatFixed((totalAssets * SCALE) / supply);
      out.share_ratio_snapshot.push([
        `${checkpoint(it.ts, v.chain, block, 1, 0)}:${v.address}`,
        v.chain.id,
        v.address,
        "interval",
        totalAssets.toString(),
        supply.toString(),
        snapRatio,
        idle.toString(),
        (sub < 0n ? 0n : sub).toString(),
        formatFixed(priceFixed(v.price[k]! * (1 + (vr() - 0.5) * 0.002))),
        block,
        it.ts,
      ]);
    }
  }

  // ---- registrations: referrers (no referrer themselves) and their referees ----
  const rr = rng(`${cfg.BENCH_JOBS_SEED}:registry`);
  const referrers = wallets.slice(V, V + cfg.BENCH_JOBS_REFERRERS);
  const referees: History["referees"] = [];
  const taken = new Set<number>();
  while (referees.length < cfg.BENCH_JOBS_REFEREES) {
    const w = V + cfg.BENCH_JOBS_REFERRERS + Math.floor(rr() * (W - V - cfg.BENCH_JOBS_REFERRERS));
    if (taken.has(w)) continue;
    taken.add(w);
    // Registered some days before or after the deposit, never today (the incremental day).
    const day = Math.min(lastDay - 1, Math.max(firstDay, depositDay[w]! + Math.round((rr() - 0.3) * 40)));
    referees.push({ wallet: wallets[w]!, referrer: referrers[Math.floor(rr() * referrers.length)]!, day });
  }
  return {
    firstDay,
    lastDay,
    vaults,
    wallets,
    vaultRows,
    past,
    last,
    holdingDaysPast,
    holdingDaysLast,
    deposits,
    withdrawals,
    transfers,
    referees,
    referrers,
  };
}

// ---------------------------------------------------------------------------------------------
// Database setup
// ---------------------------------------------------------------------------------------------

/** Tables with the columns and types the jobs read (ponder.schema.ts), and Ponder's indexes. */
const INDEXER_DDL = `
CREATE SCHEMA ${SCHEMA};
CREATE TABLE ${SCHEMA}.vault (
  chain_id integer NOT NULL, address text NOT NULL, family text NOT NULL, kind text NOT NULL, name text NOT NULL,
  symbol text NOT NULL, decimals integer NOT NULL, asset text NOT NULL, asset_symbol text NOT NULL,
  asset_decimals integer NOT NULL, alt_asset_decimals integer, start_block numeric(78,0) NOT NULL,
  PRIMARY KEY (chain_id, address));
CREATE TABLE ${SCHEMA}.share_ratio_snapshot (
  id text PRIMARY KEY, chain_id integer NOT NULL, vault text NOT NULL, source text NOT NULL,
  total_assets numeric(78,0) NOT NULL, total_supply numeric(78,0) NOT NULL, asset_share_ratio numeric(78,18),
  idle_assets numeric(78,0) NOT NULL, subaccount_assets numeric(78,0) NOT NULL, asset_usd_price numeric(78,18),
  alt_assets numeric(78,0), alt_asset_usd_price numeric(78,18),
  block_number numeric(78,0) NOT NULL, timestamp numeric(78,0) NOT NULL);
CREATE INDEX share_ratio_snapshot_by_vault ON ${SCHEMA}.share_ratio_snapshot (chain_id, vault, timestamp);
CREATE TABLE ${SCHEMA}.share_transfer (
  id text PRIMARY KEY, chain_id integer NOT NULL, vault text NOT NULL, from_address text NOT NULL,
  to_address text NOT NULL, shares numeric(78,0) NOT NULL, block_number numeric(78,0) NOT NULL,
  timestamp numeric(78,0) NOT NULL, log_index integer NOT NULL);
CREATE INDEX share_transfer_by_vault ON ${SCHEMA}.share_transfer (chain_id, vault, block_number);
CREATE INDEX share_transfer_by_from ON ${SCHEMA}.share_transfer (from_address);
CREATE INDEX share_transfer_by_to ON ${SCHEMA}.share_transfer (to_address);
CREATE TABLE ${SCHEMA}.fee_event (
  id text PRIMARY KEY, chain_id integer NOT NULL, vault text NOT NULL, kind text NOT NULL, amount numeric(78,0),
  timestamp numeric(78,0) NOT NULL);
CREATE INDEX fee_event_by_vault ON ${SCHEMA}.fee_event (chain_id, vault, timestamp);
CREATE TABLE ${SCHEMA}.vault_event (
  id text PRIMARY KEY, chain_id integer NOT NULL, vault text NOT NULL, kind text NOT NULL, owner text NOT NULL,
  receiver text NOT NULL, asset text NOT NULL, assets numeric(78,0) NOT NULL, shares numeric(78,0) NOT NULL,
  snapshot_id text, block_number numeric(78,0) NOT NULL, timestamp numeric(78,0) NOT NULL);
CREATE INDEX vault_event_by_vault ON ${SCHEMA}.vault_event (chain_id, vault, block_number);
CREATE INDEX vault_event_by_owner ON ${SCHEMA}.vault_event (owner);
CREATE INDEX vault_event_by_receiver ON ${SCHEMA}.vault_event (receiver);
`;

/**
 * Every stored derived table (points_entry, points_ledger, points_pool, points_referral,
 * points_total and points_balance are views over these and the registry).
 */
const DERIVED_TABLES = [
  "vault_day",
  "vault_apy",
  "unrealized_pnl",
  "vault_metrics",
  "points_rules",
  "points_index",
  "points_vault",
  "points_position",
  "points_deposit",
] as const;

async function loadTables(client: pg.Client, t: Tables): Promise<void> {
  await client.query("BEGIN");
  for (const name of Object.keys(COLUMNS) as (keyof Tables)[]) {
    await copyRows(client, `${SCHEMA}.${name}`, COLUMNS[name], t[name]);
  }
  await client.query("COMMIT");
}

async function insertRegistry(client: pg.Client, h: History): Promise<void> {
  const ts = (day: number, sec: number) => new Date((day * DAY + sec) * 1000).toISOString();
  await client.query("BEGIN");
  await copyRows(
    client,
    "registry.points_user",
    ["address", "referrer", "chain_id", "registered_at", "signup_bonus"],
    [
      ...h.referrers.map((a, i): Row => [a, null, 1, ts(h.firstDay + 5 + i, 3600), "0"]),
      ...h.referees.map((x): Row => [x.wallet, x.referrer, 1, ts(x.day, 7200), "100"]),
    ],
  );
  const v = h.vaults;
  const rewards: [BenchVault | undefined, string, number, number | null][] = [
    [v[0], "2", h.lastDay - 400, h.lastDay - 300],
    [v[1], "1.5", h.lastDay - 200, h.lastDay - 150],
    [v[2], "3", h.lastDay - 90, null],
    [v[3], "2", h.lastDay - 30, h.lastDay + 30],
    [v[4], "1.25", h.firstDay, null],
    [v[0], "1.1", h.lastDay - 60, null],
  ];
  for (const [vault, m, a, b] of rewards) {
    if (!vault) continue;
    await client.query(
      "INSERT INTO registry.reward (chain_id, vault, text, multiplier, start_datetime, end_datetime) VALUES ($1, " +
        "$2, $3, $4, $5, $6)",
      [vault.chain.id, vault.address, `x${m} points`, m, ts(a, 0), b == null ? null : ts(b, 0)],
    );
  }
  await client.query("COMMIT");
}

/** A V8 CPU profile of this process (node:inspector), stopped into a .cpuprofile file. */
async function startProfile(): Promise<{ stop(file: string): Promise<string> }> {
  const { Session } = await import("node:inspector/promises");
  const session = new Session();
  session.connect();
  await session.post("Profiler.enable");
  await session.post("Profiler.start");
  return {
    async stop(file: string) {
      const { profile } = await session.post("Profiler.stop");
      writeFileSync(file, JSON.stringify(profile));
      session.disconnect();
      return file;
    },
  };
}

async function countDerived(client: pg.Client): Promise<Record<string, number>> {
  const out: Record<string, number> = {};
  for (const t of DERIVED_TABLES)
    out[t] = Number((await client.query<{ n: string }>(`SELECT count(*)::text AS n FROM derived.${t}`)).rows[0]!.n);
  return out;
}

// ---------------------------------------------------------------------------------------------
// Measurements: per-queue job timings (from the queues' event streams), CPU, statements
// ---------------------------------------------------------------------------------------------

interface JobTiming {
  queue: QueueKey;
  jobId: string;
  start: number;
  end: number;
  ok: boolean;
  result: unknown;
}

class QueueTimer {
  readonly events: Record<QueueKey, QueueEvents>;
  /** QueueEvents does not close a connection it is given */
  private connections: ReturnType<typeof redisConnection>[] = [];
  private active = new Map<string, number>();
  timings: JobTiming[] = [];
  constructor(redisUrl: string) {
    const keys = Object.keys(QUEUES) as QueueKey[];
    this.events = Object.fromEntries(
      keys.map((k) => {
        const connection = redisConnection(redisUrl);
        connection.on("error", () => {});
        this.connections.push(connection);
        const ev = new QueueEvents(QUEUES[k].name, { connection, prefix: PREFIX });
        ev.on("error", () => {});
        // The event id is the Redis stream id: `<server ms>-<seq>`.
        ev.on("active", ({ jobId }, id) => this.active.set(`${k}/${jobId}`, Number(id.split("-")[0])));
        ev.on("completed", ({ jobId, returnvalue }, id) =>
          this.done(k, jobId, Number(id.split("-")[0]), true, returnvalue),
        );
        ev.on("failed", ({ jobId, failedReason }, id) =>
          this.done(k, jobId, Number(id.split("-")[0]), false, failedReason),
        );
        return [k, ev];
      }),
    ) as Record<QueueKey, QueueEvents>;
  }
  private done(queue: QueueKey, jobId: string, end: number, ok: boolean, result: unknown) {
    const start = this.active.get(`${queue}/${jobId}`) ?? end;
    this.active.delete(`${queue}/${jobId}`);
    this.timings.push({ queue, jobId, start, end, ok, result });
  }
  async ready() {
    await Promise.all(Object.values(this.events).map((e) => e.waitUntilReady()));
  }
  take(): JobTiming[] {
    const t = this.timings;
    this.timings = [];
    return t;
  }
  async close() {
    await Promise.all(Object.values(this.events).map((e) => e.close()));
    for (const c of this.connections) c.disconnect();
  }
}

function reportTimings(phase: string, timings: JobTiming[], phaseStart: number, phaseEnd: number): string[] {
  const lines: string[] = [];
  const failed = timings.filter((t) => !t.ok);
  for (const key of Object.keys(QUEUES) as QueueKey[]) {
    const ts = timings.filter((t) => t.queue === key && t.ok);
    if (ts.length === 0) continue;
    const busy = ts.reduce((s, t) => s + (t.end - t.start), 0);
    const first = Math.min(...ts.map((t) => t.start));
    const last = Math.max(...ts.map((t) => t.end));
    const max = Math.max(...ts.map((t) => t.end - t.start));
    let extra = "";
    if (key === "vaultDays") {
      const sum = (f: string) => ts.reduce((s, t) => s + Number((t.result as Record<string, unknown>)?.[f] ?? 0), 0);
      extra =
        `, wrote ${fmt(sum("days"))} days, ${fmt(sum("apyRows"))} apy, ${fmt(sum("pnlRows"))} pnl, ` +
        `${fmt(sum("indexRows"))} index, ${fmt(sum("positionRows"))} position rows`;
    }
    lines.push(
      `${phase}: ${QUEUES[key].name.padEnd(13)} ${String(ts.length).padStart(4)} jobs, busy ` +
        `${secs(busy).padStart(7)}s (mean ${secs(busy / ts.length)}s, max ${secs(max)}s), ` +
        `from +${secs(first - phaseStart)}s to +${secs(last - phaseStart)}s${extra}`,
    );
  }
  lines.push(
    `${phase}: wall ${secs(phaseEnd - phaseStart)}s${failed.length ? `, ${failed.length} FAILED job attempts` : ""}`,
  );
  for (const f of failed.slice(0, 5)) lines.push(`${phase}: failed ${f.queue} ${f.jobId}: ${String(f.result)}`);
  return lines;
}

/**
 * CPU seconds of this process and of our Postgres: the postmaster's own and reaped children's
 * time (cutime/cstime keep the time of backends that exited) plus its live children's.
 */
function cpu(pgDataDir: string): { node: number; pg: number } {
  const node = process.cpuUsage();
  let pgSecs = 0;
  try {
    const postmaster = Number(readFileSync(join(pgDataDir, "postmaster.pid"), "utf8").split("\n")[0]);
    for (const p of readdirSync("/proc")) {
      if (!/^\d+$/.test(p)) continue;
      try {
        const stat = readFileSync(`/proc/${p}/stat`, "utf8");
        const f = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
        if (Number(p) === postmaster) pgSecs += (Number(f[11]) + Number(f[12]) + Number(f[13]) + Number(f[14])) / 100;
        else if (Number(f[1]) === postmaster) pgSecs += (Number(f[11]) + Number(f[12])) / 100;
      } catch {
        /* gone */
      }
    }
  } catch {
    /* not Linux */
  }
  return { node: (node.user + node.system) / 1e6, pg: pgSecs };
}

/** Where Postgres is in its WAL (and its full-page-image count), to report what a phase wrote. */
interface WalMark {
  lsn: string;
  fpi: number;
}
async function walMark(client: pg.Client): Promise<WalMark> {
  await client.query("SELECT pg_stat_force_next_flush()");
  const r = (
    await client.query<{ l: string; fpi: string }>(
      "SELECT pg_current_wal_lsn()::text AS l, (SELECT wal_fpi FROM pg_stat_wal)::text AS fpi",
    )
  ).rows[0]!;
  return { lsn: r.l, fpi: Number(r.fpi) };
}
async function walSince(client: pg.Client, m: WalMark): Promise<string> {
  await new Promise((r) => setTimeout(r, 1100)); // backends flush their WAL statistics at most once a second
  const now = await walMark(client);
  const b = Number(
    (await client.query<{ b: string }>("SELECT pg_wal_lsn_diff($1::pg_lsn, $2::pg_lsn)::text AS b", [now.lsn, m.lsn]))
      .rows[0]!.b,
  );
  const fpi = now.fpi - m.fpi;
  return `${(b / 2 ** 20).toFixed(0)} MiB WAL, ${fmt(fpi)} full-page images`;
}

async function topStatements(client: pg.Client, phase: string): Promise<void> {
  if (cfg.BENCH_JOBS_PG_STATS !== "1") return;
  const { rows } = await client.query<{ q: string; calls: string; ms: string; rows: string }>(
    `SELECT regexp_replace(left(query, 150), '\\s+', ' ', 'g') AS q, calls::text,
      round(total_exec_time)::text AS ms, rows::text
     FROM pg_stat_statements WHERE dbid = (SELECT oid FROM pg_database WHERE datname = current_database())
     ORDER BY total_exec_time DESC LIMIT 10`,
  );
  for (const r of rows)
    say(`${phase}: pg ${r.ms.padStart(7)} ms ${r.calls.padStart(6)} calls ${r.rows.padStart(9)} rows  ${r.q}`);
}

async function resetStatements(client: pg.Client): Promise<void> {
  if (cfg.BENCH_JOBS_PG_STATS === "1") await client.query("SELECT pg_stat_statements_reset()");
}

// ---------------------------------------------------------------------------------------------
// COPY baseline rows: shaped like holding entries of a per-day points ledger
// ---------------------------------------------------------------------------------------------

function* baselineRows(h: History, n: number): Generator<CopyValue[]> {
  const V = h.vaults.length;
  const perVault = Math.ceil(n / V);
  const perDay = Math.max(1, Math.ceil(perVault / (h.lastDay - h.firstDay + 1)));
  const dates = Array.from({ length: h.lastDay - h.firstDay + 1 }, (_, k) => dayToDate(h.firstDay + k));
  const values = Array.from({ length: 997 }, (_, i) => {
    const usd = 10n ** 18n * BigInt(10 + i * 37) + BigInt(i) * 123_456_789_012_345n;
    return {
      points: formatFixed(usd),
      shares: (BigInt(i + 1) * 987_654_321_987_654_321n).toString(),
      usd: formatFixed(usd),
    };
  });
  let emitted = 0;
  for (const v of h.vaults) {
    for (let j = 0; j < perVault && emitted < n; j++, emitted++) {
      const x = values[emitted % values.length]!;
      // Like a vault-days job: day after day, the vault's holders (a pool of 1,000 per vault,
      // rotating); one row per wallet and day.
      const k = Math.floor(j / perDay);
      const wallet = h.wallets[(v.idx * 1000 + (((j % perDay) + k * 37) % Math.max(1000, perDay))) % h.wallets.length]!;
      yield [wallet, dates[k % dates.length]!, "holding", v.chain.id, v.address, "", x.points, x.shares, x.usd];
    }
  }
}

// ---------------------------------------------------------------------------------------------
// main
// ---------------------------------------------------------------------------------------------

/** Closers of our clients, newest first, run before stopAll stops Redis and Postgres. */
const closers: { name: string; fn: () => Promise<unknown> }[] = [];
async function closeClients(): Promise<void> {
  for (const c of closers.splice(0).reverse()) {
    await Promise.race([c.fn().catch(() => {}), new Promise((r) => setTimeout(r, 5000))]);
  }
}

async function main(): Promise<void> {
  installSignalHandlers({ beforeStop: closeClients });
  rmSync(BENCH_DIR, { recursive: true, force: true });
  mkdirSync(LOG_DIR, { recursive: true });
  const today = Math.floor(Date.now() / 1000 / DAY);
  const yesterday = today - 1;
  say(
    `data: ${cfg.BENCH_JOBS_VAULTS} vaults x ${cfg.BENCH_JOBS_DAYS} days ` +
      `(${dayToDate(today - cfg.BENCH_JOBS_DAYS + 1)}..${dayToDate(today)}), ` +
      `${fmt(cfg.BENCH_JOBS_WALLETS)} wallets, deposit age mean ${cfg.BENCH_JOBS_DEPOSIT_AGE_DAYS} d, ` +
      `${cfg.BENCH_JOBS_WITHDRAW_SHARE * 100}% withdraw after mean ${cfg.BENCH_JOBS_HOLD_DAYS} d, ` +
      `${cfg.BENCH_JOBS_TRANSFER_SHARE * 100}% transfer half; worker concurrency ${cfg.BENCH_JOBS_CONCURRENCY}`,
  );

  // ---- processes ----
  const pgDataDir = join(BENCH_DIR, "postgres");
  say(
    `starting embedded Postgres on 127.0.0.1:${cfg.BENCH_JOBS_PG_PORT} (data dir .data/bench-jobs/postgres) and ` +
      `Redis on 127.0.0.1:${cfg.BENCH_JOBS_REDIS_PORT}`,
  );
  const pgi = await startEmbeddedPostgres({
    port: cfg.BENCH_JOBS_PG_PORT,
    dataDir: pgDataDir,
    database: "bench_jobs",
    logFile: join(LOG_DIR, "postgres.log"),
    postgresFlags:
      cfg.BENCH_JOBS_PG_STATS === "1"
        ? ["-c", "shared_preload_libraries=pg_stat_statements", "-c", "pg_stat_statements.track=all"]
        : [],
  });
  const redis = await startRedis({
    port: cfg.BENCH_JOBS_REDIS_PORT,
    dataDir: join(BENCH_DIR, "redis"),
    logFile: join(LOG_DIR, "redis.log"),
    name: "bench-redis",
  });
  const client = new PgClient({ connectionString: pgi.url, options: "-c timezone=UTC" });
  await client.connect();
  closers.push({ name: "bench client", fn: () => client.end() });
  if (cfg.BENCH_JOBS_PG_STATS === "1") await client.query("CREATE EXTENSION IF NOT EXISTS pg_stat_statements");

  // ---- synthetic history ----
  let t = Date.now();
  const h = generate(today);
  const count = (k: keyof Tables) => h.past[k].length + h.last[k].length;
  say(
    `generated in ${secs(Date.now() - t)}s: ${fmt(h.vaults.length)} vaults, ${fmt(count("share_ratio_snapshot"))} ` +
      `snapshots, ${fmt(count("share_transfer"))} share transfers ` +
      `(${fmt(h.deposits)} deposits, ${fmt(h.transfers)} wallet-to-wallet, ${fmt(h.withdrawals)} withdrawals), ` +
      `${fmt(count("vault_event"))} vault events, ` +
      `${fmt(count("fee_event"))} fee events; today (${dayToDate(today)}): ` +
      `${fmt(h.last.share_ratio_snapshot.length)} snapshots, ${fmt(h.last.share_transfer.length)} transfers`,
  );
  say(
    `expected holding entries in the points ledger: ${fmt(h.holdingDaysPast)} up to yesterday, ` +
      `+${fmt(h.holdingDaysLast)} today; ` +
      `${h.referrers.length} referrers, ${h.referees.length} referees`,
  );
  t = Date.now();
  await client.query(INDEXER_DDL);
  await copyRows(
    client,
    `${SCHEMA}.vault`,
    [
      "chain_id",
      "address",
      "family",
      "kind",
      "name",
      "symbol",
      "decimals",
      "asset",
      "asset_symbol",
      "asset_decimals",
      "start_block",
    ],
    h.vaultRows,
  );
  await loadTables(client, h.past);
  await client.query(
    `ANALYZE ${Object.keys(COLUMNS)
      .map((n) => `${SCHEMA}.${n}`)
      .join(", ")}, ${SCHEMA}.vault`,
  );
  say(`loaded ${SCHEMA} (history up to ${dayToDate(yesterday)}) in ${secs(Date.now() - t)}s`);

  // ---- workers (migrations), registry ----
  let clock = yesterday * DAY * 1000 + 12 * 3600 * 1000; // noon yesterday, then noon today
  const jobsCfg = {
    ...jobsConfig({
      DATABASE_URL: pgi.url,
      INDEXER_SCHEMA: SCHEMA,
      WORKER_CONCURRENCY: String(cfg.BENCH_JOBS_CONCURRENCY),
    }),
    redisUrl: redis.url,
  };
  const workers: WorkerHandle = await startWorkers(
    jobsCfg,
    (line) => say(`[jobs] ${line}`),
    () => clock,
    { schedule: false },
  );
  let workersClosed: Promise<void> | undefined;
  const closeWorkers = () => (workersClosed ??= workers.close());
  closers.push({ name: "workers", fn: closeWorkers });
  await insertRegistry(client, h);
  const q = openQueues(redis.url);
  closers.push({ name: "queues", fn: () => q.close() });
  const timer = new QueueTimer(redis.url);
  closers.push({ name: "queue events", fn: () => timer.close() });
  await timer.ready();

  // ---- full recompute (as `npm run recompute -- --all`, up to yesterday) ----
  await client.query(`TRUNCATE ${DERIVED_TABLES.map((n) => `derived.${n}`).join(", ")}`);
  await client.query("CHECKPOINT");
  await resetStatements(client);
  say("full recompute: starting");
  let wal = await walMark(client);
  let c0 = cpu(pgDataDir);
  const fullStart = Date.now();
  const vaults = await loadVaultMetas(workers.db, SCHEMA, undefined);
  const firstDays = await loadFirstDays(workers.db, SCHEMA);
  const changes: ChangedRange[] = [];
  for (const v of vaults) {
    const first = firstDays.get(vaultKey(v));
    if (first == null || first > yesterday) continue;
    changes.push({
      vault: { chainId: v.chainId, address: v.address },
      from: first,
      to: yesterday,
      fingerprints: new Map(),
    });
  }
  const plan = buildFlow(changes, jobsCfg.attempts, await extrasHash(workers.db), `bench-${fullStart}`);
  const rollupId = await addFlow(q.producer, plan);
  const rollupJob = await Job.fromId(q.queues.pointsRollup, rollupId);
  await rollupJob!.waitUntilFinished(timer.events.pointsRollup, TIMEOUT_MS);
  const fullMs = Date.now() - fullStart;
  let c1 = cpu(pgDataDir);
  const fullTimings = timer.take();
  for (const line of reportTimings("full", fullTimings, fullStart, fullStart + fullMs)) say(line);
  say(
    `full: CPU node ${(c1.node - c0.node).toFixed(1)}s, postgres ${(c1.pg - c0.pg).toFixed(1)}s over ` +
      `${secs(fullMs)}s wall; ${await walSince(client, wal)}`,
  );
  await topStatements(client, "full");
  const failedFull = (await q.queues.vaultDays.getJobs(["failed"])).filter((j) => j.id?.endsWith(plan.runId));
  if (failedFull.length > 0)
    throw new Error(
      `full recompute: ${failedFull.length} vault-days jobs failed, e.g. ${failedFull[0]!.id}: ` +
        `${failedFull[0]!.failedReason}`,
    );
  const counts = await countDerived(client);
  const rows = Object.values(counts).reduce((s, n) => s + n, 0);
  say(
    `full recompute: ${plan.days} vault-days in ${secs(fullMs)}s; rows: ` +
      `${DERIVED_TABLES.map((n) => `${n} ${fmt(counts[n]!)}`).join(", ")}; total ${fmt(rows)}`,
  );

  // ---- incremental day: today's data arrives, one fan-out run ----
  t = Date.now();
  await loadTables(client, h.last);
  say(`appended today's data in ${secs(Date.now() - t)}s`);
  clock = today * DAY * 1000 + 12 * 3600 * 1000;
  // Steady state: a day after the previous run, autovacuum has long processed the tables.
  t = Date.now();
  await client.query(`VACUUM (ANALYZE) ${DERIVED_TABLES.map((n) => `derived.${n}`).join(", ")}`);
  say(`vacuumed and analyzed the derived tables in ${secs(Date.now() - t)}s`);
  await client.query("CHECKPOINT");
  wal = await walMark(client);
  await resetStatements(client);
  c0 = cpu(pgDataDir);
  // As in steady state: the hourly full comparison ran a while ago, so the scheduled fan-out
  // compares the recent days only (FANOUT_RECENT_DAYS).
  await q.connection.set(`${PREFIX}:fanout-full-at`, String(clock));
  const profiler = cfg.BENCH_JOBS_CPU_PROFILE ? await startProfile() : undefined;
  const incStart = Date.now();
  const fanoutJob = await q.queues.fanout.add(
    QUEUES.fanout.name,
    { reason: "schedule" },
    { jobId: `fanout-bench-${incStart}`, removeOnComplete: { age: 3600 } },
  );
  const out = QUEUES.fanout.output.parse(await fanoutJob.waitUntilFinished(timer.events.fanout, TIMEOUT_MS));
  if (!out.rollupJobId) throw new Error(`incremental: the fan-out found nothing to do (${JSON.stringify(out)})`);
  const incRollup = await Job.fromId(q.queues.pointsRollup, out.rollupJobId);
  await incRollup!.waitUntilFinished(timer.events.pointsRollup, TIMEOUT_MS);
  const incMs = Date.now() - incStart;
  if (profiler) say(`incremental: CPU profile written to ${await profiler.stop(cfg.BENCH_JOBS_CPU_PROFILE!)}`);
  c1 = cpu(pgDataDir);
  const failedInc = (await q.queues.vaultDays.getJobs(["failed"])).filter(
    (j) => out.runId && j.id?.endsWith(out.runId),
  );
  if (failedInc.length > 0)
    throw new Error(
      `incremental: ${failedInc.length} vault-days jobs failed, e.g. ${failedInc[0]!.id}: ` +
        `${failedInc[0]!.failedReason}`,
    );
  say(`incremental: fan-out planned ${out.vaults} vaults, ${out.days} vault-days`);
  for (const line of reportTimings("incremental", timer.take(), incStart, incStart + incMs)) say(line);
  say(
    `incremental: CPU node ${(c1.node - c0.node).toFixed(1)}s, postgres ${(c1.pg - c0.pg).toFixed(1)}s over ` +
      `${secs(incMs)}s wall; ${await walSince(client, wal)}`,
  );
  await topStatements(client, "incremental");

  // A second fan-out must find nothing left (what the schedule costs on a quiet minute).
  await resetStatements(client);
  const idleStart = Date.now();
  const idleJob = await q.queues.fanout.add(
    QUEUES.fanout.name,
    { reason: "schedule" },
    { jobId: `fanout-bench-idle-${idleStart}`, removeOnComplete: { age: 3600 } },
  );
  const idle = QUEUES.fanout.output.parse(await idleJob.waitUntilFinished(timer.events.fanout, TIMEOUT_MS));
  timer.take();
  if (idle.rollupJobId) throw new Error(`incremental: a second fan-out still found ${idle.vaults} vaults to recompute`);
  say(`idle fan-out (nothing to do): ${secs(Date.now() - idleStart)}s`);
  await topStatements(client, "idle fan-out");
  // What the points views cost when read (ranks and totals are computed on read).
  for (let k = 0; k < 2; k++) {
    let r0 = Date.now();
    const all = await client.query("SELECT wallet, total_points, rank_total, rank_streak FROM derived.points_balance");
    const allMs = Date.now() - r0;
    const probe = all.rows[Math.floor(all.rows.length / 2)]?.wallet as string | undefined;
    r0 = Date.now();
    if (probe) {
      await client.query("SELECT * FROM derived.points_total WHERE wallet = $1", [probe]);
      await client.query("SELECT * FROM derived.points_pool WHERE wallet = $1", [probe]);
    }
    say(
      `read (run ${k + 1}): derived.points_balance, ${fmt(all.rows.length)} wallets with ranks, in ` +
        `${secs(allMs)}s; one wallet's points_total and points_pool in ${Date.now() - r0} ms`,
    );
  }
  {
    const r0 = Date.now();
    const n = Number(
      (
        await client.query<{ n: string }>(
          "SELECT count(*)::text AS n FROM derived.points_ledger WHERE source = 'holding'",
        )
      ).rows[0]!.n,
    );
    const expected = h.holdingDaysPast + h.holdingDaysLast;
    say(
      `read: derived.points_ledger generates ${fmt(n)} holding entries (the history has ${fmt(expected)} ` +
        `wallet-days with shares held) in ${secs(Date.now() - r0)}s`,
    );
    if (n !== expected) throw new Error(`the ledger view has ${n} holding entries, the generated history ${expected}`);
  }
  const after = await countDerived(client);
  say(`after today: ${DERIVED_TABLES.map((n) => `${n} ${fmt(after[n]!)}`).join(", ")}`);
  await closeWorkers();

  // ---- COPY baseline: `rows` rows into a table shaped like derived.points_ledger ----
  await client.query("DROP SCHEMA IF EXISTS bench_copy CASCADE");
  await client.query("CREATE SCHEMA bench_copy");
  await client.query(`CREATE TABLE bench_copy.points_ledger (
    wallet text NOT NULL, day date NOT NULL, source text NOT NULL, chain_id integer NOT NULL, vault text NOT NULL,
    ref text NOT NULL, points numeric(78,18) NOT NULL, shares numeric(78,0), usd_value numeric(78,18),
    PRIMARY KEY (chain_id, vault, day, source, wallet, ref))`);
  await client.query("CREATE INDEX ON bench_copy.points_ledger (wallet, day)");
  await client.query("CHECKPOINT");
  wal = await walMark(client);
  c0 = cpu(pgDataDir);
  const copyStart = Date.now();
  await client.query("BEGIN");
  const copied = await copyRows(
    client,
    "bench_copy.points_ledger",
    ["wallet", "day", "source", "chain_id", "vault", "ref", "points", "shares", "usd_value"],
    baselineRows(h, rows),
  );
  await client.query("COMMIT");
  const copyMs = Date.now() - copyStart;
  c1 = cpu(pgDataDir);
  if (copied !== rows) throw new Error(`copy baseline wrote ${copied} rows, expected ${rows}`);
  say(
    `copy: ${fmt(copied)} rows into bench_copy.points_ledger (PK + wallet index, logged) in ${secs(copyMs)}s; CPU ` +
      `node ${(c1.node - c0.node).toFixed(1)}s, postgres ${(c1.pg - c0.pg).toFixed(1)}s; ` +
      `${await walSince(client, wal)}`,
  );
  await client.query("DROP SCHEMA bench_copy CASCADE");

  const ratio = fullMs / copyMs;
  say(
    `targets: full <= 10 x copy: ${ratio <= 10 ? "met" : "NOT met"} (${ratio.toFixed(2)}); incremental < 2 s: ` +
      `${incMs < 2000 ? "met" : "NOT met"} (${secs(incMs)}s)`,
  );
  await closeClients();
  await stopAll();
  say(`done in ${secs(Date.now() - t0)}s`);
  console.log(
    `jobs-bench: full=${secs(fullMs)} incremental=${secs(incMs)} rows=${rows} copy=${secs(copyMs)} ` +
      `ratio=${ratio.toFixed(2)}`,
  );
}

main().then(
  () => process.exit(0),
  async (err: unknown) => {
    console.error(`jobs-bench failed: ${err instanceof Error ? (err.stack ?? err.message) : errMessage(err)}`);
    await closeClients().catch(() => {});
    await stopAll().catch(() => {});
    process.exit(1);
  },
);
