/**
 * The Uniswap v3 integer arithmetic against the pool's own figures: TickMath's sqrt ratios at
 * the tick bounds, a range widened outwards to the spacing, liquidity and amounts as each other's
 * inverse, a mint's rounding, and fee growth that wraps as uint256 does. That the ports give what
 * the deployed pool gives, to the unit, is held by the dex_pool builders' e2e tests (every
 * minimum is set from them and then simulated).
 */
import fc from "fast-check";
import { describe, expect, it } from "vitest";
import {
  amount0Delta,
  amount1Delta,
  amountsFor,
  feeGrowthInside,
  feesEarned,
  liquidityFor0,
  liquidityFor1,
  MAX_TICK,
  MIN_TICK,
  mintAmounts,
  poolAmounts,
  priceOfTick,
  Q96,
  roundRange,
  sqrtAtTick,
  tickOfPrice,
} from "./uniswap-math.js";

// TickMath.MIN_SQRT_RATIO and MAX_SQRT_RATIO (Uniswap v3 core)
const MIN_SQRT = 4295128739n;
const MAX_SQRT = 1461446703485210103287273052203988822378723970342n;
const Q128 = 1n << 128n;

describe("dex_pool arithmetic", () => {
  it("sqrt ratios are TickMath's: the bounds exactly, 1.0001^(tick/2) between them", () => {
    expect(sqrtAtTick(0)).toBe(Q96);
    expect(sqrtAtTick(MIN_TICK)).toBe(MIN_SQRT);
    expect(sqrtAtTick(MAX_TICK)).toBe(MAX_SQRT);
    expect(() => sqrtAtTick(MAX_TICK + 1)).toThrow(RangeError);
    expect(() => sqrtAtTick(1.5)).toThrow(RangeError);
    fc.assert(
      fc.property(fc.integer({ min: -400_000, max: 400_000 }), (t) => {
        const exact = Number(sqrtAtTick(t)) / 2 ** 96;
        expect(Math.abs(exact / 1.0001 ** (t / 2) - 1)).toBeLessThan(1e-9);
        expect(sqrtAtTick(t + 1)).toBeGreaterThan(sqrtAtTick(t));
      }),
    );
  });

  it("ranges widen outwards to the spacing, within the usable ticks", () => {
    expect(roundRange(-195_615, -194_651, 10)).toEqual({ lower: -195_620, upper: -194_650 });
    expect(roundRange(MIN_TICK, MAX_TICK, 60)).toEqual({ lower: -887_220, upper: 887_220 });
  });

  it("a price and its tick convert both ways (WETH 18 / USDC 6)", () => {
    const t = tickOfPrice(3200, 18, 6);
    expect(priceOfTick(Math.floor(t), 18, 6)).toBeLessThanOrEqual(3200);
    expect(priceOfTick(Math.floor(t) + 1, 18, 6)).toBeGreaterThan(3200);
  });

  it("the amounts a liquidity needs buy that liquidity again", () => {
    const [sa, sb, sp] = [sqrtAtTick(-196_670), sqrtAtTick(-194_650), sqrtAtTick(-195_611)];
    const l = 1_096_855_696_841_826n;
    const need = amountsFor(l, sp, sa, sb, true);
    const held = amountsFor(l, sp, sa, sb);
    expect(need.amount0 - held.amount0).toBeLessThanOrEqual(1n);
    expect(liquidityFor0(need.amount0, sp, sa, sb)).toBeGreaterThanOrEqual(l);
    expect(liquidityFor1(need.amount1, sp, sa, sb)).toBeGreaterThanOrEqual(l);
    // out of range: one token only
    expect(amountsFor(l, sqrtAtTick(-200_000), sa, sb).amount1).toBe(0n);
    expect(amountsFor(l, sqrtAtTick(-190_000), sa, sb).amount0).toBe(0n);
  });

  it("a mint takes at most what it is given, and a burn of it gives back at most what it took", () => {
    const range = fc
      .tuple(fc.integer({ min: -200_000, max: 200_000 }), fc.integer({ min: 1, max: 50_000 }))
      .map(([lower, width]) => ({ lower, upper: lower + width }));
    const amount = fc.bigInt({ min: 0n, max: 10n ** 30n });
    fc.assert(
      fc.property(range, fc.integer({ min: -260_000, max: 260_000 }), amount, amount, (r, tick, d0, d1) => {
        const p = { tick, sqrtPriceX96: sqrtAtTick(tick) };
        const m = mintAmounts(p, r.lower, r.upper, d0, d1);
        expect(m.amount0).toBeLessThanOrEqual(d0);
        expect(m.amount1).toBeLessThanOrEqual(d1);
        const back = poolAmounts(p, r.lower, r.upper, m.liquidity, false);
        expect(back.amount0).toBeLessThanOrEqual(m.amount0);
        expect(back.amount1).toBeLessThanOrEqual(m.amount1);
        expect(m.amount0 - back.amount0).toBeLessThanOrEqual(1n);
        expect(m.amount1 - back.amount1).toBeLessThanOrEqual(1n);
      }),
    );
  });

  it("the pool picks the side from its tick: at a lower bound reached from above, token0 only", () => {
    const [lower, upper] = [-100, 100];
    const s = sqrtAtTick(lower);
    // a swap down to exactly the lower tick leaves the tick one below it
    const below = poolAmounts({ tick: lower - 1, sqrtPriceX96: s }, lower, upper, 10n ** 18n, true);
    const at = poolAmounts({ tick: lower, sqrtPriceX96: s }, lower, upper, 10n ** 18n, true);
    expect(below.amount1).toBe(0n);
    expect(at.amount1).toBe(0n);
    expect(below.amount0).toBe(at.amount0);
    expect(amount0Delta(s, sqrtAtTick(upper), 10n ** 18n, true)).toBe(at.amount0);
    expect(amount1Delta(s, s, 10n ** 18n, true)).toBe(0n);
  });

  it("fee growth inside wraps as uint256, and a position earns its share of it", () => {
    const g = { global: 5n * Q128, outsideLower: Q128, outsideUpper: 2n * Q128 };
    // in range: global - below - above
    expect(feeGrowthInside(0, -10, 10, g)).toBe(2n * Q128);
    // price above the range: the upper tick's outside is counted from the other side
    expect(feeGrowthInside(20, -10, 10, g)).toBe(Q128);
    // growth recorded before a wrap: the difference is what grew
    const last = (1n << 256n) - 3n * Q128;
    expect(feesEarned(2n * Q128, last, 10n)).toBe(50n);
    expect(feesEarned(Q128 + Q128 / 2n, Q128, 4n)).toBe(2n);
  });
});
