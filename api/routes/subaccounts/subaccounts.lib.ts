/**
 * Shared by the subaccount routes: a subaccount's registry rows (one per chain it is registered
 * on) and its positions and loans read live on each of those chains at the head, once per head
 * block for all the requests about it (api/lib/chain-reads.ts).
 */
import { sql } from "kysely";
import type { Address } from "viem";
import { getChain } from "../../../config/chains.js";
import { dayToDate } from "../../../db/days.js";
import { indexedPerp } from "../../../db/perp-deposits.js";
import { type ChainState, readChainState, withInTransit } from "../../../onchain/valuation.js";
import { type ChainReads, objectKey } from "../../lib/chain-reads.js";
import type { ReadDb } from "../../lib/db.js";
import { chainClient, chainProtocols, NoRpc } from "../../lib/protocols.js";
import { lifetimeReturn, type SeriesDay, windowReturn } from "./subaccounts.returns.js";

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
 * The subaccount's state on every chain that has a protocols entry, read at each chain's head
 * (shared through `reads` with the other requests at that head), with its perp deposits in
 * transit on the ledger's chain. A chain without an RPC throws NoRpc.
 */
export async function readChains(
  db: ReadDb,
  indexerSchema: string,
  reads: ChainReads,
  rpcUrls: ReadonlyMap<number, string>,
  rows: readonly SubaccountRow[],
): Promise<ChainState[]> {
  const catalogue = await chainProtocols(db);
  // a subaccount has the same address on every chain (one cross-chain account): it is read on
  // every chain with a protocols entry, not only those of the vaults it is registered with
  const chains = [...catalogue.keys()].sort((a, b) => a - b);
  for (const chainId of chains) if (!rpcUrls.has(chainId)) throw new NoRpc(chainId);
  const account = rows[0]!.address as Address;
  const perp = await indexedPerp(db, indexerSchema, account);
  // the reads depend on what is indexed: a new deposit, answer or credit key is a new key
  const answered = perp.deposits.filter((d) => d.answeredAt != null).length;
  const indexed = `${perp.deposits.length}:${answered}:${perp.credits.length}`;
  const client = (chainId: number) => chainClient(rpcUrls.get(chainId)!);
  const states = await Promise.all(
    chains.map(async (chainId): Promise<ChainState> => {
      const url = rpcUrls.get(chainId)!;
      const entry = catalogue.get(chainId)!;
      const key = `state:${account.toLowerCase()}:${objectKey(entry)}:${indexed}`;
      const read = (head: { number: bigint; timestamp: bigint }) =>
        readChainState(client(chainId), entry, account, head, perp);
      return (await reads.atHead(url, client(chainId), key, read)).value;
    }),
  );
  return withInTransit(states, client);
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
