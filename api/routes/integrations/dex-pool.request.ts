/**
 * Reading a dex_pool request into what the builders use: a tick range from one of its four forms
 * (ticks, prices, a width around the current price, the full range), widened outwards to the
 * pool's tick spacing; token amounts in whole or raw units; explicit minimums. Every inconsistency
 * is a 422 naming the field.
 */
import {
  MAX_TICK,
  MIN_TICK,
  priceOfSqrt,
  priceOfTick,
  roundRange,
  tickOfPrice,
  usableTicks,
} from "../../../onchain/uniswap-math.js";
import { wholeToRaw } from "../../lib/build/payload.js";
import { BuildRefusal } from "../../lib/build/refusal.js";
import type { Pool } from "./dex-pool.lib.js";

export interface RangeInput {
  tick_lower?: number | undefined;
  tick_upper?: number | undefined;
  price_lower?: number | undefined;
  price_upper?: number | undefined;
  width_bps?: number | undefined;
  full_range?: true | undefined;
}

const field = (name: string, msg: string) => BuildRefusal.field(["body", name], msg);

/** The range the request names, rounded to the pool's spacing; null when it names none. */
export function resolveRange(pool: Pool, b: RangeInput): { lower: number; upper: number } | null {
  const forms = [
    b.tick_lower != null || b.tick_upper != null ? "tick_lower" : null,
    b.price_lower != null || b.price_upper != null ? "price_lower" : null,
    b.width_bps != null ? "width_bps" : null,
    b.full_range ? "full_range" : null,
  ].filter((x): x is string => x != null);
  if (forms.length === 0) return null;
  if (forms.length > 1) {
    throw field(forms[1]!, `Give one range: ticks, prices, width_bps or full_range (got ${forms.join(", ")})`);
  }
  const { decimals: d0 } = pool.token0;
  const { decimals: d1 } = pool.token1;
  const s = pool.tickSpacing;
  let lower: number;
  let upper: number;
  switch (forms[0]) {
    case "tick_lower":
      if (b.tick_lower == null) throw field("tick_lower", "Field required with tick_upper");
      if (b.tick_upper == null) throw field("tick_upper", "Field required with tick_lower");
      [lower, upper] = [b.tick_lower, b.tick_upper];
      break;
    case "price_lower":
      if (b.price_lower == null) throw field("price_lower", "Field required with price_upper");
      if (b.price_upper == null) throw field("price_upper", "Field required with price_lower");
      [lower, upper] = [tickOfPrice(b.price_lower, d0, d1), tickOfPrice(b.price_upper, d0, d1)];
      // a price past the tick scale's ends is refused, as a tick past them is (not clamped)
      for (const [name, tick] of [
        ["price_lower", lower],
        ["price_upper", upper],
      ] as const) {
        if (!(tick >= MIN_TICK))
          throw field(name, `Below the lowest price of the tick scale (${priceOfTick(MIN_TICK, d0, d1)})`);
        if (!(tick <= MAX_TICK))
          throw field(name, `Above the highest price of the tick scale (${priceOfTick(MAX_TICK, d0, d1)})`);
      }
      break;
    case "width_bps": {
      const p = priceOfSqrt(pool.sqrtPriceX96, d0, d1);
      const w = b.width_bps! / 10_000;
      [lower, upper] = [tickOfPrice(p * (1 - w), d0, d1), tickOfPrice(p * (1 + w), d0, d1)];
      break;
    }
    default: {
      const u = usableTicks(s);
      [lower, upper] = [u.min, u.max];
    }
  }
  const loc = forms[0] === "tick_lower" ? "tick_upper" : forms[0] === "price_lower" ? "price_upper" : forms[0]!;
  const ordered =
    forms[0] === "tick_lower"
      ? b.tick_lower! < b.tick_upper!
      : forms[0] === "price_lower"
        ? b.price_lower! < b.price_upper!
        : true;
  if (!ordered) throw field(loc, "The range's lower end must be below its upper end");
  if (!(lower < upper)) throw field(loc, "The range is outside the ticks the pool allows");
  const r = roundRange(Math.floor(lower), Math.ceil(upper), s);
  if (!(r.lower < r.upper)) throw field(loc, "The range is outside the ticks the pool allows");
  return r;
}

/** A token amount of the request: `<side>` in whole units or `<side>_raw`, at most one; null if neither. */
export function sideAmount(b: Record<string, unknown>, side: "amount0" | "amount1", decimals: number): bigint | null {
  const whole = b[side] as string | undefined;
  const raw = b[`${side}_raw`] as string | undefined;
  if (whole != null && raw != null) throw field(`${side}_raw`, `Give one of ${side} and ${side}_raw`);
  if (whole == null && raw == null) return null;
  let v: bigint;
  if (raw != null) v = BigInt(raw);
  else v = wholeToRaw(whole!, decimals, ["body", side]);
  if (v === 0n)
    throw BuildRefusal.field(["body", raw != null ? `${side}_raw` : side], "Must be greater than 0", "greater_than");
  return v;
}

/** The explicit minimums, when given. */
export function explicitMins(b: { amount0_min_raw?: string | undefined; amount1_min_raw?: string | undefined }) {
  return {
    min0: b.amount0_min_raw != null ? BigInt(b.amount0_min_raw) : null,
    min1: b.amount1_min_raw != null ? BigInt(b.amount1_min_raw) : null,
  };
}
