/**
 * The API's read side: a Kysely over a pool whose sessions are read-only
 * (default_transaction_read_only), typed without the write builders.
 */
import type { Kysely } from "kysely";
import { createDb, createPool, type PoolTimeouts } from "../../db/client.js";
import type { Database, IndexerTables } from "../../db/schema.js";

export type ReadonlyKysely<DB> = Omit<
  Kysely<DB>,
  "insertInto" | "updateTable" | "deleteFrom" | "replaceInto" | "mergeInto" | "schema" | "transaction" | "connection"
>;
export type ReadDb = ReadonlyKysely<Database>;
export type IndexerDb = ReadonlyKysely<IndexerTables>;

/**
 * The API's bounds on the database: a request waits at most 5 s for a connection and 10 s for a
 * statement (the server cancels it), 12 s for an answer (a server that hangs), then answers 503
 * (app.ts, isDatabaseDown). The API's statements take milliseconds (docs/performance.md).
 */
export const API_DB_TIMEOUTS: PoolTimeouts = { connectMs: 5_000, statementMs: 10_000, queryMs: 12_000 };

export function createReadDb(
  url: string,
  max = 10,
  timeouts: PoolTimeouts = API_DB_TIMEOUTS,
): { db: ReadDb; destroy: () => Promise<void> } {
  const pool = createPool(url, max, "vault-api", timeouts);
  pool.on("connect", (client) => {
    client.query("SET default_transaction_read_only = on").catch(() => {});
  });
  const db = createDb(pool);
  return { db, destroy: () => db.destroy() };
}

/** The indexed tables, through the views schema. */
export function indexer(db: ReadDb, schema: string): IndexerDb {
  return (db as unknown as Kysely<Database>).withSchema(schema) as unknown as IndexerDb;
}
