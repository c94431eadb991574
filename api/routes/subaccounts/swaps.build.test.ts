/** The swaps builder's price impact, from the exact fair value (a fraction of raw units). */
import { describe, expect, it } from "vitest";
import { fairOut, impactBps } from "./swaps.build.js";
import type { SwapToken } from "./swaps.lib.js";

const token = (decimals: number, usd: number): SwapToken => ({
  address: "0x0000000000000000000000000000000000000001",
  symbol: "T",
  decimals,
  feed: { address: "0x0000000000000000000000000000000000000002", decimals: 8 },
  price: BigInt(Math.round(usd * 1e8)),
});

describe("impactBps", () => {
  it("measures against the fraction, not its rounded raw amount", () => {
    // a dust trade worth 1.95 raw units: 1 out is 48.72 % below it (0 against a rounded 1)
    expect(impactBps(1n, { num: 39n, den: 20n })).toBe(4871.79);
    expect(impactBps(2n, { num: 39n, den: 20n })).toBe(-256.41);
    expect(impactBps(997n, { num: 1_000n, den: 1n })).toBe(30);
  });

  it("has none without a fair value, or for one of zero", () => {
    expect(impactBps(5n, null)).toBeNull();
    expect(impactBps(5n, { num: 0n, den: 1n })).toBeNull();
  });
});

describe("fairOut", () => {
  it("values the input at the feeds, in token_out's raw units, exactly", () => {
    // 1 unit of a 6-decimal token at 1 USD in an 18-decimal token at 3 USD: a third, unrounded
    const f = fairOut(1n, token(6, 1), token(18, 3))!;
    expect(f.num * 3n).toBe(f.den * 10n ** 12n);
    expect(impactBps(333_333_333_333n, f)).toBe(0);
  });

  it("is none without both prices", () => {
    expect(fairOut(1n, { ...token(6, 1), price: null }, token(18, 3))).toBeNull();
    expect(fairOut(1n, token(6, 1), { ...token(18, 3), feed: null })).toBeNull();
  });
});
