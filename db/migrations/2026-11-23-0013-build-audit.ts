/**
 * registry.build_audit (issue 15): every transaction a builder route built or refused: who asked
 * (key or operator), for which subaccount and chain, what (the route and the request), and what
 * it answered (the transaction and its simulation, or the refusal). The service never submits a
 * subaccount's transaction; this is the record of what it handed out.
 *
 * FROZEN: once landed, never edit this file.
 */
import { type Kysely, sql } from "kysely";

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE registry.build_audit (
      id uuid PRIMARY KEY,
      at timestamptz NOT NULL DEFAULT now(),
      principal_kind text NOT NULL CHECK (principal_kind IN ('api_key', 'operator')),
      principal_id text NOT NULL,
      action text NOT NULL,
      path text NOT NULL,
      chain_id integer,
      subaccount text,
      status integer NOT NULL,
      outcome text NOT NULL CHECK (outcome IN ('built', 'refused')),
      code text,
      request_id text,
      request jsonb NOT NULL,
      answer jsonb NOT NULL
    )`.execute(db);
  await sql`CREATE INDEX build_audit_by_subaccount ON registry.build_audit (subaccount, at)`.execute(db);
  await sql`CREATE INDEX build_audit_by_principal ON registry.build_audit (principal_kind, principal_id, at)`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE registry.build_audit`.execute(db);
}
