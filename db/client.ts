/** One Kysely over pg per process, and the migrator for the derived and registry schemas. */
import { Kysely, type MigrationProvider, Migrator, PostgresDialect } from "kysely";
import pg from "pg";
import { migrations } from "./migrations/index.js";
import type { Database } from "./schema.js";

// Dates stay 'YYYY-MM-DD' strings: a UTC calendar day, never shifted by a time zone.
pg.types.setTypeParser(1082, (v) => v);

export type Db = Kysely<Database>;

/** Bounds on a pool's waits (none by default: the jobs' statements may run long). */
export interface PoolTimeouts {
  /** to get a connection (a new one included) */
  connectMs: number;
  /** the server cancels a statement running longer (SQLSTATE 57014) */
  statementMs: number;
  /** the client gives up on an answer (a server that hangs without answering) */
  queryMs: number;
}

export function createPool(url: string, max = 10, applicationName = "vault-jobs", timeouts?: PoolTimeouts): pg.Pool {
  const pool = new pg.Pool({
    connectionString: url,
    max,
    options: "-c timezone=UTC",
    application_name: applicationName,
    ...(timeouts && {
      connectionTimeoutMillis: timeouts.connectMs,
      statement_timeout: timeouts.statementMs,
      query_timeout: timeouts.queryMs,
    }),
  });
  // A client losing its connection (database restart), idle or checked out, must not crash the
  // process: the query in flight fails (and its job retries); the pool replaces the client.
  pool.on("error", () => {});
  pool.on("connect", (client) => {
    client.on("error", () => {});
  });
  return pool;
}

export function createDb(pool: pg.Pool): Db {
  return new Kysely<Database>({ dialect: new PostgresDialect({ pool }) });
}

/**
 * A Kysely whose every query runs on `client` (inside its transaction): typed statements and
 * COPY (db/copy.ts) on one connection. Nothing to destroy; the caller releases the client.
 */
export function onClient(client: pg.ClientBase): Db {
  const shared = { query: client.query.bind(client), release: () => {} };
  return new Kysely<Database>({
    dialect: new PostgresDialect({ pool: { connect: async () => shared, end: async () => {} } }),
  });
}

const provider: MigrationProvider = { getMigrations: async () => migrations };

/** Applies every pending migration; throws with the failing migration's name and error. */
// eslint-disable-next-line @typescript-eslint/no-explicit-any
// biome-ignore lint/suspicious/noExplicitAny: Kysely's Migrator takes a database of any schema
export async function migrateToLatest(db: Kysely<any>): Promise<string[]> {
  // Kysely creates the schema of its table itself, tolerating a simultaneous start doing the same
  // (a CREATE SCHEMA IF NOT EXISTS of our own here failed one of two such starts)
  const migrator = new Migrator({ db, provider, migrationTableSchema: "derived" });
  const { error, results } = await migrator.migrateToLatest();
  const failed = results?.find((r) => r.status === "Error");
  if (error || failed) {
    const which = failed ? `migration ${failed.migrationName}` : "migration";
    const message = `${which} failed: ${error instanceof Error ? error.message : String(error)}`;
    throw new Error(message, { cause: error });
  }
  return (results ?? []).filter((r) => r.status === "Success").map((r) => r.migrationName);
}
