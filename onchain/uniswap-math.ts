/**
 * Uniswap v3 concentrated-liquidity arithmetic in integers, the one copy the service has: sqrt
 * prices at ticks (Q64.96), the liquidity a token amount buys over a range and the amounts a
 * liquidity holds (the subaccounts' position values, the dex_pool builders' sizing), and the
 * conversions between human prices (whole token1 per whole token0) and ticks. The builders only
 * size requests with it: the amounts a transaction moves are the simulation's.
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

/** sqrt(1.0001) in Q128. */
const ROOT = isqrt((10001n << 256n) / 10000n);

function powQ128(base: bigint, n: number): bigint {
  let result = Q128;
  let b = base;
  let e = n;
  while (e > 0) {
    if (e & 1) result = (result * b) >> 128n;
    b = (b * b) >> 128n;
    e >>= 1;
  }
  return result;
}

/** sqrt(1.0001^tick) in Q64.96 (to within a few units of the pool's own TickMath). */
export function sqrtAtTick(tick: number): bigint {
  if (!Number.isInteger(tick) || tick < MIN_TICK || tick > MAX_TICK) throw new RangeError(`tick ${tick}`);
  const q128 = tick >= 0 ? powQ128(ROOT, tick) : (Q128 * Q128) / powQ128(ROOT, -tick);
  return q128 >> 32n;
}

const divUp = (a: bigint, b: bigint) => (a + b - 1n) / b;

/** Liquidity `amount0` of token0 buys over [sa, sb] when the price is `sp` (below sb). */
export function liquidityFor0(amount0: bigint, sp: bigint, sa: bigint, sb: bigint): bigint {
  const lo = sp > sa ? sp : sa;
  if (lo >= sb) return 0n;
  return (amount0 * lo * sb) / ((sb - lo) * Q96);
}

/** Liquidity `amount1` of token1 buys over [sa, sb] when the price is `sp` (above sa). */
export function liquidityFor1(amount1: bigint, sp: bigint, sa: bigint, sb: bigint): bigint {
  const hi = sp < sb ? sp : sb;
  if (hi <= sa) return 0n;
  return (amount1 * Q96) / (hi - sa);
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
  const div = up ? divUp : (a: bigint, b: bigint) => a / b;
  const amount0 = p < sb ? div(div(l * Q96 * (sb - p), sb), p) : 0n;
  const amount1 = p > sa ? div(l * (p - sa), Q96) : 0n;
  return { amount0, amount1 };
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
