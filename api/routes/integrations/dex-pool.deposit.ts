/**
 * The deposit builder: a new position (NonfungiblePositionManager.mint, recipient the Safe) or
 * more liquidity in one of the subaccount's (increaseLiquidity), with exact approvals of both
 * tokens to the position manager. Given one side, the other is what the range needs at the
 * current price. What the pool will take is computed from the state the build read (the pool's
 * own arithmetic, `mintAmounts`); the minimums sit `max_slippage_bps` below it, and the transaction
 * with those is simulated once: that is the one returned, with the amounts the simulation moved.
 * A position staked in the v3 staker is unstaked first and staked again after, in the incentives
 * that still run: the staker pays on the liquidity it recorded at the stake, so liquidity added
 * under a standing stake would earn no reward.
 */
import type { z } from "@hono/zod-openapi";
import { type Abi, type Address, encodeFunctionData } from "viem";
import { isActive } from "../../../onchain/staker.js";
import { amountsFor, liquidityFor0, liquidityFor1, mintAmounts, sqrtAtTick } from "../../../onchain/uniswap-math.js";
import { type InnerCall, moduleTransaction } from "../../lib/build/module-call.js";
import { wholeText } from "../../lib/build/payload.js";
import { BuildRefusal } from "../../lib/build/refusal.js";
import type { Simulation } from "../../lib/build/simulate.js";
import { mintCall, positionApprovals, stakeCalls, unstakeCalls } from "./dex-pool.calls.js";
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
  requireTokens,
  simulateOrRefuse,
} from "./dex-pool.lib.js";
import { explicitMins, resolveRange, sideAmount } from "./dex-pool.request.js";
import { type DepositBody, incentiveOut, pair, poolOut, positionFromRead, positionOut } from "./dex-pool.schemas.js";

type Body = z.infer<typeof DepositBody>;

/** The desired amounts: as given, or the given side and what the range needs of the other. */
function desiredAmounts(ctx: DexCtx, b: Body, range: { lower: number; upper: number }) {
  const { token0, token1, sqrtPriceX96: sp } = ctx.pool;
  const a0 = sideAmount(b, "amount0", token0.decimals);
  const a1 = sideAmount(b, "amount1", token1.decimals);
  // one of them at least: checkDepositForm, before the read (dex-pool.ts)
  if (a0 != null && a1 != null) return { d0: a0, d1: a1 };
  const [sa, sb] = [sqrtAtTick(range.lower), sqrtAtTick(range.upper)];
  const pad = (x: bigint) => (x > 0n ? x + x / 100_000n + 1n : 0n);
  if (a0 != null) {
    if (sp >= sb)
      throw BuildRefusal.field(
        ["body", "amount0"],
        "The range is below the current price: it takes only token1 (amount1)",
      );
    const l = liquidityFor0(a0, sp, sa, sb);
    if (l === 0n) throw BuildRefusal.field(["body", "amount0"], "Too small to add any liquidity");
    return { d0: a0, d1: pad(amountsFor(l, sp, sa, sb, true).amount1) };
  }
  if (sp <= sa)
    throw BuildRefusal.field(
      ["body", "amount1"],
      "The range is above the current price: it takes only token0 (amount0)",
    );
  const l = liquidityFor1(a1!, sp, sa, sb);
  if (l === 0n) throw BuildRefusal.field(["body", "amount1"], "Too small to add any liquidity");
  return { d0: pad(amountsFor(l, sp, sa, sb, true).amount0), d1: a1! };
}

/**
 * What the pool will take of each token against what the Safe holds: above it, a 422
 * `insufficient_balance` on the amount that asked for it (the other side's, when that side was
 * derived from it), before any simulation or encoding (a derived amount may exceed a uint256).
 */
function requireHeld(ctx: DexCtx, b: Body, take: readonly [bigint, bigint]) {
  const tokens = [ctx.pool.token0, ctx.pool.token1] as const;
  const fieldOf = (side: "amount0" | "amount1") =>
    b[`${side}_raw`] != null ? `${side}_raw` : b[side] != null ? side : null;
  for (const i of [0, 1] as const) {
    const have = ctx.balances[i]!;
    if (take[i] <= have) continue;
    const t = tokens[i];
    const own = fieldOf(i === 0 ? "amount0" : "amount1");
    // the short token's own amount when given, else the other one, which sets it at the pool's price
    const field = own ?? fieldOf(i === 0 ? "amount1" : "amount0")!;
    const amount = (x: bigint) => `${wholeText(x, t.decimals)} ${t.symbol}`;
    const takes = own ? "the deposit takes" : `for the ${field} given the deposit takes token${i}:`;
    throw BuildRefusal.field(
      ["body", field],
      `Above the Safe's balance: ${takes} ${amount(take[i])} at the pool's price, the Safe holds ${amount(have)}`,
      "insufficient_balance",
    );
  }
}

export async function buildDeposit(ctx: DexCtx, b: Body) {
  const { pool, sub, uni } = ctx;
  const npm = uni.positionManager;
  const tokenId = b.token_id != null ? BigInt(b.token_id) : null;
  // a range for a mint, none for an increase: checkDepositForm, before the read (dex-pool.ts)
  const existing = tokenId != null ? loadPosition(ctx) : null;
  const range = existing ? { lower: existing.tickLower, upper: existing.tickUpper } : resolveRange(pool, b)!;
  const { d0, d1 } = desiredAmounts(ctx, b, range);
  const spent = [pool.token0, pool.token1].filter((_, i) => (i === 0 ? d0 : d1) > 0n);
  requireTokens(ctx, tokenId == null ? [pool.token0, pool.token1] : spent, ["path", "pool_address"]);
  const deadline = ctx.head.timestamp + BigInt(b.deadline_seconds);
  const approvals = positionApprovals(ctx, d0, d1);
  // a staked position's new liquidity counts for the staker only once staked again
  const stakes = existing?.staked ? existing.stakes : [];
  const restakeIn = stakes.filter((k) => isActive(k, ctx.head.timestamp));
  const pre = tokenId != null && stakes.length ? unstakeCalls(ctx, tokenId, stakes) : [];
  const post = tokenId != null && restakeIn.length ? stakeCalls(ctx, tokenId, restakeIn) : [];
  const call = (m0: bigint, m1: bigint): InnerCall =>
    tokenId == null
      ? mintCall(
          ctx,
          range,
          { d0, d1 },
          { m0, m1 },
          deadline,
          `mint a ${pool.token0.symbol}/${pool.token1.symbol} position [${range.lower}, ${range.upper}] for the Safe`,
        )
      : {
          target: npm,
          value: 0n,
          description: `add liquidity to position ${tokenId}`,
          data: encodeFunctionData({
            abi: NPM_ABI,
            functionName: "increaseLiquidity",
            args: [{ tokenId, amount0Desired: d0, amount1Desired: d1, amount0Min: m0, amount1Min: m1, deadline }],
          }),
        };
  const op = tokenId == null ? "deposit (mint)" : "deposit (increaseLiquidity)";
  const balances = ctx.balances;
  const hint = () => {
    const short = [pool.token0, pool.token1]
      .map((t, i) => ({ t, have: balances[i]!, want: i === 0 ? d0 : d1 }))
      .filter((x) => x.want > x.have)
      .map(
        (x) =>
          `The Safe holds ${wholeText(x.have, x.t.decimals)} ${x.t.symbol}, the deposit may take up to ` +
          `${wholeText(x.want, x.t.decimals)}`,
      );
    return short.length ? short.join("; ") : null;
  };
  const decode = (tx: ReturnType<typeof moduleTransaction>, sim: Simulation) => {
    const data = innerResults(tx, sim.returnData)[pre.length]!;
    if (tokenId == null) {
      const [id, l, u0, u1] = npmResult<readonly [bigint, bigint, bigint, bigint]>("mint", data);
      return { id, l, u0, u1 };
    }
    const [l, u0, u1] = npmResult<readonly [bigint, bigint, bigint]>("increaseLiquidity", data);
    return { id: tokenId, l, u0, u1 };
  };
  const expected = mintAmounts(pool, range.lower, range.upper, d0, d1);
  requireHeld(ctx, b, [expected.amount0, expected.amount1]);
  const given = explicitMins(b);
  const m0 = given.min0 ?? minOf(expected.amount0, b.max_slippage_bps);
  const m1 = given.min1 ?? minOf(expected.amount1, b.max_slippage_bps);
  const tx = moduleTransaction(sub.module, [...pre, call(m0, m1), ...post], approvals);
  const accrual = accrualReads(ctx, stakes);
  const reads = [
    balanceRead(pool.token0.address, sub.safe),
    balanceRead(pool.token1.address, sub.safe),
    ...accrual.reads,
  ];
  // an increase reads its position after; a mint's new position is what the mint returned, the
  // Safe its recipient, nothing owed yet (its id is not known before the simulation)
  const after =
    tokenId == null
      ? reads
      : [
          ...reads,
          positionRead(ctx, tokenId),
          { to: npm, abi: NPM_ABI as Abi, functionName: "ownerOf", args: [tokenId] },
        ];
  const sim = await simulateOrRefuse(ctx, tx, op, { before: reads, after }, hint);
  const done = decode(tx, sim);
  const owner = (sim.after[reads.length + 1] as Address | null | undefined) ?? sub.safe;
  const position = sim.after[reads.length]
    ? positionFromRead(done.id, sim.after[reads.length])
    : { tokenId: done.id, tickLower: range.lower, tickUpper: range.upper, liquidity: done.l, owed0: 0n, owed1: 0n };
  return {
    tx,
    sim,
    extra: {
      operation: tokenId == null ? ("mint" as const) : ("increase" as const),
      pool: poolOut(pool),
      position: positionOut(ctx, position, owner, uni.staker != null && owner === uni.staker),
      liquidity_added: done.l.toString(),
      deposited: pair(ctx, done.u0, done.u1),
      minimums: pair(ctx, m0, m1),
      desired: pair(ctx, d0, d1),
      max_slippage_bps: b.max_slippage_bps,
      unstaked_from: stakes.map(incentiveOut),
      restaked_in: restakeIn.map(incentiveOut),
      staker_rewards_accrued: await accrual.out(sim, 2),
      simulated_timestamp: Number(sim.timestamp),
      deadline: Number(deadline),
    },
  };
}
