/**
 * Pending redemption summaries: one vault or many, read in a few set queries (vaults, pending
 * requests per claimable date, latest snapshot, subaccounts) and assembled per vault, each on its
 * own so one vault's problem never fails the others.
 */

import type { z } from "@hono/zod-openapi";
import { sql } from "kysely";
import { vaultKey } from "../../../db/batch.js";
import { dueDateSql } from "../../../db/redemption-due.js";
import type { ReadDb } from "../../lib/db.js";
import { publicMessage } from "../../lib/public-error.js";
import { addDays, daysBetween, formatUnits, human, isoFromUnix } from "../platform/platform.lib.js";
import type { PendingRedemptionSummarySchema } from "../platform/platform.schemas.js";

export type PendingRedemptionSummary = z.infer<typeof PendingRedemptionSummarySchema>;

export interface SummaryVault {
  chain_id: number;
  address: string;
  family: string;
  name: string;
  symbol: string;
  decimals: number;
  asset: string;
  asset_symbol: string;
  asset_decimals: number;
  strategist_name: string | null;
}

export interface PendingGroup {
  chain_id: number;
  vault: string;
  claimable_date: string | null;
  n: number;
  shares: string;
  assets: string;
  estimated: boolean;
}

export interface Liquidity {
  chain_id: number;
  vault: string;
  idle_assets: string;
  subaccount_assets: string;
  /** of idle_assets, what is owed already: accrued fees, a lendingPool's unclaimed processed claims */
  reserved_assets: string | null;
  timestamp: string;
}

const keyOf = (chainId: number, vault: string) => vaultKey({ chainId, address: vault });

export interface SummaryInputs {
  vaults: SummaryVault[];
  groups: PendingGroup[];
  liquidity: Liquidity[];
  subaccounts: { chain_id: number; vault: string; address: string }[];
}

/**
 * Everything the summaries need, in one statement (one round trip): the indexed vaults selected
 * (every one, those at `addresses`, optionally only on `chainId` or of a strategist) with their strategist, their
 * pending requests per due date (db/redemption-due.ts), their latest snapshot and their registry subaccounts.
 * Net payout per request: lendingPool `assets - fee`; tokenizedVaultV2 (no amount until it is
 * processed) `trunc(shares x asset_share_ratio)` at the vault's latest snapshot.
 */
export async function loadSummaryInputs(
  db: ReadDb,
  schema: string,
  f: { addresses?: string[]; chainId?: number; strategist?: string } = {},
): Promise<SummaryInputs> {
  const where = [sql`TRUE`];
  if (f.strategist != null) where.push(sql`s.name = ${f.strategist}`);
  if (f.addresses) where.push(sql`v.address = ANY(${f.addresses}::text[])`);
  if (f.chainId != null) where.push(sql`v.chain_id = ${f.chainId}`);
  const r = await sql<SummaryInputs>`
    WITH sel AS (
      SELECT v.chain_id, v.address, v.family, v.name, v.symbol, v.decimals, v.asset, v.asset_symbol, v.asset_decimals,
        v.asset_share_ratio, v.lag_duration, s.name AS strategist_name
      FROM ${sql.id(schema, "vault")} v
      LEFT JOIN registry.vault rv ON rv.chain_id = v.chain_id AND rv.address = v.address
      LEFT JOIN registry.strategist s ON s.id = rv.strategist_id
      WHERE ${sql.join(where, sql` AND `)}
    ), grp AS (
      SELECT r.chain_id, r.vault, ${dueDateSql("r", "v")} AS claimable_date, count(*)::int AS n,
             sum(r.shares)::text AS shares,
             sum(CASE WHEN r.assets IS NULL THEN coalesce(trunc(r.shares * v.asset_share_ratio), 0)
             ELSE r.assets - coalesce(r.fee, 0) END)::text AS assets,
             bool_or(r.assets IS NULL) AS estimated
      FROM sel v JOIN ${sql.id(schema, "withdrawal_request")} r ON r.chain_id = v.chain_id AND r.vault = v.address
        AND r.status = 'requested'
      GROUP BY 1, 2, 3
    ), liq AS (
      SELECT v.chain_id, v.address AS vault, x.idle_assets::text AS idle_assets,
             x.subaccount_assets::text AS subaccount_assets,
             x.reserved_assets::text AS reserved_assets, x.timestamp::text AS timestamp
      FROM sel v CROSS JOIN LATERAL (
        SELECT s.idle_assets, s.subaccount_assets, s.reserved_assets, s.timestamp
          FROM ${sql.id(schema, "share_ratio_snapshot")} s
        WHERE s.chain_id = v.chain_id AND s.vault = v.address
        ORDER BY s.timestamp DESC, s.block_number DESC, s.id DESC LIMIT 1
      ) x
    ), subs AS (
      SELECT sa.chain_id, sa.vault, sa.address FROM registry.subaccount sa JOIN sel v ON v.chain_id = sa.chain_id
        AND v.address = sa.vault
    )
    SELECT (SELECT coalesce(json_agg(json_build_object('chain_id', chain_id, 'address', address, 'family', family,
                   'name', name, 'symbol', symbol, 'decimals', decimals,
                   'asset', asset, 'asset_symbol', asset_symbol, 'asset_decimals', asset_decimals, 'strategist_name',
                   strategist_name) ORDER BY chain_id, address), '[]') FROM sel) AS vaults,
           (SELECT coalesce(json_agg(grp), '[]') FROM grp) AS groups,
           (SELECT coalesce(json_agg(liq), '[]') FROM liq) AS liquidity,
           (SELECT coalesce(json_agg(subs ORDER BY address), '[]') FROM subs) AS subaccounts`.execute(db);
  return r.rows[0]!;
}

/** Summaries of the vaults of `inputs` (today = UTC day of `now`); a vault whose assembly throws goes to `failed`. */
export function summarize(
  inputs: SummaryInputs,
  now: Date,
  window: { pastDays: number; futureDays: number },
  only: SummaryVault[] = inputs.vaults,
): { ok: PendingRedemptionSummary[]; failed: { vault: SummaryVault; reason: string }[] } {
  const groupsBy = new Map<string, PendingGroup[]>();
  for (const g of inputs.groups)
    groupsBy.set(keyOf(g.chain_id, g.vault), [...(groupsBy.get(keyOf(g.chain_id, g.vault)) ?? []), g]);
  const liqBy = new Map(inputs.liquidity.map((l) => [keyOf(l.chain_id, l.vault), l]));
  const subsBy = new Map<string, string[]>();
  for (const s of inputs.subaccounts)
    subsBy.set(keyOf(s.chain_id, s.vault), [...(subsBy.get(keyOf(s.chain_id, s.vault)) ?? []), s.address]);
  const ok: PendingRedemptionSummary[] = [];
  const failed: { vault: SummaryVault; reason: string }[] = [];
  for (const v of only) {
    const k = keyOf(v.chain_id, v.address);
    try {
      ok.push(buildSummary(v, groupsBy.get(k) ?? [], liqBy.get(k) ?? null, subsBy.get(k) ?? [], now, window));
    } catch (err) {
      failed.push({ vault: v, reason: `summary failed: ${publicMessage(err)}` });
    }
  }
  return { ok, failed };
}

class Acc {
  count = 0;
  assets = 0n;
  shares = 0n;
  estimated = false;
  add(g: PendingGroup) {
    this.count += g.n;
    this.assets += BigInt(g.assets);
    this.shares += BigInt(g.shares);
    this.estimated ||= g.estimated;
  }
}

export function buildSummary(
  v: SummaryVault,
  groups: PendingGroup[],
  liq: Liquidity | null,
  subaccounts: string[],
  now: Date,
  w: { pastDays: number; futureDays: number },
): PendingRedemptionSummary {
  const today = now.toISOString().slice(0, 10);
  const from = addDays(today, -w.pastDays);
  const to = addDays(today, w.futureDays);
  const total = new Acc();
  const overdue = new Acc();
  const due = new Acc();
  const unscheduled = new Acc();
  const outside = new Acc();
  const byDate = new Map<string, Acc>();
  let next: string | null = null;
  for (const g of groups) {
    total.add(g);
    const d = g.claimable_date;
    if (d == null) {
      unscheduled.add(g);
      continue;
    }
    if (d >= today && (next == null || d < next)) next = d;
    if (d < from || d > to) {
      outside.add(g);
      continue;
    }
    (d < today ? overdue : due).add(g);
    const a = byDate.get(d) ?? new Acc();
    a.add(g);
    byDate.set(d, a);
  }
  const ad = v.asset_decimals;
  const sd = v.decimals;
  const bucket = (a: Acc) => ({
    count: a.count,
    assets: human(a.assets, ad),
    assets_raw: a.assets.toString(),
    shares: human(a.shares, sd),
    shares_raw: a.shares.toString(),
  });
  const idle = liq ? BigInt(liq.idle_assets) : 0n;
  // what the vault holds less what it already owes (fees, processed claims not yet claimed);
  // a vault that does not say what it owes (null) is taken to owe nothing
  const reserved = liq?.reserved_assets != null ? BigInt(liq.reserved_assets) : liq ? null : 0n;
  const available = idle > (reserved ?? 0n) ? idle - (reserved ?? 0n) : 0n;
  const subAssets = liq ? BigInt(liq.subaccount_assets) : 0n;
  const shortfall = total.assets > available ? total.assets - available : 0n;
  const dates = [...byDate.keys()].sort();
  const redemptions_by_date: PendingRedemptionSummary["redemptions_by_date"] = dates.map((d) => {
    const a = byDate.get(d)!;
    return {
      date: d,
      ...bucket(a),
      assets_estimated: a.estimated,
      days_until_due: daysBetween(today, d),
      is_overdue: d < today,
    };
  });
  return {
    vault: {
      address: v.address,
      name: v.name,
      symbol: v.symbol,
      chain_id: v.chain_id,
      family: v.family,
      strategist_name: v.strategist_name,
    },
    asset: { address: v.asset, symbol: v.asset_symbol, decimals: v.asset_decimals },
    window: { today, past_days: w.pastDays, future_days: w.futureDays, from, to },
    liquidity: {
      available: human(available, ad),
      available_raw: available.toString(),
      held: human(idle, ad),
      held_raw: idle.toString(),
      reserved: reserved == null ? null : human(reserved, ad),
      reserved_raw: reserved == null ? null : reserved.toString(),
      as_of: liq ? isoFromUnix(liq.timestamp) : null,
    },
    summary: {
      total_pending: human(total.assets, ad),
      total_pending_raw: total.assets.toString(),
      total_pending_shares: human(total.shares, sd),
      total_pending_shares_raw: total.shares.toString(),
      pending_count: total.count,
      pending_to_liquidity_ratio:
        available > 0n ? Number(formatUnits(total.assets, ad)) / Number(formatUnits(available, ad)) : null,
      is_liquidity_sufficient: available >= total.assets,
      shortfall: human(shortfall, ad),
      shortfall_raw: shortfall.toString(),
      next_redemption_date: next,
      is_overdue: overdue.count > 0,
      overdue: bucket(overdue),
      due: bucket(due),
      unscheduled: bucket(unscheduled),
      outside_window: bucket(outside),
    },
    redemptions_by_date,
    idle_balances: {
      total: human(idle + subAssets, ad),
      total_raw: (idle + subAssets).toString(),
      wallets: [{ address: v.address, wallet_type: "vault", amount: human(idle, ad), amount_raw: idle.toString() }],
      subaccounts: { addresses: subaccounts, amount: human(subAssets, ad), amount_raw: subAssets.toString() },
    },
  };
}
