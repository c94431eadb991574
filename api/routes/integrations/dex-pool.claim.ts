/**
 * The claim_rewards builder: a position's fees (collect with maximum amounts, to the Safe) and the
 * v3 staker's rewards. A staked position is unstaked from each incentive it is in (the staker then
 * credits its reward to the Safe), every reward token the Safe is owed is claimed in full
 * (claimReward(token, safe, 0)), and the position is staked again in the incentives that still
 * run: with stakeToken when it stays in the staker, or deposited again with the keys when it came
 * out for its fees. Rewards the Safe was already owed (a withdraw's unstake) are claimed too.
 * Expected amounts are the simulation's: the calls' return values and the Safe's balances before
 * and after in the same simulated block, at its time (`simulated_timestamp`).
 */
import type { z } from "@hono/zod-openapi";
import { type Abi, type Address, getAddress } from "viem";
import { isActive, STAKER_ABI } from "../../../onchain/staker.js";
import { tokenFacts } from "../../lib/build/facts.js";
import { type InnerCall, moduleTransaction } from "../../lib/build/module-call.js";
import { units } from "../../lib/build/payload.js";
import { BuildRefusal } from "../../lib/build/refusal.js";
import type { SimRead } from "../../lib/build/simulate.js";
import { claimCall, collectCall, depositCall, stakeCalls, unstakeCalls, withdrawTokenCall } from "./dex-pool.calls.js";
import {
  balanceRead,
  type DexCtx,
  innerResults,
  loadPosition,
  NPM_ABI,
  npmResult,
  positionRead,
  requireTokens,
  simulateOrRefuse,
} from "./dex-pool.lib.js";
import {
  type ClaimBody,
  incentiveOut,
  pair,
  poolOut,
  positionFromRead,
  positionOut,
  tokenOut,
} from "./dex-pool.schemas.js";

type Body = z.infer<typeof ClaimBody>;

export async function buildClaim(ctx: DexCtx, b: Body) {
  const { pool, sub, uni } = ctx;
  const tokenId = BigInt(b.token_id);
  const pos = loadPosition(ctx);
  const staker = uni.staker;
  // reward tokens: those of the incentives it is in, and any of this pool's the Safe is owed
  const candidates = [...new Set(pos.poolIncentives.map((k) => k.rewardToken))];
  const stakedTokens = new Set(pos.stakes.map((k) => k.rewardToken));
  const claimAddrs = candidates.filter((t) => stakedTokens.has(t) || (ctx.owed.get(t) ?? 0n) > 0n);
  const claimTokens = await tokenFacts(sub, claimAddrs);
  requireTokens(ctx, claimTokens, ["path", "pool_address"]);
  const active = pos.stakes.filter((k) => isActive(k, ctx.head.timestamp));
  const calls: InnerCall[] = [];
  let collectAt = -1;
  if (pos.staked) calls.push(...unstakeCalls(ctx, tokenId, pos.stakes));
  const claimAt = calls.length;
  calls.push(...claimTokens.map((t) => claimCall(ctx, t.address, t.symbol)));
  if (b.collect_fees) {
    if (pos.staked) calls.push(withdrawTokenCall(ctx, tokenId));
    collectAt = calls.length;
    calls.push(collectCall(ctx, tokenId));
    if (pos.staked && b.restake) calls.push(depositCall(ctx, tokenId, active));
  } else if (pos.staked && b.restake) calls.push(...stakeCalls(ctx, tokenId, active));
  if (calls.length === 0) {
    throw new BuildRefusal(
      409,
      "nothing_to_claim",
      `Position ${tokenId} is not staked, the staker owes the Safe no reward of this pool's incentives, and ` +
        "collect_fees is false",
    );
  }
  const tx = moduleTransaction(sub.module, calls);
  const balTokens = [pool.token0.address, pool.token1.address, ...claimTokens.map((t) => t.address)].filter(
    (t, i, all) => all.indexOf(t) === i,
  );
  const rewardInfo: SimRead[] = pos.stakes.map((k) => ({
    to: staker!,
    abi: STAKER_ABI as Abi,
    functionName: "getRewardInfo",
    args: [k, tokenId],
  }));
  const bal = balTokens.map((t) => balanceRead(t, sub.safe));
  const before = [...bal, ...rewardInfo];
  const after = [
    ...bal,
    positionRead(ctx, tokenId),
    { to: uni.positionManager, abi: NPM_ABI as Abi, functionName: "ownerOf", args: [tokenId] },
  ];
  const sim = await simulateOrRefuse(ctx, tx, "claim_rewards", { before, after });
  const results = innerResults(tx, sim.returnData);
  const [f0, f1] =
    collectAt >= 0 ? npmResult<readonly [bigint, bigint]>("collect", results[collectAt]!) : ([0n, 0n] as const);
  const claimed = claimTokens.map((t, i) => {
    const reward = BigInt(results[claimAt + i]!);
    return { token: tokenOut(t), amount: units(reward, t.decimals) };
  });
  const received = balTokens.map(
    (_, i) => ((sim.after[i] as bigint | null) ?? 0n) - ((sim.before[i] as bigint | null) ?? 0n),
  );
  // a transaction that would move nothing: no fee, no reward, and the stakes left as they were
  const stakesKept = !pos.staked || (b.restake && active.length === pos.stakes.length);
  if (stakesKept && f0 === 0n && f1 === 0n && received.every((x) => x === 0n)) {
    throw new BuildRefusal(
      409,
      "nothing_to_claim",
      `Position ${tokenId} owes no fees and the staker owes the Safe no reward of this pool's incentives: the ` +
        "transaction would move nothing",
    );
  }
  const meta = new Map([pool.token0, pool.token1, ...claimTokens].map((t) => [t.address, t]));
  const owner = getAddress((sim.after[bal.length + 1] as Address | null) ?? sub.safe);
  return {
    tx,
    sim,
    extra: {
      pool: poolOut(pool),
      position: positionOut(ctx, positionFromRead(tokenId, sim.after[bal.length]), owner, owner === staker),
      fees: pair(ctx, f0, f1),
      incentive_rewards: pos.stakes.map((k, i) => {
        const info = sim.before[bal.length + i] as readonly [bigint, bigint] | null;
        const t = meta.get(k.rewardToken);
        return { incentive: incentiveOut(k), reward: units(info?.[0] ?? 0n, t?.decimals ?? 18) };
      }),
      rewards_claimed: claimed,
      received: balTokens.map((t, i) => {
        const m = meta.get(t)!;
        return { token: tokenOut(m), amount: units(received[i]!, m.decimals) };
      }),
      unstaked_from: pos.stakes.map(incentiveOut),
      restaked_in: pos.staked && b.restake ? active.map(incentiveOut) : [],
      simulated_timestamp: Number(sim.timestamp),
    },
  };
}
