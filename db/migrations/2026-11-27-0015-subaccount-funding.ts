/**
 * The wallets that fund a subaccount besides its vault (the registry file's `funding`), and, on
 * each valuation day, the funding its net deposits counted: a change of the registry's list makes
 * the portfolio job value the subaccount's days again from its first.
 *
 * FROZEN: once landed, never edit this file.
 */
import { type Kysely, sql } from "kysely";

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE registry.subaccount ADD COLUMN funding text[] NOT NULL DEFAULT '{}'`.execute(db);
  await sql`ALTER TABLE derived.subaccount_day ADD COLUMN funding text[] NOT NULL DEFAULT '{}'`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE derived.subaccount_day DROP COLUMN funding`.execute(db);
  await sql`ALTER TABLE registry.subaccount DROP COLUMN funding`.execute(db);
}
