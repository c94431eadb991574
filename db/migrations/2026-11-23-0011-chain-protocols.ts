/**
 * What each chain's subaccounts use (issue 14): registry.chain_protocols holds, per chain, the
 * registry file's `protocols` entry (tokens with their USD feeds, Aave, Morpho, Uniswap, the loan
 * registry) as loaded by db/registry-load.ts, so the API and the workers read one copy of it.
 * registry.subaccount gains the minimum health factor its operator keeps it above.
 *
 * FROZEN: once landed, never edit this file.
 */
import { type Kysely, sql } from "kysely";

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE registry.chain_protocols (
      chain_id integer PRIMARY KEY,
      protocols jsonb NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now()
    )`.execute(db);
  await sql`ALTER TABLE registry.subaccount ADD COLUMN min_health_factor numeric(78,18)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE registry.subaccount DROP COLUMN min_health_factor`.execute(db);
  await sql`DROP TABLE registry.chain_protocols`.execute(db);
}
