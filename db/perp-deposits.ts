/**
 * An account's perp bridge deposits as indexed (indexer.perp_deposit, written by the indexer's
 * src/protocols.ts), each with the block of the core ledger's answer to it, credit or rejection
 * (indexer.perp_core_event), when one is indexed. The API's live subaccount routes and the
 * valuation series job read them; onchain/margin.ts completes them against the chains.
 */
import { type QueryExecutorProvider, sql } from "kysely";
import type { Address, Hex } from "viem";

export interface PerpDeposit {
  /** the chain of the bridge, and the token deposited there */
  chainId: number;
  bridge: Address;
  token: Address;
  destination: "perp" | "spot";
  raw: bigint;
  coreHash: Hex;
  blockNumber: bigint;
  /** the core chain's block of the ledger's answer, null while none is indexed */
  answeredAt: bigint | null;
}

/** Every indexed deposit of `account` (lower case), by chain and block; none before the views exist. */
export async function indexedPerpDeposits(
  db: QueryExecutorProvider,
  schema: string,
  account: string,
): Promise<PerpDeposit[]> {
  const deposits = sql.id(schema, "perp_deposit");
  const answers = sql.id(schema, "perp_core_event");
  try {
    const { rows } = await sql<{
      chain_id: number;
      bridge: string;
      token: string;
      destination: number;
      amount: string;
      core_hash: string;
      block_number: string;
      answered_at: string | null;
    }>`
      SELECT d.chain_id, d.bridge, d.token, d.destination, d.amount::text, d.core_hash,
        d.block_number::text,
        (SELECT min(e.block_number) FROM ${answers} e WHERE e.core_hash = d.core_hash)::text AS answered_at
      FROM ${deposits} d WHERE d.depositor = ${account.toLowerCase()}
      ORDER BY d.chain_id, d.block_number, d.log_index`.execute(db);
    return rows.map((r) => ({
      chainId: r.chain_id,
      bridge: r.bridge.toLowerCase() as Address,
      token: r.token.toLowerCase() as Address,
      destination: r.destination === 1 ? "spot" : "perp",
      raw: BigInt(r.amount),
      coreHash: r.core_hash.toLowerCase() as Hex,
      blockNumber: BigInt(r.block_number),
      answeredAt: r.answered_at == null ? null : BigInt(r.answered_at),
    }));
  } catch (err) {
    // before the indexer's views exist nothing is indexed: the chains' nonces tell what is missing
    if ((err as { code?: string }).code === "42P01") return [];
    throw err;
  }
}
