/**
 * The chain's last block at or before a time, by binary search on block timestamps (about
 * log2(head) getBlock calls): for reads "as of" a past moment, such as prices a day ago.
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
