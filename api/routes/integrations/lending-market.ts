/**
 * POST /api/v1/integrations/lending_market/{market_token_address}/{supply|borrow|repay|withdraw}/{address}:
 * builds and simulates an Aave v3 operation of a subaccount through its SubaccountModule, and
 * answers the transaction (for the trader to sign; the service never sends it) with the account's
 * health factor, collateral and debt before and after it and the change of the Safe's balances,
 * all read in the simulated block. Needs a key with the scope `transactions:build`; every build
 * and refusal is recorded in registry.build_audit.
 */
import { createRoute, type RouteHandler, z } from "@hono/zod-openapi";
import { type Address, formatUnits } from "viem";
import { runBuild } from "../../lib/build/audit.js";
import {
  accountHealthSchema,
  allowBelowField,
  belowMinimum,
  healthField,
  healthFloor,
} from "../../lib/build/health-floor.js";
import { moduleTransaction } from "../../lib/build/module-call.js";
import {
  amountFields,
  amountOrAllFields,
  buildFields,
  builtResponse,
  TransactionPayloadSchema,
  transactionPayload,
  Units,
  units,
} from "../../lib/build/payload.js";
import { simulate } from "../../lib/build/simulate.js";
import { buildSubaccount } from "../../lib/build/subaccount.js";
import { type AppEnv, EvmAddress, keySecurity, nullableRef } from "../../lib/router.js";
import { requireScope } from "../../middleware/auth.js";
import { buildResponses, requireSimulated } from "./builder.lib.js";
import {
  accountReads,
  checkAmountForm,
  type Operation,
  planOperation,
  readAccount,
  resolveMarket,
} from "./lending-market.lib.js";
import { type AccountData, aaveChange, lowersHealth } from "./lending-market.minimum.js";

const rateMode = z.enum(["variable", "stable"]).optional().openapi({
  description: "Aave's interest rate mode of the debt (variable = 2, stable = 1); default variable",
  example: "variable",
});
const all = z
  .boolean()
  .optional()
  .openapi({
    description:
      "true: the whole position (Aave's type(uint256).max): all of the debt, or all that is supplied; give no amount " +
      "then",
    example: true,
  });

const base = { ...buildFields, ...amountFields };
const whole = { ...buildFields, ...amountOrAllFields, all };
const bodies = {
  supply: z.strictObject(base),
  borrow: z.strictObject({ ...base, interest_rate_mode: rateMode, allow_below_min_health_factor: allowBelowField }),
  repay: z.strictObject({ ...whole, interest_rate_mode: rateMode }),
  withdraw: z.strictObject({ ...whole, allow_below_min_health_factor: allowBelowField }),
} as const;

const example = (op: Operation) => ({
  chain: 8453,
  amount: op === "borrow" ? "1500" : "1000",
  ...(op === "borrow" || op === "repay" ? { interest_rate_mode: "variable" } : {}),
});

const Account = z
  .object({
    total_collateral_usd: z.number().openapi({ description: "Aave's totalCollateralBase (base currency: USD)" }),
    total_debt_usd: z.number(),
    available_borrows_usd: z.number(),
    total_collateral_base: z.string().openapi({ description: "Raw, 8 decimals" }),
    total_debt_base: z.string().openapi({ description: "Raw, 8 decimals" }),
    liquidation_threshold: z.number().openapi({ description: "Weighted, a fraction", example: 0.825 }),
    ltv: z.number().openapi({ description: "Weighted, a fraction", example: 0.8 }),
    health_factor: z.number().nullable().openapi({ description: "null without debt" }),
    health_factor_raw: z.string().nullable().openapi({ description: "Aave's value, 18 decimals; null without debt" }),
  })
  .openapi("LendingAccount");

const Change = z
  .object({
    token: z.string(),
    symbol: z.string(),
    decimals: z.number().int(),
    before: Units,
    after: Units,
    change: Units.openapi({ description: "after − before (negative: the balance fell)" }),
  })
  .openapi("BalanceChange");

const LendingTransaction = TransactionPayloadSchema.extend({
  operation: z.enum(["supply", "borrow", "repay", "withdraw"]),
  market: z.object({
    a_token: z.string(),
    pool: z.string(),
    underlying: z.object({ address: z.string(), symbol: z.string(), decimals: z.number().int() }),
    debt_token: z
      .string()
      .openapi({ description: "The debt token of the rate mode (variable unless stable was asked)" }),
    interest_rate_mode: z.enum(["variable", "stable"]).nullable().openapi({ description: "borrow and repay" }),
  }),
  amount: nullableRef(Units).openapi({ description: "As asked; null with all: true" }),
  all: z.boolean(),
  health_factor: z.object({ before: z.number().nullable(), after: z.number().nullable() }).openapi({
    description: "Aave's health factor of the Safe before and after, in the simulated block; null: no debt",
  }),
  account: z.object({ before: Account, after: Account }),
  subaccount_health_factor: accountHealthSchema(
    "this chain's Aave figures as the simulation read them after the transaction",
    "supply and repay (they cannot lower it), or ",
  ),
  balances: z
    .object({ underlying: Change, a_token: Change, debt_token: Change })
    .openapi({ description: "The Safe's balances before and after, in the simulated block" }),
}).openapi("LendingMarketTransaction");

const describeOp: Record<Operation, string> = {
  supply:
    "Supplies the underlying of `market_token_address` (an aToken of the chain's Aave v3 pool) from the Safe: " +
    "`executeWithApprovals` with an exact approval of the pool, reset to 0 by the module. The amount must be within " +
    "the Safe's balance.",
  borrow:
    "Borrows the underlying against the Safe's Aave collateral: `execute(pool, borrow(…, onBehalfOf = Safe))`. " +
    "Beyond what the collateral covers, Aave's '36' (COLLATERAL_CANNOT_COVER_NEW_BORROW) is the 409's reason.",
  repay:
    "Repays the Safe's debt in the underlying, with an exact approval reset to 0 after (an amount above the debt " +
    "repays the debt: Aave caps it). `all: true` repays the whole debt as of the block the transaction lands in " +
    "(Aave's type(uint256).max); its approval is the debt at simulation plus 0.1 % for the interest accrued until " +
    "then, and the Safe must hold the debt.",
  withdraw:
    "Withdraws the underlying to the Safe. `all: true` withdraws the whole aToken balance (Aave's " +
    "type(uint256).max). One that would drop the health factor below 1 is refused with Aave's '35' " +
    "(HEALTH_FACTOR_LOWER_THAN_LIQUIDATION_THRESHOLD).",
};

const floorText =
  "\n\nWhen the registry sets the subaccount a `min_health_factor`, its account-wide health factor (every chain, " +
  "venue and loan it borrows) is read beside the simulation and reported before and after " +
  "(`subaccount_health_factor`); one the transaction would take below the minimum, and lower than it was, is a 409 " +
  "`below_min_health_factor` unless `allow_below_min_health_factor` is true. With a debt no price values (a " +
  "Morpho borrow or a loan it borrows in a token without a feed) the health factor is unknown: a 409 " +
  "`health_factor_unknown`, naming the debt, unless `allow_below_min_health_factor` is true.";

function route(op: Operation) {
  return {
    tags: ["integrations"],
    summary: `Build an Aave v3 ${op} of a subaccount`,
    description:
      `${describeOp[op]}${lowersHealth(op) ? floorText : ""}\n\nThe answer is a transaction of the subaccount's ` +
      "SubaccountModule for its trader (`from`) to sign and send with `gas_limit`; the service never sends it. It " +
      "was simulated (eth_simulateV1) on top of the head, and the figures before and after (health factor, " +
      "collateral and debt in USD, the Safe's underlying, aToken and debt-token balances) are read in that " +
      "simulated block. Needs an API key with the scope `transactions:build`; every build and refusal is recorded " +
      "(registry.build_audit, `build_id`).",
    middleware: [requireScope("transactions:build")],
    security: keySecurity,
    request: {
      params: z.object({
        market_token_address: EvmAddress.openapi({
          description: "The aToken of the market (its UNDERLYING_ASSET_ADDRESS() is the token lent or borrowed)",
        }),
        address: EvmAddress.openapi({ description: "The subaccount (its Safe)" }),
      }),
      body: {
        required: true,
        content: {
          "application/json": {
            schema: bodies[op].openapi(`LendingMarket${op[0]!.toUpperCase()}${op.slice(1)}Request`, {
              example: example(op),
            }),
          },
        },
      },
    },
    responses: {
      200: builtResponse("The transaction, simulated, with the account before and after", LendingTransaction),
      ...buildResponses({
        404: "`unknown_subaccount`, or `unknown_market` (not an aToken of the chain's Aave pool)",
        409:
          "`simulation_failed` (each decoded revert in `reasons`: Aave's numbered errors by name, the module's " +
          "NotTrader, …), `stale_subaccount`, or for borrow and withdraw `below_min_health_factor` or " +
          "`health_factor_unknown`",
        422:
          "Validation error; also a token the module does not allow (`token_not_allowed`) or an amount above the " +
          "Safe's balance (`insufficient_balance`), before any simulation",
      }),
    },
  };
}

export const lendingMarketSupply = createRoute({
  method: "post",
  path: "/integrations/lending_market/{market_token_address}/supply/{address}",
  ...route("supply"),
});
export const lendingMarketBorrow = createRoute({
  method: "post",
  path: "/integrations/lending_market/{market_token_address}/borrow/{address}",
  ...route("borrow"),
});
export const lendingMarketRepay = createRoute({
  method: "post",
  path: "/integrations/lending_market/{market_token_address}/repay/{address}",
  ...route("repay"),
});
export const lendingMarketWithdraw = createRoute({
  method: "post",
  path: "/integrations/lending_market/{market_token_address}/withdraw/{address}",
  ...route("withdraw"),
});

function account(a: AccountData | null) {
  if (!a) throw new Error("getUserAccountData did not answer in the simulation");
  const [collateral, debt, available, threshold, ltv, hf] = a;
  const noDebt = debt === 0n;
  return {
    total_collateral_usd: Number(formatUnits(collateral, 8)),
    total_debt_usd: Number(formatUnits(debt, 8)),
    available_borrows_usd: Number(formatUnits(available, 8)),
    total_collateral_base: collateral.toString(),
    total_debt_base: debt.toString(),
    liquidation_threshold: Number(threshold) / 10_000,
    ltv: Number(ltv) / 10_000,
    health_factor: noDebt ? null : Number(formatUnits(hf, 18)),
    health_factor_raw: noDebt ? null : hf.toString(),
  };
}

function change(token: Address, symbol: string, decimals: number, before: unknown, after: unknown) {
  const b = (before as bigint | null) ?? 0n;
  const a = (after as bigint | null) ?? 0n;
  return {
    token,
    symbol,
    decimals,
    before: units(b, decimals),
    after: units(a, decimals),
    change: units(a - b, decimals),
  };
}

function handler(op: Operation): RouteHandler<typeof lendingMarketSupply, AppEnv> {
  return async (c) => {
    const { market_token_address: market, address } = c.req.valid("param");
    const body = c.req.valid("json") as z.infer<(typeof bodies)["repay"]> & { allow_below_min_health_factor?: boolean };
    return runBuild(c, `lending_market.${op}`, { ...body, address, market }, async () => {
      checkAmountForm(op, body);
      const sub = await buildSubaccount(c.var.deps, address, body.chain, body.from);
      const floor = healthFloor(c.var.deps, c.var.chainReads, sub, lowersHealth(op));
      const m = await resolveMarket(sub, market);
      const state = await readAccount(sub, m);
      const plan = planOperation(sub, m, state, op, body);
      const tx = moduleTransaction(sub.module, [plan.call], plan.approvals);
      const reads = accountReads(sub, m, plan.debtToken);
      const sim = await simulate(sub, tx, { before: reads, after: reads }, state.head);
      requireSimulated(sim, op);
      const t = m.underlying;
      const [accB, undB, aB, debtB] = sim.before;
      const [accA, undA, aA, debtA] = sim.after;
      const before = account(accB as AccountData | null);
      const after = account(accA as AccountData | null);
      const bal = (v: unknown) => (v as bigint | null) ?? 0n;
      const health = await floor.check(
        aaveChange(sub.chainId, {
          before: { account: accB as AccountData, underlying: bal(undB), aToken: bal(aB) },
          after: { account: accA as AccountData, underlying: bal(undA), aToken: bal(aA) },
          underlying: t,
        }),
      );
      if (health?.below && body.allow_below_min_health_factor !== true) throw belowMinimum(`The ${op}`, health);
      return {
        chainId: sub.chainId,
        subaccount: sub.safe,
        body: (buildId: string) => ({
          ...transactionPayload(buildId, sub, tx, sim),
          operation: op,
          market: {
            a_token: m.aToken,
            pool: m.pool,
            underlying: { address: t.address, symbol: t.symbol, decimals: t.decimals },
            debt_token: plan.debtToken,
            interest_rate_mode: plan.rateMode,
          },
          amount: plan.amount === null ? null : units(plan.amount, t.decimals),
          all: plan.amount === null,
          health_factor: { before: before.health_factor, after: after.health_factor },
          account: { before, after },
          subaccount_health_factor: healthField(health),
          balances: {
            underlying: change(t.address, t.symbol, t.decimals, undB, undA),
            a_token: change(m.aToken, m.aTokenSymbol, t.decimals, aB, aA),
            debt_token: change(plan.debtToken, plan.debtSymbol, t.decimals, debtB, debtA),
          },
        }),
      };
    });
  };
}

export const lendingMarketSupplyHandler = handler("supply");
export const lendingMarketBorrowHandler = handler("borrow") as unknown as RouteHandler<
  typeof lendingMarketBorrow,
  AppEnv
>;
export const lendingMarketRepayHandler = handler("repay") as unknown as RouteHandler<typeof lendingMarketRepay, AppEnv>;
export const lendingMarketWithdrawHandler = handler("withdraw") as unknown as RouteHandler<
  typeof lendingMarketWithdraw,
  AppEnv
>;
