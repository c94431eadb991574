import { describe, expect, it } from "vitest";
import { blockAtOrBefore } from "./blocks.js";

/** A chain of `n` blocks whose timestamps are `ts(i)`, counting getBlock calls. */
function chain(n: number, ts: (i: number) => number) {
  const calls = { n: 0 };
  const client = {
    getBlock: async ({ blockNumber }: { blockNumber?: bigint }) => {
      calls.n++;
      const i = Number(blockNumber);
      if (i < 0 || i >= n) throw new Error(`no block ${i}`);
      return { number: BigInt(i), timestamp: BigInt(ts(i)) };
    },
  };
  const head = { number: BigInt(n - 1), timestamp: BigInt(ts(n - 1)) };
  return { client: client as never, head, calls };
}

describe("blockAtOrBefore", () => {
  // 12 s blocks from t = 1000, with a gap of an hour after block 500
  const ts = (i: number) => 1000 + i * 12 + (i > 500 ? 3600 : 0);
  it("the last block at or before the time, in about log2(head) reads", async () => {
    const c = chain(100_000, ts);
    for (const [t, want] of [
      [1000, 0],
      [1011, 0],
      [1012, 1],
      [1000 + 500 * 12, 500],
      [1000 + 500 * 12 + 3000, 500], // inside the gap
      [ts(501), 501],
      [ts(77_777) + 5, 77_777],
    ] as const) {
      c.calls.n = 0;
      const b = await blockAtOrBefore(c.client, BigInt(t), c.head);
      expect(b?.number, String(t)).toBe(BigInt(want));
      expect(b!.timestamp).toBeLessThanOrEqual(BigInt(t));
      expect(c.calls.n).toBeLessThanOrEqual(19);
    }
  });
  it("the head when the time is at or after it; null before the first block", async () => {
    const c = chain(1000, ts);
    expect(await blockAtOrBefore(c.client, c.head.timestamp + 5n, c.head)).toEqual(c.head);
    expect(await blockAtOrBefore(c.client, 999n, c.head)).toBeNull();
  });
});
