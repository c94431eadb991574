/**
 * eth_getLogs over a block range a provider may refuse as too wide: hosted providers cap the
 * blocks or the results of one request, and viem refuses an answer over its size limit. A refused
 * range is read as its two halves, down to `minSplit` blocks, below which the refusal is the
 * caller's. Only a refusal splits: a node that cannot be reached or does not answer in time
 * fails at once, not once per half.
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

/** `read` over blocks [from, to], split in halves where refused; the halves' results in order. */
export async function logsInRange<T>(
  read: (from: bigint, to: bigint) => Promise<T[]>,
  from: bigint,
  to: bigint,
  minSplit: bigint = MIN_SPLIT,
): Promise<T[]> {
  try {
    return await read(from, to);
  } catch (err) {
    if (to - from < minSplit || unanswered(err)) throw err;
    const mid = from + (to - from) / 2n;
    const [a, b] = await Promise.all([
      logsInRange(read, from, mid, minSplit),
      logsInRange(read, mid + 1n, to, minSplit),
    ]);
    return [...a, ...b];
  }
}
