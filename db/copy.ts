/** Bulk writes with Postgres COPY (text format) on a client inside the caller's transaction. */

import { Readable } from "node:stream";
import { pipeline } from "node:stream/promises";
import type pg from "pg";
import { from as copyFrom } from "pg-copy-streams";
import type { Database } from "./schema.js";

export type CopyValue = string | number | boolean | bigint | null | undefined;

function encode(v: CopyValue): string {
  if (v == null) return "\\N";
  if (typeof v === "boolean") return v ? "t" : "f";
  const s = typeof v === "string" ? v : String(v);
  return /[\\\t\n\r]/.test(s)
    ? s.replace(/\\/g, "\\\\").replace(/\t/g, "\\t").replace(/\n/g, "\\n").replace(/\r/g, "\\r")
    : s;
}

/** COPY `rows` (arrays in `columns` order) into `table` ("schema.table"). */
export async function copyRows(
  client: pg.PoolClient | pg.Client,
  table: string,
  columns: readonly string[],
  rows: Iterable<readonly CopyValue[]>,
): Promise<number> {
  const [schema, name] = table.split(".");
  const ident = (s: string) => `"${s.replace(/"/g, '""')}"`;
  const stream = client.query(
    copyFrom(`COPY ${ident(schema!)}.${ident(name!)} (${columns.map(ident).join(", ")}) FROM STDIN`),
  );
  let count = 0;
  function* lines(): Generator<string> {
    let buf = "";
    for (const row of rows) {
      buf += `${row.map(encode).join("\t")}\n`;
      count++;
      if (buf.length > 1 << 16) {
        yield buf;
        buf = "";
      }
    }
    if (buf) yield buf;
  }
  await pipeline(Readable.from(lines()), stream);
  return count;
}

/** A table of the Database types and its column names. */
type Table = keyof Database & string;
type Column<T extends Table> = keyof Database[T] & string;

/**
 * COPY rows given as objects keyed by column into a table of the Database types: the column list
 * and each row are checked against the table's type, so they cannot drift apart.
 */
export function copyInto<T extends Table, const C extends readonly Column<T>[]>(
  client: pg.PoolClient | pg.Client,
  table: T,
  columns: C,
  rows: Iterable<{ readonly [K in C[number]]: CopyValue }>,
): Promise<number> {
  function* arrays(): Generator<readonly CopyValue[]> {
    for (const r of rows) yield columns.map((c) => r[c as C[number]]);
  }
  return copyRows(client, table, columns, arrays());
}
