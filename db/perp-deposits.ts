/**
 * An account's perp bridge deposits as indexed (indexer.perp_deposit, written by the indexer's
 * src/protocols.ts), each with the block of the core ledger's answer to it, credit or rejection
 * (indexer.perp_core_event), when one is indexed; and the keys of the ledger's indexed credits to
 * it. The API's live subaccount routes and the valuation series job read them;
 * onchain/margin.ts completes them against the chains.
 */
import { type QueryExecutorProvider, sql } from "kysely";
import type { Address, Hex } from "viem";

/** A core-ledger balance's key: the source chain and token, and the destination. */
export interface PerpKey {
  /** the chain of the bridge, and the token deposited there */
  chainId: number;
  token: Address;
  destination: "perp" | "spot";
}

export interface PerpDeposit extends PerpKey {
  bridge: Address;
  raw: bigint;
  coreHash: Hex;
  blockNumber: bigint;
  /** the core chain's block of the ledger's answer, null while none is indexed */
  answeredAt: bigint | null;
}

export interface IndexedPerp {
  deposits: PerpDeposit[];
  /** the keys of the ledger's indexed `Credited` events to it (a credit of any deposit) */
  credits: PerpKey[];
}

/** What is indexed of `account` (lower case); nothing before the views exist. */
export async function indexedPerp(db: QueryExecutorProvider, schema: string, account: string): Promise<IndexedPerp> {
  const deposits = sql.id(schema, "perp_deposit");
  const answers = sql.id(schema, "perp_core_event");
  const who = account.toLowerCase();
  const destination = (d: number | null) => (d === 1 ? ("spot" as const) : ("perp" as const));
  try {
    const [made, credited] = await Promise.all([
      sql<{
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
        FROM ${deposits} d WHERE d.depositor = ${who}
        ORDER BY d.chain_id, d.block_number, d.log_index`.execute(db),
      sql<{ chain_id: string; token: string; destination: number }>`
        SELECT DISTINCT source_chain_id::text AS chain_id, token, destination FROM ${answers}
        WHERE depositor = ${who} AND kind = 'credited'`.execute(db),
    ]);
    return {
      deposits: made.rows.map((r) => ({
        chainId: r.chain_id,
        bridge: r.bridge.toLowerCase() as Address,
        token: r.token.toLowerCase() as Address,
        destination: destination(r.destination),
        raw: BigInt(r.amount),
        coreHash: r.core_hash.toLowerCase() as Hex,
        blockNumber: BigInt(r.block_number),
        answeredAt: r.answered_at == null ? null : BigInt(r.answered_at),
      })),
      credits: credited.rows.map((r) => ({
        chainId: Number(r.chain_id),
        token: r.token.toLowerCase() as Address,
        destination: destination(r.destination),
      })),
    };
  } catch (err) {
    // before the indexer's views exist nothing is indexed: the chains' nonces tell what is missing
    if ((err as { code?: string }).code === "42P01") return { deposits: [], credits: [] };
    throw err;
  }
}
