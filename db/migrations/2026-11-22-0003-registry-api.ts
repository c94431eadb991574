/**
 * Registry data the chain cannot give, served by the API: vault metadata, strategists,
 * subaccounts, operators, rewards' companions (integrations, reported APY), strategy APY
 * snapshots, cached portfolio data, manual governance log entries and API keys. Loaded from the
 * registry file by `npm run registry -- load` and edited with the operator CLIs.
 * FROZEN: once landed, never edit this file.
 */
import { type Kysely, sql } from "kysely";

export async function up(db: Kysely<unknown>): Promise<void> {
  const r = db.schema.withSchema("registry");
  await r
    .createTable("strategist")
    .addColumn("id", "uuid", (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn("name", "text", (c) => c.notNull().unique())
    .addColumn("logo_url", "text")
    .addColumn("website_url", "text")
    .addColumn("address", "text")
    .execute();

  // One row per vault of the registry file, EVM or not; `attributes` holds the optional fields of
  // the spec's vault object that nothing computes (validated by the loader).
  await r
    .createTable("vault")
    .addColumn("id", "uuid", (c) => c.notNull().unique().defaultTo(sql`gen_random_uuid()`))
    .addColumn("chain_id", "integer", (c) => c.notNull())
    .addColumn("address", "text", (c) => c.notNull())
    .addColumn("family", "text", (c) => c.notNull())
    .addColumn("kind", "text")
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("symbol", "text", (c) => c.notNull())
    .addColumn("status", "text", (c) => c.notNull().defaultTo("active"))
    .addColumn("chain_type", "text", (c) => c.notNull().defaultTo("evm"))
    .addColumn("strategist_id", "uuid", (c) => c.references("registry.strategist.id"))
    .addColumn("start_datetime", "timestamptz")
    .addColumn("attributes", "jsonb", (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint("registry_vault_pk", ["chain_id", "address"])
    .execute();

  await r
    .createTable("subaccount")
    .addColumn("id", "uuid", (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn("chain_id", "integer", (c) => c.notNull())
    .addColumn("vault", "text", (c) => c.notNull())
    .addColumn("address", "text", (c) => c.notNull())
    .addColumn("internal_name", "text")
    .addColumn("friendly_name", "text")
    .addColumn("status", "text", (c) => c.notNull().defaultTo("active"))
    .addColumn("subaccount_type", "text", (c) => c.notNull().defaultTo("strategy"))
    .addColumn("strategist_id", "uuid", (c) => c.references("registry.strategist.id"))
    .addUniqueConstraint("subaccount_unique", ["chain_id", "vault", "address"])
    .execute();

  await r
    .createTable("operator")
    .addColumn("id", "uuid", (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn("chain_id", "integer", (c) => c.notNull())
    .addColumn("vault", "text", (c) => c.notNull())
    .addColumn("address", "text", (c) => c.notNull())
    .addColumn("operator_type", "text", (c) => c.notNull().check(sql`operator_type IN ('eoa', 'subaccount')`))
    .addColumn("name", "text")
    .addUniqueConstraint("operator_unique", ["chain_id", "vault", "address"])
    .execute();

  await r
    .createTable("strategy_apy_snapshot")
    .addColumn("id", "uuid", (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn("vault_address", "text", (c) => c.notNull())
    .addColumn("chain", "integer", (c) => c.notNull())
    .addColumn("platform_name", "text", (c) => c.notNull())
    .addColumn("strategy_type", "text", (c) => c.notNull())
    .addColumn("allocation", "double precision", (c) => c.notNull())
    .addColumn("apy", "double precision", (c) => c.notNull())
    .addColumn("points_apy", "double precision", (c) => c.notNull())
    .addColumn("strategist_address", "text")
    .addColumn("snapshot_datetime", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await r
    .createIndex("strategy_apy_by_vault")
    .on("strategy_apy_snapshot")
    .columns(["vault_address", "snapshot_datetime"])
    .execute();

  await r
    .createTable("portfolio_cache")
    .addColumn("chain_id", "integer", (c) => c.notNull())
    .addColumn("vault", "text", (c) => c.notNull())
    .addColumn("subaccount", "text", (c) => c.notNull())
    .addColumn("data", "jsonb", (c) => c.notNull())
    .addColumn("cached_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint("portfolio_cache_pk", ["chain_id", "vault", "subaccount"])
    .execute();

  await r
    .createTable("audit_entry")
    .addColumn("id", "uuid", (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn("chain_id", "integer", (c) => c.notNull())
    .addColumn("vault", "text", (c) => c.notNull())
    .addColumn("category", "text", (c) => c.notNull())
    .addColumn("text", "text", (c) => c.notNull())
    .addColumn("occurred_at", "timestamptz", (c) => c.notNull())
    .addColumn("author", "text", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await r.createIndex("audit_entry_by_vault").on("audit_entry").columns(["chain_id", "vault", "occurred_at"]).execute();

  await r
    .createTable("api_key")
    .addColumn("id", "uuid", (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn("name", "text", (c) => c.notNull())
    .addColumn("prefix", "text", (c) => c.notNull().unique())
    .addColumn("key_hash", "text", (c) => c.notNull())
    .addColumn("scopes", sql`text[]`, (c) => c.notNull().defaultTo(sql`'{}'::text[]`))
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("revoked_at", "timestamptz")
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of [
    "api_key",
    "audit_entry",
    "portfolio_cache",
    "strategy_apy_snapshot",
    "operator",
    "subaccount",
    "vault",
    "strategist",
  ]) {
    await db.schema.withSchema("registry").dropTable(t).ifExists().execute();
  }
}
