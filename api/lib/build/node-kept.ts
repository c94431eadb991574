/**
 * What a node has or lacks (eth_simulateV1, block overrides, its chain's Multicall3), by RPC URL,
 * learnt from its answers and believed for ASK_AGAIN_MS, then asked again: a node upgraded, or a
 * URL pointed at another node, is found out within that time.
 */
export type Kept = Map<string, { yes: boolean; until: number }>;

/** how long what a node has or lacks is kept */
export const ASK_AGAIN_MS = 10 * 60_000;

/** What is kept for `url`, or undefined when nothing is (or no longer). */
export const known = (kept: Kept, url: string): boolean | undefined => {
  const k = kept.get(url);
  return k !== undefined && Date.now() < k.until ? k.yes : undefined;
};

export const remember = (kept: Kept, url: string, yes: boolean): void => {
  kept.set(url, { yes, until: Date.now() + ASK_AGAIN_MS });
};
