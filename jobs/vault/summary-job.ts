/**
 * The vault-summary job: latest APY, returns, drawdowns and freshness of a batch of vaults (the
 * vaults of one vault-days batch), read with one statement per table and written with one.
 */
import { sql, type Selectable } from "kysely";
import type { VaultApyTable } from "../db/schema.js";
import type { Db, VaultRef } from "../repo.js";
import { dayToDate } from "../lib/days.js";
import { computeVaultSummary } from "./summary.js";

interface DayRow {
  chain_id: number;
  vault: string;
  d: number;
  asset_share_ratio: string | null;
}
export async function runVaultSummary(db: Db, vaults: readonly VaultRef[]): Promise<{ vaults: number; asOf: string | null }> {
  return db.transaction().execute(async (trx) => {
    const chainIds = vaults.map((v) => v.chainId);
    const addresses = vaults.map((v) => v.address);
    // Every day's ratio (what returns and drawdowns are computed from), days as integers and
    // ratios as text: a date column costs a Date object per row. The other figures come from
    // each vault's last day with data only (below).
    const { rows } = await sql<DayRow>`
      SELECT d.chain_id, d.vault, (d.day - date '1970-01-01') AS d, d.asset_share_ratio::text AS asset_share_ratio
      FROM unnest(${chainIds}::int[], ${addresses}::text[]) AS r(chain_id, vault)
      CROSS JOIN LATERAL (SELECT * FROM derived.vault_day d WHERE d.chain_id = r.chain_id AND d.vault = r.vault OFFSET 0) d
      ORDER BY d.chain_id, d.vault, d.day`.execute(trx);
    const daysOf = new Map<string, DayRow[]>();
    for (const r of rows) {
      const key = `${r.chain_id}:${r.vault}`;
      const list = daysOf.get(key);
      if (list) list.push(r);
      else daysOf.set(key, [r]);
    }
    const withDays = vaults.filter((v) => daysOf.has(`${v.chainId}:${v.address}`));
    const without = vaults.filter((v) => !daysOf.has(`${v.chainId}:${v.address}`));
    if (without.length > 0) {
      await sql`
        DELETE FROM derived.vault_metrics m USING unnest(${without.map((v) => v.chainId)}::int[], ${without.map((v) => v.address)}::text[]) AS r(chain_id, vault)
        WHERE m.chain_id = r.chain_id AND m.vault = r.vault`.execute(trx);
    }
    if (withDays.length === 0) return { vaults: 0, asOf: null };
    const lastDayOf = (v: VaultRef) => daysOf.get(`${v.chainId}:${v.address}`)!.at(-1)!.d;
    const { rows: withData } = await sql<{ chain_id: number; vault: string; tvl: string | null; share_price: string | null; snapshot_timestamp: string | null }>`
      SELECT r.chain_id, r.vault, d.tvl::text AS tvl, d.share_price::text AS share_price, d.snapshot_timestamp::text AS snapshot_timestamp
      FROM unnest(${withDays.map((v) => v.chainId)}::int[], ${withDays.map((v) => v.address)}::text[]) AS r(chain_id, vault)
      CROSS JOIN LATERAL (
        SELECT * FROM derived.vault_day d WHERE d.chain_id = r.chain_id AND d.vault = r.vault AND NOT d.missing ORDER BY d.day DESC LIMIT 1) d`.execute(trx);
    const lastWithDataOf = new Map(withData.map((r) => [`${r.chain_id}:${r.vault}`, r]));
    const { rows: apyRows } = await sql<Selectable<VaultApyTable>>`
      SELECT a.* FROM unnest(${withDays.map((v) => v.chainId)}::int[], ${withDays.map((v) => v.address)}::text[], ${withDays.map((v) => dayToDate(lastDayOf(v)))}::date[])
        AS r(chain_id, vault, day)
      CROSS JOIN LATERAL (SELECT * FROM derived.vault_apy a WHERE a.chain_id = r.chain_id AND a.vault = r.vault AND a.day = r.day OFFSET 0) a`.execute(trx);
    const apyOf = new Map<string, typeof apyRows>();
    for (const a of apyRows) {
      const key = `${a.chain_id}:${a.vault}`;
      const list = apyOf.get(key);
      if (list) list.push(a);
      else apyOf.set(key, [a]);
    }
    let asOf: string | null = null;
    const out = withDays.map((v) => {
      const key = `${v.chainId}:${v.address}`;
      const days = daysOf.get(key)!;
      const last = { ...days[days.length - 1]!, day: dayToDate(days[days.length - 1]!.d) };
      if (asOf == null || last.day > asOf) asOf = last.day;
      const lastWithData = lastWithDataOf.get(key);
      const apy = apyOf.get(key) ?? [];
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
      return {
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
    });
    const cols = Object.keys(out[0]!).filter((k) => k !== "chain_id" && k !== "vault") as (keyof (typeof out)[number])[];
    await trx
      .insertInto("derived.vault_metrics")
      .values(out)
      .onConflict((oc) => oc.columns(["chain_id", "vault"]).doUpdateSet((eb) => Object.fromEntries(cols.map((c) => [c, eb.ref(`excluded.${c}`)])) as never))
      .execute();
    return { vaults: out.length, asOf };
  });
}
