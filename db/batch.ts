/**
 * Keys and batch reads of vaults, shared by the workers, the API and the CLIs.
 *
 * A job or route that needs rows of many vaults, each with its own bounds, sends one statement:
 * the vaults and their bounds travel as arrays, unnested into one row per vault (`vaultBatch`),
 * and each vault's rows are read by a LATERAL subquery fenced with OFFSET 0 (one index range
 * scan per vault; a plain join let the planner hash whole tables: the bench's first batched run
 * spent 0.3 s per statement so). A hundred vaults then cost the round trip of one.
 */
import { type RawBuilder, sql } from "kysely";

export interface VaultRef {
  chainId: number;
  address: string;
}

/** The one map key of a vault: "<chain id>:<lower-case address>". */
export const vaultKey = (v: VaultRef): string => `${v.chainId}:${v.address.toLowerCase()}`;

/** The map key of a row that names its vault by (chain_id, vault). */
export const rowKey = (r: { chain_id: number; vault: string }): string => `${r.chain_id}:${r.vault.toLowerCase()}`;

/** Postgres types a batch column's array may have. */
export type BatchType = "int" | "bigint" | "text" | "date" | "numeric" | "boolean" | "timestamptz";

/** Per-vault columns of a batch: name → [type, value of an item]. */
export type BatchColumns<T> = Record<string, readonly [BatchType, (item: T) => unknown]>;

/**
 * `unnest(<chain ids>::int[], <addresses>::text[], <column>::<type>[], …) AS <alias>(chain_id,
 * vault, <column>, …)`: the items as a relation, one row per item, in their order.
 */
export function vaultBatch<T>(
  items: readonly T[],
  vaultOf: (item: T) => VaultRef,
  columns: BatchColumns<T> = {},
  alias = "r",
): RawBuilder<unknown> {
  const names = Object.keys(columns);
  const arrays = [
    sql`${items.map((i) => vaultOf(i).chainId)}::int[]`,
    sql`${items.map((i) => vaultOf(i).address)}::text[]`,
    ...names.map((n) => {
      const [type, value] = columns[n]!;
      return sql`${items.map(value)}::${sql.raw(type)}[]`;
    }),
  ];
  const cols = ["chain_id", "vault", ...names].map((n) => sql.id(n));
  return sql`unnest(${sql.join(arrays)}) AS ${sql.id(alias)}(${sql.join(cols)})`;
}

/**
 * `<name> AS (…)`, a recursive CTE of every (chain_id, vault) in an indexed `table`, found by
 * skipping along its (chain_id, vault, …) index: one probe per vault instead of a scan of the
 * table (for `WITH RECURSIVE`). The snapshot tables grow by tens of thousands of rows a day.
 */
export function indexedVaults(name: string, table: RawBuilder<unknown>): RawBuilder<unknown> {
  const v = sql.id(name);
  return sql`${v} AS (
    (SELECT chain_id, vault FROM ${table} ORDER BY chain_id, vault LIMIT 1)
    UNION ALL
    SELECT n.chain_id, n.vault FROM ${v} CROSS JOIN LATERAL (
      SELECT x.chain_id, x.vault FROM ${table} x
      WHERE (x.chain_id, x.vault) > (${v}.chain_id, ${v}.vault) ORDER BY x.chain_id, x.vault LIMIT 1) n
  )`;
}

/** Rows grouped per vault key (`rowKey`), in the order they came. */
export function groupByVault<R extends { chain_id: number; vault: string }, T>(
  rows: readonly R[],
  map: (r: R) => T,
): Map<string, T[]> {
  const out = new Map<string, T[]>();
  for (const r of rows) {
    const key = rowKey(r);
    let list = out.get(key);
    if (!list) {
      list = [];
      out.set(key, list);
    }
    list.push(map(r));
  }
  return out;
}
