/**
 * derived.subaccount_day (issue 14): each subaccount's valuation at the end of each UTC day,
 * across the chains it is registered on, from its positions read at that day's last snapshot
 * block of each chain (onchain/positions.ts), and its net deposits from its vaults. The health
 * factor series, its PnL over 3/7/30 days and its realized APR are read from these rows.
 *
 * FROZEN: once landed, never edit this file.
 */
import { type Kysely, sql } from "kysely";

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE derived.subaccount_day (
      address text NOT NULL,
      day date NOT NULL,
      total_account_value double precision NOT NULL,
      total_collateral_value double precision NOT NULL,
      total_loan_value double precision NOT NULL,
      total_loan_interest_amount double precision NOT NULL,
      liquidation_collateral double precision NOT NULL,
      net_account_value double precision NOT NULL,
      total_net_deposits double precision NOT NULL,
      total_pnl double precision NOT NULL,
      health_factor double precision,
      blocks jsonb NOT NULL,
      computed_at timestamptz NOT NULL DEFAULT now(),
      CONSTRAINT subaccount_day_pk PRIMARY KEY (address, day)
    )`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE derived.subaccount_day`.execute(db);
}
