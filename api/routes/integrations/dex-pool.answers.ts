/**
 * The answers of the four dex_pool builders: the shared transaction payload
 * (TransactionPayloadSchema) extended with what the simulated transaction does to the position
 * and the Safe's tokens.
 */
import { z } from "@hono/zod-openapi";
import { TransactionPayloadSchema, Units } from "../../lib/build/payload.js";
import { IncentiveSchema, PairSchema, PoolSchema, PositionSchema, TokenSchema } from "./dex-pool.schemas.js";

const when = {
  simulated_timestamp: z.number().int().openapi({ description: "The simulated block's time (unix seconds)" }),
};
const deadline = {
  deadline: z.number().int().openapi({ description: "The position manager's deadline (unix seconds)" }),
};
const slippage = {
  minimums: PairSchema.openapi({ description: "The minimums the transaction enforces" }),
  max_slippage_bps: z.number().int(),
};
const staking = {
  unstaked_from: z.array(IncentiveSchema).openapi({ description: "Incentives the position is unstaked from" }),
  restaked_in: z.array(IncentiveSchema).openapi({ description: "Incentives it is staked in again" }),
};
const TokenAmount = z.object({ token: TokenSchema, amount: Units }).openapi("DexTokenAmount");
const StakerRewardsAccrued = z.array(TokenAmount).openapi({
  description: "Rewards the unstaking credits to the Safe in the staker (claim them with claim_rewards)",
});

export const DepositAnswer = TransactionPayloadSchema.extend({
  operation: z.enum(["mint", "increase"]),
  pool: PoolSchema,
  position: PositionSchema.openapi({
    description: "The position after the transaction (a mint: the simulated token id)",
  }),
  liquidity_added: z.string(),
  deposited: PairSchema.openapi({ description: "What the pool takes from the Safe" }),
  desired: PairSchema.openapi({ description: "The desired amounts (the exact approvals)" }),
  ...slippage,
  ...staking,
  staker_rewards_accrued: StakerRewardsAccrued,
  ...when,
  ...deadline,
}).openapi("DexPoolDepositPayload");

export const WithdrawAnswer = TransactionPayloadSchema.extend({
  pool: PoolSchema,
  position_before: PositionSchema,
  position: PositionSchema.openapi({ description: "The position after the transaction" }),
  liquidity_removed: z.string(),
  withdrawn: PairSchema.openapi({ description: "What the liquidity taken out is worth (decreaseLiquidity)" }),
  fees: PairSchema.openapi({ description: "Fees (and anything else owed) collected besides" }),
  received: PairSchema.openapi({ description: "The Safe's balance changes" }),
  ...slippage,
  ...staking,
  staker_rewards_accrued: StakerRewardsAccrued,
  ...when,
  ...deadline,
}).openapi("DexPoolWithdrawPayload");

export const RebalanceAnswer = TransactionPayloadSchema.extend({
  pool: PoolSchema,
  position_before: PositionSchema,
  old_position: PositionSchema.openapi({ description: "The old position after the transaction: no liquidity" }),
  new_position: PositionSchema.openapi({ description: "The new position (its simulated token id)" }),
  liquidity_removed: z.string(),
  liquidity_added: z.string(),
  withdrawn: PairSchema,
  fees: PairSchema,
  deposited: PairSchema.openapi({ description: "What the new position takes" }),
  leftover: PairSchema.openapi({ description: "What came out and stays in the Safe" }),
  ...slippage,
  ...staking,
  staker_rewards_accrued: z.array(TokenAmount).openapi({
    description: "Rewards the unstaking credits to the Safe in the staker (claim them with claim_rewards)",
  }),
  ...when,
  ...deadline,
}).openapi("DexPoolRebalancePayload");

export const ClaimAnswer = TransactionPayloadSchema.extend({
  pool: PoolSchema,
  position: PositionSchema.openapi({ description: "The position after the transaction" }),
  fees: PairSchema.openapi({ description: "Fees collected (zero without collect_fees)" }),
  incentive_rewards: z
    .array(z.object({ incentive: IncentiveSchema, reward: Units }))
    .openapi({ description: "Each incentive's reward for the position at the simulated time (getRewardInfo)" }),
  rewards_claimed: z.array(TokenAmount).openapi({ description: "What each claimReward pays the Safe" }),
  received: z.array(TokenAmount).openapi({ description: "The Safe's balance changes, fees and rewards together" }),
  ...staking,
  ...when,
}).openapi("DexPoolClaimRewardsPayload");
