/**
 * The Uniswap v3 integer arithmetic against the pool's own figures: TickMath's sqrt
 * ratios at the tick bounds, a range widened outwards to the spacing, and liquidity and amounts
 * as each other's inverse.
 */
import { describe, expect, it } from "vitest";
import {
  amountsFor,
  liquidityFor0,
  liquidityFor1,
  MAX_TICK,
  MIN_TICK,
  priceOfTick,
  Q96,
  roundRange,
  sqrtAtTick,
  tickOfPrice,
} from "./uniswap-math.js";

// TickMath.MIN_SQRT_RATIO and MAX_SQRT_RATIO (Uniswap v3 core)
const MIN_SQRT = 4295128739n;
const MAX_SQRT = 1461446703485210103287273052203988822378723970342n;

const close = (a: bigint, b: bigint, relative: number) => {
  const d = a > b ? a - b : b - a;
  expect(Number(d) / Number(b)).toBeLessThan(relative);
};

describe("dex_pool arithmetic", () => {
  it("sqrt ratios at the tick bounds and at 0 match TickMath", () => {
    expect(sqrtAtTick(0)).toBe(Q96);
    close(sqrtAtTick(MIN_TICK), MIN_SQRT, 1e-9);
    close(sqrtAtTick(MAX_TICK), MAX_SQRT, 1e-18);
    expect(() => sqrtAtTick(MAX_TICK + 1)).toThrow(RangeError);
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
});
