/** the jobs' chain reads at once per chain by default (PORTFOLIO_READ_LANES) */
export const DEFAULT_READ_LANES = 4;

/**
 * `fn` over `items`, at most `width` at a time, the results in the items' order: the jobs' chain
 * reads in lanes, so a node a round trip away costs that round trip once per lane and step, not
 * once per item in a row. The first failure rejects the whole (the lanes still running finish
 * their item and stop).
 */
export async function inTurn<T, R>(items: readonly T[], width: number, fn: (item: T) => Promise<R>): Promise<R[]> {
  const out: R[] = new Array(items.length);
  let next = 0;
  let failed = false;
  const lane = async () => {
    while (!failed && next < items.length) {
      const i = next++;
      try {
        out[i] = await fn(items[i]!);
      } catch (err) {
        failed = true;
        throw err;
      }
    }
  };
  await Promise.all(Array.from({ length: Math.max(1, Math.min(width, items.length)) }, lane));
  return out;
}
