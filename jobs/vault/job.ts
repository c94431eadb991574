/**
 * The vault-days job: recomputes, for a batch of vaults each with its own range of days
 * from..to, the daily rows, APY rows, unrealized PnL records and points (the points-per-share
 * index and the position rows of wallets whose balance changed). A fan-out puts every vault with
 * a short range (an ordinary day: one day each) in a few batches, and a vault with a long range
 * (a first run, a recompute) in a batch of its own.
 *
 * Inputs are read in one REPEATABLE READ snapshot (so the stored fingerprints describe exactly
 * the data used), each read one statement for the whole batch; outputs replace the ranges' rows
 * in one transaction, one COPY per table for the whole batch, so a job killed at any point leaves
 * the old rows or the new ones, never a mix, and a retry writes the same rows.
 */

import { sql } from "kysely";
import type pg from "pg";
import { type CopyValue, copyRows } from "../../db/copy.js";
import { DAY_SECONDS, dayOf, dayToDate, endOfDay } from "../../db/days.js";
import { formatDecimals, formatFixed, toNumber } from "../../db/fixed.js";
import {
  type BalanceChange,
  balanceChanges,
  computeIndex,
  cumLookup,
  type DayPricing,
  INDEX_DECIMALS,
  type IndexDay,
  type PointsRules,
  settlePositions,
  type TransferIn,
} from "../points/compute.js";
import {
  chainFingerprints,
  type Db,
  loadBalances,
  loadDayHashes,
  loadFees,
  loadFingerprintsOn,
  loadFirstDays,
  loadPositionBalances,
  loadRewards,
  loadSnapshotsFrom,
  loadStoredDays,
  loadTransfers,
  loadVaults,
  multiplierOn,
  type RewardWindow,
  type VaultRef,
  vaultArrays,
  vaultKey,
} from "../repo.js";
import { computeVaultDays, type FeeIn, type SnapshotIn, type VaultMeta } from "./compute.js";
import { loadSummaryInputs, type SummaryInput, writeSummaries } from "./summary-write.js";

export interface VaultDaysContext {
  db: Db;
  pool: pg.Pool;
  indexerSchema: string;
  registryPath?: string | undefined;
  rules: PointsRules;
  /** fault injection for tests: keep the write transaction open this long before COMMIT */
  faultHoldMs?: number;
}

/** One vault's days from..to (day numbers). */
export interface DaysRange {
  vault: VaultRef;
  from: number;
  to: number;
}

export interface VaultDaysResult {
  vaults: number;
  days: number;
  apyRows: number;
  pnlRows: number;
  indexRows: number;
  positionRows: number;
}

const ZERO = "0x0000000000000000000000000000000000000000";

/** Part of every fingerprint: "index" names the points rule (per-share index, migration 0007). */
export const rulesKey = (r: PointsRules) => `index:${r.pointsPerUsdPerDay}:${r.referralShare}`;

const formatIndex = (v: bigint) => formatDecimals(v, INDEX_DECIMALS);

/** sp and price carried to each day from..to (the last snapshot at or before the day's end). */
function pricingByDay(
  snapshots: readonly SnapshotIn[],
  from: number,
  to: number,
): Map<number, { ratio: bigint | null; price: bigint | null }> {
  const out = new Map<number, { ratio: bigint | null; price: bigint | null }>();
  let k = 0;
  let cur: SnapshotIn | undefined;
  for (let d = from; d <= to; d++) {
    const end = endOfDay(d);
    while (k < snapshots.length && snapshots[k]!.timestamp < end) cur = snapshots[k++]!;
    out.set(d, { ratio: cur?.ratio ?? null, price: cur?.price ?? null });
  }
  return out;
}

/** What one vault's computation reads. */
interface VaultInput extends DaysRange {
  meta: VaultMeta;
  firstDay: number;
  /** the index's last day to write: `to`, or later when later days are already indexed */
  lastDay: number;
  snapshots: SnapshotIn[];
  /** the block of the last snapshot before the range (0 without one) */
  fromBlock: number;
  fees: FeeIn[];
  transfers: TransferIn[];
  startBalances: Map<string, bigint>;
  seed: { day: number; fingerprint: string } | undefined;
  dayHashes: Map<number, string>;
  rewards: readonly RewardWindow[] | undefined;
  /** the stored daily rows before the range are exactly those of `snapshots`, and none follow it */
  wholeSeries: boolean;
}

/** Every input of the batch, in one consistent snapshot: one statement per kind of input. */
async function readInputs(ctx: VaultDaysContext, ranges: readonly DaysRange[]): Promise<VaultInput[]> {
  return ctx.db
    .transaction()
    .setIsolationLevel("repeatable read")
    .execute(async (trx) => {
      await sql`SET TRANSACTION READ ONLY`.execute(trx);
      const metas = new Map((await loadVaults(trx, ctx.indexerSchema, ctx.registryPath)).map((m) => [vaultKey(m), m]));
      const known = ranges.filter((r) => metas.has(vaultKey(r.vault)));
      if (known.length === 0) return [];
      const firstDays = await loadFirstDays(
        trx,
        ctx.indexerSchema,
        known.map((r) => r.vault),
      );
      // The index is cumulative: when days after `to` are already indexed (a recompute of a past
      // range), they are rewritten too, from the same snapshot.
      // (with the first and last days of the stored daily rows: whether the summary can be made
      // from memory, see summaryFromMemory)
      const [knownChains, knownVaults] = vaultArrays(known.map((r) => r.vault));
      const { rows: bounds } = await sql<{
        chain_id: number;
        vault: string;
        indexed_to: number | null;
        first_stored: number | null;
        last_stored: number | null;
      }>`
        SELECT r.chain_id, r.vault,
          (SELECT p.day - date '1970-01-01' FROM derived.points_vault p WHERE p.chain_id = r.chain_id AND p.vault = r.vault) AS indexed_to,
          (SELECT d.day - date '1970-01-01' FROM derived.vault_day d WHERE d.chain_id = r.chain_id AND d.vault = r.vault ORDER BY d.day LIMIT 1) AS first_stored,
          (SELECT d.day - date '1970-01-01' FROM derived.vault_day d WHERE d.chain_id = r.chain_id AND d.vault = r.vault ORDER BY d.day DESC LIMIT 1) AS last_stored
        FROM unnest(${knownChains}::int[], ${knownVaults}::text[]) AS r(chain_id, vault)`.execute(trx);
      const boundsOf = new Map(bounds.map((r) => [`${r.chain_id}:${r.vault}`, r]));
      const items = known.flatMap((r) => {
        const key = vaultKey(r.vault);
        const firstDay = firstDays.get(key);
        if (firstDay == null || firstDay > r.to) return []; // no snapshot up to `to`: nothing to compute
        return [
          {
            ...r,
            key,
            meta: metas.get(key)!,
            firstDay,
            lastDay: Math.max(r.to, boundsOf.get(key)?.indexed_to ?? r.to),
            continues: r.from > firstDay,
          },
        ];
      });
      // A range after the vault's first day continues from what its stored rows say of the days
      // before it (their fingerprints matched: their inputs did not change): the last snapshot of
      // each day from derived.vault_day, the movers' balances from derived.points_position.
      // Without those rows (a first run, rows missing) it reads the indexed history.
      const stored = await loadStoredDays(
        trx,
        items.filter((i) => i.continues).map((i) => ({ v: i.vault, firstDay: i.firstDay, beforeDay: i.from })),
      );
      const snapshots = await loadSnapshotsFrom(
        trx,
        ctx.indexerSchema,
        items.map((i) => ({
          v: i.vault,
          fromTs: i.from * DAY_SECONDS,
          beforeTs: endOfDay(i.lastDay),
          history: stored.get(i.key) == null,
        })),
      );
      // Rows at or after the range's start are in blocks from the last snapshot before it on (block
      // timestamps only grow): the bound that lets reads by block use the (chain_id, vault,
      // block_number) indexes.
      const history = new Map(
        items.map((i) => [i.key, [...(stored.get(i.key) ?? []), ...(snapshots.get(i.key) ?? [])]]),
      );
      const fromBlock = new Map(
        items.map((i) => [
          i.key,
          history
            .get(i.key)!
            .filter((x) => x.timestamp < i.from * DAY_SECONDS)
            .at(-1)?.blockNumber ?? 0,
        ]),
      );
      const fees = await loadFees(
        trx,
        ctx.indexerSchema,
        items.map((i) => ({ v: i.vault, beforeTs: endOfDay(i.to) })),
      );
      const transfers = await loadTransfers(
        trx,
        ctx.indexerSchema,
        items.map((i) => ({
          v: i.vault,
          fromTs: i.from * DAY_SECONDS,
          toTs: endOfDay(i.to),
          fromBlock: fromBlock.get(i.key)!,
        })),
      );
      // After the first day only the start balances of the wallets that move matter (the others'
      // rows are stored); from the first day on, every holder's.
      const movers = new Map(
        items
          .filter((i) => i.continues)
          .map((i) => [i.key, [...new Set((transfers.get(i.key) ?? []).flatMap((t) => [t.from, t.to]))]]),
      );
      const positions = await loadPositionBalances(
        trx,
        items
          .filter((i) => stored.get(i.key) != null)
          .map((i) => ({ v: i.vault, wallets: movers.get(i.key)!, beforeDay: i.from })),
      );
      const rewards = await loadRewards(trx);
      const seeds = await loadFingerprintsOn(
        trx,
        items.filter((i) => i.continues).map((i) => ({ v: i.vault, day: i.from - 1 })),
      );
      const dayHashes = await loadDayHashes(trx, ctx.indexerSchema, {
        vaults: items.map((i) =>
          seeds.has(i.key)
            ? { v: i.vault, fromDay: i.from, fromBlock: fromBlock.get(i.key)! }
            : { v: i.vault, fromDay: 0 },
        ),
      });
      const out: VaultInput[] = [];
      for (const i of items) {
        const earlier = stored.get(i.key);
        // the fallback, per vault: a first run, or stored rows missing
        const startBalances = earlier
          ? (positions.get(i.key) ?? new Map<string, bigint>())
          : await loadBalances(trx, ctx.indexerSchema, i.vault, i.from * DAY_SECONDS, movers.get(i.key));
        const seedFp = seeds.get(i.key);
        out.push({
          vault: i.vault,
          from: i.from,
          to: i.to,
          meta: i.meta,
          firstDay: i.firstDay,
          lastDay: i.lastDay,
          snapshots: history.get(i.key)!,
          fromBlock: fromBlock.get(i.key)!,
          fees: fees.get(i.key) ?? [],
          transfers: transfers.get(i.key) ?? [],
          startBalances,
          seed: seedFp ? { day: i.from - 1, fingerprint: seedFp } : undefined,
          dayHashes: dayHashes.get(i.key) ?? new Map(),
          rewards: rewards.get(i.key),
          // every stored day before the range is known here, and none after it
          wholeSeries:
            (i.continues ? earlier != null : (boundsOf.get(i.key)?.first_stored ?? i.from) >= i.from) &&
            (boundsOf.get(i.key)?.last_stored ?? i.to) <= i.to,
        });
      }
      return out;
    });
}

/** One vault's outputs (pure). */
function computeVault(input: VaultInput, rules: PointsRules) {
  const { vault: v, meta, from, to, lastDay } = input;
  const snapshots = input.snapshots.filter((s) => s.timestamp < endOfDay(to));
  const out = computeVaultDays(meta, snapshots, input.fees, from, to);
  const firstDay = out.firstDay!;
  const fps = chainFingerprints(
    { meta, firstDay, dayHashes: input.dayHashes, rewards: input.rewards, rulesKey: rulesKey(rules) },
    to,
    input.seed,
  );
  const pricing = pricingByDay(input.snapshots, firstDay, lastDay);
  const index = computeIndex(
    firstDay,
    lastDay,
    meta.assetDecimals,
    (d): DayPricing => ({ ...pricing.get(d)!, multiplier: multiplierOn(input.rewards, d) }),
    rules,
  );
  // Positions start on the first index day: holdings from before it (it earns nothing then)
  // are recorded on that day, so they exist whatever range a job starts from.
  const excluded = new Set([ZERO, v.address]);
  let changes: BalanceChange[];
  if (from <= firstDay) {
    const start = new Map(input.startBalances);
    for (const t of input.transfers) {
      if (t.day >= firstDay) break;
      if (!excluded.has(t.from)) start.set(t.from, (start.get(t.from) ?? 0n) - t.shares);
      if (!excluded.has(t.to)) start.set(t.to, (start.get(t.to) ?? 0n) + t.shares);
    }
    changes =
      firstDay <= to
        ? balanceChanges(
            start,
            input.transfers.filter((t) => t.day >= firstDay),
            excluded,
            firstDay,
            to,
            true,
          )
        : [];
  } else changes = balanceChanges(input.startBalances, input.transfers, excluded, from, to);
  return { input, out, fps, index, changes };
}
type Computed = ReturnType<typeof computeVault>;

/**
 * A vault's summary input from what the job holds: its stored days before the range (the last
 * snapshot of each day that had one) and the range's computed days and APY rows. Null unless
 * that is its whole stored series and the range has a day with data; the caller then reads it.
 * Ratios are converted as when read back (Number of the stored 18-decimal text).
 */
function summaryFromMemory(c: Computed, now: string): SummaryInput | null {
  const { input, out } = c;
  const lastWithData = out.days.findLast((d) => !d.missing);
  if (!input.wholeSeries || !lastWithData) return null;
  const earlier = new Map<number, number | null>();
  for (const s of input.snapshots) {
    const d = dayOf(s.timestamp);
    if (d < input.from) earlier.set(d, s.ratio == null ? null : (s.ratioNumber ?? toNumber(s.ratio)));
  }
  const days = [];
  for (let d = out.firstDay!; d < out.days[0]!.day; d++) days.push({ day: d, ratio: earlier.get(d) ?? null });
  for (const d of out.days)
    days.push({ day: d.day, ratio: d.assetShareRatio == null ? null : Number(d.assetShareRatio) });
  const apy = out.apy.filter((a) => a.day === input.to);
  return {
    vault: input.vault,
    days,
    lastWithData: {
      tvl: lastWithData.tvl,
      sharePrice: lastWithData.sharePrice,
      snapshotTimestamp: lastWithData.snapshotTimestamp,
    },
    apy,
    apyComputedAt: apy.length > 0 ? new Date(now) : null,
  };
}

export async function runVaultDays(ctx: VaultDaysContext, ranges: readonly DaysRange[]): Promise<VaultDaysResult> {
  const keys = ranges.map((r) => vaultKey(r.vault));
  if (new Set(keys).size !== keys.length) throw new Error("a vault-days batch holds one range per vault");
  const inputs = await readInputs(ctx, ranges);
  const computed = inputs
    .filter((i) => i.snapshots.some((s) => s.timestamp < endOfDay(i.to)))
    .map((i) => computeVault(i, ctx.rules));
  const result: VaultDaysResult = {
    vaults: computed.length,
    days: computed.reduce((n, c) => n + c.out.days.length, 0),
    apyRows: computed.reduce((n, c) => n + c.out.apy.length, 0),
    pnlRows: computed.reduce((n, c) => n + c.out.pnl.length, 0),
    indexRows: computed.reduce((n, c) => n + c.index.filter((i) => i.day >= c.input.from).length, 0),
    positionRows: 0,
  };

  // ---- write, in one transaction ----
  const client = await ctx.pool.connect();
  // pg-pool drops its idle error listener while a client is checked out: without one, a
  // connection ended by the server mid-job would be an uncaught error instead of a failed job.
  const onError = () => {};
  client.on("error", onError);
  try {
    await client.query("BEGIN");
    // One writer per vault: a vault's position rows depend on each other (settled points sum
    // over a wallet's rows), so two jobs of one vault (a recompute during a fan-out's run) take
    // turns, and each sees the other's committed rows. Locks are taken in key order, so two
    // batches sharing vaults cannot deadlock.
    await client.query(
      "SELECT count(pg_advisory_xact_lock(hashtext('derived.vault_days'), hashtext(k))) FROM (SELECT k FROM unnest($1::text[]) AS k ORDER BY k) s",
      [computed.map((c) => vaultKey(c.input.vault))],
    );
    const now = new Date().toISOString();
    await writeDays(client, computed, now);
    result.positionRows = await writePoints(client, computed, ctx.indexerSchema);
    // The batch's summaries, from memory where the job holds a vault's whole series, otherwise
    // from the rows this transaction sees (vaults that computed nothing included: a vault
    // without daily rows loses its summary).
    const folded = computed.flatMap((c) => summaryFromMemory(c, now) ?? []);
    const foldedKeys = new Set(folded.map((f) => vaultKey(f.vault)));
    const rest = ranges.map((r) => r.vault).filter((v) => !foldedKeys.has(vaultKey(v)));
    const loaded = rest.length > 0 ? await loadSummaryInputs(client, rest) : { inputs: [], empty: [] };
    await writeSummaries(client, [...folded, ...loaded.inputs], loaded.empty);
    if (ctx.faultHoldMs) await new Promise((r) => setTimeout(r, ctx.faultHoldMs));
    await client.query("COMMIT");
  } catch (err) {
    await client.query("ROLLBACK").catch(() => {});
    throw err;
  } finally {
    client.off("error", onError);
    client.release();
  }
  return result;
}

/** The batch's vaults and one per-vault value each, as unnest() parameters. */
const batchArgs = (computed: readonly Computed[], ...per: ((c: Computed) => unknown)[]) => [
  ...vaultArrays(computed.map((c) => c.input.vault)),
  ...per.map((f) => computed.map(f)),
];

function* rowsOf<T>(
  computed: readonly Computed[],
  list: (c: Computed) => readonly T[],
  row: (c: Computed, x: T) => readonly CopyValue[],
): Generator<readonly CopyValue[]> {
  for (const c of computed) for (const x of list(c)) yield row(c, x);
}

/** Daily, APY and PnL rows and the index rows of the ranges: one DELETE statement, one COPY per table. */
async function writeDays(client: pg.PoolClient, computed: readonly Computed[], now: string): Promise<void> {
  const ranges = "unnest($1::int[], $2::text[], $3::date[], $4::date[]) AS r(chain_id, vault, from_day, to_day)";
  const inRange = (t: string) =>
    `${t}.chain_id = r.chain_id AND ${t}.vault = r.vault AND ${t}.day BETWEEN r.from_day AND r.to_day`;
  await client.query(
    `WITH a AS (DELETE FROM derived.vault_day t USING ${ranges} WHERE ${inRange("t")}),
          b AS (DELETE FROM derived.vault_apy t USING ${ranges} WHERE ${inRange("t")}),
          -- a record's day is its timestamp's: the bounds let the (chain_id, vault, timestamp) index serve
          c AS (DELETE FROM derived.unrealized_pnl t USING ${ranges} WHERE ${inRange("t")}
                  AND t.timestamp >= (r.from_day - date '1970-01-01') * 86400 AND t.timestamp < (r.to_day - date '1970-01-01' + 1) * 86400)
     -- the index is cumulative: it is rewritten from the range's first day on
     DELETE FROM derived.points_index t USING ${ranges} WHERE t.chain_id = r.chain_id AND t.vault = r.vault AND t.day >= r.from_day`,
    batchArgs(
      computed,
      (c) => dayToDate(c.input.from),
      (c) => dayToDate(c.input.to),
    ),
  );
  await copyRows(
    client,
    "derived.vault_day",
    [
      "chain_id",
      "vault",
      "day",
      "missing",
      "snapshot_id",
      "snapshot_timestamp",
      "block_number",
      "share_price",
      "total_assets",
      "total_shares",
      "asset_share_ratio",
      "asset_usd_price",
      "tvl",
      "daily_apy",
      "daily_pnl",
      "fees_charged",
      "gross_daily_apy",
      "fingerprint",
      "computed_at",
    ],
    rowsOf(
      computed,
      (c) => c.out.days,
      ({ input: { vault: v }, fps }, d) => [
        v.chainId,
        v.address,
        dayToDate(d.day),
        d.missing,
        d.snapshotId,
        d.snapshotTimestamp,
        d.blockNumber,
        d.sharePrice,
        d.totalAssets,
        d.totalShares,
        d.assetShareRatio,
        d.assetUsdPrice,
        d.tvl,
        d.dailyApy,
        d.dailyPnl,
        d.feesCharged,
        d.grossDailyApy,
        fps.get(d.day)!,
        now,
      ],
    ),
  );
  await copyRows(
    client,
    "derived.vault_apy",
    [
      "chain_id",
      "vault",
      "day",
      "horizon",
      "span_days",
      "simple_apy",
      "compound_apy",
      "gross_simple_apy",
      "gross_compound_apy",
      "pnl_per_share",
      "daily_pnl_per_share",
      "computed_at",
    ],
    rowsOf(
      computed,
      (c) => c.out.apy,
      ({ input: { vault: v } }, a) => [
        v.chainId,
        v.address,
        dayToDate(a.day),
        a.horizon,
        a.spanDays,
        a.simpleApy,
        a.compoundApy,
        a.grossSimpleApy,
        a.grossCompoundApy,
        a.pnlPerShare,
        a.dailyPnlPerShare,
        now,
      ],
    ),
  );
  await copyRows(
    client,
    "derived.unrealized_pnl",
    [
      "chain_id",
      "vault",
      "snapshot_id",
      "day",
      "timestamp",
      "block_number",
      "vault_name",
      "strategist_name",
      "reference_asset",
      "asset_price",
      "tvl_on_vault",
      "actual_tvl",
      "alt_assets",
      "alt_asset_price",
      "alt_assets_in_asset",
      "current_redeem_ratio",
      "adjusted_redeem_ratio",
      "unrealized_pnl",
      "unrealized_pnl_in_asset",
      "computed_at",
    ],
    rowsOf(
      computed,
      (c) => c.out.pnl,
      ({ input: { vault: v } }, p) => [
        v.chainId,
        v.address,
        p.snapshotId,
        dayToDate(p.day),
        p.timestamp,
        p.blockNumber,
        p.vaultName,
        p.strategistName,
        p.referenceAsset,
        p.assetPrice,
        p.tvlOnVault,
        p.actualTvl,
        p.altAssets,
        p.altAssetPrice,
        p.altAssetsInAsset,
        p.currentRedeemRatio,
        p.adjustedRedeemRatio,
        p.unrealizedPnl,
        p.unrealizedPnlInAsset,
        now,
      ],
    ),
  );
  await copyRows(
    client,
    "derived.points_index",
    [
      "chain_id",
      "vault",
      "day",
      "asset_decimals",
      "ratio",
      "price",
      "multiplier",
      "points_per_share",
      "cum_points_per_share",
    ],
    rowsOf(
      computed,
      (c) => c.index.filter((i) => i.day >= c.input.from),
      ({ input: { vault: v, meta } }, i: IndexDay) => [
        v.chainId,
        v.address,
        dayToDate(i.day),
        meta.assetDecimals,
        i.pricing.ratio == null ? null : formatFixed(i.pricing.ratio),
        i.pricing.price == null ? null : formatFixed(i.pricing.price),
        formatFixed(i.pricing.multiplier),
        formatIndex(i.pointsPerShare),
        formatIndex(i.cum),
      ],
    ),
  );
  const last = computed.filter((c) => c.index.length > 0);
  const lastOf = (c: Computed) => c.index.at(-1)!;
  await client.query(
    `INSERT INTO derived.points_vault (chain_id, vault, day, asset_decimals, ratio, price, cum_points_per_share, computed_at)
     SELECT chain_id, vault, day, asset_decimals, ratio, price, cum, $8::timestamptz
     FROM unnest($1::int[], $2::text[], $3::date[], $4::int[], $5::numeric[], $6::numeric[], $7::numeric[]) AS r(chain_id, vault, day, asset_decimals, ratio, price, cum)
     ON CONFLICT (chain_id, vault) DO UPDATE SET day = excluded.day, asset_decimals = excluded.asset_decimals, ratio = excluded.ratio,
       price = excluded.price, cum_points_per_share = excluded.cum_points_per_share, computed_at = excluded.computed_at`,
    [
      ...batchArgs(
        last,
        (c) => dayToDate(lastOf(c).day),
        (c) => c.input.meta.assetDecimals,
        (c) => (lastOf(c).pricing.ratio == null ? null : formatFixed(lastOf(c).pricing.ratio!)),
        (c) => (lastOf(c).pricing.price == null ? null : formatFixed(lastOf(c).pricing.price!)),
        (c) => formatIndex(lastOf(c).cum),
      ),
      now,
    ],
  );
}

/**
 * Position rows and lifetime deposits, inside the job's write transaction. The position rows
 * rewritten are those of every wallet whose rows depend on a range: the wallets that moved in it
 * and those with rows on or after its first day (their base and settled points depend on the
 * index from there on). Their rows are rewritten whole, settled by the pure `settlePositions`;
 * on an ordinary day that is only the wallets that moved. Rows are written with COPY after a
 * DELETE by key (no join whose plan depends on the statistics of a table being refilled).
 */
async function writePoints(
  client: pg.PoolClient,
  computed: readonly Computed[],
  indexerSchema: string,
): Promise<number> {
  const byKey = new Map(computed.map((c) => [vaultKey(c.input.vault), c]));
  const later = await client.query<{ chain_id: number; vault: string; wallet: string }>(
    `SELECT DISTINCT r.chain_id, r.vault, p.wallet
     FROM unnest($1::int[], $2::text[], $3::date[]) AS r(chain_id, vault, from_day)
     CROSS JOIN LATERAL (
       SELECT p.wallet FROM derived.points_position p WHERE p.chain_id = r.chain_id AND p.vault = r.vault AND p.day >= r.from_day OFFSET 0) p`,
    batchArgs(computed, (c) => dayToDate(c.input.from)),
  );
  const walletsOf = new Map(computed.map((c) => [vaultKey(c.input.vault), new Set(c.changes.map((x) => x.wallet))]));
  for (const r of later.rows) walletsOf.get(`${r.chain_id}:${r.vault}`)!.add(r.wallet);
  const triples = [...walletsOf].flatMap(([key, ws]) => [...ws].sort().map((w) => ({ c: byKey.get(key)!, w })));
  const tripleArgs = [
    triples.map((t) => t.c.input.vault.chainId),
    triples.map((t) => t.c.input.vault.address),
    triples.map((t) => t.w),
  ];
  // the wallets' stored rows, removed in the same statement
  const stored = await client.query<{ chain_id: number; vault: string; wallet: string; d: number; shares: string }>(
    `DELETE FROM derived.points_position p USING unnest($1::int[], $2::text[], $3::text[]) AS r(chain_id, vault, wallet)
     WHERE p.chain_id = r.chain_id AND p.vault = r.vault AND p.wallet = r.wallet
     RETURNING p.chain_id, p.vault, p.wallet, (p.day - date '1970-01-01') AS d, p.shares::text AS shares`,
    tripleArgs,
  );
  // each wallet's rows in day order: stored ones before the range, the range's, stored ones after
  const rowsByWallet = new Map<string, { day: number; shares: bigint }[]>();
  const push = (key: string, w: string, r: { day: number; shares: bigint }) => {
    const k = `${key}|${w}`;
    const list = rowsByWallet.get(k);
    if (list) list.push(r);
    else rowsByWallet.set(k, [r]);
  };
  const storedRows = stored.rows.map((r) => ({
    key: `${r.chain_id}:${r.vault}`,
    w: r.wallet,
    day: r.d,
    shares: BigInt(r.shares),
  }));
  storedRows.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.w < b.w ? -1 : a.w > b.w ? 1 : a.day - b.day));
  for (const r of storedRows) if (r.day < byKey.get(r.key)!.input.from) push(r.key, r.w, r);
  for (const c of computed) for (const x of c.changes) push(vaultKey(c.input.vault), x.wallet, x);
  for (const r of storedRows) if (r.day > byKey.get(r.key)!.input.to) push(r.key, r.w, r);
  const cumAt = new Map(computed.map((c) => [vaultKey(c.input.vault), cumLookup(c.index)]));
  let positionRows = 0;
  await copyRows(
    client,
    "derived.points_position",
    ["chain_id", "vault", "wallet", "day", "shares", "next_day", "base_points", "points", "settled_points"],
    (function* () {
      for (const [k, rows] of rowsByWallet) {
        const [key, w] = k.split("|") as [string, string];
        const v = byKey.get(key)!.input.vault;
        for (const r of settlePositions(rows, cumAt.get(key)!)) {
          positionRows++;
          yield [
            v.chainId,
            v.address,
            w,
            dayToDate(r.day),
            r.shares,
            r.nextDay == null ? null : dayToDate(r.nextDay),
            formatFixed(r.basePoints),
            r.points == null ? null : formatFixed(r.points),
            formatFixed(r.settledPoints),
          ];
        }
      }
    })(),
  );

  // ---- lifetime deposits of the wallets whose deposits may have changed: those rewritten
  // above, receivers of deposits in a range, and stored last deposits in it ----
  const events = `${client.escapeIdentifier(indexerSchema)}.vault_event`;
  // (the indexer stores addresses in lower case: src/vaults.ts)
  const deposits = await client.query<{
    chain_id: number;
    vault: string;
    wallet: string;
    total: string | null;
    last_day: string | null;
  }>(
    `WITH r AS (
       SELECT * FROM unnest($1::int[], $2::text[], $3::bigint[], $4::bigint[], $5::date[], $6::int[]) AS r(chain_id, vault, from_ts, from_block, from_day, decimals)
     ), w AS (
       SELECT * FROM unnest($7::int[], $8::text[], $9::text[]) AS w(chain_id, vault, wallet)
       UNION SELECT r.chain_id, r.vault, e.receiver FROM r CROSS JOIN LATERAL (
         SELECT e.receiver FROM ${events} e
         WHERE e.chain_id = r.chain_id AND e.vault = r.vault AND e.block_number >= r.from_block AND e.timestamp >= r.from_ts AND e.kind = 'deposit' OFFSET 0) e
       UNION SELECT r.chain_id, r.vault, d.wallet FROM r CROSS JOIN LATERAL (
         SELECT d.wallet FROM derived.points_deposit d WHERE d.chain_id = r.chain_id AND d.vault = r.vault AND d.last_deposit_day >= r.from_day OFFSET 0) d
     )
     SELECT w.chain_id, w.vault, w.wallet, trunc(t.total * power(10::numeric, -r.decimals), 18)::text AS total,
            (date '1970-01-01' + floor(t.last_ts / 86400)::int)::text AS last_day
     FROM w JOIN r ON r.chain_id = w.chain_id AND r.vault = w.vault
     CROSS JOIN LATERAL (
       SELECT sum(e.assets) AS total, max(e.timestamp) AS last_ts FROM ${events} e
       WHERE e.receiver = w.wallet AND e.chain_id = w.chain_id AND e.vault = w.vault AND e.kind = 'deposit'
     ) t`,
    [
      ...batchArgs(
        computed,
        (c) => c.input.from * DAY_SECONDS,
        (c) => c.input.fromBlock,
        (c) => dayToDate(c.input.from),
        (c) => c.input.meta.assetDecimals,
      ),
      ...tripleArgs,
    ],
  );
  await client.query(
    `DELETE FROM derived.points_deposit d USING unnest($1::int[], $2::text[], $3::text[]) AS r(chain_id, vault, wallet)
     WHERE d.chain_id = r.chain_id AND d.vault = r.vault AND d.wallet = r.wallet`,
    [deposits.rows.map((r) => r.chain_id), deposits.rows.map((r) => r.vault), deposits.rows.map((r) => r.wallet)],
  );
  await copyRows(
    client,
    "derived.points_deposit",
    ["chain_id", "vault", "wallet", "lifetime_deposit", "last_deposit_day"],
    deposits.rows.filter((r) => r.total != null).map((r) => [r.chain_id, r.vault, r.wallet, r.total, r.last_day]),
  );
  return positionRows;
}
