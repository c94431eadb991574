/**
 * The derived schema: everything the jobs compute. FROZEN: once landed, never edit this file;
 * change the schema with a new, later-dated migration.
 */
import { type Kysely, sql } from "kysely";

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE SCHEMA IF NOT EXISTS derived`.execute(db);

  // One row per vault and UTC day, from the vault's first snapshot day to today.
  await db.schema
    .withSchema("derived")
    .createTable("vault_day")
    .addColumn("chain_id", "integer", (c) => c.notNull())
    .addColumn("vault", "text", (c) => c.notNull())
    .addColumn("day", "date", (c) => c.notNull())
    .addColumn("missing", "boolean", (c) => c.notNull())
    .addColumn("snapshot_id", "text")
    .addColumn("snapshot_timestamp", "bigint")
    .addColumn("block_number", "bigint")
    .addColumn("share_price", sql`numeric(78,18)`)
    .addColumn("total_assets", sql`numeric(78,0)`)
    .addColumn("total_shares", sql`numeric(78,0)`)
    .addColumn("asset_share_ratio", sql`numeric(78,18)`)
    .addColumn("asset_usd_price", sql`numeric(78,18)`)
    .addColumn("tvl", sql`numeric(78,18)`)
    .addColumn("daily_apy", "double precision")
    .addColumn("daily_pnl", sql`numeric(78,18)`)
    .addColumn("fees_charged", sql`numeric(78,0)`, (c) => c.notNull())
    .addColumn("gross_daily_apy", "double precision")
    .addColumn("fingerprint", "text", (c) => c.notNull())
    .addColumn("computed_at", "timestamptz", (c) => c.notNull())
    .addPrimaryKeyConstraint("vault_day_pk", ["chain_id", "vault", "day"])
    .execute();

  // APY and per-share PnL per vault, day and horizon ('1' .. '365', 'inception'); a horizon
  // longer than the vault's history has no row.
  await db.schema
    .withSchema("derived")
    .createTable("vault_apy")
    .addColumn("chain_id", "integer", (c) => c.notNull())
    .addColumn("vault", "text", (c) => c.notNull())
    .addColumn("day", "date", (c) => c.notNull())
    .addColumn("horizon", "text", (c) => c.notNull())
    .addColumn("span_days", "integer", (c) => c.notNull())
    .addColumn("simple_apy", "double precision", (c) => c.notNull())
    .addColumn("compound_apy", "double precision", (c) => c.notNull())
    .addColumn("gross_simple_apy", "double precision", (c) => c.notNull())
    .addColumn("gross_compound_apy", "double precision", (c) => c.notNull())
    .addColumn("pnl_per_share", "double precision", (c) => c.notNull())
    .addColumn("daily_pnl_per_share", "double precision", (c) => c.notNull())
    .addColumn("computed_at", "timestamptz", (c) => c.notNull())
    .addPrimaryKeyConstraint("vault_apy_pk", ["chain_id", "vault", "day", "horizon"])
    .execute();

  // Unrealized PnL, one record per share-ratio snapshot.
  await db.schema
    .withSchema("derived")
    .createTable("unrealized_pnl")
    .addColumn("chain_id", "integer", (c) => c.notNull())
    .addColumn("vault", "text", (c) => c.notNull())
    .addColumn("snapshot_id", "text", (c) => c.notNull())
    .addColumn("day", "date", (c) => c.notNull())
    .addColumn("timestamp", "bigint", (c) => c.notNull())
    .addColumn("block_number", "bigint", (c) => c.notNull())
    .addColumn("vault_name", "text", (c) => c.notNull())
    .addColumn("strategist_name", "text")
    .addColumn("reference_asset", "text", (c) => c.notNull())
    .addColumn("asset_price", sql`numeric(78,18)`)
    .addColumn("tvl_on_vault", sql`numeric(78,18)`, (c) => c.notNull())
    .addColumn("actual_tvl", sql`numeric(78,18)`, (c) => c.notNull())
    .addColumn("current_redeem_ratio", sql`numeric(78,18)`)
    .addColumn("adjusted_redeem_ratio", sql`numeric(78,18)`)
    .addColumn("unrealized_pnl", sql`numeric(78,18)`)
    .addColumn("unrealized_pnl_in_asset", sql`numeric(78,18)`, (c) => c.notNull())
    .addColumn("computed_at", "timestamptz", (c) => c.notNull())
    .addPrimaryKeyConstraint("unrealized_pnl_pk", ["chain_id", "vault", "snapshot_id"])
    .execute();
  await db.schema
    .withSchema("derived")
    .createIndex("unrealized_pnl_by_time")
    .on("unrealized_pnl")
    .columns(["chain_id", "vault", "timestamp"])
    .execute();

  // The latest figures per vault, with their freshness.
  await db.schema
    .withSchema("derived")
    .createTable("vault_metrics")
    .addColumn("chain_id", "integer", (c) => c.notNull())
    .addColumn("vault", "text", (c) => c.notNull())
    .addColumn("as_of_day", "date", (c) => c.notNull())
    .addColumn("first_day", "date", (c) => c.notNull())
    .addColumn("tvl", sql`numeric(78,18)`)
    .addColumn("share_price", sql`numeric(78,18)`)
    .addColumn("historical_apy", "jsonb", (c) => c.notNull())
    .addColumn("historical_compound_apy", "jsonb", (c) => c.notNull())
    .addColumn("gross_apy", "jsonb", (c) => c.notNull())
    .addColumn("gross_compound_apy", "jsonb", (c) => c.notNull())
    .addColumn("pnl_per_share", "jsonb", (c) => c.notNull())
    .addColumn("daily_pnl_per_share", "jsonb", (c) => c.notNull())
    .addColumn("returns", "jsonb", (c) => c.notNull())
    .addColumn("liquid_apy_7d", "double precision")
    .addColumn("liquid_apy_30d", "double precision")
    .addColumn("max_drawdown", "double precision")
    .addColumn("max_daily_drawdown", "double precision")
    .addColumn("apy_computed_at", "timestamptz", (c) => c.notNull())
    .addColumn("share_ratio_snapshot_at", "timestamptz")
    .addColumn("cached_at", "timestamptz", (c) => c.notNull())
    .addPrimaryKeyConstraint("vault_metrics_pk", ["chain_id", "vault"])
    .execute();

  // The points ledger: one entry per wallet, day, source, vault and reference. Holding and
  // referral entries of a vault-day are replaced together when that day is recomputed.
  await db.schema
    .withSchema("derived")
    .createTable("points_ledger")
    .addColumn("wallet", "text", (c) => c.notNull())
    .addColumn("day", "date", (c) => c.notNull())
    .addColumn("source", "text", (c) => c.notNull())
    .addColumn("chain_id", "integer", (c) => c.notNull())
    .addColumn("vault", "text", (c) => c.notNull())
    .addColumn("ref", "text", (c) => c.notNull())
    .addColumn("points", sql`numeric(78,18)`, (c) => c.notNull())
    .addColumn("shares", sql`numeric(78,0)`)
    .addColumn("usd_value", sql`numeric(78,18)`)
    .addPrimaryKeyConstraint("points_ledger_pk", ["chain_id", "vault", "day", "source", "wallet", "ref"])
    .execute();
  await db.schema
    .withSchema("derived")
    .createIndex("points_ledger_by_wallet")
    .on("points_ledger")
    .columns(["wallet", "day"])
    .execute();

  // Per wallet and vault: points earned there and the current position.
  await db.schema
    .withSchema("derived")
    .createTable("points_pool")
    .addColumn("wallet", "text", (c) => c.notNull())
    .addColumn("chain_id", "integer", (c) => c.notNull())
    .addColumn("vault", "text", (c) => c.notNull())
    .addColumn("total_points", sql`numeric(78,18)`, (c) => c.notNull())
    .addColumn("position_day", "date")
    .addColumn("shares", sql`numeric(78,0)`, (c) => c.notNull())
    .addColumn("native_amount", sql`numeric(78,18)`, (c) => c.notNull())
    .addColumn("usd_value", sql`numeric(78,18)`, (c) => c.notNull())
    .addColumn("lifetime_deposit", sql`numeric(78,18)`, (c) => c.notNull().defaultTo(0))
    .addPrimaryKeyConstraint("points_pool_pk", ["wallet", "chain_id", "vault"])
    .execute();

  // Per referrer and referee: what the referrer earned from the referee.
  await db.schema
    .withSchema("derived")
    .createTable("points_referral")
    .addColumn("referrer", "text", (c) => c.notNull())
    .addColumn("referee", "text", (c) => c.notNull())
    .addColumn("total_points", sql`numeric(78,18)`, (c) => c.notNull())
    .addPrimaryKeyConstraint("points_referral_pk", ["referrer", "referee"])
    .execute();

  // Balances and ranks per wallet, rebuilt from the ledger after every computation.
  await db.schema
    .withSchema("derived")
    .createTable("points_balance")
    .addColumn("wallet", "text", (c) => c.primaryKey())
    .addColumn("total_points", sql`numeric(78,18)`, (c) => c.notNull())
    .addColumn("holding_points", sql`numeric(78,18)`, (c) => c.notNull())
    .addColumn("referral_earnings", sql`numeric(78,18)`, (c) => c.notNull())
    .addColumn("signup_bonus", sql`numeric(78,18)`, (c) => c.notNull())
    .addColumn("daily_streak_points", sql`numeric(78,18)`, (c) => c.notNull())
    .addColumn("manual_points", sql`numeric(78,18)`, (c) => c.notNull())
    .addColumn("streak_days", "integer", (c) => c.notNull())
    .addColumn("last_claim_day", "date")
    .addColumn("usd_value", sql`numeric(78,18)`, (c) => c.notNull())
    .addColumn("top_vault_chain_id", "integer")
    .addColumn("top_vault", "text")
    .addColumn("top_vault_lifetime_deposit", sql`numeric(78,18)`)
    .addColumn("rank_total", "integer", (c) => c.notNull())
    .addColumn("rank_streak", "integer", (c) => c.notNull())
    .addColumn("computed_at", "timestamptz", (c) => c.notNull())
    .execute();
  await db.schema
    .withSchema("derived")
    .createIndex("points_balance_rank_total")
    .on("points_balance")
    .column("rank_total")
    .execute();
  await db.schema
    .withSchema("derived")
    .createIndex("points_balance_rank_streak")
    .on("points_balance")
    .column("rank_streak")
    .execute();
}

/**
 * Drops the tables `up` made, not the schema: `derived` also holds the migrator's own table, and
 * dropping it made this `down` fail under Kysely's migrateDown (fixed in place in session 18: a
 * `down` changes no database that applied the `up`; test/e2e/7-migrations.test.ts runs every one).
 */
export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of [
    "points_balance",
    "points_referral",
    "points_pool",
    "points_ledger",
    "vault_metrics",
    "unrealized_pnl",
    "vault_apy",
    "vault_day",
  ]) {
    await db.schema.withSchema("derived").dropTable(t).execute();
  }
}
