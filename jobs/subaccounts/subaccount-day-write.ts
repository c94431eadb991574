/**
 * Writes derived.subaccount_day (its only writer): a batch of subaccounts' days replaced in one
 * transaction (the rows of the days given are deleted, then inserted).
 */
import { sql } from "kysely";
import type { Db } from "../repo.js";

export interface SubaccountDayRow {
  address: string;
  day: string;
  total_account_value: number;
  total_collateral_value: number;
  total_loan_value: number;
  total_loan_interest_amount: number;
  liquidation_collateral: number;
  net_account_value: number;
  total_net_deposits: number;
  total_pnl: number;
  health_factor: number | null;
  blocks: Record<string, number>;
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
