/**
 * Writes derived.vault_day, derived.vault_apy and derived.unrealized_pnl (their only writer):
 * a batch of vaults' ranges of days replaced inside the caller's transaction, one DELETE
 * statement for the whole batch and one COPY per table.
 */
import { sql } from "kysely";
import type pg from "pg";
import { type VaultRef, vaultBatch } from "../../db/batch.js";
import { onClient } from "../../db/client.js";
import { copyInto } from "../../db/copy.js";
import { dayToDate } from "../../db/days.js";
import type { ApyOut, DayOut, PnlOut } from "./compute.js";

/** One vault's days from..to, as computed. */
export interface SeriesRange {
  vault: VaultRef;
  from: number;
  to: number;
  days: readonly DayOut[];
  apy: readonly ApyOut[];
  pnl: readonly PnlOut[];
  /** each day's fingerprint */
  fingerprints: ReadonlyMap<number, string>;
}

function* each<T, R>(
  ranges: readonly SeriesRange[],
  list: (r: SeriesRange) => readonly T[],
  row: (r: SeriesRange, x: T) => R,
) {
  for (const r of ranges) for (const x of list(r)) yield row(r, x);
}

/** Replaces the ranges' rows of the three tables; `now` is their computed_at. */
export async function replaceSeries(client: pg.PoolClient, ranges: readonly SeriesRange[], now: string): Promise<void> {
  const batch = vaultBatch(ranges, (r) => r.vault, {
    from_day: ["date", (r) => dayToDate(r.from)],
    to_day: ["date", (r) => dayToDate(r.to)],
  });
  const inRange = (t: string) =>
    sql`${sql.ref(`${t}.chain_id`)} = r.chain_id AND ${sql.ref(`${t}.vault`)} = r.vault
      AND ${sql.ref(`${t}.day`)} BETWEEN r.from_day AND r.to_day`;
  await sql`
    WITH a AS (DELETE FROM derived.vault_day t USING ${batch} WHERE ${inRange("t")}),
         b AS (DELETE FROM derived.vault_apy t USING ${batch} WHERE ${inRange("t")})
    -- a record's day is its timestamp's: the bounds let the (chain_id, vault, timestamp) index serve
    DELETE FROM derived.unrealized_pnl t USING ${batch} WHERE ${inRange("t")}
      AND t.timestamp >= (r.from_day - date '1970-01-01') * 86400
      AND t.timestamp < (r.to_day - date '1970-01-01' + 1) * 86400`.execute(onClient(client));
  await copyInto(
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
    each(
      ranges,
      (r) => r.days,
      ({ vault: v, fingerprints }, d) => ({
        chain_id: v.chainId,
        vault: v.address,
        day: dayToDate(d.day),
        missing: d.missing,
        snapshot_id: d.snapshotId,
        snapshot_timestamp: d.snapshotTimestamp,
        block_number: d.blockNumber,
        share_price: d.sharePrice,
        total_assets: d.totalAssets,
        total_shares: d.totalShares,
        asset_share_ratio: d.assetShareRatio,
        asset_usd_price: d.assetUsdPrice,
        tvl: d.tvl,
        daily_apy: d.dailyApy,
        daily_pnl: d.dailyPnl,
        fees_charged: d.feesCharged,
        gross_daily_apy: d.grossDailyApy,
        fingerprint: fingerprints.get(d.day)!,
        computed_at: now,
      }),
    ),
  );
  await copyInto(
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
    each(
      ranges,
      (r) => r.apy,
      ({ vault: v }, a) => ({
        chain_id: v.chainId,
        vault: v.address,
        day: dayToDate(a.day),
        horizon: a.horizon,
        span_days: a.spanDays,
        simple_apy: a.simpleApy,
        compound_apy: a.compoundApy,
        gross_simple_apy: a.grossSimpleApy,
        gross_compound_apy: a.grossCompoundApy,
        pnl_per_share: a.pnlPerShare,
        daily_pnl_per_share: a.dailyPnlPerShare,
        computed_at: now,
      }),
    ),
  );
  await copyInto(
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
    each(
      ranges,
      (r) => r.pnl,
      ({ vault: v }, p) => ({
        chain_id: v.chainId,
        vault: v.address,
        snapshot_id: p.snapshotId,
        day: dayToDate(p.day),
        timestamp: p.timestamp,
        block_number: p.blockNumber,
        vault_name: p.vaultName,
        strategist_name: p.strategistName,
        reference_asset: p.referenceAsset,
        asset_price: p.assetPrice,
        tvl_on_vault: p.tvlOnVault,
        actual_tvl: p.actualTvl,
        alt_assets: p.altAssets,
        alt_asset_price: p.altAssetPrice,
        alt_assets_in_asset: p.altAssetsInAsset,
        current_redeem_ratio: p.currentRedeemRatio,
        adjusted_redeem_ratio: p.adjustedRedeemRatio,
        unrealized_pnl: p.unrealizedPnl,
        unrealized_pnl_in_asset: p.unrealizedPnlInAsset,
        computed_at: now,
      }),
    ),
  );
}
