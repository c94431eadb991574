/**
 * Writes derived.subaccount_day (its only writer): a batch of subaccounts' days replaced in one
 * transaction (the rows of the days given are deleted, then inserted).
 */
import { sql } from "kysely";
import type { AccountFigures } from "../../onchain/valuation.js";
import type { Db } from "../repo.js";

/**
 * One subaccount's day: its account-wide figures (onchain/valuation.ts; not the maintenance margin
 * fraction nor the debts no price values, which the live routes serve) and its deposits and PnL.
 */
export interface SubaccountDayRow extends Omit<AccountFigures, "maintenance_margin_fraction" | "unpriced_debts"> {
  address: string;
  day: string;
  total_net_deposits: number;
  total_pnl: number;
  /** the block read on each chain, by chain id */
  blocks: Record<string, number>;
  /** the funding wallets its net deposits count (sorted, lower case) */
  funding: string[];
  /** the valuation method it was computed with (jobs/subaccounts/valuation.ts) */
  method: number;
}

export async function replaceSubaccountDays(db: Db, rows: readonly SubaccountDayRow[]): Promise<void> {
  if (rows.length === 0) return;
  await db.transaction().execute(async (trx) => {
    await sql`
      DELETE FROM derived.subaccount_day d
      USING unnest(${rows.map((r) => r.address)}::text[], ${rows.map((r) => r.day)}::date[]) AS r(address, day)
      WHERE d.address = r.address AND d.day = r.day`.execute(trx);
    await trx
      .insertInto("derived.subaccount_day")
      .values(rows.map((r) => ({ ...r, blocks: JSON.stringify(r.blocks), computed_at: new Date() })))
      .execute();
  });
}
