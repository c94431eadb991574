/**
 * eth_getLogs over a block range a provider may refuse as too wide: hosted providers cap the
 * blocks or the results of one request, and viem refuses an answer over its size limit. A refused
 * range is read on in narrower windows, halved at each refusal down to `minSplit` blocks, below
 * which the refusal is the caller's. Only a refusal narrows: a node that cannot be reached or
 * does not answer in time fails at once.
 */
import { BaseError, HttpRequestError, ResponseBodyTooLargeError, TimeoutError } from "viem";

/** Smallest range a refused read is split down to (blocks), unless the caller says otherwise. */
export const MIN_SPLIT = 100n;

/** Whether `err` says the node was not reached or did not answer (nothing to split). */
export function unanswered(err: unknown): boolean {
  if (!(err instanceof BaseError)) return false;
  if (err.walk((e) => e instanceof ResponseBodyTooLargeError)) return false;
  return err.walk((e) => e instanceof TimeoutError || (e instanceof HttpRequestError && e.status == null)) != null;
}

/** Reads of one `logsInRange` in flight at once. */
export const PARALLEL_READS = 4;

/**
 * `read` over blocks [from, to], the results in block order. The whole range first; where a read
 * is refused, on in windows half as wide from that block (halved again at each refusal, down to
 * `minSplit`), up to `parallel` windows at a time. So a provider's cap is found in a few halvings
 * and the range is read in windows of about that size: a refused range of millions of blocks is
 * thousands of reads, never thousands at once (a split of each half into halves would be).
 */
export async function logsInRange<T>(
  read: (from: bigint, to: bigint) => Promise<T[]>,
  from: bigint,
  to: bigint,
  minSplit: bigint = MIN_SPLIT,
  parallel: number = PARALLEL_READS,
): Promise<T[]> {
  const out: T[][] = [];
  let size = to - from + 1n;
  let at = from;
  while (at <= to) {
    const windows: [bigint, bigint][] = [];
    for (let a = at; a <= to && windows.length < (size === to - from + 1n ? 1 : parallel); a += size)
      windows.push([a, a + size - 1n < to ? a + size - 1n : to]);
    const results = await Promise.allSettled(windows.map(([a, b]) => read(a, b)));
    for (const [i, r] of results.entries()) {
      const [a, b] = windows[i]!;
      if (r.status === "fulfilled") {
        out.push(r.value);
        at = b + 1n;
        continue;
      }
      // refused: the windows after it are read again, narrower; a node not reached is the caller's
      if (b - a < minSplit || a === b || unanswered(r.reason)) throw r.reason;
      size = (b - a + 1n) / 2n;
      break;
    }
  }
  return out.flat();
}
