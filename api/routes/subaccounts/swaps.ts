/**
 * POST /api/v1/subaccounts/{address}/swaps: an exact-input swap for a subaccount, built and
 * simulated, never sent. Every route the chain offers is quoted (Uniswap v3 at each fee tier
 * with a pool, Uniswap v2 pairs; direct or two hops through WETH or a stablecoin), built as a
 * call of the subaccount's module and simulated from the trader; the answer is the route whose
 * simulation passes with the most out (swaps.build.ts), checked against the subaccount's
 * min_health_factor.
 */
import { createRoute, type RouteHandler, z } from "@hono/zod-openapi";
import { runBuild } from "../../lib/build/audit.js";
import { accountHealthSchema, allowBelowField } from "../../lib/build/health-floor.js";
import {
  amountFields,
  buildFields,
  builtResponse,
  SimulationSchema,
  TransactionPayloadSchema,
  Units,
} from "../../lib/build/payload.js";
import { BuildRefusalSchema } from "../../lib/build/refusal.js";
import { ValidationErrorSchema } from "../../lib/errors.js";
import {
  type AppEnv,
  EvmAddress,
  jsonResponse,
  keySecurity,
  nullableRef,
  strictInt,
  writeResponses,
} from "../../lib/router.js";
import { requireScope } from "../../middleware/auth.js";
import { buildSwap, DEFAULT_MAX_PRICE_IMPACT_BPS } from "./swaps.build.js";

const USDC = "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913";
const WETH = "0x4200000000000000000000000000000000000006";

export const SwapQuoteRequest = z
  .strictObject({
    ...buildFields,
    token_in: EvmAddress.openapi({ description: "The token the Safe sells", example: USDC }),
    token_out: EvmAddress.openapi({ description: "The token the Safe buys", example: WETH }),
    amount: amountFields.amount.openapi({ description: 'Exact input, in whole token_in units, e.g. "1000.5"' }),
    amount_raw: amountFields.amount_raw.openapi({ description: "Exact input, in token_in's smallest unit" }),
    max_slippage_bps: strictInt(z.number().int().min(0).max(5_000).default(50)).openapi({
      description:
        "How far below the route's quote the swap may return (the transaction's minimum out is the quote less this), " +
        "in basis points",
    }),
    max_price_impact_bps: strictInt(z.number().int().min(0).max(10_000))
      .optional()
      .openapi({
        description:
          "How far below the input's fair value (`fair_out`) the swap may return, in basis points (fees " +
          "included). At the feeds (both tokens have one), every route's minimum out is raised to that " +
          "floor when it is higher, so a route that cannot meet it fails its simulation. Without a feed " +
          "for both tokens, each route is measured against its own pools' price before the trade (as " +
          "Uniswap's interface measures price impact), and the bound is held to the route that gives the " +
          "most: above it, 409 price_impact_too_high (no route that gives less is chosen instead, no " +
          "minimum raised). Without it, a best route more than " +
          `${DEFAULT_MAX_PRICE_IMPACT_BPS / 100} % below its fair value (where Uniswap's interface blocks a ` +
          "trade for non-experts) is refused, 409 price_impact_too_high; 10000 lifts every bound",
      }),
    deadline_s: strictInt(z.number().int().min(1).max(86_400).default(600)).openapi({
      description: "The swap's deadline, seconds after the head block's timestamp",
    }),
    allow_below_min_health_factor: allowBelowField,
  })
  .openapi("SwapQuoteRequest", {
    example: { chain: 8453, token_in: USDC, token_out: WETH, amount: "1000", max_slippage_bps: 50 },
  });
export type SwapQuoteBody = z.infer<typeof SwapQuoteRequest>;

const TokenSchema = z
  .object({
    address: z.string(),
    symbol: z.string(),
    decimals: z.number().int(),
    price_usd: z.number().nullable().openapi({ description: "Its price feed's answer (null without a feed)" }),
  })
  .openapi("SwapToken");

const RouteFields = {
  venue: z.enum(["uniswap_v3", "uniswap_v2"]).openapi({ description: "One venue a route" }),
  route: z.string().openapi({
    description: "Symbols and fee tiers (`v2` for a Uniswap v2 pair's hop)",
    example: "USDC/500/WETH",
  }),
  kind: z.enum(["exact_input_single", "exact_input", "swap_exact_tokens_for_tokens"]).openapi({
    description: "The router function: v3 SwapRouter's, or v2 Router02's `swapExactTokensForTokens`",
  }),
  path: z.array(z.string()).openapi({ description: "Token addresses, in to out" }),
  symbols: z.array(z.string()),
  fees: z.array(z.number().int()).openapi({
    description: "Each hop's fee tier, in hundredths of a basis point (3000 on a v2 pair: its 0.3 %)",
  }),
  pools: z.array(z.string()).openapi({ description: "Each hop's pool (v3) or pair (v2)" }),
};

const ImpactBps = z
  .number()
  .nullable()
  .openapi({
    description:
      "How far the expected out is below the input's fair value (`fair_out_basis`: at the feeds, amount_in × " +
      "price_in / price_out; or at the route's own pools' price before the trade), in basis points, fees included; " +
      "negative when above; null when neither answered",
  });

const SwapQuote = z
  .object({
    ...RouteFields,
    amount_in: Units,
    expected_out: Units.openapi({ description: "QuoterV2's quote (v3), Router02's getAmountsOut (v2)" }),
    minimum_out: Units.openapi({ description: "The transaction's amountOutMinimum, also checked by the module" }),
    fair_out: nullableRef(Units).openapi({
      description: "The input's fair value in token_out, the reference of `price_impact_bps` (see `fair_out_basis`)",
    }),
    fair_out_basis: z
      .enum(["feeds", "pools"])
      .nullable()
      .openapi({
        description:
          "`feeds`: both tokens' price feeds value the input; `pools`: one token has no feed (or answer), so each " +
          "route is measured against its own pools' price before the trade (Uniswap's mid price: slot0 on v3, the " +
          "reserves on v2; no fee, no impact); null when neither answered",
      }),
    price_impact_bps: ImpactBps,
    max_slippage_bps: z.number().int(),
    max_price_impact_bps: z.number().int().nullable().openapi({
      description: "The request's bound (null: none given; the default refusal above 15 % applied)",
    }),
    deadline: z.number().int().openapi({ description: "Unix seconds" }),
    quoter_gas_estimate: z
      .string()
      .nullable()
      .openapi({ description: "QuoterV2's gas estimate of the swap; null on v2 (its quote gives none)" }),
  })
  .openapi("SwapQuote");

const Balance = z.object({ before: Units, after: Units });

const SwapSimulation = SimulationSchema.extend({
  amount_in: Units.openapi({ description: "What the Safe spent in the simulation" }),
  amount_out: Units.openapi({ description: "What the Safe received in the simulation" }),
  token_in_balance: Balance,
  token_out_balance: Balance,
  leftover_allowance_raw: z
    .string()
    .nullable()
    .openapi({ description: "The Safe's token_in allowance to the router after it: 0, the module resets it" }),
}).openapi("SwapSimulation");

const DecodedReason = z
  .object({ kind: z.string(), name: z.string(), message: z.string(), data: z.string() })
  .openapi("SwapDecodedReason");

const SwapCandidate = z
  .object({
    ...RouteFields,
    outcome: z.enum(["lower_out", "quote_failed", "simulation_failed"]),
    why: z.string(),
    expected_out: nullableRef(Units),
    minimum_out: nullableRef(Units),
    price_impact_bps: ImpactBps,
    simulation: z
      .object({ success: z.boolean(), gas_used: z.string(), amount_out: nullableRef(Units) })
      .nullable()
      .openapi({ description: "null when the route was not simulated (its quote failed)" }),
    reason: nullableRef(DecodedReason).openapi({ description: "The decoded revert of its quote or simulation" }),
  })
  .openapi("SwapCandidate");

export const SwapTransactionPayload = TransactionPayloadSchema.extend({
  token_in: TokenSchema,
  token_out: TokenSchema,
  quote: SwapQuote,
  simulation: SwapSimulation,
  candidates: z.array(SwapCandidate).openapi({ description: "Every other route, with why it lost" }),
  subaccount_health_factor: accountHealthSchema(
    "what the Safe holds changes by the simulation's amounts in and out, valued at the feeds the account is valued " +
      "at (a swap's fees and price impact lower it)",
    "",
  ),
}).openapi("SwapTransactionPayload");
export type SwapPayload = z.infer<typeof SwapTransactionPayload>;

export const swapRoute = createRoute({
  method: "post",
  path: "/subaccounts/{address}/swaps",
  tags: ["subaccounts"],
  summary: "Build the best swap for a subaccount",
  description: [
    "Requires an API key with the scope `transactions:build`. Quotes every route from `token_in` to `token_out` on " +
      "the venues of the chain's protocols entry (Uniswap v3 at each fee tier with a pool, with QuoterV2; Uniswap v2 " +
      "pairs, with Router02's `getAmountsOut`; direct or two hops through WETH or a stablecoin of the chain, one " +
      "venue a route), builds each as the subaccount module's `executeWithApprovals` (an exact approval of the input " +
      "to the venue's router, reset to 0 after; the swap pays the Safe, with its minimum out = the quote less " +
      "`max_slippage_bps`), simulates each from the sender in one `eth_simulateV1` per route, and returns the route " +
      "whose simulation passes with the most out, as `target`, `data` and `value` for the sender to sign. The " +
      "service never sends it.",
    "Refusals: 422 a token the module does not allow (before any quote or simulation; `loc` names the field), " +
      "`insufficient_balance` (an amount above the Safe's token_in balance, before any simulation), the same token " +
      "in and out, a malformed body; 404 `unknown_subaccount`; 409 `no_route` (no pool route), `simulation_failed` " +
      "(no route passes: each route's decoded reason in `reasons`, e.g. `NotTrader`, `Too little received`), " +
      "`price_impact_too_high` (the best route quotes further below its fair value than `max_price_impact_bps` " +
      "without both feeds, or than 15 % when none is given), `below_min_health_factor` (below), `stale_subaccount`; " +
      "503 `no_rpc`, `chain_unavailable` (also for any chain of the account when its minimum is checked), " +
      "`simulation_unsupported` (the node has neither eth_simulateV1 nor eth_call state overrides). Every build and refusal is recorded in the build " +
      "audit.",
    "When the registry sets the subaccount a `min_health_factor`, its account-wide health factor (every chain, venue " +
      "and loan it borrows) is read beside the simulations and reported before and after the chosen route " +
      "(`subaccount_health_factor`): what the swap gives up to fees and price impact lowers what secures the loans " +
      "it borrows (the venues' factors count only their own collateral, which a swap does not touch). One the swap " +
      "would take below the minimum, and lower than it was, is a 409 `below_min_health_factor` unless " +
      "`allow_below_min_health_factor` is true (no other route does better: the chosen one gives the most out); " +
      "with a debt no price values, the health factor is unknown: a 409 `health_factor_unknown` unless allowed.",
  ].join("\n\n"),
  middleware: [requireScope("transactions:build")] as const,
  security: keySecurity,
  request: {
    params: z.object({
      address: EvmAddress.openapi({ param: { in: "path" }, description: "The subaccount (its Safe)" }),
    }),
    body: { required: true, content: { "application/json": { schema: SwapQuoteRequest } } },
  },
  responses: {
    200: builtResponse(
      "The chosen route's transaction, its quote and simulation, and the routes that lost",
      SwapTransactionPayload,
    ),
    ...writeResponses({}),
    404: jsonResponse("`unknown_subaccount`", BuildRefusalSchema),
    409: jsonResponse(
      "`no_route`, `simulation_failed` (with `reasons`), `price_impact_too_high`, `below_min_health_factor`, " +
        "`health_factor_unknown`, `stale_subaccount`",
      BuildRefusalSchema,
    ),
    422: jsonResponse("Validation error, or a token the module does not allow", ValidationErrorSchema),
    503: jsonResponse("`no_rpc`, `chain_unavailable`, `simulation_unsupported`, `read_only`", BuildRefusalSchema),
  },
});

export const swapHandler: RouteHandler<typeof swapRoute, AppEnv> = async (c) => {
  const { address } = c.req.valid("param");
  const body = c.req.valid("json");
  return runBuild(c, "swap", { address, ...body }, () =>
    buildSwap(c.var.deps, c.var.chainReads, address, body),
  ) as never;
};
