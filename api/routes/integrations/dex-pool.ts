/**
 * POST /api/v1/integrations/dex_pool/{pool_address}/{deposit|withdraw|rebalance|claim_rewards}/{address}:
 * transactions on the subaccount's Uniswap v3 positions in a pool of the chain's factory, built
 * and simulated, never sent: the trader sends `target`/`data` with `gas_limit`. Each needs an API
 * key with `transactions:build`; every build and refusal is recorded (registry.build_audit).
 */
import { createRoute, type RouteHandler, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { runBuild } from "../../lib/build/audit.js";
import { builtResponse, transactionPayload } from "../../lib/build/payload.js";
import { BuildRefusalSchema } from "../../lib/build/refusal.js";
import { buildSubaccount } from "../../lib/build/subaccount.js";
import { type AppEnv, EvmAddress, jsonResponse, keySecurity, writeResponses } from "../../lib/router.js";
import { requireScope } from "../../middleware/auth.js";
import { ClaimAnswer, DepositAnswer, RebalanceAnswer, WithdrawAnswer } from "./dex-pool.answers.js";
import { buildClaim } from "./dex-pool.claim.js";
import { buildDeposit } from "./dex-pool.deposit.js";
import { loadDexCtx } from "./dex-pool.lib.js";
import { buildRebalance } from "./dex-pool.rebalance.js";
import { checkDepositForm, requireRange } from "./dex-pool.request.js";
import { ClaimBody, DepositBody, RebalanceBody, WithdrawBody } from "./dex-pool.schemas.js";
import { buildWithdraw } from "./dex-pool.withdraw.js";

const params = z.object({
  pool_address: EvmAddress.openapi({
    param: { in: "path" },
    description: "A Uniswap v3 pool of the chain's factory",
    example: "0xd0b53d9277642d899df5c87a3966a349a798f224",
  }),
  address: EvmAddress.openapi({
    param: { in: "path" },
    description: "The subaccount (its Safe)",
    example: "0x5b38da6a701c568545dcfcb03fcb875f56beddc4",
  }),
});

const REFUSALS =
  "Refusals: 404 `unknown_subaccount`, `unknown_pool` (not a pool of the chain's factory), `unknown_position`; 409 " +
  "`position_not_owned` (neither held by the Safe nor its deposit in the v3 staker), `stale_subaccount`, " +
  "`empty_position` (no liquidity to take out or move), `range_unfundable` (a rebalance whose range takes a token " +
  "the position yields none of), `nothing_to_claim`, `simulation_failed` (each decoded revert in `reasons`: " +
  "`NotTrader`, slippage, balances); 422 a bad body, `token_not_allowed` (the module's allow-list, checked before " +
  "simulating), `insufficient_balance` (a deposit taking more of a token than the Safe holds, before simulating); " +
  "503 the chain did not answer, or its node has neither eth_simulateV1 nor eth_call state overrides (`simulation_unsupported`).";

const refusalResponses = {
  ...writeResponses({}),
  404: jsonResponse("`unknown_subaccount`, `unknown_pool`, `unknown_position`", BuildRefusalSchema),
  409: jsonResponse("`position_not_owned`, `stale_subaccount`, `simulation_failed`, …", BuildRefusalSchema),
  503: jsonResponse("`chain_unavailable`, `no_rpc`, `simulation_unsupported`, `read_only`", BuildRefusalSchema),
};

function route<B extends z.ZodType, A extends z.ZodType>(
  op: string,
  summary: string,
  text: string,
  body: B,
  answer: A,
) {
  return {
    tags: ["integrations"],
    summary,
    description:
      `${text}\n\nRequires an API key with the scope \`transactions:build\`. The service builds and simulates ` +
      `(eth_simulateV1 from the trader); it never sends. ${REFUSALS}`,
    middleware: [requireScope("transactions:build")],
    security: keySecurity,
    request: {
      params,
      body: { required: true, content: { "application/json": { schema: body } } },
    },
    responses: { 200: builtResponse(`The ${op} transaction, simulated`, answer), ...refusalResponses },
  };
}

export const dexDeposit = createRoute({
  method: "post",
  path: "/integrations/dex_pool/{pool_address}/deposit/{address}",
  ...route(
    "deposit",
    "Build a deposit in a Uniswap v3 pool: a new position or more liquidity in one",
    "Mints a position for the Safe (NonfungiblePositionManager.mint) over the range given (ticks, prices in whole " +
      "token1 per token0, a width around the current price or the full range, widened to the pool's tick spacing), " +
      "or adds to `token_id` (increaseLiquidity; a position staked in the v3 staker is unstaked first and staked " +
      "again after in its incentives still running, so the staker counts the added liquidity), with exact approvals " +
      "of both tokens reset to 0 after. Give both amounts, or one and the other is what the range needs at the " +
      "current price. Minimums `max_slippage_bps` below the simulated amounts. The answer has the position after it " +
      "(a mint's simulated token id).",
    DepositBody,
    DepositAnswer,
  ),
});

export const dexWithdraw = createRoute({
  method: "post",
  path: "/integrations/dex_pool/{pool_address}/withdraw/{address}",
  ...route(
    "withdraw",
    "Build a withdrawal from a Uniswap v3 position",
    "decreaseLiquidity by a `fraction` of the position's liquidity or a `liquidity` amount, then collect everything " +
      "owed (the tokens and the fees) to the Safe, in one executeBatch. A position deposited in the v3 staker is " +
      "unstaked and taken out first (unstakeToken, withdrawToken) and, with `restake` and liquidity left, put back " +
      "staked.",
    WithdrawBody,
    WithdrawAnswer,
  ),
});

export const dexRebalance = createRoute({
  method: "post",
  path: "/integrations/dex_pool/{pool_address}/rebalance/{address}",
  ...route(
    "rebalance",
    "Build a range move of a Uniswap v3 position",
    "Takes all of `token_id`'s liquidity out and collects it (out of the v3 staker first if it is there), then mints " +
      "a position of the new range with what came out; what the new range does not take stays in the Safe. One " +
      "executeBatch with exact approvals.",
    RebalanceBody,
    RebalanceAnswer,
  ),
});

export const dexClaimRewards = createRoute({
  method: "post",
  path: "/integrations/dex_pool/{pool_address}/claim_rewards/{address}",
  ...route(
    "claim_rewards",
    "Build a claim of a Uniswap v3 position's fees and staker rewards",
    "Collects the position's fees to the Safe and, where it is staked in the v3 staker, unstakes it from each " +
      "incentive (its reward accrues), claims every reward token in full and stakes it again in the incentives still " +
      "running. Incentive keys come from the staker's IncentiveCreated logs.",
    ClaimBody,
    ClaimAnswer,
  ),
});

type Ctx = Awaited<ReturnType<typeof loadDexCtx>>;
interface Built {
  tx: Parameters<typeof transactionPayload>[2];
  sim: Parameters<typeof transactionPayload>[3];
  extra: object;
}

/** Resolves the subaccount and the pool, runs the builder, answers through the build audit. */
function serve<B extends { chain: number; from?: string | undefined; token_id?: string | number | undefined }>(
  c: Context<AppEnv>,
  action: string,
  path: { pool_address: string; address: string },
  body: B,
  build: (ctx: Ctx, body: B) => Promise<Built>,
  /** what is wrong with the request on its face: a 422 before any read */
  precheck: (body: B) => void = () => {},
) {
  return runBuild(c, action, { ...body, ...path }, async () => {
    precheck(body);
    const sub = await buildSubaccount(c.var.deps, path.address, body.chain, body.from);
    const ctx = await loadDexCtx(sub, path.pool_address, body.token_id != null ? BigInt(body.token_id) : null);
    const r = await build(ctx, body);
    return {
      chainId: sub.chainId,
      subaccount: sub.safe,
      body: (id: string) => ({ ...transactionPayload(id, sub, r.tx, r.sim), ...r.extra }),
    };
  });
}

export const dexDepositHandler: RouteHandler<typeof dexDeposit, AppEnv> = async (c) =>
  serve(c, "dex_pool.deposit", c.req.valid("param"), c.req.valid("json"), buildDeposit, checkDepositForm) as never;
export const dexWithdrawHandler: RouteHandler<typeof dexWithdraw, AppEnv> = async (c) =>
  serve(c, "dex_pool.withdraw", c.req.valid("param"), c.req.valid("json"), buildWithdraw) as never;
export const dexRebalanceHandler: RouteHandler<typeof dexRebalance, AppEnv> = async (c) =>
  serve(c, "dex_pool.rebalance", c.req.valid("param"), c.req.valid("json"), buildRebalance, (b) =>
    requireRange(b, "the new range"),
  ) as never;
export const dexClaimRewardsHandler: RouteHandler<typeof dexClaimRewards, AppEnv> = async (c) =>
  serve(c, "dex_pool.claim_rewards", c.req.valid("param"), c.req.valid("json"), buildClaim) as never;
