/**
 * derived.lending_vault_day (issue 14): each lending vault's (ERC-4626 over a Morpho market) share
 * price at the end of each UTC day, from the last indexed snapshot of the day
 * (indexer.lending_vault_snapshot), and its compound APY over the 7 days before.
 *
 * FROZEN: once landed, never edit this file.
 */
import { type Kysely, sql } from "kysely";

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE derived.lending_vault_day (
      chain_id integer NOT NULL,
      vault text NOT NULL,
      day date NOT NULL,
      total_assets numeric(78,0) NOT NULL,
      total_supply numeric(78,0) NOT NULL,
      asset_share_ratio numeric(78,18),
      block_number bigint NOT NULL,
      timestamp bigint NOT NULL,
      apy_7d double precision,
      computed_at timestamptz NOT NULL DEFAULT now(),
      CONSTRAINT lending_vault_day_pk PRIMARY KEY (chain_id, vault, day)
    )`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE derived.lending_vault_day`.execute(db);
}
