/**
 * Shared by the subaccount routes: a subaccount's registry rows (one per chain it is registered
 * on), the accounts the health factor and summary also answer for (a vault's EOA operators, the
 * parties to indexed loans) and their valuation-series figures, whose estimated APRs the vault
 * objects' subaccount items give too. The account's live state on every chain is read by
 * api/lib/account-chains.ts.
 */
import { sql } from "kysely";
import { getChain } from "../../../config/chains.js";
import { dayToDate } from "../../../db/days.js";
import { type IndexedLoans, indexedLoans } from "../../../db/loan-parties.js";
import type { ReadDb } from "../../lib/db.js";
import { estimatedApr, lifetimeReturn, type SeriesDay, windowReturn } from "./subaccounts.returns.js";

export interface SubaccountRow {
  id: string;
  chain_id: number;
  vault: string;
  address: string;
  internal_name: string | null;
  friendly_name: string | null;
  status: string;
  subaccount_type: string;
  min_health_factor: string | null;
}

/** Every registry row of `address` (lower-cased), ordered by chain. */
export async function subaccountRows(db: ReadDb, address?: string): Promise<SubaccountRow[]> {
  let q = db
    .selectFrom("registry.subaccount")
    .select([
      "id",
      "chain_id",
      "vault",
      "address",
      "internal_name",
      "friendly_name",
      "status",
      "subaccount_type",
      "min_health_factor",
    ])
    .orderBy("address")
    .orderBy("chain_id")
    .orderBy("vault");
  if (address) q = q.where("address", "=", address.toLowerCase());
  return (await q.execute()) as SubaccountRow[];
}

export const chainName = (chainId: number) => getChain(chainId)?.name ?? String(chainId);

/**
 * An account the health factor and summary answer for: a registered subaccount; else an EOA
 * operator of a vault (the registry's `operator`); else a party to a loan indexed on a chain (a
 * lending pool's borrower, a loan registry's lender or borrower), whose health factor a loan
 * book's reader checks.
 */
export interface Account {
  address: string;
  kind: "subaccount" | "operator" | "loan_party";
  name: string | null;
  /** the chains it is registered on, an operator of a vault on, or a party to a loan on */
  chains: number[];
  minHealthFactor: string | null;
  loans: IndexedLoans;
}

/** The account `address` (lower-cased) is, or null when the service knows no such account. */
export async function findAccount(db: ReadDb, indexerSchema: string, address: string): Promise<Account | null> {
  const a = address.toLowerCase();
  const [rows, operators, loans] = await Promise.all([
    subaccountRows(db, a),
    db
      .selectFrom("registry.operator")
      .select(["chain_id", "name"])
      .where("address", "=", a)
      .where("operator_type", "=", "eoa")
      .orderBy("chain_id")
      .execute(),
    indexedLoans(db, indexerSchema, a),
  ]);
  const first = rows[0];
  if (first)
    return {
      address: a,
      kind: "subaccount",
      name: first.friendly_name ?? first.internal_name,
      chains: [...new Set(rows.map((r) => r.chain_id))],
      minHealthFactor: first.min_health_factor,
      loans,
    };
  const op = operators[0];
  if (op)
    return {
      address: a,
      kind: "operator",
      name: op.name,
      chains: [...new Set(operators.map((r) => r.chain_id))],
      minHealthFactor: null,
      loans,
    };
  if (loans.partyChains.length > 0)
    return { address: a, kind: "loan_party", name: null, chains: loans.partyChains, minHealthFactor: null, loans };
  return null;
}

/**
 * Each subaccount's `estimated_apr` (`addresses`, lower case; all when not given): its realized
 * APR over 30 days, or its lifetime APR when younger, from its last 31 stored days.
 */
export async function estimatedAprs(db: ReadDb, addresses?: readonly string[]): Promise<Map<string, number | null>> {
  if (addresses?.length === 0) return new Map();
  const only = addresses ? sql`WHERE address = ANY(${[...addresses]}::text[])` : sql``;
  const { rows: days } = await sql<SeriesDay & { address: string }>`
    SELECT d.address, d.day - date '1970-01-01' AS day, d.net_account_value, d.total_pnl, d.total_net_deposits
    FROM derived.subaccount_day d
    JOIN (SELECT address, max(day) AS last FROM derived.subaccount_day ${only} GROUP BY address) l USING (address)
    WHERE d.day >= l.last - 30 ORDER BY d.address, d.day`.execute(db);
  const seriesOf = new Map<string, SeriesDay[]>();
  for (const d of days) {
    const list = seriesOf.get(d.address) ?? [];
    list.push(d);
    seriesOf.set(d.address, list);
  }
  return new Map([...seriesOf].map(([address, rows]) => [address, estimatedApr(rows)]));
}

/** The valuation-series figures of `address` (derived.subaccount_day), as of its last stored day. */
export async function seriesFigures(db: ReadDb, address: string) {
  const rows = (await db
    .selectFrom("derived.subaccount_day")
    .select([sql<number>`day - date '1970-01-01'`.as("day"), "net_account_value", "total_pnl", "total_net_deposits"])
    .where("address", "=", address.toLowerCase())
    .orderBy("day")
    .execute()) as SeriesDay[];
  const last = rows.at(-1);
  if (!last) return null;
  const [w3, w7, w30] = [3, 7, 30].map((n) => windowReturn(rows, n));
  const deposits = last.total_net_deposits;
  return {
    as_of: dayToDate(last.day),
    total_pnl: last.total_pnl,
    total_net_deposits: deposits,
    percent_return: deposits > 0 ? last.total_pnl / deposits : null,
    life_time_apr: lifetimeReturn(rows).apr,
    total_pnl_3d: w3!.pnl,
    total_pnl_7d: w7!.pnl,
    total_pnl_30d: w30!.pnl,
    realized_apr_3d: w3!.apr,
    realized_apr_7d: w7!.apr,
    realized_apr_30d: w30!.apr,
  };
}
