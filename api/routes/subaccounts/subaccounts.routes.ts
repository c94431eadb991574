/**
 * Route definitions of /api/v1/subaccounts: the list, a subaccount's health factor and its
 * summary. The spec marks all three with a key. A subaccount is a smart-contract wallet a vault
 * owns (a Safe with our SubaccountModule), the same address on every chain it is registered on.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { ChainIdParam } from "../../lib/chain.js";
import { ErrorSchema } from "../../lib/errors.js";
import { authResponses, EvmAddress, errorResponses, jsonResponse, keySecurity } from "../../lib/router.js";
import { requireKey } from "../../middleware/auth.js";

const TAGS = ["subaccounts"];
const notFound = {
  404: jsonResponse("Not a registered subaccount, a vault's EOA operator or a party to an indexed loan", ErrorSchema),
};
/** Who the health factor and summary answer for, beyond the registry's subaccounts. */
const ACCOUNTS =
  "Besides the registry's subaccounts it answers for a vault's EOA operators (the registry's `operator`) and for the " +
  "parties to the loans indexed on the chains (a lending pool's borrowers, a loan registry's lenders and borrowers): " +
  "the original's client reads the health factor of each borrower of a vault's loan book. An account's debt counts " +
  "the lending pools' loans it borrows as well as the loan registries'. Any other address is a 404.";
const unavailable = { 503: jsonResponse("No RPC for a chain of the subaccount, or it did not answer", ErrorSchema) };

export const PublicSubaccountRead = z
  .object({
    id: z.string().openapi({ format: "uuid", description: "The subaccount's registry id (its first chain's row)" }),
    address: z.string(),
    internal_name: z.string().nullable(),
    friendly_name: z.string().nullable(),
    chains: z.array(z.object({ chain_id: z.number().int(), name: z.string(), id: z.string() })).openapi({
      description:
        "The chains the registry lists it on, each with that row's id; the summary's `chains` adds every chain where " +
        "it holds, lends or owes something",
    }),
    status: z.string(),
    subaccount_type: z.string(),
    min_health_factor: z.number().nullable().openapi({ description: "The health factor its operator keeps it above" }),
    estimated_apr: z
      .number()
      .nullable()
      .openapi({
        description:
          "Realized APR over the last 30 days of the subaccount's valuation series (its lifetime APR when younger; " +
          "modified Dietz, as realized_apr_30d), a fraction; null before the series has two days or without capital",
      }),
  })
  .openapi("PublicSubaccountRead");

const Usd = (what: string) => z.number().openapi({ description: `${what}, USD (or the denomination asset)` });

/** The debts no price values, on both the health factor and the summary. */
const UnpricedDebts = z
  .array(
    z.object({
      chain_id: z.number().int(),
      token: z.string().openapi({ description: "The debt's token, lower case" }),
      symbol: z.string().nullable().openapi({ description: "Its symbol in the chain's catalogue (null outside it)" }),
      amount: z.number().openapi({ description: "What is owed, whole tokens" }),
    }),
  )
  .openapi({
    description:
      "Open debts no price values: a Morpho borrow or a loan it borrows in a token without a feed, or whose feed " +
      "did not answer at the block. They are left out of total_loan_value, and while there is one, health_factor " +
      "and maintenance_margin_fraction are null: unknown, rather than computed as if the debt were not there",
  });

export const HealthFactor = z
  .object({
    id: z.string().openapi({
      description: "The subaccount's address, lower case (the original client types HealthFactorMinimal.id as one)",
      example: `0x${"12".repeat(20)}`,
    }),
    datetime: z.string().openapi({ format: "date-time", description: "Block time of the newest read" }),
    health_factor: z
      .number()
      .nullable()
      .openapi({
        description:
          "The lowest of each lending venue's (an Aave account or a Morpho market: its collateral at its liquidation " +
          "threshold, Aave's account threshold or the market's LLTV, over its debt; collateral at one venue secures " +
          "no other's debt) and the loans' (total_account_value less the venues' debts, over what it owes on the " +
          "loans it borrows: the account is their lenders' recourse); below 1, a venue can liquidate or the account " +
          "cannot repay its loans; null without debt, or while a debt no price values (`unpriced_debts`)",
      }),
    unpriced_debts: UnpricedDebts,
    total_collateral_value: Usd("Collateral posted (Aave, Morpho)"),
    total_loan_value: Usd("Debt: Aave and Morpho borrows, loans it borrows (principal and interest owed)"),
    total_account_value: Usd(
      "Everything it holds: tokens, supplies, collateral, LP positions, lending-vault shares, loans it lends",
    ),
    net_account_value: Usd("total_account_value less total_loan_value"),
    min_health_factor: z.number().nullable(),
    total_equity_value: Usd("The same as net_account_value"),
    total_loan_interest_amount: Usd("Interest owed on the loans it borrows"),
    margin_fraction: z.number().nullable().openapi({ description: "net_account_value / total_account_value" }),
    maintenance_margin_fraction: z
      .number()
      .nullable()
      .openapi({
        description:
          "The margin fraction at which the health factor reaches 1: for the venues' debts, 1 − (their debts × " +
          "the lowest venue's health factor + loans it borrows) / total_account_value (the debts risen alike until " +
          "the lowest venue's reaches 1); for the loans it borrows, 0 (no net value left); the higher of those that " +
          "apply; null without debt, or while a debt no price values",
      }),
    series_as_of: z
      .string()
      .nullable()
      .openapi({ format: "date", description: "Day of the valuation series' figures below" }),
    total_pnl: z.number().nullable().openapi({
      description:
        "Net account value less net deposits (what its vaults and funding wallets moved to it, less what went back)",
    }),
    total_net_deposits: z.number().nullable(),
    percent_return: z.number().nullable().openapi({ description: "total_pnl / total_net_deposits" }),
    life_time_apr: z.number().nullable().openapi({
      description: "The realized APR over the whole series (as realized_apr_3d, from its first day)",
    }),
    total_pnl_3d: z.number().nullable(),
    total_pnl_7d: z.number().nullable(),
    total_pnl_30d: z.number().nullable(),
    realized_apr_3d: z
      .number()
      .nullable()
      .openapi({
        description:
          "PnL over 3 days / the window's capital (the net account value 3 days ago plus each day's net deposits " +
          "weighted by the part of the window left after it: modified Dietz), annualized; null without a row 3 days " +
          "ago or without capital",
      }),
    realized_apr_7d: z.number().nullable(),
    realized_apr_30d: z.number().nullable(),
    chains: z
      .array(
        z.object({
          chain_id: z.number().int(),
          block_number: z.number().int().openapi({ description: "The block the chain was read at" }),
          health_factor: z
            .number()
            .nullable()
            .openapi({
              description:
                "The lowest of this chain's lending venues' (Aave's own health factor; each Morpho market's " +
                "collateral at its LLTV over its debt); null without venue debt, or with a Morpho borrow no price " +
                "values. The loans it borrows are secured by " +
                "the whole account, so only the top-level `health_factor` holds them",
            }),
          total_collateral_value: z.number().openapi({ description: "The venues' collateral on this chain, USD" }),
          total_loan_value: z.number().openapi({
            description:
              "What it owes on this chain, USD: `venue_loan_value` + `borrowed_loan_value` (the chains sum to the " +
              "top level's)",
          }),
          venue_loan_value: z.number().openapi({ description: "Its Aave and Morpho debts on this chain, USD" }),
          borrowed_loan_value: z.number().openapi({
            description: "Principal and interest owed on the open loans it borrows on this chain, USD",
          }),
        }),
      )
      .openapi({ description: "Each chain's part, read at its block" }),
  })
  .openapi("HealthFactor");

const AddressQuery = z.object({
  address: EvmAddress.openapi({
    description: "The subaccount's address (or an operator's, or a loan party's)",
    example: `0x${"12".repeat(20)}`,
  }),
});

export const subaccountList = createRoute({
  method: "get",
  path: "/subaccounts",
  tags: TAGS,
  summary: "Every subaccount of the registry",
  description: "One entry per address, its chains listed; from the registry file (`npm run registry -- load`).",
  middleware: [requireKey] as const,
  security: keySecurity,
  responses: {
    200: jsonResponse("Subaccounts", z.array(PublicSubaccountRead)),
    ...authResponses,
    ...errorResponses,
  },
});

export const healthFactor = createRoute({
  method: "get",
  path: "/subaccounts/health_factor",
  tags: TAGS,
  summary: "A subaccount's health factor, read live on every chain it is on",
  description:
    "Reads the account's positions at each chain's head (Aave v3, Morpho Blue, ERC-4626 lending vaults, Uniswap v3, " +
    "tokens, loans of the chain's loan registry and of its lending pools) and values them through the registry's " +
    `price feeds.\n\n${ACCOUNTS}`,
  middleware: [requireKey] as const,
  security: keySecurity,
  request: { query: AddressQuery },
  responses: {
    200: jsonResponse("Health factor", HealthFactor),
    ...notFound,
    ...unavailable,
    ...authResponses,
    ...errorResponses,
  },
});

const TokenRef = z
  .object({
    type: z.literal("erc20"),
    name: z.string(),
    address: z.string(),
    chain: z.number().int(),
    symbol: z.string(),
    decimals: z.number().int(),
    img_url: z.string().nullable(),
  })
  .openapi("SubaccountToken");

const LoanBookEntry = z.object({
  subaccount_address: z.string(),
  book: z.record(z.string(), z.unknown()).openapi({ description: "The loan (loan-book shape) and its fees" }),
  is_borrow: z.boolean(),
  debt_info: z.object({
    interest_owed: z.number(),
    principal_debt_owed: z.number(),
    interest_repaid: z.number(),
    principal_undrawn: z.number().openapi({
      description: "Of the principal owed, what is still in the loan for it to draw (counted in its account value)",
    }),
  }),
  credit_info: z.object({
    net_interest_owed: z.number(),
    principal_debt_owed: z.number(),
    net_interest_repaid: z.number(),
  }),
});

export const SubaccountSummary = z
  .object({
    address: z.string(),
    name: z.string().nullable(),
    type: z.enum(["subaccount", "eoa"]).openapi({
      description:
        "`subaccount`: registered; `eoa`: a vault's EOA operator, or a loan's party without code (one with code, a " +
        "smart account, is `subaccount`)",
    }),
    chains: z.array(z.object({ name: z.string(), chain_id: z.number().int() })).openapi({
      description:
        "The chains it is registered on (an operator's, a loan's) and every chain where it holds, lends or owes " +
        "something: one address on every chain",
    }),
    denomination: z.object({
      symbol: z.string(),
      address: z.string().nullable(),
      chain_id: z.number().int().nullable(),
    }),
    portfolio: z.object({
      tokens: z.array(z.object({ value: z.number().nullable(), balance: z.number(), token: TokenRef })),
      margin_balances: z
        .array(
          z.object({
            venue: z.literal("perp_core"),
            chain_id: z.number().int().openapi({ description: "The chain holding the core ledger" }),
            account_type: z.enum(["perp", "spot"]),
            source_chain_id: z.number().int().openapi({ description: "The chain of the bridge deposits" }),
            token: z.object({ address: z.string(), symbol: z.string().nullable(), decimals: z.number().int() }),
            status: z.enum(["credited", "in_transit"]).openapi({
              description:
                "`credited`: a balance on the ledger; `in_transit`: a deposit that left the subaccount on a bridge, " +
                "not yet credited (nor rejected) on the ledger",
            }),
            core_hash: z.string().nullable().openapi({ description: "The deposit's core hash, when in transit" }),
            raw_balance: z.string(),
            balance: z.number(),
            value: z.number().nullable(),
          }),
        )
        .openapi({
          description:
            "Its balances on the perp core ledger (bridge deposits the relayer credited), read at the core chain's " +
            "head, and its bridge deposits still in transit to it; part of total_value",
        }),
      collateral_balances: z
        .array(
          z.object({
            protocol: z.enum(["aave_v3", "morpho_blue"]),
            chain_id: z.number().int(),
            token: z.object({ address: z.string(), symbol: z.string(), decimals: z.number().int() }),
            value: z.number().nullable(),
          }),
        )
        .openapi({ description: "What it has posted as collateral: Aave supplies, Morpho collateral" }),
      cefi_positions: z.array(z.unknown()),
      defi_positions: z
        .array(
          z
            .looseObject({
              protocol: z.enum(["aave_v3", "morpho_blue", "lending_vault", "uniswap_v3"]),
              chain_id: z.number().int(),
              type: z.enum(["lending", "vault", "liquidity", "rewards"]),
              value: z.number().nullable().openapi({ description: "What it holds there less what it owes there" }),
            })
            .openapi({
              description:
                "Besides the fields listed, by protocol (amounts in whole tokens): aave_v3 `token`, `supplied`, " +
                "`borrowed`; morpho_blue `market_id`, `loan_token`, `collateral_token`, `supplied`, `borrowed`, " +
                "`collateral`; lending_vault `vault`, `asset`, `shares` (raw), `assets`; uniswap_v3 liquidity " +
                "`token_id`, `pool`, `token0`, `token1`, `fee`, `tick_lower`, `tick_upper`, `in_range`, `staked`, " +
                "`amount0`, `amount1` (with the fees it would collect), `incentive_rewards` (a staked position's " +
                "reward in each incentive it is staked in, `{incentive, token, raw, amount, value}`, counted in its " +
                "value); uniswap_v3 rewards (what the staker holds for it, credited by unstakes and not claimed) " +
                "`token`, `raw`, `amount`",
            }),
        )
        .openapi({ description: "Its positions at each venue, one per reserve, market, vault or LP position" }),
      trs_positions: z.array(z.unknown()),
      strategy_contract_positions: z.array(z.unknown()),
      legacy_hedger_positions: z.array(z.unknown()),
      otc_positions: z.array(z.unknown()),
      total_value: z.number().openapi({
        description:
          "What it holds before any debt: total_account_value. The defi positions' `value`s are net of what is owed " +
          "at each venue, so the lists above sum to its net value less what the loan book owes it and the principal " +
          "it may still draw, plus what it owes there; not to this",
      }),
      discounted_value: z.number().openapi({
        description:
          "total_value with its collateral at the liquidation thresholds (Aave's, each Morpho market's LLTV), before " +
          "any debt",
      }),
    }),
    loanbook: z.object({
      loans: z.array(LoanBookEntry),
      total_debt: z.number(),
      total_credit: z.number(),
      aggregates_by_token: z
        .array(
          z.object({
            token: z.string(),
            chain_id: z.number().int(),
            symbol: z.string(),
            total_debt: z.number().openapi({ description: "Owed on the open loans it borrows, token units" }),
            total_credit: z.number().openapi({ description: "Owed to it on the open loans it lends, token units" }),
          }),
        )
        .openapi({ description: "The open loans' principal and interest owed, per principal token and chain" }),
    }),
    tokens: z.array(
      TokenRef.extend({
        price: z.number().nullable(),
        raw_balance: z.string(),
        balance: z.number(),
        value: z.number().nullable(),
      }),
    ),
    total_account_value: z.number(),
    total_collateral_value: z.number(),
    total_loan_value: z.number(),
    health_factor: z.number().nullable(),
    unpriced_debts: UnpricedDebts,
    net_account_value: z.number(),
    total_equity_value: z.number(),
  })
  .openapi("SubaccountSummary");

export const summary = createRoute({
  method: "get",
  path: "/subaccounts/summary",
  tags: TAGS,
  summary: "A subaccount's portfolio, loan book and totals, read live",
  description:
    "Values are USD unless `denomination_address` names a token of `denomination_chain`'s catalogue: then every " +
    `value is in that token (USD value over its price). \`USD\` or nothing: USD.\n\n${ACCOUNTS}`,
  middleware: [requireKey] as const,
  security: keySecurity,
  request: {
    query: AddressQuery.extend({
      // null, as a client serialises it in a query (`null`, or empty), and `usd` mean USD
      denomination_address: z
        .preprocess(
          (v) => (typeof v === "string" && /^(|null|usd)$/i.test(v.trim()) ? undefined : v),
          z.union([z.literal("USD"), EvmAddress]).optional(),
        )
        .openapi({
          type: "string",
          description: "A token address, or `USD` (the default; also `null`, empty or absent)",
        }),
      denomination_chain: ChainIdParam.default(1).openapi({
        type: "integer",
        default: 1,
        description: "Chain of the denomination token",
      }),
    }),
  },
  responses: {
    200: jsonResponse("Summary", SubaccountSummary),
    ...notFound,
    ...unavailable,
    ...authResponses,
    ...errorResponses,
  },
});
