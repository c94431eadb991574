/** The vault-summary job: latest APY, returns, drawdowns and freshness of one vault. */
import { sql } from "kysely";
import type { Db, VaultRef } from "../repo.js";
import { dayToDate } from "../lib/days.js";
import { computeVaultSummary } from "./summary.js";

export async function runVaultSummary(db: Db, v: VaultRef): Promise<{ asOf: string | null }> {
  return db.transaction().execute(async (trx) => {
    // days as integers and ratios as text: a date column costs a Date object per row
    const { rows } = await sql<{ d: number; missing: boolean; asset_share_ratio: string | null; tvl: string | null; share_price: string | null; snapshot_timestamp: string | null }>`
      SELECT (day - date '1970-01-01') AS d, missing, asset_share_ratio::text AS asset_share_ratio, tvl::text AS tvl, share_price::text AS share_price,
             snapshot_timestamp::text AS snapshot_timestamp
      FROM derived.vault_day WHERE chain_id = ${v.chainId} AND vault = ${v.address} ORDER BY day`.execute(trx);
    const days = rows;
    if (days.length === 0) {
      await trx.deleteFrom("derived.vault_metrics").where("chain_id", "=", v.chainId).where("vault", "=", v.address).execute();
      return { asOf: null };
    }
    const last = { ...days[days.length - 1]!, day: dayToDate(days[days.length - 1]!.d) };
    const lastWithData = [...days].reverse().find((d) => !d.missing);
    const apy = await trx
      .selectFrom("derived.vault_apy")
      .selectAll()
      .where("chain_id", "=", v.chainId)
      .where("vault", "=", v.address)
      .where("day", "=", last.day)
      .execute();
    const apyComputedAt = apy.reduce<Date | null>((m, a) => (m == null || a.computed_at > m ? a.computed_at : m), null);
    const s = computeVaultSummary(
      days.map((d) => ({ day: d.d, ratio: d.asset_share_ratio == null ? null : Number(d.asset_share_ratio) })),
      last.d,
      apy.map((a) => ({
        horizon: a.horizon,
        simpleApy: a.simple_apy,
        compoundApy: a.compound_apy,
        grossSimpleApy: a.gross_simple_apy,
        grossCompoundApy: a.gross_compound_apy,
        pnlPerShare: a.pnl_per_share,
        dailyPnlPerShare: a.daily_pnl_per_share,
      })),
    );
    const row = {
      chain_id: v.chainId,
      vault: v.address,
      as_of_day: last.day,
      first_day: dayToDate(days[0]!.d),
      tvl: lastWithData?.tvl ?? null,
      share_price: lastWithData?.share_price ?? null,
      historical_apy: JSON.stringify(s.historicalApy),
      historical_compound_apy: JSON.stringify(s.historicalCompoundApy),
      gross_apy: JSON.stringify(s.grossApy),
      gross_compound_apy: JSON.stringify(s.grossCompoundApy),
      pnl_per_share: JSON.stringify(s.pnlPerShare),
      daily_pnl_per_share: JSON.stringify(s.dailyPnlPerShare),
      returns: JSON.stringify(s.returns),
      liquid_apy_7d: s.liquidApy7d,
      liquid_apy_30d: s.liquidApy30d,
      max_drawdown: s.maxDrawdown,
      max_daily_drawdown: s.maxDailyDrawdown,
      apy_computed_at: apyComputedAt ?? new Date(),
      share_ratio_snapshot_at: lastWithData?.snapshot_timestamp ? new Date(Number(lastWithData.snapshot_timestamp) * 1000) : null,
      cached_at: sql<Date>`now()` as unknown as Date,
    };
    await trx
      .insertInto("derived.vault_metrics")
      .values(row)
      .onConflict((oc) => oc.columns(["chain_id", "vault"]).doUpdateSet((eb) => {
        const cols = Object.keys(row).filter((k) => k !== "chain_id" && k !== "vault") as (keyof typeof row)[];
        return Object.fromEntries(cols.map((c) => [c, eb.ref(`excluded.${c}`)])) as never;
      }))
      .execute();
    return { asOf: last.day };
  });
}
