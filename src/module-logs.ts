/**
 * What a contract emitted up to a block, read from the block it was deployed in. The deployment
 * block is found by bisecting `eth_getCode` over the range (an archive read, as the indexer's
 * others): a few calls, then `eth_getLogs` over the blocks the contract existed in, where one
 * request from the chain's start block is refused by providers that cap a request's blocks; a
 * span still refused as too wide is read in halves.
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

/**
 * A provider's refusal of a request's span or result size (Alchemy, Infura, QuickNode, Ankr, ...),
 * not a rate limit ("Too Many Requests") nor a block the node lacks (read-at-block.ts).
 */
const TOO_WIDE =
  /block range|range (is )?too|too (wide|large|big)|more than \d+ (results|logs)|exceed(s|ed)? (the )?(max|maximum|limit)|response size|limited to/i;

/**
 * Every log of `address` in [fromBlock, toBlock], in one request where the node takes it; a span
 * the node refuses as too wide is read in halves, recursively. Other errors are thrown.
 */
async function logsIn(client: PublicClient, address: Address, fromBlock: bigint, toBlock: bigint): Promise<Log[]> {
  try {
    return await client.getLogs({ address, fromBlock, toBlock });
  } catch (err) {
    if (toBlock <= fromBlock || !TOO_WIDE.test(String((err as Error)?.message ?? err))) throw err;
    const mid = fromBlock + (toBlock - fromBlock) / 2n;
    return [...(await logsIn(client, address, fromBlock, mid)), ...(await logsIn(client, address, mid + 1n, toBlock))];
  }
}

/** Every log of `address` in [fromBlock, toBlock], read from its deployment block on. */
export async function logsSinceDeployment(
  client: PublicClient,
  address: Address,
  fromBlock: bigint,
  toBlock: bigint,
): Promise<Log[]> {
  const from = await deploymentBlock(client, address, fromBlock, toBlock);
  return from == null ? [] : logsIn(client, address, from, toBlock);
}
