/**
 * How far the indexer and the derived tables are, per chain.
 *
 * - The indexer: Ponder's checkpoint (`_ponder_checkpoint.latest_checkpoint`, read through the
 *   views schema), the newest block it has processed, whether or not that block had events.
 * - The derived tables: the checkpoint the workers' last completed run computed them from
 *   (`derived.jobs_progress`, written by jobs/progress-write.ts), so a quiet chain whose jobs are up to
 *   date reads as fresh.
 * - A chain's head, from its RPC, for the indexer's own lag.
 */
import { type Kysely, sql } from "kysely";
import { rpcCall } from "../onchain/rpc-fetch.js";
import type { Database } from "./schema.js";

/** A block the indexer reached on a chain. */
export interface ChainCheckpoint {
  chainId: number;
  block: number;
  /** the block's timestamp */
  time: Date;
}

/** Where the derived tables are on a chain, and when the run that computed them finished. */
export interface ChainProgress extends ChainCheckpoint {
  computedAt: Date;
  runId: string | null;
}

/**
 * Block number and timestamp of a Ponder 0.16 checkpoint (ponder/src/utils/checkpoint.ts):
 * 10 digits of block timestamp, 16 of chain id, 16 of block number, then transaction index,
 * event type and event index.
 */
export function decodeCheckpoint(checkpoint: string): { chainId: number; block: number; time: Date } {
  if (!/^\d{75}$/.test(checkpoint)) throw new Error(`not a Ponder checkpoint: ${checkpoint.slice(0, 80)}`);
  return {
    chainId: Number(checkpoint.slice(10, 26)),
    block: Number(checkpoint.slice(26, 42)),
    time: new Date(Number(checkpoint.slice(0, 10)) * 1000),
  };
}

// Both the API's read-only Kysely and the workers' read these: only select is used.
type Reader = Pick<Kysely<Database>, "selectFrom">;

/** The indexer's checkpoint per chain, by chain id; empty before the views exist. */
export async function readCheckpoints(db: Reader, indexerSchema: string): Promise<ChainCheckpoint[]> {
  const { rows } = await sql<{ chain_id: string | number; latest_checkpoint: string }>`
    SELECT chain_id, latest_checkpoint FROM ${sql.id(indexerSchema, "_ponder_checkpoint")} ORDER BY chain_id`.execute(
    db as unknown as Kysely<Database>,
  );
  return rows.map((r) => {
    const { block, time } = decodeCheckpoint(r.latest_checkpoint);
    return { chainId: Number(r.chain_id), block, time };
  });
}

/** What derived.jobs_progress says, by chain id. */
export async function readProgress(db: Reader): Promise<ChainProgress[]> {
  const rows = await db
    .selectFrom("derived.jobs_progress")
    .select(["chain_id", "block_number", "block_time", "computed_at", "run_id"])
    .orderBy("chain_id")
    .execute();
  return rows.map((r) => ({
    chainId: r.chain_id,
    block: Number(r.block_number),
    time: new Date(r.block_time),
    computedAt: new Date(r.computed_at),
    runId: r.run_id,
  }));
}

/** Checkpoints as they travel in job data (JSON): times as ISO strings. */
export const toJson = (cs: readonly ChainCheckpoint[]) =>
  cs.map((c) => ({ chainId: c.chainId, block: c.block, time: c.time.toISOString() }));
export const fromJson = (cs: readonly { chainId: number; block: number; time: string }[]): ChainCheckpoint[] =>
  cs.map((c) => ({ chainId: c.chainId, block: c.block, time: new Date(c.time) }));

/** A chain's newest block from its JSON-RPC endpoint (or, failing over, the chain's other URLs). */
export async function chainHead(url: string, timeoutMs = 1500): Promise<{ block: number; time: Date }> {
  type Block = { number?: string; timestamp?: string } | null;
  const b = await rpcCall<Block>(url, "eth_getBlockByNumber", ["latest", false], { timeoutMs, retries: 0 });
  if (!b?.number || !b.timestamp) throw new Error("the node gave no latest block");
  return { block: Number(BigInt(b.number)), time: new Date(Number(BigInt(b.timestamp)) * 1000) };
}

/** `a` behind `b` in blocks and seconds, never negative (a reorg can put `a` ahead for a moment). */
export function lagBetween(a: { block: number; time: Date }, b: { block: number; time: Date }) {
  return {
    blocks: Math.max(0, b.block - a.block),
    seconds: Math.max(0, Math.round((b.time.getTime() - a.time.getTime()) / 1000)),
  };
}
