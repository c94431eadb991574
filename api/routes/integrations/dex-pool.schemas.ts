/**
 * Request bodies and answers of the dex_pool builders (OpenAPI), and the functions that fill the
 * answers' shared parts: the pool, a position, an incentive. Prices are whole token1 per whole
 * token0; amounts are `{raw, amount}` (api/lib/build/payload.ts `Units`).
 */
import { z } from "@hono/zod-openapi";
import type { NpmPosition } from "../../../onchain/positions.js";
import { type IncentiveKey, incentiveId } from "../../../onchain/staker.js";
import { amountsFor, MAX_TICK, MIN_TICK, priceOfSqrt, priceOfTick, sqrtAtTick } from "../../../onchain/uniswap-math.js";
import { buildFields, Units, uintString, units } from "../../lib/build/payload.js";
import { strictInt, strictNumber } from "../../lib/router.js";
import type { DexCtx, Pool, Token } from "./dex-pool.lib.js";

const TokenId = uintString(256).openapi({
  description: "The position's NFT id on the chain's NonfungiblePositionManager",
  example: "42",
});
const Bps = (def: number, description: string) =>
  strictInt(z.number().int().min(0).max(10_000).default(def)).openapi({ description, example: def });
const Decimal = (description: string) =>
  z
    .string()
    .regex(/^\d+(\.\d+)?$/, "must be a decimal number as a string")
    .optional()
    .openapi({ description, example: "1.5" });
const Raw = (description: string, bits: 128 | 256 = 256) =>
  uintString(bits).optional().openapi({ description, example: "1500000" });

/** A tick of the pool's scale (TickMath's MIN_TICK..MAX_TICK). */
const Tick = strictInt(z.number().int().min(MIN_TICK).max(MAX_TICK));

/** The range of a new position: exactly one of these ways. */
export const rangeFields = {
  tick_lower: Tick.optional().openapi({
    description:
      "With tick_upper: the range in ticks, each within the tick scale (±887272), widened outwards to the pool's " +
      "tick spacing",
  }),
  tick_upper: Tick.optional(),
  price_lower: strictNumber(z.number().positive())
    .optional()
    .openapi({
      description:
        "With price_upper: the range in whole token1 per whole token0. token0 is the pool's token of the lower " +
        "address, so it depends on the chain: on Base WETH (0x4200…0006) in a WETH/USDC pool, so USDC per WETH, " +
        "about 3,300; on Ethereum USDC (0xA0b8…), so WETH per USDC, about 0.0003. The answer's `pool.token0` says " +
        "which; the example is Base's",
      example: 3000,
    }),
  price_upper: strictNumber(z.number().positive()).optional().openapi({ example: 3600 }),
  width_bps: strictInt(z.number().int().min(1).max(9_999)).optional().openapi({
    description: "The range [price × (1 − w), price × (1 + w)] around the current price, w = width_bps / 10 000",
    example: 1_000,
  }),
  full_range: z.literal(true).optional().openapi({ description: "The widest range the pool's tick spacing allows" }),
};

const common = {
  ...buildFields,
  max_slippage_bps: Bps(50, "How far below the simulated amounts the minimums are set, in basis points"),
  deadline_seconds: strictInt(z.number().int().min(30).max(86_400).default(1_800)).openapi({
    description: "The position manager's deadline: this many seconds after the head block's time",
  }),
};
const mins = {
  amount0_min_raw: Raw("Overrides the minimum of token0 the slippage bound would set"),
  amount1_min_raw: Raw("Overrides the minimum of token1 the slippage bound would set"),
};

export const DepositBody = z
  .strictObject({
    ...common,
    token_id: TokenId.optional().openapi({
      description: "An existing position of the subaccount to add to (increaseLiquidity); absent: mint a new one",
    }),
    amount0: Decimal("Token0 to deposit, in whole units"),
    amount0_raw: Raw("Token0 to deposit, in its smallest unit"),
    amount1: Decimal("Token1 to deposit, in whole units"),
    amount1_raw: Raw("Token1 to deposit, in its smallest unit"),
    ...rangeFields,
    ...mins,
  })
  .openapi("DexPoolDepositRequest", {
    // Base's WETH/USDC pool: token1 is USDC
    example: { chain: 8453, amount1: "3200", width_bps: 1000, max_slippage_bps: 50 },
  });

export const WithdrawBody = z
  .strictObject({
    ...common,
    token_id: TokenId,
    fraction: strictNumber(z.number().positive().max(1)).optional().openapi({
      description: "The share of the position's liquidity to take out (1: all of it)",
      example: 0.5,
    }),
    liquidity: Raw("Liquidity to take out, in the pool's units", 128),
    restake: z.boolean().default(true).openapi({
      description: "A staked position that keeps liquidity is deposited again in the incentives it was staked in",
    }),
    ...mins,
  })
  // a body fault: refused before the position is read (an empty one would be a 409 first)
  .superRefine((b, ctx) => {
    if ((b.fraction == null) === (b.liquidity == null)) {
      ctx.addIssue({ code: "custom", path: ["fraction"], message: "Give exactly one of fraction and liquidity" });
    }
  })
  .openapi("DexPoolWithdrawRequest", { example: { chain: 8453, token_id: "42", fraction: 0.5 } });

export const RebalanceBody = z
  .strictObject({
    ...common,
    token_id: TokenId,
    ...rangeFields,
    restake: z
      .boolean()
      .default(false)
      .openapi({
        description:
          "Stake the new position in the old one's incentives (its id is the simulated one: a mint on the chain " +
          "before this transaction, this Safe's own included, makes it fail, with the module's " +
          "UnexpectedPosition(minted, moved) when the Safe holds the simulated id)",
      }),
    ...mins,
  })
  .openapi("DexPoolRebalanceRequest", { example: { chain: 8453, token_id: "42", width_bps: 500 } });

export const ClaimBody = z
  .strictObject({
    ...buildFields,
    token_id: TokenId,
    collect_fees: z.boolean().default(true).openapi({
      description: "Collect the position's fees (a staked position is taken out of the staker for it and put back)",
    }),
    restake: z.boolean().default(true).openapi({
      description: "A staked position is staked again in its incentives that still run",
    }),
  })
  .openapi("DexPoolClaimRewardsRequest", { example: { chain: 8453, token_id: "42" } });

export const TokenSchema = z
  .object({ address: z.string(), symbol: z.string(), decimals: z.number().int() })
  .openapi("DexToken");

export const PoolSchema = z
  .object({
    address: z.string(),
    token0: TokenSchema,
    token1: TokenSchema,
    fee: z.number().int().openapi({ description: "In hundredths of a basis point", example: 500 }),
    tick_spacing: z.number().int(),
    tick: z.number().int(),
    sqrt_price_x96: z.string(),
    price: z.number().openapi({ description: "Whole token1 per whole token0" }),
  })
  .openapi("DexPoolState");

export const IncentiveSchema = z
  .object({
    id: z.string().openapi({ description: "keccak256 of the key, the staker's incentive id" }),
    reward_token: z.string(),
    pool: z.string(),
    start_time: z.number().int(),
    end_time: z.number().int(),
    refundee: z.string(),
  })
  .openapi("DexIncentive");

export const PositionSchema = z
  .object({
    token_id: z.string().openapi({
      description:
        "The position NFT's id. After a mint: the id the simulated mint got. The position manager numbers every " +
        "mint in turn, so a mint by anyone mined first gives this one a later id: read it from the receipt's " +
        "Transfer event",
    }),
    owner: z
      .string()
      .openapi({ description: "The NFT's holder: the Safe, or the v3 staker holding the Safe's deposit" }),
    staked: z.boolean(),
    tick_lower: z.number().int(),
    tick_upper: z.number().int(),
    price_lower: z.number(),
    price_upper: z.number(),
    in_range: z.boolean(),
    liquidity: z.string(),
    amount0: Units.openapi({ description: "Token0 the liquidity holds at the pool's price" }),
    amount1: Units,
    tokens_owed0: Units.openapi({ description: "Token0 owed to the position and not yet collected" }),
    tokens_owed1: Units,
  })
  .openapi("DexPosition");

export const PairSchema = z.object({ amount0: Units, amount1: Units }).openapi("DexAmounts");

export const tokenOut = (t: Token) => ({ address: t.address, symbol: t.symbol, decimals: t.decimals });

export function poolOut(p: Pool) {
  return {
    address: p.address,
    token0: tokenOut(p.token0),
    token1: tokenOut(p.token1),
    fee: p.fee,
    tick_spacing: p.tickSpacing,
    tick: p.tick,
    sqrt_price_x96: p.sqrtPriceX96.toString(),
    price: priceOfSqrt(p.sqrtPriceX96, p.token0.decimals, p.token1.decimals),
  };
}

export const incentiveOut = (k: IncentiveKey) => ({
  id: incentiveId(k),
  reward_token: k.rewardToken,
  pool: k.pool,
  start_time: Number(k.startTime),
  end_time: Number(k.endTime),
  refundee: k.refundee,
});

export const pair = (ctx: DexCtx, a0: bigint, a1: bigint) => ({
  amount0: units(a0, ctx.pool.token0.decimals),
  amount1: units(a1, ctx.pool.token1.decimals),
});

/** A position as the answer shows it, its amounts at the pool's current price. */
export function positionOut(
  ctx: DexCtx,
  p: { tokenId: bigint; tickLower: number; tickUpper: number; liquidity: bigint; owed0: bigint; owed1: bigint },
  owner: string,
  staked: boolean,
) {
  const { token0, token1, sqrtPriceX96: sp } = ctx.pool;
  const held = amountsFor(p.liquidity, sp, sqrtAtTick(p.tickLower), sqrtAtTick(p.tickUpper));
  return {
    token_id: p.tokenId.toString(),
    owner,
    staked,
    tick_lower: p.tickLower,
    tick_upper: p.tickUpper,
    price_lower: priceOfTick(p.tickLower, token0.decimals, token1.decimals),
    price_upper: priceOfTick(p.tickUpper, token0.decimals, token1.decimals),
    in_range: ctx.pool.tick >= p.tickLower && ctx.pool.tick < p.tickUpper,
    liquidity: p.liquidity.toString(),
    amount0: units(held.amount0, token0.decimals),
    amount1: units(held.amount1, token1.decimals),
    tokens_owed0: units(p.owed0, token0.decimals),
    tokens_owed1: units(p.owed1, token1.decimals),
  };
}

/** A position read back from `positions(tokenId)` (a simulation's read). */
export function positionFromRead(tokenId: bigint, r: unknown) {
  const [, , , , , tickLower, tickUpper, liquidity, , , owed0, owed1] = r as NpmPosition;
  return { tokenId, tickLower, tickUpper, liquidity, owed0, owed1 };
}
