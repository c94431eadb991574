/**
 * The Uniswap v3 positions an account has ever held or staked, as indexed (indexer.uniswap_event,
 * written by the indexer's src/protocols.ts): by chain, the token ids of its transfers, liquidity
 * changes and staker deposits. A superset of the positions it held at any indexed block; the
 * reads (onchain/positions.ts) check each on the chain at the block they read. They take it in
 * place of the staker's own list of every position staked with it, which on a busy chain is
 * thousands.
 */
import { type QueryExecutorProvider, sql } from "kysely";

/** Token ids by chain, of the chains listed; nothing before the indexer's views exist. */
export async function indexedPositionIds(
  db: QueryExecutorProvider,
  schema: string,
  account: string,
  chainIds: readonly number[],
): Promise<Map<number, bigint[]>> {
  if (chainIds.length === 0) return new Map();
  const events = sql.id(schema, "uniswap_event");
  try {
    const { rows } = await sql<{ chain_id: number; token_id: string }>`
      SELECT DISTINCT chain_id, token_id::text AS token_id FROM ${events}
      WHERE chain_id = ANY(${[...chainIds]}::int[]) AND subaccount = ${account.toLowerCase()}
        AND token_id IS NOT NULL
      ORDER BY 1, 2`.execute(db);
    const out = new Map<number, bigint[]>();
    for (const r of rows) out.set(r.chain_id, [...(out.get(r.chain_id) ?? []), BigInt(r.token_id)]);
    return out;
  } catch (err) {
    if ((err as { code?: string }).code === "42P01") return new Map();
    throw err;
  }
}
