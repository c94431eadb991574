/**
 * Uniswap v3 concentrated-liquidity arithmetic in integers, the one copy the service has: sqrt
 * prices at ticks (Q64.96), the liquidity a token amount buys over a range and the amounts a
 * liquidity holds (the subaccounts' position values, the dex_pool builders' sizing), and the
 * conversions between human prices (whole token1 per whole token0) and ticks. The ports of the
 * pool's own libraries (TickMath, SqrtPriceMath, LiquidityAmounts, fee growth) are exact, so on the
 * state a build read, the dex_pool builders know what a mint or burn will move before simulating
 * it and set the minimums from that; the amounts an answer reports are still the simulation's.
 */

export const Q96 = 1n << 96n;
export const MIN_TICK = -887272;
export const MAX_TICK = 887272;
const Q128 = 1n << 128n;
const LOG_BASE = Math.log(1.0001);

/** The integer square root (floor). */
export function isqrt(n: bigint): bigint {
  if (n < 2n) return n;
  let x = n;
  let y = (x + 1n) / 2n;
  while (y < x) {
    x = y;
    y = (x + n / x) / 2n;
  }
  return x;
}

/** TickMath's factors: sqrt(1.0001^-(2^i)) in Q128, for bit i of |tick| from 1 (Uniswap v3 core). */
const TICK_FACTORS = [
  0xfff97272373d413259a46990580e213an,
  0xfff2e50f5f656932ef12357cf3c7fdccn,
  0xffe5caca7e10e4e61c3624eaa0941cd0n,
  0xffcb9843d60f6159c9db58835c926644n,
  0xff973b41fa98c081472e6896dfb254c0n,
  0xff2ea16466c96a3843ec78b326b52861n,
  0xfe5dee046a99a2a811c461f1969c3053n,
  0xfcbe86c7900a88aedcffc83b479aa3a4n,
  0xf987a7253ac413176f2b074cf7815e54n,
  0xf3392b0822b70005940c7a398e4b70f3n,
  0xe7159475a2c29b7443b29c7fa6e889d9n,
  0xd097f3bdfd2022b8845ad8f792aa5825n,
  0xa9f746462d870fdf8a65dc1f90e061e5n,
  0x70d869a156d2a1b890bb3df62baf32f7n,
  0x31be135f97d08fd981231505542fcfa6n,
  0x9aa508b5b7a84e1c677de54f3e99bc9n,
  0x5d6af8dedb81196699c329225ee604n,
  0x2216e584f5fa1ea926041bedfe98n,
  0x48a170391f7dc42444e8fa2n,
];
const MAX_UINT256 = (1n << 256n) - 1n;

/** sqrt(1.0001^tick) in Q64.96, exactly as the pool's TickMath.getSqrtRatioAtTick. */
export function sqrtAtTick(tick: number): bigint {
  if (!Number.isInteger(tick) || tick < MIN_TICK || tick > MAX_TICK) throw new RangeError(`tick ${tick}`);
  const abs = Math.abs(tick);
  let ratio = abs & 1 ? 0xfffcb933bd6fad37aa2d162d1a594001n : Q128;
  for (let i = 0; i < TICK_FACTORS.length; i++) {
    if (abs & (2 << i)) ratio = (ratio * TICK_FACTORS[i]!) >> 128n;
  }
  if (tick > 0) ratio = MAX_UINT256 / ratio;
  return (ratio >> 32n) + (ratio % (1n << 32n) === 0n ? 0n : 1n);
}

const divUp = (a: bigint, b: bigint) => (a + b - 1n) / b;
const mulDiv = (a: bigint, b: bigint, d: bigint) => (a * b) / d;
const mulDivUp = (a: bigint, b: bigint, d: bigint) => divUp(a * b, d);

/** SqrtPriceMath.getAmount0Delta: token0 between two sqrt prices for liquidity `l`. */
export function amount0Delta(sa: bigint, sb: bigint, l: bigint, up: boolean): bigint {
  const [lo, hi] = sa < sb ? [sa, sb] : [sb, sa];
  const n1 = l << 96n;
  return up ? divUp(mulDivUp(n1, hi - lo, hi), lo) : mulDiv(n1, hi - lo, hi) / lo;
}

/** SqrtPriceMath.getAmount1Delta: token1 between two sqrt prices for liquidity `l`. */
export function amount1Delta(sa: bigint, sb: bigint, l: bigint, up: boolean): bigint {
  const [lo, hi] = sa < sb ? [sa, sb] : [sb, sa];
  return up ? mulDivUp(l, hi - lo, Q96) : mulDiv(l, hi - lo, Q96);
}

/** Liquidity `amount0` of token0 buys over [sa, sb] when the price is `sp` (below sb). */
export function liquidityFor0(amount0: bigint, sp: bigint, sa: bigint, sb: bigint): bigint {
  const lo = sp > sa ? sp : sa;
  if (lo >= sb) return 0n;
  return mulDiv(amount0, mulDiv(lo, sb, Q96), sb - lo);
}

/** Liquidity `amount1` of token1 buys over [sa, sb] when the price is `sp` (above sa). */
export function liquidityFor1(amount1: bigint, sp: bigint, sa: bigint, sb: bigint): bigint {
  const hi = sp < sb ? sp : sb;
  if (hi <= sa) return 0n;
  return mulDiv(amount1, Q96, hi - sa);
}

/** The token amounts liquidity `l` holds over [sa, sb] at `sp`, rounded down (or up: what it needs). */
export function amountsFor(
  l: bigint,
  sp: bigint,
  sa: bigint,
  sb: bigint,
  up = false,
): { amount0: bigint; amount1: bigint } {
  const p = sp < sa ? sa : sp > sb ? sb : sp;
  return { amount0: p < sb ? amount0Delta(p, sb, l, up) : 0n, amount1: p > sa ? amount1Delta(sa, p, l, up) : 0n };
}

/** A pool's price as its slot0 gives it. */
export interface PoolPrice {
  tick: number;
  sqrtPriceX96: bigint;
}

/**
 * What the pool moves for a liquidity change over [lower, upper] (UniswapV3Pool._modifyPosition):
 * rounded up for liquidity added (what a mint takes), down for liquidity removed (what a burn
 * gives). The pool chooses the side from its tick, not from its sqrt price.
 */
export function poolAmounts(p: PoolPrice, lower: number, upper: number, l: bigint, added: boolean) {
  const [sa, sb] = [sqrtAtTick(lower), sqrtAtTick(upper)];
  if (p.tick < lower) return { amount0: amount0Delta(sa, sb, l, added), amount1: 0n };
  if (p.tick < upper) {
    return {
      amount0: amount0Delta(p.sqrtPriceX96, sb, l, added),
      amount1: amount1Delta(sa, p.sqrtPriceX96, l, added),
    };
  }
  return { amount0: 0n, amount1: amount1Delta(sa, sb, l, added) };
}

/**
 * What a position manager mint or increaseLiquidity of (d0, d1) adds: the liquidity
 * LiquidityAmounts.getLiquidityForAmounts gives at the pool's sqrt price, and what the pool takes
 * for it. On the state it was computed from, the chain does exactly this.
 */
export function mintAmounts(p: PoolPrice, lower: number, upper: number, d0: bigint, d1: bigint) {
  const [sa, sb, sp] = [sqrtAtTick(lower), sqrtAtTick(upper), p.sqrtPriceX96];
  let liquidity: bigint;
  if (sp <= sa) liquidity = liquidityFor0(d0, sa, sa, sb);
  else if (sp < sb) {
    const [l0, l1] = [liquidityFor0(d0, sp, sa, sb), liquidityFor1(d1, sp, sa, sb)];
    // biome-ignore lint/complexity/useMathMinMax: Math.min takes no bigints
    liquidity = l0 < l1 ? l0 : l1;
  } else liquidity = liquidityFor1(d1, sb, sa, sb);
  return { liquidity, ...poolAmounts(p, lower, upper, liquidity, true) };
}

const MOD256 = 1n << 256n;
const wrap = (x: bigint) => ((x % MOD256) + MOD256) % MOD256;

/** One token's fee growth state: the pool's global growth and its ticks' growth outside. */
export interface FeeGrowth {
  global: bigint;
  outsideLower: bigint;
  outsideUpper: bigint;
}

/** Tick.getFeeGrowthInside: the fee growth per liquidity inside [lower, upper] (uint256, wrapping). */
export function feeGrowthInside(tick: number, lower: number, upper: number, g: FeeGrowth): bigint {
  const below = tick >= lower ? g.outsideLower : wrap(g.global - g.outsideLower);
  const above = tick < upper ? g.outsideUpper : wrap(g.global - g.outsideUpper);
  return wrap(g.global - below - above);
}

/** The fees a position of liquidity `l` earned since its last growth inside (the manager's mulDiv). */
export function feesEarned(inside: bigint, last: bigint, l: bigint): bigint {
  return mulDiv(wrap(inside - last), l, Q128);
}

/** Whole token1 per whole token0 at a sqrt price. */
export function priceOfSqrt(sqrtX96: bigint, dec0: number, dec1: number): number {
  const s = Number(sqrtX96) / 2 ** 96;
  return s * s * 10 ** (dec0 - dec1);
}

/** Whole token1 per whole token0 at a tick. */
export function priceOfTick(tick: number, dec0: number, dec1: number): number {
  return Math.exp(tick * LOG_BASE) * 10 ** (dec0 - dec1);
}

/** The tick of a price (whole token1 per whole token0), not yet on the tick spacing. */
export function tickOfPrice(price: number, dec0: number, dec1: number): number {
  return Math.log(price * 10 ** (dec1 - dec0)) / LOG_BASE;
}

/** The lowest and highest ticks a position of this spacing may use. */
export function usableTicks(spacing: number): { min: number; max: number } {
  return { min: Math.ceil(MIN_TICK / spacing) * spacing, max: Math.floor(MAX_TICK / spacing) * spacing };
}

/** [lower, upper] widened outwards to the spacing and kept within the usable ticks. */
export function roundRange(lower: number, upper: number, spacing: number): { lower: number; upper: number } {
  const u = usableTicks(spacing);
  const lo = Math.max(u.min, Math.floor(lower / spacing) * spacing);
  const hi = Math.min(u.max, Math.ceil(upper / spacing) * spacing);
  return { lower: lo, upper: hi };
}
