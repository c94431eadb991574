/** A route's value at its pools' prices before the trade (`spotOuts`), from hand-made pool reads. */
import type { Address } from "viem";
import { describe, expect, it } from "vitest";
import { type Discovery, fairValue, priceKey, type SwapRoute, spotOuts, toPrice, type Venue } from "./swaps.lib.js";

// token0 of a pool is the lower address: A < B < C
const A = "0x1000000000000000000000000000000000000001" as Address;
const B = "0x2000000000000000000000000000000000000002" as Address;
const C = "0x3000000000000000000000000000000000000003" as Address;
const Q96 = 1n << 96n;

const route = (venue: Venue, tokens: Address[], pools: Address[]): SwapRoute => ({
  venue,
  id: tokens.join("/"),
  kind: venue === "uniswap_v2" ? "swap_exact_tokens_for_tokens" : "exact_input",
  tokens,
  fees: pools.map(() => 3000),
  pools,
});
const pool = (n: number) => `0x${n.toString(16).padStart(40, "0")}` as Address;
/** slot0's answer for a square-root price in Q96 (its square: token1 per token0). */
const slot0 = (sqrtX96: bigint) => ({ ok: true as const, value: [sqrtX96, 0, 0, 0, 0, 0, true] });
const reserves = (r0: bigint, r1: bigint) => ({ ok: true as const, value: [r0, r1, 0] });

/** each route's value at its pools' prices, in whole raw units */
const spot = (d: Discovery, amountIn: bigint) => spotOuts(d, amountIn).map((f) => (f ? fairValue(f) : null));

function discovery(routes: SwapRoute[], prices: [Venue, Address, ReturnType<typeof toPrice>][]): Discovery {
  return {
    routes,
    prices: new Map(prices.map(([v, p, x]) => [priceKey(v, p), x])),
  } as unknown as Discovery;
}

describe("spotOuts", () => {
  it("a v3 pool: token0 sold at slot0's price, token1 at its inverse", () => {
    // sqrt price 2: 4 token1 per token0
    const price = toPrice("uniswap_v3", slot0(2n * Q96));
    const d = discovery(
      [route("uniswap_v3", [A, B], [pool(1)]), route("uniswap_v3", [B, A], [pool(1)])],
      [["uniswap_v3", pool(1), price]],
    );
    expect(spot(d, 10n)).toEqual([40n, 2n]); // 10 B buy 2.5 A, rounded down
    expect(spot(d, 1_000n)).toEqual([4_000n, 250n]);
  });

  it("a v2 pair: the ratio of its reserves", () => {
    const price = toPrice("uniswap_v2", reserves(1_000n, 3_000n));
    const d = discovery(
      [route("uniswap_v2", [A, B], [pool(2)]), route("uniswap_v2", [B, A], [pool(2)])],
      [["uniswap_v2", pool(2), price]],
    );
    expect(spot(d, 7n)).toEqual([21n, 2n]);
  });

  it("two hops multiply, rounding once at the end; pool keys ignore the address's case", () => {
    // A -> C through B: A is token0 of A/B (4 B per A); C is token1 of B/C at 9 C per B
    const ab = toPrice("uniswap_v3", slot0(2n * Q96));
    const bc = toPrice("uniswap_v3", slot0(3n * Q96));
    const d = discovery(
      [
        route("uniswap_v3", [A, B, C], [pool(0xab), pool(0xbc)]),
        route("uniswap_v3", [C, B, A], [pool(0xbc), pool(0xab)]),
      ],
      [
        ["uniswap_v3", pool(0xab).toUpperCase().replace("0X", "0x") as Address, ab],
        ["uniswap_v3", pool(0xbc), bc],
      ],
    );
    expect(spot(d, 5n)).toEqual([180n, 0n]); // 5 C: 5/9 B, 5/36 A
    expect(spot(d, 360n)).toEqual([12_960n, 10n]);
  });

  it("a pool that answered no price, an empty pair or a price never read: no value for its routes", () => {
    expect(toPrice("uniswap_v3", { ok: false, data: "0x" })).toBeNull();
    expect(toPrice("uniswap_v2", reserves(0n, 5n))).toBeNull();
    expect(toPrice("uniswap_v3", slot0(0n))).toBeNull();
    const d = discovery(
      [
        route("uniswap_v3", [A, B], [pool(3)]),
        route("uniswap_v2", [A, B], [pool(4)]),
        route("uniswap_v3", [A, B, C], [pool(5), pool(6)]),
      ],
      [
        ["uniswap_v3", pool(3), null],
        ["uniswap_v2", pool(4), toPrice("uniswap_v2", reserves(1n, 1n))],
        ["uniswap_v3", pool(5), toPrice("uniswap_v3", slot0(Q96))],
      ],
    );
    expect(spot(d, 100n)).toEqual([null, 100n, null]);
  });
});
