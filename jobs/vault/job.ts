/**
 * The vault-days job: recomputes one vault's daily rows, APY rows, unrealized PnL records and
 * holding/referral points for the days from..to. Inputs are read in one REPEATABLE READ
 * snapshot (so the stored fingerprints describe exactly the data used); outputs replace the
 * range's rows in one transaction, so a job killed at any point leaves the old rows or the
 * new ones, never a mix, and a retry writes the same rows.
 */
import type pg from "pg";
import { sql } from "kysely";
import { copyRows } from "../lib/copy.js";
import { dayToDate, endOfDay, DAY_SECONDS } from "../lib/days.js";
import { formatFixed, parseFixed } from "../lib/fixed.js";
import { computeHoldingPoints, type DayPricing, type PointsRules } from "../points/compute.js";
import {
  chainFingerprints,
  loadBalances,
  loadDayHashes,
  loadFees,
  loadRegistrations,
  loadRewards,
  loadSnapshots,
  loadTransfers,
  loadVaults,
  multiplierOn,
  referralMap,
  vaultKey,
  type Db,
  type VaultRef,
} from "../repo.js";
import { computeVaultDays, type SnapshotIn } from "./compute.js";

export interface VaultDaysContext {
  db: Db;
  pool: pg.Pool;
  indexerSchema: string;
  registryPath?: string | undefined;
  rules: PointsRules;
  /** fault injection for tests: keep the write transaction open this long before COMMIT */
  faultHoldMs?: number;
}

export interface VaultDaysResult {
  days: number;
  apyRows: number;
  pnlRows: number;
  ledgerRows: number;
}

const ZERO = "0x0000000000000000000000000000000000000000";

export const rulesKey = (r: PointsRules) => `${r.pointsPerUsdPerDay}:${r.referralShare}`;

/** sp and price carried to each day from..to (the last snapshot at or before the day's end). */
function pricingByDay(snapshots: readonly SnapshotIn[], from: number, to: number): Map<number, { ratio: bigint | null; price: bigint | null }> {
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

export async function runVaultDays(ctx: VaultDaysContext, v: VaultRef, from: number, to: number): Promise<VaultDaysResult> {
  const beforeTs = endOfDay(to);
  // ---- read, in one consistent snapshot ----
  const input = await ctx.db
    .transaction()
    .setIsolationLevel("repeatable read")
    .execute(async (trx) => {
      await sql`SET TRANSACTION READ ONLY`.execute(trx);
      const meta = (await loadVaults(trx, ctx.indexerSchema, ctx.registryPath)).find((m) => m.chainId === v.chainId && m.address === v.address);
      if (!meta) return null;
      const snapshots = await loadSnapshots(trx, ctx.indexerSchema, v, beforeTs);
      const fees = await loadFees(trx, ctx.indexerSchema, v, beforeTs);
      const startBalances = await loadBalances(trx, ctx.indexerSchema, v, from * DAY_SECONDS);
      const transfers = await loadTransfers(trx, ctx.indexerSchema, v, from * DAY_SECONDS, beforeTs);
      const rewards = (await loadRewards(trx, v)).get(vaultKey(v));
      const registrations = await loadRegistrations(trx);
      const seedRow = await trx
        .selectFrom("derived.vault_day")
        .select("fingerprint")
        .where("chain_id", "=", v.chainId)
        .where("vault", "=", v.address)
        .where("day", "=", dayToDate(from - 1))
        .executeTakeFirst();
      const seed = seedRow ? { day: from - 1, fingerprint: seedRow.fingerprint } : undefined;
      const dayHashes = (await loadDayHashes(trx, ctx.indexerSchema, v, seed ? from : undefined)).get(vaultKey(v)) ?? new Map();
      return { meta, snapshots, fees, startBalances, transfers, rewards, registrations, dayHashes, seed };
    });
  if (!input || input.snapshots.length === 0) return { days: 0, apyRows: 0, pnlRows: 0, ledgerRows: 0 };
  const { meta, snapshots } = input;

  // ---- compute (pure) ----
  const out = computeVaultDays(meta, snapshots, input.fees, from, to);
  const firstDay = out.firstDay!;
  const lo = Math.max(from, firstDay);
  const fps = chainFingerprints(
    { meta, firstDay, dayHashes: input.dayHashes, rewards: input.rewards, registrations: input.registrations, rulesKey: rulesKey(ctx.rules) },
    to,
    input.seed,
  );
  const pricing = pricingByDay(snapshots, lo, to);
  const points =
    lo <= to
      ? computeHoldingPoints({
          assetDecimals: meta.assetDecimals,
          from: lo,
          to,
          startBalances: lo === from ? input.startBalances : await loadBalances(ctx.db, ctx.indexerSchema, v, lo * DAY_SECONDS),
          transfers: input.transfers.filter((t) => t.day >= lo),
          pricing: (d): DayPricing => ({ ...pricing.get(d)!, multiplier: multiplierOn(input.rewards, d) }),
          referrals: referralMap(input.registrations),
          excluded: new Set([ZERO, v.address]),
          rules: ctx.rules,
        })
      : { entries: [], positions: new Map() };

  // ---- write, in one transaction ----
  const client = await ctx.pool.connect();
  try {
    await client.query("BEGIN");
    const args = [v.chainId, v.address, dayToDate(from), dayToDate(to)];
    const range = "chain_id = $1 AND vault = $2 AND day BETWEEN $3::date AND $4::date";
    await client.query(`DELETE FROM derived.vault_day WHERE ${range}`, args);
    await client.query(`DELETE FROM derived.vault_apy WHERE ${range}`, args);
    await client.query(`DELETE FROM derived.unrealized_pnl WHERE ${range}`, args);
    const now = new Date().toISOString();
    await copyRows(
      client,
      "derived.vault_day",
      ["chain_id", "vault", "day", "missing", "snapshot_id", "snapshot_timestamp", "block_number", "share_price", "total_assets", "total_shares", "asset_share_ratio", "asset_usd_price", "tvl", "daily_apy", "daily_pnl", "fees_charged", "gross_daily_apy", "fingerprint", "computed_at"],
      out.days.map((d) => [
        v.chainId, v.address, dayToDate(d.day), d.missing, d.snapshotId, d.snapshotTimestamp, d.blockNumber, d.sharePrice, d.totalAssets,
        d.totalShares, d.assetShareRatio, d.assetUsdPrice, d.tvl, d.dailyApy, d.dailyPnl, d.feesCharged, d.grossDailyApy, fps.get(d.day)!, now,
      ]),
    );
    await copyRows(
      client,
      "derived.vault_apy",
      ["chain_id", "vault", "day", "horizon", "span_days", "simple_apy", "compound_apy", "gross_simple_apy", "gross_compound_apy", "pnl_per_share", "daily_pnl_per_share", "computed_at"],
      out.apy.map((a) => [v.chainId, v.address, dayToDate(a.day), a.horizon, a.spanDays, a.simpleApy, a.compoundApy, a.grossSimpleApy, a.grossCompoundApy, a.pnlPerShare, a.dailyPnlPerShare, now]),
    );
    await copyRows(
      client,
      "derived.unrealized_pnl",
      ["chain_id", "vault", "snapshot_id", "day", "timestamp", "block_number", "vault_name", "strategist_name", "reference_asset", "asset_price", "tvl_on_vault", "actual_tvl", "current_redeem_ratio", "adjusted_redeem_ratio", "unrealized_pnl", "unrealized_pnl_in_asset", "computed_at"],
      out.pnl.map((p) => [
        v.chainId, v.address, p.snapshotId, dayToDate(p.day), p.timestamp, p.blockNumber, p.vaultName, p.strategistName, p.referenceAsset, p.assetPrice,
        p.tvlOnVault, p.actualTvl, p.currentRedeemRatio, p.adjustedRedeemRatio, p.unrealizedPnl, p.unrealizedPnlInAsset, now,
      ]),
    );

    // Points: replace the range's holding and referral entries; carry the difference into the
    // per-vault and per-referral totals.
    const old = await client.query<{ wallet: string; source: string; ref: string; points: string }>(
      `WITH del AS (DELETE FROM derived.points_ledger WHERE ${range} AND source IN ('holding', 'referral') RETURNING wallet, source, ref, points)
       SELECT wallet, source, ref, sum(points)::text AS points FROM del GROUP BY 1, 2, 3`,
      args,
    );
    await copyRows(
      client,
      "derived.points_ledger",
      ["wallet", "day", "source", "chain_id", "vault", "ref", "points", "shares", "usd_value"],
      points.entries.map((e) => [
        e.wallet, dayToDate(e.day), e.source, v.chainId, v.address, e.ref, formatFixed(e.points), e.shares, e.usdValue == null ? null : formatFixed(e.usdValue),
      ]),
    );
    const holdDelta = new Map<string, bigint>();
    const refDelta = new Map<string, bigint>();
    for (const e of points.entries) {
      if (e.source === "holding") holdDelta.set(e.wallet, (holdDelta.get(e.wallet) ?? 0n) + e.points);
      else refDelta.set(`${e.wallet}|${e.ref}`, (refDelta.get(`${e.wallet}|${e.ref}`) ?? 0n) + e.points);
    }
    for (const o of old.rows) {
      const p = parseFixed(o.points);
      if (o.source === "holding") holdDelta.set(o.wallet, (holdDelta.get(o.wallet) ?? 0n) - p);
      else refDelta.set(`${o.wallet}|${o.ref}`, (refDelta.get(`${o.wallet}|${o.ref}`) ?? 0n) - p);
    }
    const wallets = [...new Set([...holdDelta.keys(), ...points.positions.keys()])].sort();
    if (wallets.length > 0) {
      await client.query(
        `INSERT INTO derived.points_pool AS p (wallet, chain_id, vault, total_points, position_day, shares, native_amount, usd_value)
         SELECT w, $1, $2, d::numeric, CASE WHEN has THEN $3::date END, coalesce(s::numeric, 0), coalesce(n::numeric, 0), coalesce(u::numeric, 0)
         FROM unnest($4::text[], $5::text[], $6::bool[], $7::text[], $8::text[], $9::text[]) AS x(w, d, has, s, n, u)
         ON CONFLICT (wallet, chain_id, vault) DO UPDATE SET
           total_points = p.total_points + excluded.total_points,
           position_day = CASE WHEN excluded.position_day IS NOT NULL AND (p.position_day IS NULL OR excluded.position_day >= p.position_day) THEN excluded.position_day ELSE p.position_day END,
           shares = CASE WHEN excluded.position_day IS NOT NULL AND (p.position_day IS NULL OR excluded.position_day >= p.position_day) THEN excluded.shares ELSE p.shares END,
           native_amount = CASE WHEN excluded.position_day IS NOT NULL AND (p.position_day IS NULL OR excluded.position_day >= p.position_day) THEN excluded.native_amount ELSE p.native_amount END,
           usd_value = CASE WHEN excluded.position_day IS NOT NULL AND (p.position_day IS NULL OR excluded.position_day >= p.position_day) THEN excluded.usd_value ELSE p.usd_value END`,
        [
          v.chainId,
          v.address,
          dayToDate(to),
          wallets,
          wallets.map((w) => formatFixed(holdDelta.get(w) ?? 0n)),
          wallets.map((w) => points.positions.has(w)),
          wallets.map((w) => points.positions.get(w)?.shares.toString() ?? null),
          wallets.map((w) => (points.positions.has(w) ? formatFixed(points.positions.get(w)!.nativeAmount) : null)),
          wallets.map((w) => (points.positions.has(w) ? formatFixed(points.positions.get(w)!.usdValue) : null)),
        ],
      );
    }
    const refs = [...refDelta.keys()].sort();
    if (refs.length > 0) {
      await client.query(
        `INSERT INTO derived.points_referral AS r (referrer, referee, total_points)
         SELECT a, b, d::numeric FROM unnest($1::text[], $2::text[], $3::text[]) AS x(a, b, d)
         ON CONFLICT (referrer, referee) DO UPDATE SET total_points = r.total_points + excluded.total_points`,
        [refs.map((k) => k.split("|")[0]), refs.map((k) => k.split("|")[1]), refs.map((k) => formatFixed(refDelta.get(k)!))],
      );
    }
    if (ctx.faultHoldMs) await new Promise((r) => setTimeout(r, ctx.faultHoldMs));
    await client.query("COMMIT");
  } catch (err) {
    await client.query("ROLLBACK").catch(() => {});
    throw err;
  } finally {
    client.release();
  }
  return { days: out.days.length, apyRows: out.apy.length, pnlRows: out.pnl.length, ledgerRows: points.entries.length };
}

