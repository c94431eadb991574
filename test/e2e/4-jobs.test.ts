/**
 * The derived analytics on the simulated chains: every figure equals a recomputation straight
 * from the indexed tables; registry changes (rewards, referrals, manual points) reach the
 * ledger; a recompute from scratch equals the incremental runs; a worker killed mid-job leaves
 * nothing half-written; with Redis stopped nothing indexed is lost; a reorg is recomputed.
 */
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { FlowProducer, Job, Queue, QueueEvents } from "bullmq";
import type { Address } from "viem";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { ChainSession } from "../../contracts/devnet/session.js";
import { createDb, createPool } from "../../db/client.js";
import { DAY_SECONDS, dateToDay, today } from "../../db/days.js";
import { formatFixed, parseFixed } from "../../db/fixed.js";
import { jobsConfig } from "../../jobs/config.js";
import { queuesDashboard } from "../../jobs/dashboard.js";
import { addFlow, buildFlow, extrasHash, planChanges } from "../../jobs/fanout.js";
import { PREFIX, QUEUES } from "../../jobs/queues.js";
import { redisConnection, settle } from "../../jobs/runtime.js";
import { loadSummaryInputs, summaryRows, writeSummaries } from "../../jobs/vault/summary-write.js";
import { REPO_ROOT } from "../../scripts/lib/indexer.js";
import type { ManagedProcess } from "../../scripts/lib/procs.js";
import { type RedisInstance, startRedis } from "../../scripts/lib/redis.js";
import { startWorkerProcess } from "../../scripts/lib/workers.js";
import { loadManifest, PORT_OFFSET, rows, rpcCall, sleep, withDb } from "../helpers.js";

const devnet = inject("devnet");

const REDIS_PORT = 63791 + PORT_OFFSET;
const METRICS_PORT = 19464 + PORT_OFFSET;
let redis: RedisInstance;
let workers: ManagedProcess;

const q = <T>(sql: string, params: unknown[] = []) => withDb(devnet.dbUrl, (c) => rows<T>(c, sql, params));

function spawnWorkers(env: Record<string, string> = {}): ManagedProcess {
  return startWorkerProcess({
    databaseUrl: devnet.dbUrl,
    redisUrl: redis.url,
    registryFile: devnet.registryFile,
    logFile: join(devnet.dir, "workers.log"),
    env: {
      FANOUT_EVERY_S: "3600",
      PROGRESS_POLL_S: "0.5",
      WORKER_LOCK_MS: "3000",
      METRICS_PORT: String(METRICS_PORT),
      ...Object.fromEntries(devnet.chains.map((c) => [`PONDER_RPC_URL_${c.chainId}`, c.rpcUrl])),
      ...env,
    },
  });
}

/**
 * A test's own flow producer, rollup queue and rollup events, on connections of their own that
 * close() also ends (BullMQ leaves a connection it was handed open, and a later test stops Redis).
 */
async function rollupClients() {
  const conns = Array.from({ length: 3 }, () => redisConnection(redis.url));
  for (const c of conns) c.on("error", () => {});
  const producer = new FlowProducer({ connection: conns[0]!, prefix: PREFIX });
  const events = new QueueEvents(QUEUES.pointsRollup.name, { connection: conns[1]!, prefix: PREFIX });
  const rollups = new Queue(QUEUES.pointsRollup.name, { connection: conns[2]!, prefix: PREFIX });
  await events.waitUntilReady();
  return {
    producer,
    events,
    rollups,
    async close() {
      await producer.close();
      await events.close();
      await rollups.close();
      for (const c of conns) c.disconnect();
    },
  };
}

async function waitUntil(what: string, fn: () => Promise<boolean>, ms = 120_000): Promise<void> {
  const end = Date.now() + ms;
  while (Date.now() < end) {
    if (await fn()) return;
    await sleep(200);
  }
  throw new Error(`timed out waiting until ${what}`);
}

/** A hash of every derived table's rows (computed_at columns left out). */
async function derivedHash(): Promise<Record<string, string>> {
  const tables: Record<string, string> = {
    vault_day:
      "chain_id, vault, day, missing, snapshot_id, share_price, total_assets, total_shares, asset_share_ratio, asset_usd_price, tvl, daily_apy, daily_pnl, fees_charged, gross_daily_apy, fingerprint",
    vault_apy:
      "chain_id, vault, day, horizon, span_days, simple_apy, compound_apy, gross_simple_apy, gross_compound_apy, pnl_per_share, daily_pnl_per_share",
    unrealized_pnl:
      "chain_id, vault, snapshot_id, tvl_on_vault, actual_tvl, current_redeem_ratio, adjusted_redeem_ratio, unrealized_pnl, unrealized_pnl_in_asset, strategist_name",
    points_index:
      "chain_id, vault, day, asset_decimals, ratio, price, multiplier, points_per_share, cum_points_per_share",
    points_position:
      "chain_id, vault, wallet, day, shares, day_share_seconds, next_day, base_points, points, settled_points",
    points_deposit: "chain_id, vault, wallet, lifetime_deposit, last_deposit_day",
    points_entry: "wallet, day, source, chain_id, vault, ref, points",
    points_ledger: "wallet, day, source, chain_id, vault, ref, points, shares, usd_value",
    points_pool:
      "wallet, chain_id, vault, total_points, position_day, shares, native_amount, usd_value, lifetime_deposit",
    points_referral: "referrer, referee, total_points",
    points_balance:
      "wallet, total_points, referral_earnings, manual_points, streak_days, rank_total, rank_streak, top_vault",
    vault_metrics:
      "chain_id, vault, as_of_day, historical_apy, historical_compound_apy, returns, max_drawdown, max_daily_drawdown",
  };
  const out: Record<string, string> = {};
  for (const [t, cols] of Object.entries(tables)) {
    const [r] = await q<{ h: string; n: string }>(
      `SELECT md5(coalesce(string_agg(x::text, '|' ORDER BY x::text), '')) AS h, count(*) AS n FROM (SELECT ${cols} FROM derived.${t}) x`,
    );
    out[t] = `${r!.n}:${r!.h}`;
  }
  return out;
}

interface DayState {
  d: number;
  id: string;
  total_assets: string;
  total_supply: string;
  ratio: string | null;
  price: string | null;
}

/** Checks every derived figure against a recomputation from the indexed views (docs/metrics.md). */
async function expectMatchesIndexed(): Promise<void> {
  type VaultRow = {
    chain_id: number;
    address: string;
    decimals: number;
    asset_decimals: number;
    alt_asset_decimals: number | null;
  };
  const vaults = await q<VaultRow>(
    "SELECT chain_id, address, decimals, asset_decimals, alt_asset_decimals FROM indexer.vault ORDER BY chain_id, address",
  );
  expect(vaults.length).toBe(4);
  const now = today();
  for (const v of vaults) {
    const label = `${v.chain_id}:${v.address}`;
    // the last snapshot of each day that has one
    const lastOfDay = await q<DayState>(
      `SELECT DISTINCT ON (floor(timestamp / 86400)) floor(timestamp / 86400)::int AS d, id, total_assets::text, total_supply::text,
              asset_share_ratio::text AS ratio, asset_usd_price::text AS price
       FROM indexer.share_ratio_snapshot WHERE chain_id = $1 AND vault = $2
       ORDER BY floor(timestamp / 86400), timestamp DESC, block_number DESC, id DESC`,
      [v.chain_id, v.address],
    );
    const byDay = new Map(lastOfDay.map((s) => [s.d, s]));
    const first = lastOfDay[0]!.d;
    const carried = (d: number): DayState | undefined => {
      for (let x = d; x >= first; x--) if (byDay.has(x)) return byDay.get(x);
      return undefined;
    };
    const days = await q<{
      day: string;
      missing: boolean;
      snapshot_id: string | null;
      total_assets: string | null;
      total_shares: string | null;
      asset_share_ratio: string | null;
      daily_apy: number | null;
      daily_pnl: string | null;
      tvl: string | null;
      share_price: string | null;
    }>(
      "SELECT day::text, missing, snapshot_id, total_assets::text, total_shares::text, asset_share_ratio::text, daily_apy, daily_pnl::text, tvl::text, share_price::text FROM derived.vault_day WHERE chain_id = $1 AND vault = $2 ORDER BY day",
      [v.chain_id, v.address],
    );
    expect(days.length, label).toBe(now - first + 1);
    for (const row of days) {
      const d = dateToDay(row.day);
      const s = byDay.get(d);
      expect(row.missing, `${label} ${row.day}`).toBe(s == null);
      if (!s) continue;
      expect(row.snapshot_id).toBe(s.id);
      expect(row.total_assets).toBe(s.total_assets);
      expect(row.total_shares).toBe(s.total_supply);
      expect(row.asset_share_ratio).toBe(s.ratio);
      const prev = carried(d - 1);
      if (s.ratio && prev?.ratio && Number(prev.ratio) > 0) {
        expect(row.daily_apy, `${label} ${row.day} daily_apy`).toBe((Number(s.ratio) / Number(prev.ratio)) ** 365 - 1);
      } else expect(row.daily_apy).toBeNull();
    }
    // tvl, share price and daily PnL in exact numeric arithmetic
    const mismatch = await q<Record<string, string>>(
      `SELECT dd.day::text, dd.tvl::text, dd.share_price::text, dd.daily_pnl::text, s.total_assets::text, s.asset_usd_price::text, s.asset_share_ratio::text,
              prev.asset_share_ratio::text AS prev_ratio, prev.total_supply::text AS prev_supply FROM derived.vault_day dd
       JOIN indexer.share_ratio_snapshot s ON s.id = dd.snapshot_id
       LEFT JOIN LATERAL (SELECT p.asset_share_ratio, p.total_supply FROM indexer.share_ratio_snapshot p
                          WHERE p.chain_id = s.chain_id AND p.vault = s.vault AND p.timestamp < floor(s.timestamp / 86400) * 86400
                          ORDER BY p.timestamp DESC, p.block_number DESC, p.id DESC LIMIT 1) prev ON true
       WHERE dd.chain_id = $1 AND dd.vault = $2 AND (
         dd.tvl IS DISTINCT FROM trunc(s.total_assets * s.asset_usd_price * (10::numeric ^ (-$3::int)), 18)
         OR dd.share_price IS DISTINCT FROM trunc(s.asset_share_ratio * (10::numeric ^ ($4::int - $3::int)), 18)
         OR dd.daily_pnl IS DISTINCT FROM (CASE WHEN prev.asset_share_ratio > 0 AND s.asset_share_ratio > 0
              THEN trunc((s.asset_share_ratio - prev.asset_share_ratio) * prev.total_supply * (10::numeric ^ (-$3::int)), 18) END))`,
      [v.chain_id, v.address, v.asset_decimals, v.decimals],
    );
    expect(mismatch, `${label} tvl/share_price/daily_pnl`).toEqual([]);

    // APY of the latest day, every horizon, against the ratios
    const apy = await q<{ horizon: string; span_days: number; simple_apy: number; compound_apy: number }>(
      "SELECT horizon, span_days, simple_apy, compound_apy FROM derived.vault_apy WHERE chain_id = $1 AND vault = $2 AND day = $3::date",
      [v.chain_id, v.address, days[days.length - 1]!.day],
    );
    const spNow = carried(now)!.ratio!;
    // history starts at the first day whose last snapshot has a share price (supply > 0)
    const horizons = [1, 7, 30, 90, 180, 365].filter((h) => Number(carried(now - h)?.ratio ?? 0) > 0);
    expect(apy.map((a) => a.horizon).sort()).toEqual([...horizons.map(String), "inception"].sort());
    for (const a of apy) {
      const base = carried(now - a.span_days)!.ratio!;
      const x = Number(spNow) / Number(base);
      expect(a.simple_apy, `${label} ${a.horizon}`).toBe(((x - 1) * 365) / a.span_days);
      expect(a.compound_apy, `${label} ${a.horizon}`).toBe(x ** (365 / a.span_days) - 1);
    }

    // Unrealized PnL: one record per snapshot, actual TVL from idle + subaccount balances plus the
    // alt asset valued through both feeds (truncated once to 18 decimals; left out, and null,
    // when held without a price), PnL and the adjusted redeem ratio from it.
    const [pnl] = await q<{ snaps: string; recs: string; bad: string }>(
      `SELECT (SELECT count(*) FROM indexer.share_ratio_snapshot WHERE chain_id = $1 AND vault = $2) AS snaps,
              (SELECT count(*) FROM derived.unrealized_pnl WHERE chain_id = $1 AND vault = $2) AS recs,
              (SELECT count(*) FROM derived.unrealized_pnl u JOIN indexer.share_ratio_snapshot s ON s.id = u.snapshot_id
               CROSS JOIN LATERAL (SELECT CASE WHEN s.alt_assets = 0 THEN 0
                   WHEN s.alt_asset_usd_price IS NOT NULL AND s.asset_usd_price > 0
                   THEN div(s.alt_assets * s.alt_asset_usd_price * (10::numeric ^ 18),
                            s.asset_usd_price * (10::numeric ^ $5::int)) * (10::numeric ^ -18) END AS alt) a
               CROSS JOIN LATERAL (SELECT (s.idle_assets + s.subaccount_assets) * (10::numeric ^ (-$3::int)) + coalesce(a.alt, 0) AS tvl,
                   s.total_assets * (10::numeric ^ (-$3::int)) AS reported) t
               WHERE u.chain_id = $1 AND u.vault = $2 AND (u.actual_tvl <> t.tvl
                 OR u.alt_assets IS DISTINCT FROM s.alt_assets * (10::numeric ^ (-$5::int))
                 OR u.alt_asset_price IS DISTINCT FROM s.alt_asset_usd_price
                 OR u.alt_assets_in_asset IS DISTINCT FROM a.alt
                 OR u.tvl_on_vault <> t.reported
                 OR u.unrealized_pnl_in_asset <> t.tvl - t.reported
                 OR u.unrealized_pnl IS DISTINCT FROM trunc((t.tvl - t.reported) * s.asset_usd_price, 18)
                 OR u.adjusted_redeem_ratio IS DISTINCT FROM (CASE WHEN s.total_supply > 0 THEN
                      trunc(div(t.tvl * (10::numeric ^ ($3::int + 18)), s.total_supply) * (10::numeric ^ ($4::int - $3::int)))
                        * (10::numeric ^ -18) END)
               )) AS bad`,
      [v.chain_id, v.address, v.asset_decimals, v.decimals, v.alt_asset_decimals ?? 0],
    );
    expect(pnl!.recs, `${label} unrealized pnl records`).toBe(pnl!.snaps);
    expect(pnl!.bad).toBe("0");
  }

  // Summaries: each vault's vault_metrics row (the jobs write it from the series they hold in
  // memory when they can) equals the one computed from its stored daily and APY rows.
  await withDb(devnet.dbUrl, async (c) => {
    const got = await rows<
      Record<string, unknown> & {
        chain_id: number;
        vault: string;
        share_ratio_snapshot_at: Date | null;
        apy_computed_at: Date;
      }
    >(
      c,
      `SELECT chain_id, vault, as_of_day::text, first_day::text, tvl::text, share_price::text, historical_apy, historical_compound_apy, gross_apy,
              gross_compound_apy, pnl_per_share, daily_pnl_per_share, returns, liquid_apy_7d, liquid_apy_30d, max_drawdown, max_daily_drawdown,
              apy_computed_at, share_ratio_snapshot_at
       FROM derived.vault_metrics ORDER BY chain_id, vault`,
    );
    expect(got.length).toBe(vaults.length);
    const { inputs, empty } = await loadSummaryInputs(
      c,
      got.map((r) => ({ chainId: r.chain_id, address: r.vault })),
    );
    expect(empty).toEqual([]);
    expect(
      got.map((r) => ({
        ...r,
        apy_computed_at: r.apy_computed_at.toISOString(),
        share_ratio_snapshot_at: r.share_ratio_snapshot_at?.toISOString() ?? null,
      })),
    ).toEqual(summaryRows(inputs));
    // written again with nothing changed, no row is rewritten: cached_at (and the answers' ETags)
    // stay; one figure changed rewrites that vault's row alone
    const stamps = async () =>
      (
        await rows<{ k: string; at: Date; xmin: string }>(
          c,
          "SELECT chain_id || ':' || vault AS k, cached_at AS at, xmin::text FROM derived.vault_metrics",
        )
      ).map((r) => `${r.k} ${r.at.toISOString()} ${r.xmin}`);
    const before = await stamps();
    await writeSummaries(c, inputs, []);
    expect(await stamps()).toEqual(before);
    const [first, ...others] = inputs;
    const moved = { ...first!, lastWithData: { ...first!.lastWithData!, tvl: "1.5" } };
    try {
      await writeSummaries(c, [moved, ...others], []);
      const after = await stamps();
      expect(after.filter((x) => !before.includes(x))).toHaveLength(1);
      expect(after.find((x) => !before.includes(x))).toMatch(
        new RegExp(`^${first!.vault.chainId}:${first!.vault.address} `),
      );
    } finally {
      await writeSummaries(c, inputs, []);
    }
    // and against SQL over the daily series: drawdowns from the running peak, returns over h days
    // (sp carried over missing days: today has none until its first snapshot, just after midnight)
    const spAt = (day: string) =>
      `(SELECT x.sp FROM d x WHERE x.chain_id = p.chain_id AND x.vault = p.vault AND x.day <= ${day}
         ORDER BY x.day DESC LIMIT 1)`;
    const series = await rows<{
      chain_id: number;
      vault: string;
      mdd: number | null;
      mdaily: number | null;
      r1: number | null;
      r7: number | null;
      r30: number | null;
    }>(
      c,
      `WITH d AS (
         -- since the vault's last day without supply (a reset: figures start afresh after it)
         SELECT chain_id, vault, day, share_price::float8 AS sp FROM derived.vault_day v
          WHERE NOT missing AND share_price IS NOT NULL
            AND day > coalesce((SELECT max(day) FROM derived.vault_day z
                                 WHERE z.chain_id = v.chain_id AND z.vault = v.vault AND z.total_shares = 0),
                               '-infinity'::date)),
       p AS (
         SELECT d.*, max(sp) OVER w AS peak, lag(sp) OVER w AS prev FROM d
         WINDOW w AS (PARTITION BY chain_id, vault ORDER BY day)),
       m AS (SELECT chain_id, vault, as_of_day FROM derived.vault_metrics)
       SELECT p.chain_id, p.vault, max(1 - sp / peak) AS mdd, greatest(0, max(1 - sp / prev)) AS mdaily,
              ${spAt("m.as_of_day")} / ${spAt("m.as_of_day - 1")} - 1 AS r1,
              ${spAt("m.as_of_day")} / ${spAt("m.as_of_day - 7")} - 1 AS r7,
              ${spAt("m.as_of_day")} / ${spAt("m.as_of_day - 30")} - 1 AS r30
         FROM p JOIN m USING (chain_id, vault) WHERE p.day <= m.as_of_day
        GROUP BY p.chain_id, p.vault, m.as_of_day`,
    );
    expect(series.length).toBeGreaterThan(0);
    let returns = 0;
    for (const x of series) {
      const row = got.find((g) => g.chain_id === x.chain_id && g.vault === x.vault)!;
      const what = `${x.chain_id} ${x.vault}`;
      expect(Number(row.max_drawdown), what).toBeCloseTo(Number(x.mdd), 9);
      expect(Number(row.max_daily_drawdown), what).toBeCloseTo(Number(x.mdaily), 9);
      const r = row.returns as Record<string, number>;
      for (const [h, want] of [
        ["1", x.r1],
        ["7", x.r7],
        ["30", x.r30],
      ] as const) {
        if (want == null) continue;
        expect(r[h], `${what} returns ${h}`).toBeCloseTo(Number(want), 9);
        returns++;
      }
    }
    expect(returns).toBeGreaterThan(series.length);
  });

  // Holding points per wallet and vault, recomputed in SQL from the transfers and snapshots
  // day by day (docs/metrics.md): the vault's index I(d) sums trunc(ratio x price x multiplier x
  // rate / 10^decimals, 36) over its days. A wallet whose balance moved on day d (its end-of-day
  // balance b or its share-seconds S differ from holding the day before's b0 all day) earns
  // trunc(S x (I(d) - I(d-1)) / 86400, 18), S summed here as each transfer's shares times the
  // seconds left in the day; on other days trunc(b x I(d), 18) - trunc(b x I(d-1), 18).
  const diffs = await q<{ wallet: string; vault: string; expected: string; actual: string | null }>(
    `WITH v AS (SELECT chain_id, address, asset_decimals FROM indexer.vault),
     days AS (
       SELECT v.chain_id, v.address AS vault, v.asset_decimals, d
       FROM v, LATERAL (SELECT min(floor(timestamp / 86400))::int AS f FROM indexer.share_ratio_snapshot s WHERE s.chain_id = v.chain_id AND s.vault = v.address) f,
            generate_series(f.f, $1::int) d
     ),
     idx AS (
       SELECT days.chain_id, days.vault, days.d,
         sum(trunc(coalesce(s.asset_share_ratio * s.asset_usd_price, 0) * m.mult * $2::numeric * power(10::numeric, -days.asset_decimals), 36))
           OVER (PARTITION BY days.chain_id, days.vault ORDER BY days.d) AS cum
       FROM days,
         LATERAL (SELECT asset_share_ratio, asset_usd_price FROM indexer.share_ratio_snapshot s
                  WHERE s.chain_id = days.chain_id AND s.vault = days.vault AND s.timestamp < (days.d + 1) * 86400
                  ORDER BY s.timestamp DESC, s.block_number DESC, s.id DESC LIMIT 1) s,
         LATERAL (SELECT coalesce(round(exp(sum(ln(r.multiplier))), 6), 1) AS mult FROM registry.reward r WHERE r.chain_id = days.chain_id AND r.vault = days.vault
                    AND r.start_datetime <= to_timestamp((days.d + 1) * 86400 - 1) AND (r.end_datetime IS NULL OR r.end_datetime > to_timestamp((days.d + 1) * 86400 - 1))) m
     ),
     moves AS (
       SELECT chain_id, vault, to_address AS wallet, shares AS delta, timestamp FROM indexer.share_transfer
       UNION ALL SELECT chain_id, vault, from_address, -shares, timestamp FROM indexer.share_transfer
     ),
     bal AS (
       SELECT days.chain_id, days.vault, days.d, m.wallet, sum(m.delta) AS b,
         coalesce(sum(m.delta) FILTER (WHERE m.timestamp < days.d * 86400), 0) AS b0,
         sum(m.delta * least(86400, (days.d + 1) * 86400 - m.timestamp)) AS secs
       FROM days JOIN moves m ON m.chain_id = days.chain_id AND m.vault = days.vault AND m.timestamp < (days.d + 1) * 86400
       WHERE m.wallet NOT IN ('0x0000000000000000000000000000000000000000') AND m.wallet <> days.vault
       GROUP BY 1, 2, 3, 4 HAVING sum(m.delta) <> 0 OR sum(m.delta * least(86400, (days.d + 1) * 86400 - m.timestamp)) <> 0
     ),
     expected AS (
       SELECT bal.chain_id, bal.vault, bal.wallet,
         sum(trunc(CASE WHEN bal.b <> bal.b0 OR bal.secs <> bal.b0 * 86400
                     THEN div(bal.secs * (i.cum - coalesce(ip.cum, 0)) * 1e18, 86400) * 1e-18
                     ELSE trunc(bal.b * i.cum, 18) - trunc(bal.b * coalesce(ip.cum, 0), 18) END, 18)) AS pts
       FROM bal JOIN idx i ON i.chain_id = bal.chain_id AND i.vault = bal.vault AND i.d = bal.d
       LEFT JOIN idx ip ON ip.chain_id = bal.chain_id AND ip.vault = bal.vault AND ip.d = bal.d - 1
       GROUP BY 1, 2, 3
     )
     SELECT e.wallet, e.vault, e.pts::text AS expected, p.total_points::text AS actual
     FROM expected e LEFT JOIN derived.points_pool p ON p.wallet = e.wallet AND p.chain_id = e.chain_id AND p.vault = e.vault`,
    [now, formatFixed(jobsConfig({ DATABASE_URL: devnet.dbUrl }).points.pointsPerUsdPerDay)],
  );
  expect(diffs.length).toBeGreaterThan(40); // every holder of every vault
  expect(diffs.filter((d) => d.expected !== d.actual)).toEqual([]);
  const [ledgerVsPool] = await q<{ n: string }>(
    `SELECT count(*) AS n FROM (SELECT wallet, chain_id, vault, sum(points) AS s FROM derived.points_ledger WHERE source = 'holding' GROUP BY 1, 2, 3) l
     FULL JOIN derived.points_pool p USING (wallet, chain_id, vault) WHERE coalesce(l.s, 0) <> coalesce(p.total_points, 0)`,
  );
  expect(ledgerVsPool!.n).toBe("0");
  // Balances and ranks from the ledger; ties broken by address.
  const bal = await q<{ wallet: string; total_points: string; rank_total: number; sum: string | null }>(
    `SELECT b.wallet, b.total_points::text, b.rank_total, (SELECT sum(points) FROM derived.points_ledger l WHERE l.wallet = b.wallet)::text AS sum
     FROM derived.points_balance b ORDER BY b.rank_total`,
  );
  // a balance for every wallet of the ledger
  const [wallets] = await q<{ n: string }>("SELECT count(DISTINCT wallet) AS n FROM derived.points_ledger");
  expect(bal.length).toBe(Number(wallets!.n));
  expect(bal.length).toBeGreaterThan(40);
  for (const b of bal) expect(Number(b.total_points), b.wallet).toBe(Number(b.sum ?? "0"));
  for (let i = 1; i < bal.length; i++) {
    const [a, b] = [bal[i - 1]!, bal[i]!];
    const cmp = Number(a.total_points) - Number(b.total_points);
    expect(cmp > 0 || (cmp === 0 && a.wallet < b.wallet), `rank ${i}`).toBe(true);
  }
}

beforeAll(async () => {
  redis = await startRedis({
    port: REDIS_PORT,
    dataDir: join(devnet.dir, "redis"),
    logFile: join(devnet.dir, "redis.log"),
  });
  workers = spawnWorkers();
  await settle(redis.url, 300_000);
}, 400_000);

afterAll(async () => {
  await workers?.stop();
  await redis?.stop();
});

describe("derived analytics", () => {
  it("every derived figure equals a recomputation from the indexed tables", async () => {
    await expectMatchesIndexed();
    const [m] = await q<{ n: string }>(
      "SELECT count(*) AS n FROM derived.vault_metrics WHERE apy_computed_at IS NOT NULL AND cached_at IS NOT NULL AND share_ratio_snapshot_at IS NOT NULL",
    );
    expect(m!.n).toBe("4");
  });

  it("the vaults holding an alt asset show a small unrealized PnL in every month, as the simulator made it", async () => {
    // The simulator's operator reports what the subaccounts earn (8 % noise on each day's gain)
    // and the alt assets' feeds hold their peg to the base asset within about 0.2 % a day, so the
    // true unrealized PnL stays small: at most 0.34 % of TVL on the test devnet; 1 % leaves room.
    // The base asset alone (the old formula, issue 12) fell 9 % to 19 % short in the demo: checked
    // below to breach the bound here too.
    const BOUND = 0.01;
    const months = await q<{ name: string; month: string; n: string; worst: number; unvalued: string }>(
      `SELECT v.name, to_char(u.day, 'YYYY-MM') AS month, count(*) AS n,
              max(abs(u.unrealized_pnl_in_asset) / u.tvl_on_vault)::float8 AS worst,
              count(*) FILTER (WHERE u.alt_assets > 0 AND u.alt_assets_in_asset IS NULL) AS unvalued
       FROM derived.unrealized_pnl u JOIN indexer.vault v ON v.chain_id = u.chain_id AND v.address = u.vault
       WHERE v.alt_asset IS NOT NULL AND u.tvl_on_vault > 0
       GROUP BY 1, 2 ORDER BY 1, 2`,
    );
    expect(new Set(months.map((m) => m.name))).toEqual(new Set(["Tokenized ETH", "Restaked ETH"]));
    for (const m of months) {
      const label = `${m.name} ${m.month} (${m.n} records)`;
      expect(m.unvalued, `${label}: alt asset held without a price`).toBe("0");
      expect(m.worst, `${label}: |unrealized_pnl_in_asset| / tvl_on_vault`).toBeLessThan(BOUND);
    }
    // The check has teeth: at each vault's latest snapshot, leaving the alt asset out (the old
    // actual TVL) would put it past twice the bound.
    const latest = await q<{ name: string; old: number }>(
      `SELECT DISTINCT ON (u.chain_id, u.vault) v.name,
              (abs(u.unrealized_pnl_in_asset - u.alt_assets_in_asset) / u.tvl_on_vault)::float8 AS old
       FROM derived.unrealized_pnl u JOIN indexer.vault v ON v.chain_id = u.chain_id AND v.address = u.vault
       WHERE v.alt_asset IS NOT NULL AND u.tvl_on_vault > 0
       ORDER BY u.chain_id, u.vault, u.timestamp DESC, u.block_number DESC`,
    );
    expect(latest.length).toBe(2);
    for (const l of latest) expect(l.old, `${l.name}: the alt asset's share of TVL`).toBeGreaterThan(2 * BOUND);
  });

  it("the jobs the workers add themselves are retried, and kept a week when they fail", async () => {
    const conn = redisConnection(redis.url);
    conn.on("error", () => {});
    const fanouts = new Queue(QUEUES.fanout.name, { connection: conn, prefix: PREFIX });
    const portfolio = new Queue(QUEUES.portfolio.name, { connection: conn, prefix: PREFIX });
    try {
      const states = ["completed", "failed", "waiting", "active", "delayed"] as const;
      const jobs = await fanouts.getJobs([...states]);
      const own = jobs.filter((j) => /^fanout-(startup|progress|after)-/.test(j.id ?? ""));
      expect(own.some((j) => j.id!.startsWith("fanout-startup-"))).toBe(true);
      // the indexer's progress, polled through the snapshots' index, was seen
      expect(own.some((j) => j.id!.startsWith("fanout-progress-"))).toBe(true);
      const started = (await portfolio.getJobs([...states])).filter((j) => j.id?.startsWith("portfolio-startup-"));
      expect(started.length).toBeGreaterThan(0);
      for (const j of [...own, ...started]) {
        expect(j.opts.attempts, j.id).toBeGreaterThan(1);
        expect(j.opts.removeOnFail, j.id).toEqual({ age: 7 * 24 * 3600, count: 5000 });
      }
    } finally {
      await fanouts.close();
      await portfolio.close();
      conn.disconnect();
    }
  });

  it("the workers serve Prometheus metrics: queue depths, job durations, indexer and derived lags", async () => {
    const res = await fetch(`http://127.0.0.1:${METRICS_PORT}/metrics`);
    expect(res.status).toBe(200);
    const text = await res.text();
    const value = (series: string) => {
      const line = text.split("\n").find((l) => l.startsWith(`${series} `));
      return line == null ? undefined : Number(line.slice(series.length + 1));
    };
    for (const queue of ["fanout", "vault-days", "points-rollup"]) {
      for (const state of ["waiting", "active", "delayed", "failed"]) {
        const depth = value(`vaults_queue_jobs{queue="${queue}",state="${state}"}`);
        expect(depth, `${queue} ${state}`).toBeGreaterThanOrEqual(0);
      }
      // this process computed the derived tables in beforeAll
      const done = value(`vaults_job_duration_seconds_count{queue="${queue}",outcome="completed"}`);
      expect(done, queue).toBeGreaterThan(0);
    }
    expect(value('vaults_metrics_source_up{source="redis"}')).toBe(1);
    expect(value('vaults_metrics_source_up{source="postgres"}')).toBe(1);
    const indexed = await q<{ chain_id: string; block: string }>(
      "SELECT chain_id, substr(latest_checkpoint, 27, 16)::bigint AS block FROM indexer._ponder_checkpoint",
    );
    const computed = await q<{ chain_id: number; block_number: string }>(
      "SELECT chain_id, block_number FROM derived.jobs_progress",
    );
    expect(indexed.map((c) => Number(c.chain_id)).sort()).toEqual([1, 8453]);
    expect(computed.map((c) => c.chain_id).sort()).toEqual([1, 8453]);
    for (const c of indexed) {
      const id = Number(c.chain_id);
      const done = Number(computed.find((p) => p.chain_id === id)!.block_number);
      expect(value(`vaults_indexer_block{chain_id="${id}"}`)).toBe(Number(c.block));
      // the chain's head now (nothing mines while this runs) less the indexer's checkpoint
      const rpcUrl = devnet.chains.find((x) => x.chainId === id)!.rpcUrl;
      const head = Number(BigInt(await rpcCall<string>(rpcUrl, "eth_blockNumber")));
      expect(value(`vaults_indexer_lag_blocks{chain_id="${id}"}`)).toBe(head - Number(c.block));
      expect(value(`vaults_derived_block{chain_id="${id}"}`)).toBe(done);
      expect(value(`vaults_derived_lag_blocks{chain_id="${id}"}`)).toBe(Math.max(0, Number(c.block) - done));
    }
    expect(text).toMatch(/^process_resident_memory_bytes /m);
  });

  it("rewards, referrals and manual points reach the ledger, balances and ranks", async () => {
    const [v] = await q<{ chain_id: number; vault: string; first: number }>(
      "SELECT chain_id, vault, min(day) - date '1970-01-01' AS first FROM derived.vault_day GROUP BY 1, 2 ORDER BY 1, 2 LIMIT 1",
    );
    const start = (v!.first + 10) * DAY_SECONDS;
    const before = await q<{ day: string; wallet: string; points: string }>(
      "SELECT day::text, wallet, points::text FROM derived.points_ledger WHERE chain_id = $1 AND vault = $2 AND source = 'holding' ORDER BY 1, 2",
      [v!.chain_id, v!.vault],
    );
    const holders = await q<{ wallet: string }>(
      "SELECT DISTINCT wallet FROM derived.points_ledger WHERE source = 'holding' AND day = current_date ORDER BY wallet LIMIT 2",
    );
    const [referrer, referee] = holders.map((h) => h.wallet);
    await q(
      "INSERT INTO registry.reward (chain_id, vault, text, multiplier, start_datetime) VALUES ($1, $2, 'double points', 2, to_timestamp($3))",
      [v!.chain_id, v!.vault, start],
    );
    await q(
      "INSERT INTO registry.points_user (address, referrer, chain_id, registered_at) VALUES ($1, NULL, 1, now() - interval '2 days')",
      [referrer],
    );
    await q(
      "INSERT INTO registry.points_user (address, referrer, chain_id, registered_at, signup_bonus) VALUES ($1, $2, 1, now(), 100)",
      [referee, referrer],
    );
    const cli = spawnSync(
      join(REPO_ROOT, "node_modules", ".bin", "tsx"),
      [
        "scripts/points.ts",
        "add",
        "--wallet",
        "0x00000000000000000000000000000000000000AA",
        "--points",
        "1234.5",
        "--reason",
        "test",
        "--author",
        "e2e",
      ],
      {
        cwd: REPO_ROOT,
        env: { ...process.env, DATABASE_URL: devnet.dbUrl },
        encoding: "utf8",
      },
    );
    expect(cli.status, cli.stderr).toBe(0);
    await settle(redis.url, 300_000);

    const after = new Map(
      (
        await q<{ day: string; wallet: string; points: string }>(
          "SELECT day::text, wallet, points::text FROM derived.points_ledger WHERE chain_id = $1 AND vault = $2 AND source = 'holding'",
          [v!.chain_id, v!.vault],
        )
      ).map((r) => [`${r.day}|${r.wallet}`, r.points]),
    );
    // Days before the reward keep their points exactly; the covered days earn twice as much (the
    // index's 36th decimal and the once-only truncation can move a day by a few units of 10^-18
    // per share unit, far below 10^-9 points).
    let doubledDays = 0;
    for (const b of before) {
      const doubled = dateToDay(b.day) >= v!.first + 10;
      const got = after.get(`${b.day}|${b.wallet}`);
      if (!doubled) {
        expect(got, `${b.day} ${b.wallet}`).toBe(b.points);
        continue;
      }
      doubledDays++;
      const diff = parseFixed(got!) - 2n * parseFixed(b.points);
      expect(diff < 0n ? -diff : diff, `${b.day} ${b.wallet}: ${got} vs 2 x ${b.points}`).toBeLessThanOrEqual(
        10n ** 9n,
      );
    }
    expect(doubledDays).toBeGreaterThan(0);
    // Referral: per vault, the referrer's entries sum to trunc(0.1 x H(last)) - trunc(0.1 x H(R-1)),
    // H being the referee's cumulative holding points there (from the ledger's holding rows).
    const refs = await q<{ vault: string; got: string; expected: string; view: string }>(
      `WITH u AS (SELECT address, referrer, (registered_at AT TIME ZONE 'UTC')::date AS r FROM registry.points_user WHERE referrer = $1),
       h AS (
         SELECT l.chain_id, l.vault, u.address, u.referrer, sum(l.points) AS h_last, coalesce(sum(l.points) FILTER (WHERE l.day < u.r), 0) AS h_before
         FROM u JOIN derived.points_ledger l ON l.wallet = u.address AND l.source = 'holding' GROUP BY 1, 2, 3, 4
       )
       SELECT h.vault, coalesce((SELECT sum(points) FROM derived.points_ledger x WHERE x.wallet = h.referrer AND x.ref = h.address AND x.source = 'referral'
                                   AND x.chain_id = h.chain_id AND x.vault = h.vault), 0)::text AS got,
              (trunc(h.h_last * 0.1, 18) - trunc(h.h_before * 0.1, 18))::text AS expected,
              (SELECT total_points FROM derived.points_referral WHERE referrer = h.referrer AND referee = h.address)::text AS view
       FROM h`,
      [referrer],
    );
    expect(refs.length).toBeGreaterThan(0);
    for (const r of refs) expect(parseFixed(r.got), r.vault).toBe(parseFixed(r.expected));
    expect(parseFixed(refs[0]!.view)).toBe(refs.reduce((s, r) => s + parseFixed(r.got), 0n));
    expect(refs.some((r) => parseFixed(r.got) > 0n)).toBe(true);
    const [bonus] = await q<{ signup_bonus: string; manual: string; ref: string }>(
      `SELECT (SELECT signup_bonus::text FROM derived.points_balance WHERE wallet = $1) AS signup_bonus,
              (SELECT manual_points::text FROM derived.points_balance WHERE wallet = '0x00000000000000000000000000000000000000aa') AS manual,
              (SELECT referral_earnings::text FROM derived.points_balance WHERE wallet = $2) AS ref`,
      [referee, referrer],
    );
    expect(bonus).toEqual({
      signup_bonus: "100.000000000000000000",
      manual: "1234.500000000000000000",
      ref: expect.not.stringMatching(/^0\.0+$/),
    });
    await expectMatchesIndexed();
  });

  it("a windowed fan-out (the schedule's) sees what a full one sees in its window", async () => {
    await settle(redis.url, 300_000);
    const db = createDb(createPool(devnet.dbUrl, 2));
    const rules = jobsConfig({ DATABASE_URL: devnet.dbUrl }).points;
    // the day read once: a run across midnight UTC compares one day with itself
    const day = today();
    try {
      expect(await planChanges(db, "indexer", devnet.registryFile, rules, day)).toEqual([]);
      expect(await planChanges(db, "indexer", devnet.registryFile, rules, day, 3)).toEqual([]);
      const [v] = await q<{ chain_id: number; vault: string }>(
        "SELECT chain_id, vault FROM derived.vault_metrics ORDER BY 1, 2 LIMIT 1",
      );
      const [r] = await q<{ id: string }>(
        "INSERT INTO registry.reward (chain_id, vault, text, multiplier, start_datetime) VALUES ($1, $2, 'today only', 1.5, $3) RETURNING id",
        [v!.chain_id, v!.vault, new Date(day * DAY_SECONDS * 1000)],
      );
      const full = await planChanges(db, "indexer", devnet.registryFile, rules, day);
      const windowed = await planChanges(db, "indexer", devnet.registryFile, rules, day, 3);
      expect(full.map((c) => [c.vault, c.from, c.to])).toEqual([
        [{ chainId: v!.chain_id, address: v!.vault }, day, day],
      ]);
      expect(windowed.map((c) => [c.vault, c.from, c.to, c.fingerprints.get(day)])).toEqual(
        full.map((c) => [c.vault, c.from, c.to, c.fingerprints.get(day)]),
      );
      await q("DELETE FROM registry.reward WHERE id = $1", [r!.id]);
      await settle(redis.url, 300_000);
    } finally {
      await db.destroy();
    }
  });

  it("a recompute from scratch gives exactly the rows of the incremental runs", async () => {
    const before = await derivedHash();
    // from scratch: every derived table the hash covers emptied first (the others are views)
    const tables = await q<{ t: string }>(
      `SELECT table_name AS t FROM information_schema.tables
        WHERE table_schema = 'derived' AND table_type = 'BASE TABLE' AND table_name = ANY($1)`,
      [Object.keys(before)],
    );
    expect(tables.map((x) => x.t)).toEqual(
      expect.arrayContaining(["vault_day", "vault_apy", "unrealized_pnl", "vault_metrics", "points_index"]),
    );
    await q(`TRUNCATE ${tables.map((x) => `derived.${x.t}`).join(", ")}`);
    expect((await derivedHash()).vault_day).toMatch(/^0:/);
    const r = spawnSync(join(REPO_ROOT, "node_modules", ".bin", "tsx"), ["scripts/recompute.ts", "--all"], {
      cwd: REPO_ROOT,
      env: { ...process.env, DATABASE_URL: devnet.dbUrl, REDIS_URL: redis.url, VAULT_REGISTRY: devnet.registryFile },
      encoding: "utf8",
      timeout: 300_000,
    });
    expect(r.status, r.stderr + r.stdout).toBe(0);
    expect(r.stdout).toMatch(/recompute: done, [1-9]\d* vault-days/);
    expect(await derivedHash()).toEqual(before);
  });

  it("a flow queued by an earlier version (one vault's days, then its summary job) still runs to its rollup, rows unchanged", async () => {
    const before = await derivedHash();
    const { producer, events, rollups, close } = await rollupClients();
    try {
      const [v] = await q<{ chain_id: number; vault: string; first: string }>(
        "SELECT chain_id, vault, min(day)::text AS first FROM derived.vault_day GROUP BY 1, 2 ORDER BY 1, 2 LIMIT 1",
      );
      const tag = `legacy-${Date.now()}`;
      const days = { chainId: v!.chain_id, vault: v!.vault, from: v!.first, to: new Date().toISOString().slice(0, 10) };
      await producer.add({
        name: QUEUES.pointsRollup.name,
        queueName: QUEUES.pointsRollup.name,
        data: {},
        opts: { jobId: `rollup-${tag}` },
        children: [
          {
            name: "vault-summary",
            queueName: "vault-summary",
            data: { chainId: v!.chain_id, vault: v!.vault },
            opts: { jobId: `summary-${tag}` },
            children: [
              {
                name: QUEUES.vaultDays.name,
                queueName: QUEUES.vaultDays.name,
                data: days,
                opts: { jobId: `days-${tag}` },
              },
            ],
          },
        ],
      });
      const rollup = await Job.fromId(rollups, `rollup-${tag}`);
      await rollup!.waitUntilFinished(events, 120_000);
      expect(await derivedHash()).toEqual(before);
    } finally {
      await close();
    }
  });

  it("the queues dashboard lists every queue and a failed job with its reason, retries it, and wants its password", async () => {
    const password = "correct horse battery staple";
    const board = queuesDashboard(redis.url, { password });
    const auth = { authorization: `Basic ${Buffer.from(`operator:${password}`).toString("base64")}` };
    const conn = redisConnection(redis.url);
    conn.on("error", () => {});
    const queue = new Queue(QUEUES.vaultDays.name, { connection: conn, prefix: PREFIX });
    try {
      expect((await board.app.request("/queues/api/queues")).status).toBe(401);
      expect(
        (
          await board.app.request("/queues/api/queues", {
            headers: { authorization: `Basic ${Buffer.from("operator:wrong").toString("base64")}` },
          })
        ).status,
      ).toBe(401);
      const page = await board.app.request("/queues", { headers: auth });
      expect(page.status).toBe(200);
      const html = await page.text();
      expect(html).toMatch(/<html/i);
      // its scripts come from the UI package
      const script = /src="(static\/js\/[^"]+\.js)"/.exec(html)?.[1];
      expect(script).toBeDefined();
      expect((await board.app.request(`/queues/${script}`, { headers: auth })).status).toBe(200);
      // a job the workers refuse (an empty batch) fails and stays visible with its reason
      const job = await queue.add(
        QUEUES.vaultDays.name,
        { ranges: [] },
        { jobId: `dashboard-bad-${Date.now()}`, attempts: 1 },
      );
      await waitUntil("the refused job has failed", () => job.isFailed(), 30_000);
      const list = async () => {
        const r = await board.app.request(
          `/queues/api/queues?activeQueue=${QUEUES.vaultDays.name}&status=failed&page=1`,
          { headers: auth },
        );
        expect(r.status).toBe(200);
        return (await r.json()) as {
          queues: {
            name: string;
            counts: Record<string, number>;
            jobs: { id: string; failedReason?: string; attemptsMade?: number }[];
          }[];
        };
      };
      const before = await list();
      expect(before.queues.map((q) => q.name).sort()).toEqual(
        Object.values(QUEUES)
          .map((q) => q.name)
          .sort(),
      );
      const shown = before.queues.find((q) => q.name === QUEUES.vaultDays.name)!.jobs.find((j) => j.id === job.id);
      expect(shown?.failedReason).toMatch(/bad vault-days input: .*at least one range/);
      // retried from the board: it runs again (and fails again, for the same reason)
      const retry = await board.app.request(`/queues/api/queues/${QUEUES.vaultDays.name}/${job.id}/retry`, {
        method: "PUT",
        headers: auth,
      });
      expect(retry.status, await retry.text()).toBeLessThan(300);
      await waitUntil(
        "the retried job has run again",
        async () => ((await Job.fromId(queue, job.id!))?.attemptsMade ?? 0) >= 2,
        30_000,
      );
      await (await Job.fromId(queue, job.id!))!.remove();
    } finally {
      await queue.close();
      conn.disconnect();
      await board.close();
    }
  });

  it("a worker killed mid-job leaves nothing half-written, and the retry writes the same rows", async () => {
    await workers.stop();
    workers = spawnWorkers({ JOBS_FAULT_HOLD_MS: "60000" });
    const before = await derivedHash();
    const pool = createPool(devnet.dbUrl, 2);
    const db = createDb(pool);
    const { producer, events, rollups, close } = await rollupClients();
    try {
      const [v] = await q<{ chain_id: number; vault: string; first: number }>(
        "SELECT chain_id, vault, min(day) - date '1970-01-01' AS first FROM derived.vault_day GROUP BY 1, 2 ORDER BY 1 DESC, 2 LIMIT 1",
      );
      const plan = buildFlow(
        [{ vault: { chainId: v!.chain_id, address: v!.vault }, from: v!.first, to: today(), fingerprints: new Map() }],
        5,
        await extrasHash(db),
        `kill-${Date.now()}`,
      );
      // when the vault's rows were last written: the killed job must not change it, the retry must
      const stamp = async () =>
        (
          await q<{ at: string }>(
            "SELECT max(computed_at)::text AS at FROM derived.vault_day WHERE chain_id = $1 AND vault = $2",
            [v!.chain_id, v!.vault],
          )
        )[0]!.at;
      const written = await stamp();
      const id = await addFlow(producer, plan);
      // The job has written its rows and holds its transaction open: kill -9 the worker now.
      await waitUntil("a vault-days job is inside its write transaction", async () => {
        const [a] = await q<{ n: string }>(
          "SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = 'vault-jobs' AND state = 'idle in transaction'",
        );
        return a!.n !== "0";
      });
      process.kill(-workers.pid, "SIGKILL");
      await workers.exited;
      await waitUntil("the killed transaction is gone", async () => {
        const [a] = await q<{ n: string }>(
          "SELECT count(*) AS n FROM pg_stat_activity WHERE application_name = 'vault-jobs'",
        );
        return a!.n === "0";
      });
      expect(await derivedHash()).toEqual(before);
      expect(await stamp()).toBe(written);
      workers = spawnWorkers();
      const job = await Job.fromId(rollups, id);
      await job!.waitUntilFinished(events, 120_000);
      expect(await derivedHash()).toEqual(before);
      expect(await stamp()).not.toBe(written);
    } finally {
      await close();
      await db.destroy();
    }
  }, 240_000);

  it("with Redis stopped nothing indexed is lost, and the jobs catch up when it returns", async () => {
    const manifest = loadManifest(devnet.manifestFile);
    const chain = manifest.chains.find((c) => c.chainId === 1)!;
    const pool = chain.vaults.find((v) => v.family === "lendingPool")!;
    await redis.stop();
    const s = new ChainSession(chain.chainId, chain.rpcUrl);
    await s.syncClock();
    const wallet = chain.wallets[3] as Address;
    const { transactionHash } = await s.call(wallet, "LendingPool", pool.address, "deposit", [10n ** 6n, wallet]);
    await s.mineAt([s.clock + 30, s.clock + 60]);
    await waitUntil("the deposit is indexed while Redis is down", async () => {
      const [r] = await q<{ n: string }>("SELECT count(*) AS n FROM indexer.vault_event WHERE tx_hash = $1", [
        transactionHash,
      ]);
      return r!.n === "1";
    });
    await sleep(2000); // the workers keep running without Redis
    expect(workers.exitInfo()).toBeUndefined();
    redis = await startRedis({
      port: REDIS_PORT,
      dataDir: join(devnet.dir, "redis"),
      logFile: join(devnet.dir, "redis.log"),
    });
    await settle(redis.url, 300_000);
    const [snap] = await q<{ id: string }>("SELECT snapshot_id AS id FROM indexer.vault_event WHERE tx_hash = $1", [
      transactionHash,
    ]);
    const [rec] = await q<{ n: string }>("SELECT count(*) AS n FROM derived.unrealized_pnl WHERE snapshot_id = $1", [
      snap!.id,
    ]);
    expect(rec!.n).toBe("1");
    await expectMatchesIndexed();
  }, 240_000);

  it("after a reorg the affected days are recomputed", async () => {
    const manifest = loadManifest(devnet.manifestFile);
    const chain = manifest.chains.find((c) => c.chainId === 8453)!;
    const pool = chain.vaults.find((v) => v.family === "lendingPool")!;
    const s = new ChainSession(chain.chainId, chain.rpcUrl);
    await s.syncClock();
    const [walletA, walletB] = chain.wallets as Address[];
    const snapOf = async (tx: string) =>
      (await q<{ id: string }>("SELECT snapshot_id AS id FROM indexer.vault_event WHERE tx_hash = $1", [tx]))[0]?.id;
    const recs = async (id: string) =>
      (await q<{ n: string }>("SELECT count(*) AS n FROM derived.unrealized_pnl WHERE snapshot_id = $1", [id]))[0]!.n;

    const base = await rpcCall<string>(chain.rpcUrl, "evm_snapshot");
    const orphan = (await s.call(walletA!, "LendingPool", pool.address, "deposit", [10n ** 18n, walletA!]))
      .transactionHash;
    await s.mineAt([s.clock + 60, s.clock + 120]);
    await waitUntil("the orphan-to-be deposit is indexed", async () => (await snapOf(orphan)) != null);
    const orphanSnap = (await snapOf(orphan))!;
    await settle(redis.url, 300_000);
    expect(await recs(orphanSnap)).toBe("1");

    expect(await rpcCall<boolean>(chain.rpcUrl, "evm_revert", [base])).toBe(true);
    await s.syncClock();
    await s.mineAt([s.clock + 10]); // the new chain's deposit lands in a different block than the orphan's
    const fresh = (await s.call(walletB!, "LendingPool", pool.address, "deposit", [3n * 10n ** 18n, walletB!]))
      .transactionHash;
    await s.mineAt([s.clock + 30, s.clock + 60, s.clock + 90]);
    await waitUntil(
      "the new chain's deposit is indexed",
      async () => (await snapOf(fresh)) != null && (await snapOf(orphan)) == null,
    );
    await settle(redis.url, 300_000);
    expect(await recs(orphanSnap)).toBe("0");
    expect(await recs((await snapOf(fresh))!)).toBe("1");
    await expectMatchesIndexed();
  }, 240_000);
});
