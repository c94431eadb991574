/**
 * The rebalance builder: a position's range moved. One executeBatch takes all its liquidity out
 * (taken back from the v3 staker first if it is deposited there), collects what it is owed to the
 * Safe and mints a position of the new range with what came out, approvals exact. What comes out
 * (the liquidity's amounts, the fees it earned and what the position was already owed: the
 * mint's desired amounts) and what the mint takes (its minimums, `max_slippage_bps` below) are
 * computed from the state the build read, with the pool's own arithmetic; the transaction is
 * simulated once. Restaking the new position needs its token id in the transaction, which only a
 * simulation tells: then a first simulation without the restake learns it.
 * The range's ratio of tokens rarely matches what came out: the rest stays in the Safe.
 */
import type { z } from "@hono/zod-openapi";
import type { Abi, Address } from "viem";
import { isActive } from "../../../onchain/staker.js";
import { liquidityFor0, liquidityFor1, mintAmounts, poolAmounts, sqrtAtTick } from "../../../onchain/uniswap-math.js";
import { type InnerCall, moduleTransaction } from "../../lib/build/module-call.js";
import { wholeText } from "../../lib/build/payload.js";
import { BuildRefusal } from "../../lib/build/refusal.js";
import {
  collectCall,
  decreaseCall,
  depositCall,
  mintCall,
  positionApprovals,
  unstakeCalls,
  withdrawTokenCall,
} from "./dex-pool.calls.js";
import {
  accrualReads,
  type DexCtx,
  innerResults,
  loadPosition,
  minOf,
  NPM_ABI,
  npmResult,
  positionFees,
  positionRead,
  requireTokens,
  simulateOrRefuse,
} from "./dex-pool.lib.js";
import { explicitMins, resolveRange } from "./dex-pool.request.js";
import { incentiveOut, pair, poolOut, positionFromRead, positionOut, type RebalanceBody } from "./dex-pool.schemas.js";

type Body = z.infer<typeof RebalanceBody>;

export async function buildRebalance(ctx: DexCtx, b: Body) {
  const { pool, sub, uni } = ctx;
  const npm = uni.positionManager;
  const tokenId = BigInt(b.token_id);
  // named: requireRange, before the read (dex-pool.ts)
  const range = resolveRange(pool, b)!;
  const pos = loadPosition(ctx);
  if (range.lower === pos.tickLower && range.upper === pos.tickUpper) {
    throw BuildRefusal.field(
      ["body", "tick_lower"],
      `Position ${tokenId} already has the range [${range.lower}, ${range.upper}]`,
    );
  }
  if (pos.liquidity === 0n) {
    throw new BuildRefusal(409, "empty_position", `Position ${tokenId} holds no liquidity: there is nothing to move`);
  }
  if (b.restake && !pos.staked) {
    throw BuildRefusal.field(
      ["body", "restake"],
      `Position ${tokenId} is not in the v3 staker: there is nothing to restake`,
    );
  }
  requireTokens(ctx, [pool.token0, pool.token1], ["path", "pool_address"]);
  const restakeIn = b.restake ? pos.stakes.filter((k) => isActive(k, ctx.head.timestamp)) : null;
  const deadline = ctx.head.timestamp + BigInt(b.deadline_seconds);
  const op = "rebalance";
  const pre: InnerCall[] = pos.staked
    ? [...unstakeCalls(ctx, tokenId, pos.stakes), withdrawTokenCall(ctx, tokenId)]
    : [];
  const at = { decrease: pre.length, collect: pre.length + 1, mint: pre.length + 2 };

  // what comes out: the liquidity's amounts, the fees it earned, what the position was owed
  const burn = poolAmounts(pool, pos.tickLower, pos.tickUpper, pos.liquidity, false);
  const earned = await positionFees(ctx, pos);
  const c0 = pos.owed0 + burn.amount0 + earned[0];
  const c1 = pos.owed1 + burn.amount1 + earned[1];
  const { sqrtPriceX96: sp } = pool;
  const [sa, sb] = [sqrtAtTick(range.lower), sqrtAtTick(range.upper)];
  const l0 = sp < sb ? liquidityFor0(c0, sp, sa, sb) : null;
  const l1 = sp > sa ? liquidityFor1(c1, sp, sa, sb) : null;
  // the liquidity a side buys: none from a side the range needs is no position at all
  if ([l0, l1].some((x) => x === 0n)) {
    const short = [
      { t: pool.token0, l: l0, c: c0 },
      { t: pool.token1, l: l1, c: c1 },
    ].filter((x) => x.l === 0n);
    const yields =
      `the position yields ${wholeText(c0, pool.token0.decimals)} ${pool.token0.symbol} and ` +
      `${wholeText(c1, pool.token1.decimals)} ${pool.token1.symbol}`;
    const needs = l0 != null && l1 != null ? "both tokens (it spans the price)" : `only ${short[0]!.t.symbol}`;
    throw new BuildRefusal(
      409,
      "range_unfundable",
      `The new range [${range.lower}, ${range.upper}] takes ${needs}, and ${yields}: too little ` +
        `${short.map((x) => x.t.symbol).join(" and ")} to fund any liquidity there. Move to a range the ` +
        "position's tokens fund, or swap some in first",
    );
  }
  const dm0 = minOf(burn.amount0, b.max_slippage_bps);
  const dm1 = minOf(burn.amount1, b.max_slippage_bps);
  const approvals = positionApprovals(ctx, c0, c1);
  // what the mint takes
  const minted = mintAmounts(pool, range.lower, range.upper, c0, c1);
  const given = explicitMins(b);
  const m0 = given.min0 ?? minOf(minted.amount0, b.max_slippage_bps);
  const m1 = given.min1 ?? minOf(minted.amount1, b.max_slippage_bps);
  const calls = [
    ...pre,
    decreaseCall(ctx, tokenId, pos.liquidity, dm0, dm1, deadline),
    collectCall(ctx, tokenId),
    mintCall(
      ctx,
      range,
      { d0: c0, d1: c1 },
      { m0, m1 },
      deadline,
      `mint the new position [${range.lower}, ${range.upper}] for the Safe with what came out`,
    ),
  ];
  let post: InnerCall[] = [];
  let restakedId: bigint | null = null;
  if (restakeIn) {
    const tx1 = moduleTransaction(sub.module, calls, approvals);
    const r1 = innerResults(tx1, (await simulateOrRefuse(ctx, tx1, op)).returnData);
    [restakedId] = npmResult<readonly [bigint, bigint, bigint, bigint]>("mint", r1[at.mint]!);
    post = [depositCall(ctx, restakedId, restakeIn)];
  }
  const tx = moduleTransaction(sub.module, [...calls, ...post], approvals);
  const accrual = accrualReads(ctx, pos.stakes);
  const reads = accrual.reads;
  // the new position is read after only when its id is known (restaked: the staker holds it);
  // else it is what the mint returned, the Safe its holder, nothing owed yet
  const after = [
    ...reads,
    positionRead(ctx, tokenId),
    ...(restakedId == null
      ? []
      : [positionRead(ctx, restakedId), { to: npm, abi: NPM_ABI as Abi, functionName: "ownerOf", args: [restakedId] }]),
  ];
  const k = reads.length;
  const sim = await simulateOrRefuse(ctx, tx, op, { before: reads, after });
  const r = innerResults(tx, sim.returnData);
  const [newId, l, d0, d1] = npmResult<readonly [bigint, bigint, bigint, bigint]>("mint", r[at.mint]!);
  const [w0, w1] = npmResult<readonly [bigint, bigint]>("decreaseLiquidity", r[at.decrease]!);
  const [o0, o1] = npmResult<readonly [bigint, bigint]>("collect", r[at.collect]!);
  const newOwner = (sim.after[k + 2] as Address | null | undefined) ?? sub.safe;
  const newPos =
    newId === restakedId && sim.after[k + 1]
      ? positionFromRead(newId, sim.after[k + 1])
      : { tokenId: newId, tickLower: range.lower, tickUpper: range.upper, liquidity: l, owed0: 0n, owed1: 0n };
  return {
    tx,
    sim,
    extra: {
      pool: poolOut(pool),
      old_position: positionOut(ctx, positionFromRead(tokenId, sim.after[k]), sub.safe, false),
      new_position: positionOut(ctx, newPos, newOwner, newOwner === uni.staker),
      position_before: positionOut(ctx, pos, pos.owner, pos.staked),
      liquidity_removed: pos.liquidity.toString(),
      liquidity_added: l.toString(),
      withdrawn: pair(ctx, w0, w1),
      fees: pair(ctx, o0 - w0, o1 - w1),
      deposited: pair(ctx, d0, d1),
      leftover: pair(ctx, o0 - d0, o1 - d1),
      minimums: pair(ctx, m0, m1),
      max_slippage_bps: b.max_slippage_bps,
      unstaked_from: pos.stakes.map(incentiveOut),
      restaked_in: restakeIn ? restakeIn.map(incentiveOut) : [],
      staker_rewards_accrued: await accrual.out(sim, 0),
      simulated_timestamp: Number(sim.timestamp),
      deadline: Number(deadline),
    },
  };
}
