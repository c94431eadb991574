/**
 * What the API's write routes need: single-use register nonces, a user id for registered wallets,
 * operator accounts (bearer tokens), the token signing secret, stored answers of idempotent
 * requests, and the audit table of every write. FROZEN: once landed, never edit this file.
 */
import { type Kysely, sql } from "kysely";

export async function up(db: Kysely<unknown>): Promise<void> {
  const r = db.schema.withSchema("registry");
  await sql`ALTER TABLE registry.points_user ADD COLUMN id uuid NOT NULL UNIQUE DEFAULT gen_random_uuid()`.execute(db);

  // A nonce is spent when a registration signed with it succeeds; a replay finds it here.
  await r
    .createTable("register_nonce")
    .addColumn("address", "text", (c) => c.notNull())
    .addColumn("nonce", "text", (c) => c.notNull())
    .addColumn("chain_id", "integer", (c) => c.notNull())
    .addColumn("used_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint("register_nonce_pk", ["address", "nonce"])
    .execute();

  await r
    .createTable("operator_account")
    .addColumn("username", "text", (c) => c.primaryKey())
    .addColumn("password_hash", "text", (c) => c.notNull())
    .addColumn("scopes", sql`text[]`, (c) => c.notNull().defaultTo(sql`'{}'::text[]`))
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("updated_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("disabled_at", "timestamptz")
    .execute();

  await r
    .createTable("api_secret")
    .addColumn("name", "text", (c) => c.primaryKey())
    .addColumn("value", "text", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .execute();

  // The first answer to a request sent with an Idempotency-Key, per caller and key.
  await r
    .createTable("idempotency")
    .addColumn("principal", "text", (c) => c.notNull())
    .addColumn("key", "text", (c) => c.notNull())
    .addColumn("request_hash", "text", (c) => c.notNull())
    .addColumn("status", "integer", (c) => c.notNull())
    .addColumn("body", "jsonb", (c) => c.notNull())
    .addColumn("created_at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addPrimaryKeyConstraint("idempotency_pk", ["principal", "key"])
    .execute();
  await r.createIndex("idempotency_by_age").on("idempotency").column("created_at").execute();

  // Every write through the API, accepted or refused: who, what, when, and the answer.
  await r
    .createTable("write_audit")
    .addColumn("id", "bigserial", (c) => c.primaryKey())
    .addColumn("at", "timestamptz", (c) => c.notNull().defaultTo(sql`now()`))
    .addColumn("principal_kind", "text", (c) => c.notNull().check(sql`principal_kind IN ('api_key', 'operator')`))
    .addColumn("principal_id", "text", (c) => c.notNull())
    .addColumn("action", "text", (c) => c.notNull())
    .addColumn("target", "text")
    .addColumn("method", "text", (c) => c.notNull())
    .addColumn("path", "text", (c) => c.notNull())
    .addColumn("status", "integer", (c) => c.notNull())
    .addColumn("outcome", "text", (c) => c.notNull().check(sql`outcome IN ('ok', 'refused')`))
    .addColumn("code", "text")
    .addColumn("request_id", "text")
    .addColumn("idempotency_key", "text")
    .addColumn("detail", "jsonb", (c) => c.notNull().defaultTo(sql`'{}'::jsonb`))
    .execute();
  await r.createIndex("write_audit_by_time").on("write_audit").column("at").execute();
  await r
    .createIndex("write_audit_by_principal")
    .on("write_audit")
    .columns(["principal_kind", "principal_id", "at"])
    .execute();
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of ["write_audit", "idempotency", "api_secret", "operator_account", "register_nonce"]) {
    await db.schema.withSchema("registry").dropTable(t).ifExists().execute();
  }
  await sql`ALTER TABLE registry.points_user DROP COLUMN IF EXISTS id`.execute(db);
}
