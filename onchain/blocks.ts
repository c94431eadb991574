/**
 * Blocks found by binary search: the chain's last block at or before a time (about log2(head)
 * getBlock calls), for reads "as of" a past moment such as prices a day ago; and the block a
 * contract was deployed in, for the portfolio's creation times.
 */
import type { PublicClient } from "viem";

export interface BlockRef {
  number: bigint;
  timestamp: bigint;
}

/** The last block at or before `timestamp` (seconds) up to `head`; null when the chain starts after it. */
export async function blockAtOrBefore(
  client: Pick<PublicClient, "getBlock">,
  timestamp: bigint,
  head: BlockRef,
): Promise<BlockRef | null> {
  if (head.timestamp <= timestamp) return head;
  const at = async (n: bigint): Promise<BlockRef> => {
    const b = await client.getBlock({ blockNumber: n });
    return { number: b.number, timestamp: b.timestamp };
  };
  let lo = await at(0n);
  if (lo.timestamp > timestamp) return null;
  let hi = head.number;
  // invariant: block lo.number is at or before `timestamp`, block hi is after it
  while (hi - lo.number > 1n) {
    const mid = await at((lo.number + hi) / 2n);
    if (mid.timestamp <= timestamp) lo = mid;
    else hi = mid.number;
  }
  return lo;
}

/**
 * The block `address` was deployed in: the first with code, by binary search on `eth_getCode`
 * up to `head` (about log2(head) calls, each an archive read); null when it has no code at
 * `head`. A node without the old state fails the search: the error is thrown.
 */
export async function deploymentBlock(
  client: Pick<PublicClient, "getCode">,
  address: `0x${string}`,
  head: bigint,
): Promise<bigint | null> {
  const has = async (blockNumber: bigint) => {
    const code = await client.getCode({ address, blockNumber });
    return code != null && code !== "0x";
  };
  if (!(await has(head))) return null;
  let lo = 0n;
  let hi = head;
  while (lo < hi) {
    const mid = (lo + hi) / 2n;
    if (await has(mid)) hi = mid;
    else lo = mid + 1n;
  }
  return lo;
}

const deployed = new Map<string, bigint>();

/**
 * When each contract was deployed (its deployment block's time, unix seconds), by lower-case
 * address; null for an address without code or whose search failed (a node without the old
 * state). Found times are kept for the life of the process: a deployment does not move.
 */
export async function deploymentTimes(
  client: Pick<PublicClient, "getCode" | "getBlock">,
  chainId: number,
  addresses: Iterable<string>,
  head: bigint,
): Promise<Map<string, number | null>> {
  const out = new Map<string, number | null>();
  await Promise.all(
    [...new Set([...addresses].map((a) => a.toLowerCase()))].map(async (a) => {
      const key = `${chainId}:${a}`;
      let at = deployed.get(key);
      if (at === undefined) {
        try {
          const block = await deploymentBlock(client, a as `0x${string}`, head);
          if (block != null) {
            at = (await client.getBlock({ blockNumber: block })).timestamp;
            deployed.set(key, at);
          }
        } catch {
          // the search failed (no archive state, an RPC error): null now, searched again next time
        }
      }
      out.set(a, at === undefined ? null : Number(at));
    }),
  );
  return out;
}
