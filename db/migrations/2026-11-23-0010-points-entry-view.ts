/**
 * derived.points_entry becomes a view over the registry (issue 13: one writer per table).
 *
 * The table held the registry's points entries (signup bonuses, streak claims, manual points)
 * and had two writers: the API wrote a registration's or a claim's entry in its transaction, and
 * the points rollup rebuilt all of them from the registry. As a view the entries are the
 * registry's rows, read when read: the API writes only registry tables, a claim counts in the
 * totals the moment it commits, and nothing can leave the two out of step. Same name, columns and
 * types; the views that read it (points_ledger, points_total, points_balance) are recreated
 * unchanged from their own stored definitions.
 *
 * FROZEN: once landed, never edit this file.
 */
import { type Kysely, sql } from "kysely";

/** The views over points_entry, in creation order (each reads the ones before it). */
const DEPENDENTS = ["points_ledger", "points_total", "points_balance"] as const;

async function dropDependents(db: Kysely<unknown>): Promise<Map<string, string>> {
  const defs = new Map<string, string>();
  for (const name of DEPENDENTS) {
    const { rows } = await sql<{ def: string }>`
      SELECT pg_get_viewdef(${`derived.${name}`}::regclass) AS def`.execute(db);
    defs.set(name, rows[0]!.def);
  }
  await sql`DROP VIEW derived.points_balance, derived.points_total, derived.points_ledger`.execute(db);
  return defs;
}

async function recreateDependents(db: Kysely<unknown>, defs: Map<string, string>): Promise<void> {
  for (const name of DEPENDENTS) {
    await sql`CREATE VIEW ${sql.id("derived", name)} AS ${sql.raw(defs.get(name)!)}`.execute(db);
  }
}

const ENTRIES = sql`
  SELECT address AS wallet, (registered_at AT TIME ZONE 'UTC')::date AS day, 'signup_bonus'::text AS source,
    0 AS chain_id, ''::text AS vault, coalesce(referrer, '') AS ref, signup_bonus::numeric(78,18) AS points
  FROM registry.points_user WHERE signup_bonus > 0
  UNION ALL
  SELECT address, day, 'daily_streak', 0, '', '', points::numeric(78,18)
  FROM registry.streak_claim WHERE points <> 0
  UNION ALL
  SELECT lower(wallet), (created_at AT TIME ZONE 'UTC')::date, 'manual', 0, '', id::text, points::numeric(78,18)
  FROM registry.manual_points`;

export async function up(db: Kysely<unknown>): Promise<void> {
  const defs = await dropDependents(db);
  await sql`DROP TABLE derived.points_entry`.execute(db);
  await sql`CREATE VIEW derived.points_entry AS ${ENTRIES}`.execute(db);
  // a wallet's manual entries, found as the view filters them
  await sql`CREATE INDEX manual_points_by_wallet ON registry.manual_points (lower(wallet))`.execute(db);
  await recreateDependents(db, defs);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  const defs = await dropDependents(db);
  await sql`DROP INDEX registry.manual_points_by_wallet`.execute(db);
  await sql`DROP VIEW derived.points_entry`.execute(db);
  await sql`
    CREATE TABLE derived.points_entry (
      wallet text NOT NULL, day date NOT NULL, source text NOT NULL, chain_id integer NOT NULL,
      vault text NOT NULL, ref text NOT NULL, points numeric(78,18) NOT NULL,
      CONSTRAINT points_entry_pk PRIMARY KEY (chain_id, vault, day, source, wallet, ref))`.execute(db);
  await sql`CREATE INDEX points_entry_by_wallet ON derived.points_entry (wallet, day)`.execute(db);
  await sql`INSERT INTO derived.points_entry ${ENTRIES}`.execute(db);
  await recreateDependents(db, defs);
}
