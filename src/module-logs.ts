/**
 * What a contract emitted up to a block, read from the block it was deployed in. The deployment
 * block is found by bisecting `eth_getCode` over the range (an archive read, as the indexer's
 * others): a few calls, then one `eth_getLogs` over the blocks the contract existed in, where one
 * request from the chain's start block is refused by providers that cap a request's blocks.
 */
import type { Address, Log, PublicClient } from "viem";

/**
 * The lowest block in [from, to] at which `holds(block)` is true, given that it is true at `to`
 * and stays true after the first such block (a contract's code, from its deployment on). About
 * log2(to - from) calls. The vaults CLI finds a vault's start block with it too.
 */
export async function firstBlockWhere(
  to: bigint,
  holds: (block: bigint) => Promise<boolean>,
  from = 0n,
): Promise<bigint> {
  let lo = from;
  let hi = to;
  while (lo < hi) {
    const mid = lo + (hi - lo) / 2n;
    if (await holds(mid)) hi = mid;
    else lo = mid + 1n;
  }
  return lo;
}

/** Whether `address` has code at `blockNumber` (the head when not given). */
export async function hasCode(client: PublicClient, address: Address, blockNumber?: bigint): Promise<boolean> {
  const code = await client.getCode(blockNumber == null ? { address } : { address, blockNumber });
  return code != null && code !== "0x";
}

/** The first block in [fromBlock, toBlock] at which `address` has code; null if none at `toBlock`. */
export async function deploymentBlock(
  client: PublicClient,
  address: Address,
  fromBlock: bigint,
  toBlock: bigint,
): Promise<bigint | null> {
  const at = (blockNumber: bigint) => hasCode(client, address, blockNumber);
  if (toBlock < fromBlock || !(await at(toBlock))) return null;
  return firstBlockWhere(toBlock, at, fromBlock);
}

/** Every log of `address` in [fromBlock, toBlock], read from its deployment block on. */
export async function logsSinceDeployment(
  client: PublicClient,
  address: Address,
  fromBlock: bigint,
  toBlock: bigint,
): Promise<Log[]> {
  const from = await deploymentBlock(client, address, fromBlock, toBlock);
  return from == null ? [] : client.getLogs({ address, fromBlock: from, toBlock });
}
