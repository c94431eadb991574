/**
 * Registry tables the points ledger reads: rewards (vault multipliers), registered users and
 * their referrers, daily streak claims and manual points. The API and the operator CLI write
 * them. FROZEN: once landed, never edit this file.
 */
import { type Kysely, sql } from "kysely";

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE SCHEMA IF NOT EXISTS registry`.execute(db);
  await db.schema
    .withSchema("registry")
    .createTable("reward")
    .addColumn("id", "uuid", (c) => c.primaryKey().defaultTo(sql`gen_random_uuid()`))
    .addColumn("chain_id", "integer", (c) => c.notNull())
    .addColumn("vault", "text", (c) => c.notNull())
    .addColumn("text", "text", (c) => c.notNull())
    .addColumn("img_url", "text")
    .addColumn("multiplier", sql`numeric(20,6)`, (c) => c.notNull().check(sql`multiplier >= 0`))
    .addColumn("start_datetime", "timestamptz", (c) => c.notNull())
    .addColumn("end_datetime", "timestamptz")
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
  await db.schema
    .withSchema("registry")
    .createIndex("reward_by_vault")
    .on("reward")
    .columns(["chain_id", "vault"])
    .execute();

  await db.schema
    .withSchema("registry")
    .createTable("points_user")
    .addColumn("address", "text", (c) => c.primaryKey())
    .addColumn("referrer", "text", (c) => c.references("registry.points_user.address"))
    .addColumn("chain_id", "integer", (c) => c.notNull())
    .addColumn("registered_at", "timestamptz", (c) => c.notNull())
    // The signup bonus awarded at registration (0 without a referrer), fixed at that moment.
    .addColumn("signup_bonus", sql`numeric(78,18)`, (c) => c.notNull().defaultTo(0))
    .addCheckConstraint("points_user_no_self_referral", sql`referrer IS NULL OR referrer <> address`)
    .execute();

  await db.schema
    .withSchema("registry")
    .createTable("streak_claim")
    .addColumn("address", "text", (c) => c.notNull().references("registry.points_user.address"))
    .addColumn("day", "date", (c) => c.notNull())
    .addColumn("streak_days", "integer", (c) => c.notNull())
    .addColumn("points", sql`numeric(78,18)`, (c) => c.notNull())
    .addColumn("claimed_at", "timestamptz", (c) => c.notNull())
    .addPrimaryKeyConstraint("streak_claim_pk", ["address", "day"])
    .execute();

  await db.schema
    .withSchema("registry")
    .createTable("manual_points")
    .addColumn("id", "bigserial", (c) => c.primaryKey())
    .addColumn("wallet", "text", (c) => c.notNull())
    .addColumn("points", sql`numeric(78,18)`, (c) => c.notNull())
    .addColumn("reason", "text", (c) => c.notNull())
    .addColumn("author", "text", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP SCHEMA IF EXISTS registry CASCADE`.execute(db);
}
