/**
 * When an operator's password last changed: bearer tokens issued before it stop working (a
 * password change is how an operator ends sessions they no longer trust). Existing accounts start
 * from their creation time. FROZEN: once landed, never edit this file.
 */
import { type Kysely, sql } from "kysely";

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE auth.operator_account ADD COLUMN password_changed_at timestamptz`.execute(db);
  await sql`UPDATE auth.operator_account SET password_changed_at = created_at`.execute(db);
  await sql`ALTER TABLE auth.operator_account ALTER COLUMN password_changed_at SET NOT NULL, ALTER COLUMN password_changed_at SET DEFAULT now()`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE auth.operator_account DROP COLUMN password_changed_at`.execute(db);
}
