/** Reads at an event's block that survive the block being taken away by a reorg. */

/** A node's answer for a block it does not have (yet, or any more: a reorg replaced it). */
const MISSING_BLOCK = /BlockOutOfRange|block height is|header not found|unknown block|block not found/i;

/**
 * Runs a read at a block (`read(true)`), waiting while the node does not have that block. In
 * realtime a reorg can take an event's block away between its log and the read (anvil: "block
 * height is 999 but requested was 1002"); before, the handler's error stopped the indexer. The
 * read is retried while the new chain grows back to that height (its state then stands in, and
 * Ponder reverts what the orphaned block's handlers wrote). If after `waitMs` the chain is still
 * shorter, the block is gone for good: the read is made at the head (`read(false)`), with a
 * warning, for rows Ponder is about to revert. Other errors are thrown.
 */
export async function readAtBlock<T>(
  read: (atBlock: boolean) => Promise<T>,
  what: string,
  waitMs = 30_000,
): Promise<T> {
  const until = Date.now() + waitMs;
  for (;;) {
    try {
      return await read(true);
    } catch (err) {
      if (!MISSING_BLOCK.test(String((err as Error)?.message ?? err))) throw err;
      if (Date.now() > until) {
        console.warn(`${what}: the block is no longer on the chain (a reorg); read at the head instead`);
        return read(false);
      }
      await new Promise((r) => setTimeout(r, 250));
    }
  }
}
