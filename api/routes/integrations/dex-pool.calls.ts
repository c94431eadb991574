/**
 * The inner calls the dex_pool builders compose, each with a description for people: liquidity
 * out of a position and its tokens collected to the Safe, and the staker's side (unstake, take
 * the NFT back, claim, stake again or deposit again with the incentive keys).
 */
import { type Address, encodeFunctionData, type Hex } from "viem";
import { type IncentiveKey, incentiveId, STAKER_ABI, stakeData } from "../../../onchain/staker.js";
import type { Approval, InnerCall } from "../../lib/build/module-call.js";
import { type DexCtx, MAX_UINT128, NPM_ABI } from "./dex-pool.lib.js";

const short = (k: IncentiveKey) => `${incentiveId(k).slice(0, 10)}…`;

function stakerOf(ctx: DexCtx): Address {
  if (!ctx.uni.staker) throw new Error("no v3 staker on this chain");
  return ctx.uni.staker;
}

/** Exact approvals of the pool's tokens to the position manager, for the amounts a mint may take. */
export function positionApprovals(ctx: DexCtx, d0: bigint, d1: bigint): Approval[] {
  const npm = ctx.uni.positionManager;
  const out: Approval[] = [];
  if (d0 > 0n) out.push({ token: ctx.pool.token0.address, spender: npm, amount: d0 });
  if (d1 > 0n) out.push({ token: ctx.pool.token1.address, spender: npm, amount: d1 });
  return out;
}

/** A new position of the pool over `range` for the Safe, from at most the desired amounts. */
export function mintCall(
  ctx: DexCtx,
  range: { lower: number; upper: number },
  desired: { d0: bigint; d1: bigint },
  mins: { m0: bigint; m1: bigint },
  deadline: bigint,
  description: string,
): InnerCall {
  const { pool } = ctx;
  return {
    target: ctx.uni.positionManager,
    value: 0n,
    description,
    data: encodeFunctionData({
      abi: NPM_ABI,
      functionName: "mint",
      args: [
        {
          token0: pool.token0.address,
          token1: pool.token1.address,
          fee: pool.fee,
          tickLower: range.lower,
          tickUpper: range.upper,
          amount0Desired: desired.d0,
          amount1Desired: desired.d1,
          amount0Min: mins.m0,
          amount1Min: mins.m1,
          recipient: ctx.sub.safe,
          deadline,
        },
      ],
    }),
  };
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
