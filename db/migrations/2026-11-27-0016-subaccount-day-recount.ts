/**
 * The valuation series' net deposits counted each transfer on its UTC day, while the day's
 * figures are read at its last snapshot block: a transfer after that block was in the day's
 * deposits and not in its value (its PnL fell by it, and rose back the next day). They now count
 * up to the block the figures are read at. The health factor of a subaccount borrowing from the
 * loan book counted that debt against the venues' collateral alone (0 with no venue); the loans
 * are now held against the account (onchain/valuation.ts). The stored days are emptied: the
 * portfolio job's next run values every day again from the chains (derived rows, rebuildable).
 *
 * FROZEN: once landed, never edit this file.
 */
import { type Kysely, sql } from "kysely";

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`DELETE FROM derived.subaccount_day`.execute(db);
}

export async function down(_db: Kysely<unknown>): Promise<void> {
  // nothing to undo: the schema is unchanged, and the older code values the days again too
}
