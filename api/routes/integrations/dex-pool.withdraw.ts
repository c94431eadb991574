/**
 * The withdraw builder: liquidity out of one of the subaccount's positions (decreaseLiquidity)
 * and everything it is then owed collected to the Safe (collect with maximum amounts: what came
 * out and the fees), in one executeBatch. A position deposited in the v3 staker is unstaked from
 * each incentive it is in and taken back first (its rewards accrue to the Safe in the staker,
 * claimable with claim_rewards); with `restake` and liquidity left it goes back in, staked in
 * those incentives that still run. Minimums `max_slippage_bps` below what the pool gives for the
 * liquidity on the state the build read (`poolAmounts`); the one simulation is of that transaction.
 */
import type { z } from "@hono/zod-openapi";
import type { Abi, Address } from "viem";
import { isActive } from "../../../onchain/staker.js";
import { poolAmounts } from "../../../onchain/uniswap-math.js";
import { type InnerCall, moduleTransaction } from "../../lib/build/module-call.js";
import { BuildRefusal } from "../../lib/build/refusal.js";
import { collectCall, decreaseCall, depositCall, unstakeCalls, withdrawTokenCall } from "./dex-pool.calls.js";
import {
  accrualReads,
  balanceRead,
  type DexCtx,
  innerResults,
  loadPosition,
  minOf,
  NPM_ABI,
  npmResult,
  positionRead,
  simulateOrRefuse,
} from "./dex-pool.lib.js";
import { explicitMins } from "./dex-pool.request.js";
import { incentiveOut, pair, poolOut, positionFromRead, positionOut, type WithdrawBody } from "./dex-pool.schemas.js";

type Body = z.infer<typeof WithdrawBody>;

const FRACTION_SCALE = 1_000_000_000_000n;

/** The liquidity to take out: the body gives exactly one of fraction and liquidity (its schema). */
function liquidityToRemove(b: Body, total: bigint): bigint {
  let l: bigint;
  if (b.fraction != null) {
    l = b.fraction === 1 ? total : (total * BigInt(Math.round(b.fraction * 1e12))) / FRACTION_SCALE;
  } else {
    l = BigInt(b.liquidity!);
    if (l > total) {
      throw BuildRefusal.field(["body", "liquidity"], `Above the position's liquidity (${total})`, "less_than_equal");
    }
  }
  if (l === 0n)
    throw BuildRefusal.field(["body", b.fraction != null ? "fraction" : "liquidity"], "Takes out no liquidity");
  return l;
}

export async function buildWithdraw(ctx: DexCtx, b: Body) {
  const { pool, sub, uni } = ctx;
  const tokenId = BigInt(b.token_id);
  const pos = loadPosition(ctx);
  if (pos.liquidity === 0n) {
    throw new BuildRefusal(
      409,
      "empty_position",
      `Position ${tokenId} holds no liquidity (claim_rewards collects what it is still owed)`,
    );
  }
  const liquidity = liquidityToRemove(b, pos.liquidity);
  const deadline = ctx.head.timestamp + BigInt(b.deadline_seconds);
  const now = ctx.head.timestamp;
  const restakeIn =
    pos.staked && b.restake && liquidity < pos.liquidity ? pos.stakes.filter((k) => isActive(k, now)) : null;
  const pre: InnerCall[] = pos.staked
    ? [...unstakeCalls(ctx, tokenId, pos.stakes), withdrawTokenCall(ctx, tokenId)]
    : [];
  const post: InnerCall[] = restakeIn ? [depositCall(ctx, tokenId, restakeIn)] : [];
  const out = poolAmounts(pool, pos.tickLower, pos.tickUpper, liquidity, false);
  const given = explicitMins(b);
  const m0 = given.min0 ?? minOf(out.amount0, b.max_slippage_bps);
  const m1 = given.min1 ?? minOf(out.amount1, b.max_slippage_bps);
  const tx = moduleTransaction(sub.module, [
    ...pre,
    decreaseCall(ctx, tokenId, liquidity, m0, m1, deadline),
    collectCall(ctx, tokenId),
    ...post,
  ]);
  const accrual = accrualReads(ctx, pos.stakes);
  const reads = [
    balanceRead(pool.token0.address, sub.safe),
    balanceRead(pool.token1.address, sub.safe),
    ...accrual.reads,
  ];
  const after = [
    ...reads,
    positionRead(ctx, tokenId),
    { to: uni.positionManager, abi: NPM_ABI as Abi, functionName: "ownerOf", args: [tokenId] },
  ];
  const sim = await simulateOrRefuse(ctx, tx, "withdraw", { before: reads, after });
  const results = innerResults(tx, sim.returnData);
  const [p0, p1] = npmResult<readonly [bigint, bigint]>("decreaseLiquidity", results[pre.length]!);
  const [c0, c1] = npmResult<readonly [bigint, bigint]>("collect", results[pre.length + 1]!);
  const n = (i: number, from: unknown[]) => (from[i] as bigint | null) ?? 0n;
  const owner = (sim.after[reads.length + 1] as Address | null) ?? sub.safe;
  const accrued = await accrual.out(sim, 2);
  return {
    tx,
    sim,
    extra: {
      pool: poolOut(pool),
      position_before: positionOut(ctx, pos, pos.owner, pos.staked),
      position: positionOut(ctx, positionFromRead(tokenId, sim.after[reads.length]), owner, owner === uni.staker),
      liquidity_removed: liquidity.toString(),
      withdrawn: pair(ctx, p0, p1),
      fees: pair(ctx, c0 - p0, c1 - p1),
      received: pair(ctx, n(0, sim.after) - n(0, sim.before), n(1, sim.after) - n(1, sim.before)),
      minimums: pair(ctx, m0, m1),
      max_slippage_bps: b.max_slippage_bps,
      unstaked_from: pos.stakes.map(incentiveOut),
      restaked_in: restakeIn ? restakeIn.map(incentiveOut) : [],
      staker_rewards_accrued: accrued,
      simulated_timestamp: Number(sim.timestamp),
      deadline: Number(deadline),
    },
  };
}
