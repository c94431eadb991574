/**
 * The inner calls the dex_pool builders compose, each with a description for people: liquidity
 * out of a position and its tokens collected to the Safe, and the staker's side (unstake, take
 * the NFT back, claim, stake again or deposit again with the incentive keys).
 */
import { type Address, encodeFunctionData, type Hex } from "viem";
import type { InnerCall } from "../../lib/build/module-call.js";
import { type DexCtx, MAX_UINT128, NPM_ABI } from "./dex-pool.lib.js";
import { type IncentiveKey, incentiveId, STAKER_ABI, stakeData } from "./dex-pool.staker.js";

const short = (k: IncentiveKey) => `${incentiveId(k).slice(0, 10)}…`;

function stakerOf(ctx: DexCtx): Address {
  if (!ctx.uni.staker) throw new Error("no v3 staker on this chain");
  return ctx.uni.staker;
}

export function decreaseCall(
  ctx: DexCtx,
  tokenId: bigint,
  liquidity: bigint,
  m0: bigint,
  m1: bigint,
  deadline: bigint,
): InnerCall {
  return {
    target: ctx.uni.positionManager,
    value: 0n,
    description: `take liquidity ${liquidity} out of position ${tokenId}`,
    data: encodeFunctionData({
      abi: NPM_ABI,
      functionName: "decreaseLiquidity",
      args: [{ tokenId, liquidity, amount0Min: m0, amount1Min: m1, deadline }],
    }),
  };
}

/** Collects everything the position is owed (what came out and its fees) to the Safe. */
export function collectCall(ctx: DexCtx, tokenId: bigint): InnerCall {
  return {
    target: ctx.uni.positionManager,
    value: 0n,
    description: `collect what position ${tokenId} is owed (tokens and fees) to the Safe`,
    data: encodeFunctionData({
      abi: NPM_ABI,
      functionName: "collect",
      args: [{ tokenId, recipient: ctx.sub.safe, amount0Max: MAX_UINT128, amount1Max: MAX_UINT128 }],
    }),
  };
}

export function unstakeCalls(ctx: DexCtx, tokenId: bigint, keys: readonly IncentiveKey[]): InnerCall[] {
  const staker = stakerOf(ctx);
  return keys.map((k) => ({
    target: staker,
    value: 0n,
    description: `unstake position ${tokenId} from incentive ${short(k)} (its rewards accrue to the Safe)`,
    data: encodeFunctionData({ abi: STAKER_ABI, functionName: "unstakeToken", args: [k, tokenId] }),
  }));
}

export function stakeCalls(ctx: DexCtx, tokenId: bigint, keys: readonly IncentiveKey[]): InnerCall[] {
  const staker = stakerOf(ctx);
  return keys.map((k) => ({
    target: staker,
    value: 0n,
    description: `stake position ${tokenId} again in incentive ${short(k)}`,
    data: encodeFunctionData({ abi: STAKER_ABI, functionName: "stakeToken", args: [k, tokenId] }),
  }));
}

/** The NFT back from the staker to the Safe (every stake must be gone first). */
export function withdrawTokenCall(ctx: DexCtx, tokenId: bigint): InnerCall {
  return {
    target: stakerOf(ctx),
    value: 0n,
    description: `take position ${tokenId} out of the v3 staker to the Safe`,
    data: encodeFunctionData({
      abi: STAKER_ABI,
      functionName: "withdrawToken",
      args: [tokenId, ctx.sub.safe, "0x"],
    }),
  };
}

/** The NFT into the staker as the Safe's deposit, staked in `keys` (none: only deposited). */
export function depositCall(ctx: DexCtx, tokenId: bigint, keys: readonly IncentiveKey[]): InnerCall {
  const staker = stakerOf(ctx);
  const data: Hex = keys.length ? stakeData(keys) : "0x";
  return {
    target: ctx.uni.positionManager,
    value: 0n,
    description: keys.length
      ? `deposit position ${tokenId} in the v3 staker, staked in ${keys.map(short).join(", ")}`
      : `deposit position ${tokenId} in the v3 staker again`,
    data: encodeFunctionData({
      abi: NPM_ABI,
      functionName: "safeTransferFrom",
      args: [ctx.sub.safe, staker, tokenId, data],
    }),
  };
}

export function claimCall(ctx: DexCtx, rewardToken: Address, symbol: string): InnerCall {
  return {
    target: stakerOf(ctx),
    value: 0n,
    description: `claim every ${symbol} reward the staker holds for the Safe`,
    data: encodeFunctionData({
      abi: STAKER_ABI,
      functionName: "claimReward",
      args: [rewardToken, ctx.sub.safe, 0n],
    }),
  };
}
