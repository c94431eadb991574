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
import { rowKey, type VaultRef, vaultBatch, vaultKey } from "../../db/batch.js";
import { DAY_SECONDS, dayOf, endOfDay } from "../../db/days.js";
import { toNumber } from "../../db/fixed.js";
import {
  type BalanceChange,
  balanceChanges,
  computeIndex,
  type DayPricing,
  type PointsRules,
  type TransferIn,
} from "../points/compute.js";
import { replaceIndex, replacePositions } from "../points/index-write.js";
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
  loadVaultMetas,
  multiplierOn,
  type RewardWindow,
} from "../repo.js";
import { computeVaultDays, type FeeIn, type SnapshotIn, type VaultMeta } from "./compute.js";
import { replaceSeries } from "./series-write.js";
import type { SeriesPoint } from "./summary.js";
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

/**
 * Part of every fingerprint: "time" names the points rule (per-share index, moving days weighted
 * by the time held: migration 0018; "index" before it).
 */
export const rulesKey = (r: PointsRules) => `time:${r.pointsPerUsdPerDay}:${r.referralShare}`;

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
      const metas = new Map(
        (await loadVaultMetas(trx, ctx.indexerSchema, ctx.registryPath)).map((m) => [vaultKey(m), m]),
      );
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
      const { rows: bounds } = await sql<{
        chain_id: number;
        vault: string;
        indexed_to: number | null;
        first_stored: number | null;
        last_stored: number | null;
      }>`
        SELECT r.chain_id, r.vault,
          (SELECT p.day - date '1970-01-01' FROM derived.points_vault p WHERE p.chain_id = r.chain_id
          AND p.vault = r.vault) AS indexed_to,
          (SELECT d.day - date '1970-01-01' FROM derived.vault_day d WHERE d.chain_id = r.chain_id AND d.vault = r.vault
          ORDER BY d.day LIMIT 1) AS first_stored,
          (SELECT d.day - date '1970-01-01' FROM derived.vault_day d WHERE d.chain_id = r.chain_id AND d.vault = r.vault
          ORDER BY d.day DESC LIMIT 1) AS last_stored
        FROM ${vaultBatch(known, (r) => r.vault)}`.execute(trx);
      const boundsOf = new Map(bounds.map((r) => [rowKey(r), r]));
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
  // the summary is as of that day (summaryDay): its APY rows are in memory
  if (!input.wholeSeries || !lastWithData) return null;
  const earlier = new Map<number, number | null>();
  for (const s of input.snapshots) {
    const d = dayOf(s.timestamp);
    if (d < input.from) earlier.set(d, s.ratio == null ? null : (s.ratioNumber ?? toNumber(s.ratio)));
  }
  const days: SeriesPoint[] = [];
  for (let d = out.firstDay!; d < out.days[0]!.day; d++) {
    days.push({ day: d, ratio: earlier.get(d) ?? null, missing: !earlier.has(d) });
  }
  for (const d of out.days) {
    days.push({ day: d.day, ratio: d.assetShareRatio == null ? null : Number(d.assetShareRatio), missing: d.missing });
  }
  const apy = out.apy.filter((a) => a.day === lastWithData.day);
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
      "SELECT count(pg_advisory_xact_lock(hashtext('derived.vault_days'), hashtext(k))) FROM (SELECT k FROM " +
        "unnest($1::text[]) AS k ORDER BY k) s",
      [computed.map((c) => vaultKey(c.input.vault))],
    );
    const now = new Date().toISOString();
    await replaceSeries(
      client,
      computed.map(({ input: i, out, fps }) => ({
        ...i,
        days: out.days,
        apy: out.apy,
        pnl: out.pnl,
        fingerprints: fps,
      })),
      now,
    );
    const points = computed.map(({ input: i, index, changes }) => ({
      vault: i.vault,
      from: i.from,
      to: i.to,
      assetDecimals: i.meta.assetDecimals,
      fromBlock: i.fromBlock,
      index,
      changes,
    }));
    await replaceIndex(client, points, now);
    result.positionRows = await replacePositions(client, points, ctx.indexerSchema);
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
