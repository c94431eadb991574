/**
 * The shared fee-growth reads: their order (both globals, then the range's lower and upper
 * ticks) is what `feeGrowthOf` reads back, any missing answer means no figure rather than zero
 * growth, and the uncounted fees are each token's growth inside the range since the last count.
 */
import { describe, expect, it } from "vitest";
import { feeGrowthOf, feeGrowthReads, uncountedFees } from "./uniswap-fees.js";

const Q128 = 1n << 128n;
const POOL = "0x00000000000000000000000000000000000000aa";
const tick = (out0: bigint, out1: bigint) => [1n, 0n, out0, out1, 0n, 0n, 0, true] as const;

describe("fee growth reads", () => {
  it("reads both globals, then the lower tick, then the upper", () => {
    const reads = feeGrowthReads(POOL, -60, 120);
    expect(reads.map((r) => [r.functionName, r.args ?? []])).toEqual([
      ["feeGrowthGlobal0X128", []],
      ["feeGrowthGlobal1X128", []],
      ["ticks", [-60]],
      ["ticks", [120]],
    ]);
    expect(new Set(reads.map((r) => r.address))).toEqual(new Set([POOL]));
  });

  it("gives each token's growth from the answers, and none when one is missing", () => {
    const values = [10n, 20n, tick(1n, 2n), tick(3n, 4n)];
    expect(feeGrowthOf(values)).toEqual([
      { global: 10n, outsideLower: 1n, outsideUpper: 3n },
      { global: 20n, outsideLower: 2n, outsideUpper: 4n },
    ]);
    for (let i = 0; i < 4; i++) {
      const gap = values.map((v, k) => (k === i ? undefined : v));
      expect(feeGrowthOf(gap)).toBeNull();
    }
  });

  it("counts the growth inside the range since the last count, per token", () => {
    // in range: inside = global - outsideLower - outsideUpper
    const growth = feeGrowthOf([5n * Q128, 9n * Q128, tick(Q128, 0n), tick(Q128, Q128)])!;
    const fees = uncountedFees({ tick: 0, lower: -60, upper: 60 }, growth, [Q128, 2n * Q128], 10n);
    expect(fees).toEqual([20n, 60n]);
  });
});
