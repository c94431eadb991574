/**
 * Writes derived.vault_metrics (its only writer): vault summaries (latest APY, returns,
 * drawdowns and freshness), called by the vault-days job inside its write transaction for every vault of its batch. A
 * vault whose whole daily series the job holds in memory (its stored days were complete, or it computed them
 * all, and nothing is stored after its range) is summarized from memory; the others from their
 * rows as the transaction now sees them: both give the same row.
 */
import { type Selectable, sql } from "kysely";
import type pg from "pg";
import { groupByVault, rowKey, type VaultRef, vaultBatch, vaultKey } from "../../db/batch.js";
import { onClient } from "../../db/client.js";
import { dayToDate } from "../../db/days.js";
import type { VaultApyTable } from "../../db/schema.js";
import { type ApyPoint, computeVaultSummary, type SeriesPoint } from "./summary.js";

/** What one vault's summary is computed from. */
export interface SummaryInput {
  vault: VaultRef;
  /** every stored day, first to last, with its ratio (null on a missing day or without supply) */
  days: SeriesPoint[];
  /** the last day with a snapshot: its TVL and share price (text as stored) and snapshot time */
  lastWithData: { tvl: string | null; sharePrice: string | null; snapshotTimestamp: number | null } | null;
  /** the APY rows of the summary's day (`summaryDay`) */
  apy: ApyPoint[];
  apyComputedAt: Date | null;
}

/**
 * The day a summary is as of: the last day with a snapshot. A later day without one (today before
 * its first snapshot, just after midnight) would carry yesterday's share price and report a day
 * of no growth: a 1-day APY of 0 and every window understated, until the snapshot arrives.
 */
export const summaryDay = (days: readonly SeriesPoint[]): number =>
  (days.findLast((d) => !d.missing) ?? days.at(-1)!).day;

/** A double column's value in JSON: Infinity and NaN, which JSON lacks, as the text Postgres reads them from */
const float = (x: number | null) => (x == null || Number.isFinite(x) ? x : String(x));

/** The summary inputs of `vaults` from their stored rows; `empty` are those without any. */
export async function loadSummaryInputs(
  client: pg.ClientBase,
  vaults: readonly VaultRef[],
): Promise<{ inputs: SummaryInput[]; empty: VaultRef[] }> {
  const db = onClient(client);
  // Every day's ratio (days as integers, ratios as text: a date column costs a Date object per row)
  const { rows } = await sql<{
    chain_id: number;
    vault: string;
    d: number;
    ratio: string | null;
    missing: boolean;
  }>`
    SELECT d.chain_id, d.vault, (d.day - date '1970-01-01') AS d, d.asset_share_ratio::text AS ratio, d.missing
    FROM ${vaultBatch(vaults, (v) => v)}
    CROSS JOIN LATERAL (SELECT * FROM derived.vault_day d WHERE d.chain_id = r.chain_id
      AND d.vault = r.vault OFFSET 0) d
    ORDER BY d.chain_id, d.vault, d.day`.execute(db);
  const daysOf = groupByVault(
    rows,
    (r): SeriesPoint => ({ day: r.d, ratio: r.ratio == null ? null : Number(r.ratio), missing: r.missing }),
  );
  const withDays = vaults.filter((v) => daysOf.has(vaultKey(v)));
  const empty = vaults.filter((v) => !daysOf.has(vaultKey(v)));
  if (withDays.length === 0) return { inputs: [], empty };
  const lastDayOf = (v: VaultRef) => summaryDay(daysOf.get(vaultKey(v))!);
  const { rows: withData } = await sql<{
    chain_id: number;
    vault: string;
    tvl: string | null;
    share_price: string | null;
    ts: string | null;
  }>`
    SELECT r.chain_id, r.vault, d.tvl::text AS tvl, d.share_price::text AS share_price, d.snapshot_timestamp::text AS ts
    FROM ${vaultBatch(withDays, (v) => v)}
    CROSS JOIN LATERAL (
      SELECT * FROM derived.vault_day d
      WHERE d.chain_id = r.chain_id AND d.vault = r.vault AND NOT d.missing ORDER BY d.day DESC LIMIT 1) d`.execute(db);
  const { rows: apyRows } = await sql<Selectable<VaultApyTable>>`
    SELECT a.* FROM ${vaultBatch(withDays, (v) => v, { day: ["date", (v) => dayToDate(lastDayOf(v))] })}
    CROSS JOIN LATERAL (
      SELECT * FROM derived.vault_apy a WHERE a.chain_id = r.chain_id AND a.vault = r.vault AND a.day = r.day
        OFFSET 0) a`.execute(db);
  const dataOf = new Map(withData.map((r) => [rowKey(r), r]));
  const apyOf = groupByVault(apyRows, (a) => a);
  const inputs = withDays.map((v): SummaryInput => {
    const key = vaultKey(v);
    const apy = apyOf.get(key) ?? [];
    const data = dataOf.get(key);
    return {
      vault: v,
      days: daysOf.get(key)!,
      lastWithData: data
        ? { tvl: data.tvl, sharePrice: data.share_price, snapshotTimestamp: data.ts == null ? null : Number(data.ts) }
        : null,
      apy: apy.map((a) => ({
        horizon: a.horizon,
        simpleApy: a.simple_apy,
        compoundApy: a.compound_apy,
        grossSimpleApy: a.gross_simple_apy,
        grossCompoundApy: a.gross_compound_apy,
        pnlPerShare: a.pnl_per_share,
        dailyPnlPerShare: a.daily_pnl_per_share,
      })),
      apyComputedAt: apy.reduce<Date | null>((m, a) => (m == null || a.computed_at > m ? a.computed_at : m), null),
    };
  });
  return { inputs, empty };
}

/** Upserts the summaries of `inputs` (one statement) and removes those of `empty` vaults. */
export async function writeSummaries(
  client: pg.ClientBase,
  inputs: readonly SummaryInput[],
  empty: readonly VaultRef[],
): Promise<void> {
  if (empty.length > 0) {
    await sql`
      DELETE FROM derived.vault_metrics m USING ${vaultBatch(empty, (v) => v)}
      WHERE m.chain_id = r.chain_id AND m.vault = r.vault`.execute(onClient(client));
  }
  if (inputs.length === 0) return;
  // in key order: two batches upserting some of the same vaults lock their rows in one order
  const rows = summaryRows(inputs).sort(
    (a, b) => a.chain_id - b.chain_id || (a.vault < b.vault ? -1 : a.vault > b.vault ? 1 : 0),
  );
  const cols = Object.keys(rows[0]!);
  const figures = cols.filter((c) => c !== "chain_id" && c !== "vault");
  const updates = [...figures, "cached_at"].map((c) => `${c} = excluded.${c}`).join(", ");
  // one row per vault from one JSON parameter, typed by the table's own row type. A row whose
  // figures are all as stored is left alone: cached_at says when they last changed, and the
  // vault's answers (and their ETags) stay the same while nothing did.
  await client.query(
    `INSERT INTO derived.vault_metrics AS m (${cols.join(", ")}, cached_at)
     SELECT ${cols.join(", ")}, now() FROM json_populate_recordset(null::derived.vault_metrics, $1::json)
     ON CONFLICT (chain_id, vault) DO UPDATE SET ${updates}
     WHERE (${figures.map((c) => `m.${c}`).join(", ")})
       IS DISTINCT FROM (${figures.map((c) => `excluded.${c}`).join(", ")})`,
    [JSON.stringify(rows)],
  );
}

/** The vault_metrics rows of `inputs` (but `cached_at`, the time of writing), as JSON-ready values. */
export function summaryRows(inputs: readonly SummaryInput[]) {
  return inputs.map((i) => {
    const last = summaryDay(i.days);
    const s = computeVaultSummary(i.days, last, i.apy);
    return {
      chain_id: i.vault.chainId,
      vault: i.vault.address,
      as_of_day: dayToDate(last),
      first_day: dayToDate(i.days[0]!.day),
      tvl: i.lastWithData?.tvl ?? null,
      share_price: i.lastWithData?.sharePrice ?? null,
      historical_apy: s.historicalApy,
      historical_compound_apy: s.historicalCompoundApy,
      gross_apy: s.grossApy,
      gross_compound_apy: s.grossCompoundApy,
      pnl_per_share: s.pnlPerShare,
      daily_pnl_per_share: s.dailyPnlPerShare,
      returns: s.returns,
      liquid_apy_7d: float(s.liquidApy7d),
      liquid_apy_30d: float(s.liquidApy30d),
      max_drawdown: float(s.maxDrawdown),
      max_daily_drawdown: float(s.maxDailyDrawdown),
      apy_computed_at: (i.apyComputedAt ?? new Date()).toISOString(),
      share_ratio_snapshot_at:
        i.lastWithData?.snapshotTimestamp != null
          ? new Date(i.lastWithData.snapshotTimestamp * 1000).toISOString()
          : null,
    };
  });
}
