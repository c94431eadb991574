/**
 * Shared by the governance routes: the path and query schemas, resolving `{vault_address}` (+
 * optional `chain_id`) to one vault, and the SQL fragments that select a vault's governance rows
 * (its own events plus those of its TimelockController that target no other registered vault).
 */
import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { type RawBuilder, sql } from "kysely";
import type { IndexerTables } from "../../../db/schema.js";
import { servedChain } from "../../lib/chain.js";
import { indexer } from "../../lib/db.js";
import { notFound } from "../../lib/errors.js";
import { type AppEnv, VaultAddress } from "../../lib/router.js";
import { findVault } from "../../lib/vaults.js";

export const GovernanceParams = z.object({
  vault_address: VaultAddress.openapi({
    param: { name: "vault_address", in: "path" },
    description: "Vault contract address (case-insensitive for EVM addresses)",
  }),
});

export type IndexedVault = IndexerTables["vault"];

export interface ResolvedVault {
  chain_id: number;
  address: string;
  name: string;
  family: string;
  /** registry.vault chain_id > 0 */
  evm: boolean;
  /** the indexer's row (EVM vaults on an indexed chain), else null */
  indexed: IndexedVault | null;
  /** the registry's start_datetime: the audit log starts there */
  launched: Date | null;
}

export type Resolution = { ok: true; vault: ResolvedVault } | { ok: false; res: Response };

const isUndefinedTable = (e: unknown) => (e as { code?: string })?.code === "42P01";

/** Runs an indexer read; before the indexer's views exist (first start) it reads as empty. */
export async function indexerRead<T>(fn: () => Promise<T>, empty: T): Promise<T> {
  try {
    return await fn();
  } catch (e) {
    if (isUndefinedTable(e)) return empty;
    throw e;
  }
}

/**
 * The vault a governance request names: on `chainId`, else on the lowest chain id the address is
 * a vault on (api/lib/chain.ts, the rule of every one-vault route; `X-Vault-Chain` says which).
 * 404 when no vault has that address (on that chain).
 */
export async function resolveVault(
  c: Context<AppEnv>,
  rawAddress: string,
  chainId: number | undefined,
): Promise<Resolution> {
  const { db, config } = c.var.deps;
  const v = await findVault(db, config.indexerSchema, rawAddress, chainId);
  if (!v) {
    return {
      ok: false,
      res: notFound(
        c,
        chainId === undefined ? `Vault ${rawAddress} not found` : `Vault ${rawAddress} not found on chain ${chainId}`,
      ),
    };
  }
  servedChain(c, v.chain_id);
  const evm = v.chain_id > 0;
  const indexed = evm
    ? await indexerRead(
        () =>
          indexer(db, config.indexerSchema)
            .selectFrom("vault")
            .selectAll()
            .where("chain_id", "=", v.chain_id)
            .where("address", "=", v.address)
            .executeTakeFirst()
            .then((r) => (r as IndexedVault | undefined) ?? null),
        null,
      )
    : null;
  return {
    ok: true,
    vault: {
      chain_id: v.chain_id,
      address: v.address,
      name: v.name,
      family: v.family,
      evm,
      indexed,
      launched: v.start_datetime ? new Date(v.start_datetime) : null,
    },
  };
}

/** Schema-qualified identifier of an indexer view. */
export const ix = (schema: string, table: string): RawBuilder<unknown> =>
  sql.id(schema, table) as unknown as RawBuilder<unknown>;

/**
 * WHERE condition (on alias `o`) for the timelock calls that concern a vault: those
 * attributed to it, plus those of its timelock whose target is no registered vault of the chain
 * (the timelock administering itself: delays, roles), which concern every vault it owns.
 */
function timelockOpsOf(schema: string, v: ResolvedVault) {
  const tl = v.indexed?.timelock ?? null;
  return sql`o.chain_id = ${v.chain_id} AND (o.vault = ${v.address} OR (${tl}::text IS NOT NULL AND o.timelock = ${tl}
    AND o.target NOT IN (SELECT address FROM ${ix(schema, "vault")} WHERE chain_id = ${v.chain_id})))`;
}

/**
 * The timelock requests that concern a vault, one row each: a request is what one schedule or
 * scheduleBatch put in the queue (an operation id scheduled in one transaction; one scheduled
 * again after a cancellation is a request of its own), and it concerns the vault when any of its
 * calls does (`timelockOpsOf`). Each row is the request's first call's row of
 * indexer.timelock_operation, plus `calls`: every call's `call_index`, `target`, `value` (text)
 * and `data`, in order. The calls of a request share its status and times.
 */
export function timelockRequestsOf(schema: string, v: ResolvedVault) {
  const ops = ix(schema, "timelock_operation");
  return sql`
    WITH mine AS (SELECT DISTINCT o.timelock, o.operation_hash, o.tx_hash FROM ${ops} o
      WHERE ${timelockOpsOf(schema, v)})
    SELECT o.*, c.calls
    FROM mine m
    CROSS JOIN LATERAL (
      SELECT min(x.call_index) AS first,
             jsonb_agg(jsonb_build_object('call_index', x.call_index, 'target', x.target, 'value', x.value::text,
             'data', x.data)
                       ORDER BY x.call_index) AS calls
      FROM ${ops} x
      WHERE x.chain_id = ${v.chain_id} AND x.timelock = m.timelock AND x.operation_hash = m.operation_hash
        AND x.tx_hash = m.tx_hash
    ) c
    JOIN ${ops} o ON o.chain_id = ${v.chain_id} AND o.timelock = m.timelock AND o.operation_hash = m.operation_hash
      AND o.tx_hash = m.tx_hash AND o.call_index = c.first`;
}

/** WHERE condition (on alias `g`) for the governance events emitted by the vault or by its timelock. */
export function governanceEventsOf(v: ResolvedVault) {
  const tl = v.indexed?.timelock ?? null;
  return sql`g.chain_id = ${v.chain_id} AND (g.contract = ${v.address}
    OR (${tl}::text IS NOT NULL AND g.contract = ${tl}))`;
}

export const unixToIso = (s: string | number | null | undefined): string | null =>
  s == null ? null : new Date(Number(s) * 1000).toISOString();
