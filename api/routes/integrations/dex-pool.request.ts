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

/**
 * Which of the four forms the request's range takes (null: none), each given whole: what needs no
 * pool, checked before the chain is read.
 */
export function rangeForm(b: RangeInput): "tick_lower" | "price_lower" | "width_bps" | "full_range" | null {
  const forms = [
    b.tick_lower != null || b.tick_upper != null ? ("tick_lower" as const) : null,
    b.price_lower != null || b.price_upper != null ? ("price_lower" as const) : null,
    b.width_bps != null ? ("width_bps" as const) : null,
    b.full_range ? ("full_range" as const) : null,
  ].filter((x) => x != null);
  if (forms.length === 0) return null;
  if (forms.length > 1) {
    throw field(forms[1]!, `Give one range: ticks, prices, width_bps or full_range (got ${forms.join(", ")})`);
  }
  if (forms[0] === "tick_lower") {
    if (b.tick_lower == null) throw field("tick_lower", "Field required with tick_upper");
    if (b.tick_upper == null) throw field("tick_upper", "Field required with tick_lower");
  }
  if (forms[0] === "price_lower") {
    if (b.price_lower == null) throw field("price_lower", "Field required with price_upper");
    if (b.price_upper == null) throw field("price_upper", "Field required with price_lower");
  }
  return forms[0]!;
}

/** A range is required (a mint's, a rebalance's); `what` names it in the refusal. */
export function requireRange(b: RangeInput, what: string): void {
  if (rangeForm(b)) return;
  throw BuildRefusal.field(
    ["body", "tick_lower"],
    `Field required: ${what} (tick_lower/tick_upper, price_lower/price_upper, width_bps or full_range)`,
    "missing",
  );
}

/** A deposit's amounts: at least one side, each in one form (the units need the pool's tokens). */
export function requireDepositAmounts(b: Record<string, unknown>): void {
  for (const side of ["amount0", "amount1"]) {
    if (b[side] != null && b[`${side}_raw`] != null) throw field(`${side}_raw`, `Give one of ${side} and ${side}_raw`);
  }
  if (["amount0", "amount0_raw", "amount1", "amount1_raw"].every((k) => b[k] == null)) {
    throw BuildRefusal.field(
      ["body", "amount0"],
      "Field required: give amount0, amount1 (or their _raw forms) or both",
      "missing",
    );
  }
}

/**
 * A deposit's request before the chain is read: a mint names a range and an increase
 * (`token_id`) none, and it gives amounts. A 422 for a request wrong on its face costs no read.
 */
export function checkDepositForm(b: RangeInput & { token_id?: unknown } & Record<string, unknown>): void {
  if (b.token_id != null) {
    if (rangeForm(b)) {
      throw field("token_id", "An increase keeps the position's range: give no range with token_id");
    }
  } else requireRange(b, "the new position's range");
  requireDepositAmounts(b);
}

/** The range the request names, rounded to the pool's spacing; null when it names none. */
export function resolveRange(pool: Pool, b: RangeInput): { lower: number; upper: number } | null {
  const form = rangeForm(b);
  if (!form) return null;
  const { decimals: d0 } = pool.token0;
  const { decimals: d1 } = pool.token1;
  const s = pool.tickSpacing;
  let lower: number;
  let upper: number;
  switch (form) {
    case "tick_lower":
      [lower, upper] = [b.tick_lower!, b.tick_upper!];
      break;
    case "price_lower":
      [lower, upper] = [tickOfPrice(b.price_lower!, d0, d1), tickOfPrice(b.price_upper!, d0, d1)];
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
  const loc = form === "tick_lower" ? "tick_upper" : form === "price_lower" ? "price_upper" : form;
  const ordered =
    form === "tick_lower"
      ? b.tick_lower! < b.tick_upper!
      : form === "price_lower"
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
