/**
 * The one list of reads behind a Uniswap v3 position's uncounted fees, shared by the position
 * valuation (`positions.ts`, viem's multicall) and the dex_pool builders (their own aggregate):
 * the pool's two global fee growths and the growth outside each end of the range. Each caller
 * sends the list its own way and hands the answers back here in the same order.
 */
import { type Abi, type Address, parseAbi } from "viem";
import { type FeeGrowth, feeGrowthInside, feesEarned } from "./uniswap-math.js";

export const FEE_GROWTH_ABI = parseAbi([
  "function feeGrowthGlobal0X128() view returns (uint256)",
  "function feeGrowthGlobal1X128() view returns (uint256)",
  "function ticks(int24 tick) view returns (uint128 liquidityGross, int128 liquidityNet, uint256 feeGrowthOutside0X128, uint256 feeGrowthOutside1X128, int56 tickCumulativeOutside, uint160 secondsPerLiquidityOutsideX128, uint32 secondsOutside, bool initialized)",
]);

export interface FeeGrowthRead {
  address: Address;
  abi: Abi;
  functionName: string;
  args?: readonly unknown[];
}

/** The four reads, in the order `feeGrowthOf` takes their answers. */
export function feeGrowthReads(pool: Address, lower: number, upper: number): FeeGrowthRead[] {
  const abi = FEE_GROWTH_ABI as Abi;
  return [
    { address: pool, abi, functionName: "feeGrowthGlobal0X128" },
    { address: pool, abi, functionName: "feeGrowthGlobal1X128" },
    { address: pool, abi, functionName: "ticks", args: [lower] },
    { address: pool, abi, functionName: "ticks", args: [upper] },
  ];
}

type Tick = readonly [bigint, bigint, bigint, bigint, ...unknown[]];

/** Both tokens' fee growth from the reads' decoded answers (undefined: failed), else null. */
export function feeGrowthOf(values: readonly unknown[]): [FeeGrowth, FeeGrowth] | null {
  const [g0, g1, lo, hi] = values as [bigint?, bigint?, Tick?, Tick?];
  if (g0 == null || g1 == null || !lo || !hi) return null;
  return [
    { global: g0, outsideLower: lo[2], outsideUpper: hi[2] },
    { global: g1, outsideLower: lo[3], outsideUpper: hi[3] },
  ];
}

/** What a position's liquidity earned since the manager last counted (not in tokensOwed yet). */
export function uncountedFees(
  range: { tick: number; lower: number; upper: number },
  growth: readonly [FeeGrowth, FeeGrowth],
  last: readonly [bigint, bigint],
  liquidity: bigint,
): [bigint, bigint] {
  const earned = (i: 0 | 1) =>
    feesEarned(feeGrowthInside(range.tick, range.lower, range.upper, growth[i]), last[i], liquidity);
  return [earned(0), earned(1)];
}
