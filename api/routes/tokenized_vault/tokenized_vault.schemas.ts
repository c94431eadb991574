/**
 * Zod schemas of the vault resource: the spec's "Tokenized vault" object (institutional shape and
 * its public subset), historical snapshots, the annualized APY body, the vault summary, the
 * historical time series, cached portfolio data and the deprecated APY chart.
 */
import { z } from "@hono/zod-openapi";
import { vaultChainQuery } from "../../lib/chain.js";
import { nullableRef, QueryBool, QueryInt, VaultAddress } from "../../lib/router.js";

/** A token: address, symbol and decimals (raw amounts are integers in units of 10^-decimals). */
const TokenSchema = z
  .object({ address: z.string(), symbol: z.string(), decimals: z.number().int() })
  .openapi("AssetToken");

// ---------------------------------------------------------------------------------------------
// Parameters

export const VaultPathParams = z.object({
  vault_address: VaultAddress.openapi({
    description: "Vault contract address (EVM addresses match case-insensitively; other chains' addresses exactly).",
  }),
});

const LoadSubaccounts = (deprecated: boolean) =>
  QueryBool(true).openapi({
    description: `Fill \`subaccounts\` and \`eoa_operators\`.${deprecated ? " Deprecated on the list." : ""}`,
    ...(deprecated ? { param: { deprecated: true } } : {}),
  });
const LoadSnapshots = QueryBool(true).openapi({
  description:
    "Fill `historical_snapshots` (one per day with a snapshot; heavy). Deprecated: use " +
    "`/api/v1/tokenized_vault/{vault_address}/historical-timeseries`.",
  param: { deprecated: true },
});

/**
 * The list's query. Its `status` filter takes the statuses the spec lists for it: `active` or
 * `closed` on the public list, any vault status (`active`, `closed`, `migrated`) on the
 * institutional one (the spec's "e.g. `active`, `closed`" there, an equality on the status).
 */
const vaultListQuery = (statuses: readonly [string, ...string[]]) =>
  z.object({
    status: z.enum(statuses).optional().openapi({ description: "Only vaults in this status." }),
    load_subaccounts: LoadSubaccounts(true),
    load_snapshots: LoadSnapshots,
  });
export const PublicVaultListQuery = vaultListQuery(["active", "closed"]);
export const VaultListQuery = vaultListQuery(["active", "closed", "migrated"]);

export const VaultReadQuery = vaultChainQuery({
  load_subaccounts: LoadSubaccounts(false),
  load_snapshots: LoadSnapshots,
});

export const ChainOnlyQuery = vaultChainQuery({});

export const TimeseriesQuery = vaultChainQuery({
  n_days: QueryInt({ def: 30, min: 1, max: 3650 }).openapi({
    type: "integer",
    default: 30,
    minimum: 1,
    maximum: 3650,
    description:
      "Number of days up to today (UTC), one key per day. At most 3650: the spec sets no maximum, but every day is " +
      "a key, so the bound keeps one answer's size finite (ten years is more than any vault's history).",
  }),
});

// ---------------------------------------------------------------------------------------------
// The vault object

/** Every APY and return the API serves is a fraction, never a percentage. */
export const FRACTION = "A fraction: 0.05 is 5 % (annualized for an APY).";
const HorizonMap = z.record(z.string(), z.number()).openapi({
  description:
    "Keyed by horizon in days (`1`, `7`, `30`, `90`, `180`, `365`) or `inception`; absent horizons are absent keys.",
  example: { "1": 0.05, "7": 0.061 },
});
/** A horizon map of APYs or returns. */
const FractionMap = (what: string) =>
  HorizonMap.openapi({
    description:
      `${what}, per horizon. ${FRACTION} Keyed by horizon in days (\`1\`, \`7\`, \`30\`, \`90\`, \`180\`, \`365\`) ` +
      `or \`inception\`; absent horizons are absent keys.`,
  });
const DateTime = z.string().openapi({ format: "date-time" });
const Uuid = z.string().openapi({ format: "uuid" });

export const StrategistPublicSchema = z
  .object({ strategist_name: z.string().nullable(), strategist_logo: z.string().nullable(), id: Uuid })
  .openapi("StrategistPublic");
export const StrategistSchema = StrategistPublicSchema.extend({ website_url: z.string().nullable() }).openapi(
  "Strategist",
);

export const RewardSchema = z
  .object({
    id: Uuid,
    tokenizedvault_id: Uuid,
    text: z.string(),
    img_url: z.string().nullable(),
    multiplier: z.number(),
    start_datetime: DateTime,
    updated_at: DateTime,
    created_at: DateTime,
  })
  .openapi("VaultReward");

export const ReportedApySchema = z
  .object({
    apy: z.number().nullable().openapi({ description: FRACTION }),
    underlying_apy: z.number().nullable().openapi({ description: FRACTION }),
    liquid_apy: z.number().nullable().openapi({ description: FRACTION }),
    rewards_compounded: z.number().nullable(),
    rewards_claimable: z.number().nullable(),
    points_apy: z.number().nullable().openapi({ description: FRACTION }),
    explainer: z.string().nullable(),
    id: Uuid,
    tokenized_vault_id: Uuid,
    updated_at: DateTime.nullable(),
    created_at: DateTime.nullable(),
  })
  .openapi("ReportedApy");

export const SolanaVaultMetadataSchema = z
  .looseObject({
    vault_state_pda: z.string().nullable().optional(),
    share_mint: z.string().nullable().optional(),
    deposit_mint: z.string().nullable().optional(),
    deposit_token_symbol: z.string().nullable().optional(),
    deposit_token_decimals: z.number().int().nullable().optional(),
    program_id: z.string().nullable().optional(),
    id: Uuid,
    tokenized_vault_id: Uuid,
  })
  .openapi("SolanaVaultMetadata");

export const StellarVaultMetadataSchema = z
  .looseObject({
    deposit_token_address: z.string().nullable().optional(),
    deposit_token_symbol: z.string().nullable().optional(),
    deposit_token_decimals: z.number().int().nullable().optional(),
    network_name: z.string().nullable().optional(),
    custody_vault_id: z.string().nullable().optional(),
    custody_wallet_id: z.string().nullable().optional(),
    id: Uuid,
    tokenized_vault_id: Uuid,
  })
  .openapi("StellarVaultMetadata");

export const InstantRedeemConfigSchema = z
  .looseObject({
    subaccount_address: z.string().nullable().optional(),
    output_asset_symbol: z.string().nullable().optional(),
    is_paused: z.boolean().nullable().optional(),
    available_liquidity: z.number().nullable().optional(),
    redeemable_assets: z
      .array(
        z.looseObject({
          address: z.string().optional(),
          symbol: z.string().optional(),
          decimals: z.number().int().optional(),
          spread_bps: z.number().optional(),
        }),
      )
      .optional(),
    id: Uuid,
    tokenized_vault_id: Uuid,
  })
  .openapi("InstantRedeemConfig");

export const ReceiptTokenIntegrationSchema = z
  .looseObject({
    address: z.string().nullable().optional(),
    chain: z.number().int().nullable().optional(),
    token_class: z.string().nullable().optional(),
    shorthand: z.string().nullable().optional(),
    symbol: z.string().nullable().optional(),
    price_feed_a_ticker: z.string().nullable().optional(),
    price_feed_b_id: z.string().nullable().optional(),
    img_url: z.string().nullable().optional(),
    is_transferable: z.boolean().nullable().optional(),
    id: z.string().nullable().optional(),
    position_id: z.string().nullable().optional(),
    stable_token_pair_id: z.string().nullable().optional(),
    updated_at: z.string().nullable().optional(),
    created_at: z.string().nullable().optional(),
  })
  .openapi("ReceiptTokenIntegration");

export const ComposabilityIntegrationSchema = z
  .looseObject({
    name: z.string().nullable().optional(),
    description: z.string().nullable().optional(),
    earning_multiplier: z.number().nullable().optional(),
    protocol_url: z.string().nullable().optional(),
    logo_url: z.string().nullable().optional(),
    tokenized_vault_id: z.string().nullable().optional(),
    id: z.string().nullable().optional(),
  })
  .openapi("ComposabilityIntegration");

export const HistoricalSnapshotSchema = z
  .object({
    total_assets: z
      .number()
      .nullable()
      .openapi({ description: "Total assets at the day's last snapshot, in asset units." }),
    total_shares: z.number().nullable().openapi({ description: "Share supply, in share units." }),
    asset_share_ratio: z
      .number()
      .nullable()
      .openapi({ description: "Assets per share; null while the vault has no supply." }),
    underlying_price: z
      .number()
      .nullable()
      .openapi({ description: "USD price of one asset token; null without a price feed." }),
    tvl: z.number().nullable().openapi({ description: "TVL in USD." }),
    snapshot_datetime: DateTime,
    block_id: z.number().int(),
    id: Uuid.openapi({ description: "Deterministic id derived from the indexed snapshot id." }),
  })
  .openapi("HistoricalSnapshot");

export const SubaccountPublicSchema = z
  .object({ address: z.string(), strategist: nullableRef(StrategistPublicSchema) })
  .openapi("VaultSubaccountPublic");
export const SubaccountSchema = z
  .object({
    address: z.string(),
    internal_name: z.string().nullable(),
    friendly_name: z.string().nullable(),
    chains: z.array(z.object({ chain_id: z.number().int(), name: z.string().nullable() })),
    status: z.string(),
    subaccount_type: z.string(),
    min_health_factor: z
      .number()
      .nullable()
      .openapi({ description: "The health factor its operator keeps it above (registry); null: none" }),
    estimated_apr: z
      .number()
      .nullable()
      .openapi({
        description:
          "Its realized APR over 30 days (its lifetime APR while younger), as GET /subaccounts lists it; null before " +
          "its series has a day",
      }),
    id: Uuid,
    strategist: nullableRef(StrategistSchema),
  })
  .openapi("VaultSubaccount");

export const EoaOperatorSchema = z
  .object({ address: z.string(), id: Uuid, name: z.string().nullable() })
  .openapi("EoaOperator");
export const OperatorSchema = z
  .object({ address: z.string(), operator_type: z.string().openapi({ example: "subaccount" }) })
  .openapi("VaultOperator");

const FreshnessSchema = z
  .object({
    apy_computed_at: DateTime.nullable(),
    share_ratio_snapshot_at: DateTime.nullable(),
    cached_at: DateTime.nullable(),
  })
  .openapi("VaultFreshness");

/** Fields of both shapes. */
const publicFields = {
  address: z.string().openapi({ description: "Vault contract address." }),
  yield_distributor: z.string().nullable(),
  chain: z.number().int().nullable().openapi({ description: "Chain id." }),
  description: z.string().nullable(),
  internal_type: z.string().nullable().openapi({
    description: "Contract family: `lendingPool`, `tokenizedVaultV2`, ... (non-EVM: the registry family).",
  }),
  public_type: z.string().nullable(),
  is_featured: z.boolean(),
  is_visible: z.boolean(),
  weekly_performance_fee_bps: z.number().nullable(),
  platform_fee_override: z.record(z.string(), z.unknown()),
  start_datetime: DateTime.nullable(),
  vault_name: z.string().nullable(),
  reserve_target: z.number().max(1),
  reserve_tolerance: z.number().max(1),
  status: z
    .string()
    .openapi({ description: "`active` (accepting deposits), `closed` (closed to new deposits) or `migrated`." }),
  is_charge_fees_manual: z.boolean(),
  receipt_token_symbol: z.string().nullable(),
  enable_external_assets_update: z.boolean(),
  is_distributor_fee_wrapper: z.boolean().nullable(),
  vault_logo_url: z.string().nullable(),
  risk: z.string().nullable(),
  max_daily_drawdown: z.number().nullable(),
  chain_type: z.string(),
  enabled_historical_price_horizons: z.array(z.number().int()).nullable(),
  is_spotlighted: z.boolean().nullable(),
  show_cap_filled: z.boolean().nullable(),
  withdrawal_only: z.boolean().nullable(),
  historical_apy: FractionMap("Simple APY"),
  historical_compound_apy: FractionMap("Compound APY"),
  default_apy_horizon: z.number().int().nullable(),
  iat_traders: z.array(z.string()).nullable(),
  withdrawal_margin_seconds: z.number().int().nullable(),
  apy_override: z.record(z.string(), z.unknown()).nullable(),
  max_drawdown: z.number().nullable(),
  latest_reported_tvl: z.number().nullable(),
  campaign_apy: z.number().nullable().openapi({ description: FRACTION }),
  metrics_last_updated: DateTime.nullable(),
  id: Uuid,
  view_type: z.string().nullable(),
  tvl: z.number().nullable().openapi({ description: "TVL in USD at the latest day with a snapshot." }),
  pnl_per_share: HorizonMap,
  daily_pnl_per_share: HorizonMap,
  cached_at: DateTime.nullable(),
  instant_redeem_config: nullableRef(InstantRedeemConfigSchema),
  rewards: z.array(RewardSchema),
  reported_apy: nullableRef(ReportedApySchema),
  receipt_token_integrations: z.array(ReceiptTokenIntegrationSchema),
  composability_integrations: z.array(ComposabilityIntegrationSchema),
  historical_snapshots: z
    .array(HistoricalSnapshotSchema)
    .openapi({ description: "Filled with `load_snapshots=true`, else empty." }),
  eoa_operators: z
    .array(EoaOperatorSchema)
    .openapi({ description: "Filled with `load_subaccounts=true`, else empty." }),
  lagDuration: z
    .number()
    .int()
    .nullable()
    .openapi({
      description:
        "Redemption lag in seconds: the vault's `lagDuration()` as the indexer read it (lendingPool, " +
        "tokenizedVaultV2), else the registry metadata's; null when not known.",
    }),
  asset: nullableRef(TokenSchema).openapi({
    description:
      "The vault's base asset: the unit of its total assets, share price and `amount_raw` figures (null for a " +
      "vault the registry gives none)",
  }),
  deposit_assets: z.array(TokenSchema).openapi({
    description:
      "Every token the vault takes deposits in: the base asset, and for a tokenizedVaultV2 its second deposit " +
      "asset (`Deposit.assetIn`)",
  }),
};

export const TokenizedVaultPublicSchema = z
  .object({
    ...publicFields,
    hardcoded_strategists: z.array(StrategistPublicSchema),
    subaccounts: z
      .array(SubaccountPublicSchema)
      .openapi({ description: "Filled with `load_subaccounts=true`, else empty." }),
  })
  .openapi("TokenizedVaultPublic");

export const TokenizedVaultSchema = z
  .object({
    ...publicFields,
    hardcoded_strategists: z.array(StrategistSchema),
    subaccounts: z.array(SubaccountSchema).openapi({ description: "Filled with `load_subaccounts=true`, else empty." }),
    withdrawal_alert_threshold: z.number().nullable(),
    withdrawal_alert_channels: z.string().nullable(),
    management_fee_waived_until_date: DateTime.nullable(),
    management_fee_waived_until_tvl: z.number().nullable(),
    performance_fee_waived_until_date: DateTime.nullable(),
    performance_fee_waived_until_tvl: z.number().nullable(),
    nav_base_asset_token_id: Uuid.nullable(),
    nav_pricing_overrides: z.record(z.string(), z.unknown()).nullable(),
    freshness: FreshnessSchema,
    solana_vault_metadata: nullableRef(SolanaVaultMetadataSchema),
    stellar_vault_metadata: nullableRef(StellarVaultMetadataSchema),
    operators: z.array(OperatorSchema),
  })
  .openapi("TokenizedVault");

export type TokenizedVault = z.infer<typeof TokenizedVaultSchema>;
export type TokenizedVaultPublic = z.infer<typeof TokenizedVaultPublicSchema>;

// ---------------------------------------------------------------------------------------------
// Other bodies

export const AnnualizedApySchema = z
  .object({
    vault_address: z.string(),
    chain: z.number().int(),
    kind: z.string(),
    liquidAPY7Day: z
      .number()
      .nullable()
      .openapi({
        description:
          `Compound APY over the last 7 days (what a holder who bought 7 days ago and redeemed today earned, ` +
          `annualized). ${FRACTION}`,
      }),
    liquidAPY30Day: z
      .number()
      .nullable()
      .openapi({ description: `Compound APY over the last 30 days. ${FRACTION}` }),
    liquid_apy_7_day: z.number().nullable().openapi({
      deprecated: true,
      description: "Deprecated (announced removal 2026-01-01, still served): same as `liquidAPY7Day`.",
    }),
    liquid_apy_30_day: z.number().nullable().openapi({
      deprecated: true,
      description: "Deprecated (announced removal 2026-01-01, still served): same as `liquidAPY30Day`.",
    }),
    historical_apy: FractionMap("Simple APY, net of fees"),
    historical_compound_apy: FractionMap("Compound APY, net of fees"),
    gross_apy: FractionMap("Simple APY before fees"),
    gross_compound_apy: FractionMap("Compound APY before fees"),
    as_of_day: z.string().nullable().openapi({ format: "date" }),
    apy_computed_at: DateTime.nullable(),
    share_ratio_snapshot_at: DateTime.nullable(),
  })
  .openapi("AnnualizedApy");

export const UnsupportedKindSchema = z
  .object({ detail: z.string(), kind: z.string().nullable(), supported_kinds: z.array(z.string()) })
  .openapi("UnsupportedVaultKind");

export const LatestSnapshotSchema = z
  .object({
    snapshot_id: z.string(),
    snapshot_datetime: DateTime,
    block_id: z.number().int(),
    total_assets: z.number().openapi({ description: "In asset units." }),
    total_assets_raw: z.string().openapi({ description: "Raw integer, asset base units." }),
    total_shares: z.number().openapi({ description: "In share units." }),
    total_shares_raw: z.string(),
    asset_share_ratio: z.number().nullable(),
    underlying_price: z.number().nullable(),
    tvl: z.number().nullable().openapi({ description: "USD; null without a price feed." }),
  })
  .openapi("VaultLatestSnapshot");

export const VaultSummarySchema = z
  .object({
    address: z.string(),
    chain: z.number().int(),
    id: Uuid,
    name: z.string(),
    symbol: z.string(),
    type: z.string().nullable().openapi({ description: "Contract family (`internal_type`)." }),
    public_type: z.string().nullable(),
    kind: z.string().nullable(),
    status: z.string(),
    asset_symbol: z.string().nullable(),
    latest_snapshot: nullableRef(LatestSnapshotSchema).openapi({
      description: "The newest indexed share-ratio snapshot; null for a vault without one (e.g. non-EVM).",
    }),
    returns: z.object({ "1": z.number().nullable(), "7": z.number().nullable(), "30": z.number().nullable() }).openapi({
      description:
        `Keyed by horizon in days, as every horizon map: sp(today)/sp(today - h) - 1, not annualized; null when the ` +
        `history is shorter than h. ${FRACTION}`,
    }),
    as_of_day: z.string().nullable().openapi({ format: "date" }),
  })
  .openapi("VaultSummary");

export const TimeseriesPointSchema = z
  .object({
    tvl: z.number().nullable().openapi({
      description:
        "USD: total assets at the day's last snapshot times the asset's USD price; null without a price feed",
    }),
    daily_apy: z
      .number()
      .nullable()
      .openapi({
        description:
          "The day's share-price growth compounded over 365 days: (sp(D) / sp(D - 1))^365 - 1; after " +
          `days without a snapshot, the growth since over those n days: ^(365 / n). ${FRACTION}`,
      }),
    daily_pnl: z.number().nullable().openapi({
      description: "In asset units: the day's share-price change times the shares outstanding the day before",
    }),
    share_price: z
      .number()
      .nullable()
      .openapi({ description: "Asset units per whole share (the asset per share a holder redeems)" }),
    total_assets: z.number().nullable().openapi({ description: "In asset units (whole tokens)" }),
    total_shares: z.number().nullable().openapi({ description: "In share units (whole shares)" }),
    asset_share_ratio: z
      .number()
      .nullable()
      .openapi({ description: "Asset base units per share base unit, as the contract reports it" }),
    missing: z.boolean().openapi({ description: "true when the day has no snapshot (every figure null)" }),
  })
  .openapi("HistoricalTimeSeriesPoint");

export const TimeseriesSchema = z
  .object({
    data: z
      .record(z.string(), TimeseriesPointSchema)
      .openapi({ description: "Keyed by UTC date `YYYY-MM-DD`, oldest first." }),
    trailing_apy: FractionMap("Simple APY over the trailing horizon (the vault's historical_apy)"),
    chain_id: z.number().int().openapi({ description: "Chain of the vault served" }),
  })
  .openapi("HistoricalTimeSeries");

/** A token in the tracker's shape: a portfolio item's supply, reward or borrow token. */
const PortfolioToken = z
  .looseObject({
    id: z.string().openapi({ description: "The token's address" }),
    chain: z.string(),
    name: z.string(),
    symbol: z.string(),
    display_symbol: z.string().nullable(),
    optimized_symbol: z.string(),
    decimals: z.number().int(),
    logo_url: z.string().nullable(),
    protocol_id: z.string(),
    price: z.number().nullable().openapi({ description: "USD, from the chain's feed; null without one" }),
    amount: z.number().openapi({ description: "Whole tokens" }),
  })
  .openapi("PortfolioToken");

const PortfolioWalletToken = PortfolioToken.extend({
  is_core: z.boolean(),
  is_verified: z.boolean(),
  is_scam: z.boolean(),
  is_suspicious: z.boolean(),
  is_wallet: z.boolean(),
  time_at: z.number().nullable(),
  price_24h_change: z.number().nullable(),
  credit_score: z.number().nullable(),
  raw_amount: z.number(),
  raw_amount_str: z.string().openapi({ description: "raw_amount as an exact integer string" }),
}).openapi("PortfolioWalletToken");

const PortfolioItem = z
  .looseObject({
    stats: z.object({ asset_usd_value: z.number(), debt_usd_value: z.number(), net_usd_value: z.number() }),
    update_at: z.number().openapi({ description: "When the position was read (unix seconds)" }),
    name: z.string(),
    detail_types: z.array(z.string()),
    detail: z.looseObject({
      supply_token_list: z.array(PortfolioToken),
      reward_token_list: z.array(PortfolioToken),
      borrow_token_list: z.array(PortfolioToken),
      health_rate: z.number().nullable().openapi({ description: "The venue's own health factor; null without debt" }),
    }),
    proxy_detail: z.looseObject({}),
    position_index: z.string(),
    pool: z.looseObject({
      controller: z.string(),
      id: z.string(),
      chain: z.string(),
      project_id: z.string(),
      adapter_id: z.string(),
      time_at: z.number().nullable(),
    }),
  })
  .openapi("PortfolioItem");

const PortfolioPosition = z
  .looseObject({
    id: z.string().openapi({ description: "The protocol: aave_v3, morpho_blue, lending_vault, uniswap_v3" }),
    chain: z.string(),
    name: z.string(),
    logo_url: z.string().nullable(),
    site_url: z.string(),
    has_supported_portfolio: z.boolean(),
    portfolio_item_list: z.array(PortfolioItem),
  })
  .openapi("PortfolioPosition");

export const PortfolioDataSchema = z
  .record(
    z.string(),
    z
      .looseObject({
        positions: z
          .array(PortfolioPosition)
          .optional()
          .openapi({
            description:
              "Per protocol, its portfolio items. An item's `pool.controller` is the protocol's contract (the Aave " +
              "pool, the Morpho contract, the lending vault, the Uniswap pool) and `pool.id` the pool (a Morpho " +
              "market's id, else the controller); `pool.time_at` is when the controller was deployed (unix seconds; " +
              "null where the node keeps no old state)",
          }),
        app_positions: z.array(PortfolioPosition).optional(),
        tokens: z
          .array(PortfolioWalletToken)
          .optional()
          .openapi({
            description:
              "Wallet tokens in the tracker's token shape. `price_24h_change`: the feed's price now over its price " +
              "at the chain's last block a day before (a fraction: 0.01 is +1 %); `time_at`: when the token's " +
              "contract was deployed (unix seconds; null where the node keeps no old state); `credit_score` and " +
              "`logo_url` are null (the chain does not give them)",
          }),
      })
      .openapi("PortfolioData"),
  )
  .openapi("VaultPortfolioData");
