/**
 * The API's read side: a Kysely over a pool whose sessions are read-only
 * (default_transaction_read_only), typed without the write builders.
 */
import type { Kysely } from "kysely";
import { createDb, createPool } from "../../db/client.js";
import type { Database, IndexerTables } from "../../db/schema.js";

export type ReadonlyKysely<DB> = Omit<
  Kysely<DB>,
  "insertInto" | "updateTable" | "deleteFrom" | "replaceInto" | "mergeInto" | "schema" | "transaction" | "connection"
>;
export type ReadDb = ReadonlyKysely<Database>;
export type IndexerDb = ReadonlyKysely<IndexerTables>;

export function createReadDb(url: string, max = 10): { db: ReadDb; destroy: () => Promise<void> } {
  const pool = createPool(url, max, "vault-api");
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
