/**
 * The valuation method each of derived.subaccount_day's rows was computed with (`method`): the
 * portfolio job values every day of a subaccount again when any of its rows' method is older than
 * its own (jobs/subaccounts/valuation.ts, VALUATION_METHOD). Rows written before this migration
 * are method 1, as are rows an older worker still writes during a rolling upgrade.
 *
 * Method 2: net deposits count up to the block each day's figures are read at (method 1 counted a
 * transfer on its UTC day, so one after the day's last snapshot block was in the day's deposits
 * and not in its value: its PnL fell by it and rose back the next day), and the health factor
 * holds loan-book debt against the account (method 1 held it against the venues' collateral
 * alone: 0 for a subaccount borrowing only from the loan book).
 *
 * FROZEN: once landed, never edit this file.
 */
import { type Kysely, sql } from "kysely";

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE derived.subaccount_day ADD COLUMN method smallint NOT NULL DEFAULT 1`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE derived.subaccount_day DROP COLUMN method`.execute(db);
}
