/**
 * The Uniswap v3 staker's incentives as indexed (indexer.uniswap_incentive and uniswap_staker,
 * written by the indexer's src/protocols.ts): the keys the staker's logs hold from the block the
 * indexer reads them from up to its checkpoint on the chain. The reads (onchain/staker.ts) start
 * from them and read from the chain only the blocks around and after that checkpoint, and the
 * blocks before the indexer's start where the staker is older.
 */
import { type QueryExecutorProvider, sql } from "kysely";
import { type Address, getAddress } from "viem";
import type { IncentiveSeed, IndexedIncentives } from "../onchain/staker.js";
import { decodeCheckpoint } from "./progress.js";

/** What is indexed of `staker` on `chainId`; null before the views exist or while it is not indexed. */
export async function indexedIncentives(
  db: QueryExecutorProvider,
  schema: string,
  chainId: number,
  staker: string,
): Promise<IndexedIncentives | null> {
  const address = staker.toLowerCase();
  try {
    const { rows: head } = await sql<{ indexed_from: string; latest_checkpoint: string }>`
      SELECT s.indexed_from::text AS indexed_from, c.latest_checkpoint
      FROM ${sql.id(schema, "uniswap_staker")} s
      JOIN ${sql.id(schema, "_ponder_checkpoint")} c ON c.chain_id = s.chain_id
      WHERE s.chain_id = ${chainId} AND s.address = ${address}`.execute(db);
    if (!head[0]) return null;
    const through = BigInt(decodeCheckpoint(head[0].latest_checkpoint).block);
    const { rows } = await sql<{
      reward_token: Address;
      pool: Address;
      start_time: string;
      end_time: string;
      refundee: Address;
      block_number: string;
    }>`
      SELECT reward_token, pool, start_time::text AS start_time, end_time::text AS end_time, refundee,
        block_number::text AS block_number
      FROM ${sql.id(schema, "uniswap_incentive")}
      WHERE chain_id = ${chainId} AND staker = ${address} AND block_number <= ${through.toString()}
      ORDER BY block_number, log_index`.execute(db);
    return {
      from: BigInt(head[0].indexed_from),
      through,
      keys: rows.map((r) => ({
        rewardToken: getAddress(r.reward_token),
        pool: getAddress(r.pool),
        startTime: BigInt(r.start_time),
        endTime: BigInt(r.end_time),
        refundee: getAddress(r.refundee),
      })),
      blocks: rows.map((r) => BigInt(r.block_number)),
    };
  } catch (err) {
    if ((err as { code?: string }).code === "42P01") return null;
    throw err;
  }
}

/** The reads' seed of `staker`'s scan on `chainId` (onchain/staker.ts), asked only for a first scan. */
export function incentiveSeed(
  db: QueryExecutorProvider,
  schema: string,
  chainId: number,
  staker: string | null | undefined,
): IncentiveSeed | undefined {
  return staker ? () => indexedIncentives(db, schema, chainId, staker) : undefined;
}
