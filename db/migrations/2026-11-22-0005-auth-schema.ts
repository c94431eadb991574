/**
 * Credentials move out of `registry`, which analysts can read, into schema `auth`, which they
 * cannot: API key hashes, operator password hashes and the token signing key (whoever reads it can
 * forge bearer tokens). The grants the tables carried from registry's default privileges are
 * revoked. FROZEN: once landed, never edit this file.
 */
import { type Kysely, sql } from "kysely";

const TABLES = ["api_key", "operator_account", "api_secret"];

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE SCHEMA IF NOT EXISTS auth`.execute(db);
  await sql`REVOKE ALL ON SCHEMA auth FROM PUBLIC`.execute(db);
  for (const t of TABLES) {
    await sql`ALTER TABLE ${sql.table(`registry.${t}`)} SET SCHEMA auth`.execute(db);
    await sql`REVOKE ALL ON ${sql.table(`auth.${t}`)} FROM PUBLIC`.execute(db);
  }
  // every other role that was granted something on them (the analyst role, whatever its name)
  await sql`
    DO $$
    DECLARE g record;
    BEGIN
      FOR g IN SELECT DISTINCT grantee, table_name FROM information_schema.role_table_grants
               WHERE table_schema = 'auth' AND grantee <> current_user AND grantee <> 'PUBLIC'
      LOOP
        EXECUTE format('REVOKE ALL ON auth.%I FROM %I', g.table_name, g.grantee);
      END LOOP;
    END $$`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  for (const t of TABLES) await sql`ALTER TABLE ${sql.table(`auth.${t}`)} SET SCHEMA registry`.execute(db);
  await sql`DROP SCHEMA IF EXISTS auth`.execute(db);
}
