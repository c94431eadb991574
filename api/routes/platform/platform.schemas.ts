/** Response shapes of the platform analytics, redemption and withdrawal routes. */
import { z } from "@hono/zod-openapi";
import { ErrorSchema } from "../../lib/errors.js";
import { PgText } from "../../lib/router.js";

const DateTime = z.string().openapi({ format: "date-time", example: "2026-01-31T12:00:00.000Z" });
const Day = z.string().openapi({ format: "date", example: "2026-01-31" });
/** A raw token amount the spec types as a number: an exact JSON integer (every digit, no float). */
const RawNumber = (description: string) =>
  z.number().openapi({
    type: "integer",
    description:
      `${description} (raw integer token units, an exact JSON integer: parse it with a big-number aware reader, it ` +
      `can exceed 2^53)`,
    example: 1500000,
  });
const Raw = (description: string) =>
  z.string().openapi({
    description: `${description} (raw integer token units, exact, as a decimal string)`,
    example: "1500000",
  });

// Declared here rather than with the shared `as const` helpers: spread `as const` objects turn
// the status keys into strings, and the typed handlers would not accept a 404 / 503 answer.
export const unavailableResponse = {
  503: {
    description: "The indexed or derived tables are not available yet",
    content: { "application/json": { schema: ErrorSchema } },
  },
};
export const notFoundResponse = {
  404: { description: "Unknown vault (or strategist)", content: { "application/json": { schema: ErrorSchema } } },
};

// ---------------------------------------------------------------------------------------------
// Strategy APY snapshots and strategists

export const StrategyApySnapshotReadSchema = z
  .object({
    vault_address: z.string(),
    chain: z.number().int().openapi({ description: "Chain id" }),
    platform_name: z.string(),
    strategy_type: z.string(),
    allocation: z.number(),
    apy: z.number().openapi({ description: "A fraction (0.05 is 5 %), as posted" }),
    points_apy: z.number().openapi({ description: "A fraction (0.05 is 5 %), as posted" }),
    strategist_address: z.string().nullable(),
    snapshot_datetime: DateTime,
    id: z.string().openapi({ format: "uuid" }),
  })
  .openapi("StrategyApySnapshotRead");

export const StrategistListItemSchema = z
  .object({
    strategist_name: z.string(),
    strategist_logo: z.string().nullable(),
    website_url: z.string().nullable(),
    id: z.string().openapi({ format: "uuid" }),
  })
  .openapi("StrategistListItem");

// ---------------------------------------------------------------------------------------------
// Unrealized PnL

export const UnrealizedPnlRecordSchema = z
  .object({
    timestamp: DateTime.openapi({ description: "Block time of the share-ratio snapshot the record is computed from" }),
    chain_id: z
      .number()
      .int()
      .openapi({ description: "Chain of the vault (the same address may be deployed on several chains)" }),
    vault_name: z.string(),
    vault_address: z.string(),
    strategist_name: z.string().nullable(),
    reference_asset: z.string().openapi({ description: "Symbol of the vault's base asset" }),
    asset_price: z
      .number()
      .nullable()
      .openapi({ description: "USD price of one asset token at the snapshot; null without a price feed" }),
    tvl_on_vault: z.number().openapi({ description: "Reported total assets, asset units" }),
    current_redeem_ratio: z
      .number()
      .nullable()
      .openapi({ description: "Share price at the snapshot, assets per whole share; null without supply" }),
    actual_tvl: z
      .number()
      .openapi({ description: "Assets actually held by the vault and its registry subaccounts, asset units" }),
    adjusted_redeem_ratio: z.number().nullable().openapi({ description: "actual_tvl per whole share" }),
    unrealized_pnl: z
      .number()
      .nullable()
      .openapi({ description: "unrealized_pnl_in_asset x asset_price, USD; null without a price feed" }),
    unrealized_pnl_in_asset: z.number().openapi({ description: "actual_tvl - tvl_on_vault, asset units" }),
  })
  .openapi("UnrealizedPnlRecord");

export const UnrealizedPnlRatioPointSchema = z
  .object({
    timestamp: DateTime,
    chain_id: z.number().int().openapi({ description: "Chain of the vault the point is about" }),
    current_redeem_ratio: z.number().nullable(),
    adjusted_redeem_ratio: z.number().nullable(),
    collateral_ratio: z
      .number()
      .nullable()
      .openapi({
        description:
          "actual_tvl / tvl_on_vault: what the vault holds per unit it reports (1 = fully backed); null when " +
          "tvl_on_vault is 0",
      }),
  })
  .openapi("UnrealizedPnlRatioPoint");

// ---------------------------------------------------------------------------------------------
// Vault history

export const VaultHistoryRecordSchema = z
  .object({
    timestamp: DateTime,
    type: z.enum(["deposit", "withdraw"]),
    wallet: z.string().openapi({
      description:
        "The position holder: for a deposit the wallet credited with the shares (lendingPool `Deposit.owner`, " +
        "tokenizedVaultV2 `receiverAddr`); for a withdraw the owner whose shares were redeemed (`Withdraw.owner`)",
    }),
    pool: z.string().openapi({ description: "Vault address" }),
    chain_id: z.number().int(),
    amount_raw: Raw("Assets deposited or paid out, in units of asset_address"),
    amount: z
      .string()
      .nullable()
      .openapi({
        description:
          "amount_raw in whole tokens of asset_address (exact decimal string); null when the asset's decimals are " +
          "unknown",
        example: "1.5",
      }),
    transaction_hash: z.string(),
    block_number: z.number().int(),
    log_index: z
      .number()
      .int()
      .openapi({ description: "Position of the event in its block (with block_number, the paging cursor)" }),
    asset_address: z.string().openapi({
      description: "Token of amount_raw: the base asset, or for a tokenizedVaultV2 deposit the deposited asset",
    }),
    asset_symbol: z
      .string()
      .nullable()
      .openapi({ description: "Symbol of asset_address (null when not in the registry)" }),
    asset_decimals: z
      .number()
      .int()
      .nullable()
      .openapi({ description: "Decimals of asset_address (null when not in the registry)" }),
  })
  .openapi("VaultHistoryRecord");

// ---------------------------------------------------------------------------------------------
// Pending redemptions

const Bucket = z
  .object({
    count: z.number().int(),
    assets: z.number().openapi({ description: "Assets to pay, asset units" }),
    assets_raw: Raw("Assets to pay"),
    shares: z.number().openapi({ description: "Shares redeemed, share units" }),
    shares_raw: Raw("Shares redeemed"),
  })
  .openapi("PendingRedemptionBucket");

export const PendingRedemptionSummarySchema = z
  .object({
    vault: z.object({
      address: z.string(),
      name: z.string(),
      symbol: z.string(),
      chain_id: z.number().int(),
      family: z.string().openapi({
        description:
          "`lendingPool`, `tokenizedVaultV2` or `erc4626` (which has no redemption queue: never a pending request)",
      }),
      strategist_name: z.string().nullable(),
    }),
    asset: z.object({ address: z.string(), symbol: z.string(), decimals: z.number().int() }),
    window: z
      .object({
        today: Day,
        past_days: z.number().int(),
        future_days: z.number().int(),
        from: Day.openapi({ description: "today - past_days: first day of the overdue look-back" }),
        to: Day.openapi({ description: "today + future_days: last day of the look-ahead" }),
      })
      .openapi({ description: "The UTC days the summary looks at" }),
    liquidity: z
      .object({
        available: z.number().openapi({
          description:
            "What pending claims can be paid from now, asset units: the base asset the vault contract held at its " +
            "latest snapshot (`held`) less what it already owed of it (`reserved`), at least 0",
        }),
        available_raw: Raw("held less reserved, at least 0"),
        held: z.number().openapi({ description: "Base asset held by the vault contract, asset units" }),
        held_raw: Raw("Base asset held by the vault contract"),
        reserved: z
          .number()
          .nullable()
          .openapi({
            description:
              "Of it, what the vault already owes: accrued fees, and a lendingPool's processed redemptions not yet " +
              "claimed (claimableAssets), asset units; null when the vault does not answer those views (then nothing " +
              "is taken off)",
          }),
        reserved_raw: Raw("Accrued fees plus unclaimed processed claims").nullable(),
        as_of: DateTime.nullable().openapi({
          description: "Block time of that snapshot; null (and 0 available) before the first",
        }),
      })
      .openapi({ description: "Liquidity available to pay redemptions" }),
    summary: z.object({
      total_pending: z
        .number()
        .openapi({ description: "Assets of every pending request (status `requested`), asset units" }),
      total_pending_raw: Raw("Assets of every pending request"),
      total_pending_shares: z.number(),
      total_pending_shares_raw: Raw("Shares of every pending request"),
      pending_count: z.number().int(),
      pending_to_liquidity_ratio: z
        .number()
        .nullable()
        .openapi({ description: "total_pending / liquidity.available; null when nothing is available" }),
      is_liquidity_sufficient: z.boolean().openapi({ description: "liquidity.available >= total_pending" }),
      shortfall: z.number().openapi({ description: "max(0, total_pending - liquidity.available), asset units" }),
      shortfall_raw: Raw("Shortfall"),
      next_redemption_date: Day.nullable().openapi({
        description: "Earliest claimable date on or after today among the pending requests; null if none",
      }),
      is_overdue: z.boolean().openapi({
        description: "Some pending request was claimable on a day of the look-back (from <= date < today)",
      }),
      overdue: Bucket.openapi({
        description: "Pending requests claimable from a day of the look-back (from <= date < today)",
      }),
      due: Bucket.openapi({ description: "Pending requests claimable from today to `to` included" }),
      unscheduled: Bucket.openapi({
        description: "Pending requests without a due date (a tokenizedVaultV2 whose lagDuration() could not be read)",
      }),
      outside_window: Bucket.openapi({
        description: "Pending requests with a claimable date before `from` or after `to`",
      }),
    }),
    redemptions_by_date: z
      .array(
        z.object({
          date: Day.openapi({
            description:
              "Due date `YYYY-MM-DD`: a lendingPool request's claimable date; a tokenizedVaultV2 request's, the " +
              "UTC day its vault's lagDuration() has passed since it was made",
            example: "2026-02-03",
          }),
          count: z.number().int(),
          assets: z.number(),
          assets_raw: Raw("Assets to pay"),
          shares: z.number(),
          shares_raw: Raw("Shares redeemed"),
          assets_estimated: z.boolean().openapi({
            description:
              "The assets are an estimate at the latest share price (tokenizedVaultV2 requests are priced only " +
              "when processed)",
          }),
          days_until_due: z.number().int().openapi({ description: "date - today in days (negative when overdue)" }),
          is_overdue: z.boolean(),
        }),
      )
      .openapi({
        description:
          "Pending requests per due date, for the dates of the window (from .. to) in ascending order. " +
          "Requests without one (a tokenizedVaultV2 whose lag is unknown) are in `summary.unscheduled` only.",
      }),
    idle_balances: z.object({
      total: z.number().openapi({
        description: "Base asset held by the vault and its registry subaccounts at the latest snapshot, asset units",
      }),
      total_raw: Raw("Vault plus subaccounts"),
      wallets: z
        .array(
          z.object({
            address: z.string(),
            wallet_type: z.string().openapi({ example: "vault" }),
            amount: z.number(),
            amount_raw: z.string(),
          }),
        )
        .openapi({
          description: "Wallets whose own balance is indexed: the vault contract (`wallet_type` `vault`)",
        }),
      subaccounts: z.object({ addresses: z.array(z.string()), amount: z.number(), amount_raw: z.string() }).openapi({
        description:
          "The registry subaccounts of the vault and their combined base-asset balance (only the sum is indexed)",
      }),
    }),
  })
  .openapi("PendingRedemptionSummary", {
    description:
      "Pending redemptions of one vault: withdrawal requests with status `requested`. Amounts are the net payout " +
      "(lendingPool: `assets - fee`; tokenizedVaultV2: shares x the vault's latest share price, an estimate). " +
      "Display figures are JSON numbers, raw token amounts exact decimal strings; asset amounts use the asset's " +
      "decimals, shares the share token's.",
  });

export const PendingRedemptionsBatchBodySchema = z
  .strictObject({
    vault_addresses: z.array(z.string()).max(1000).nullable().optional().openapi({
      description: "Vault addresses (case-insensitive for EVM); each is processed on its own; null as absent",
    }),
    strategist_name: PgText()
      .min(1)
      .nullable()
      .optional()
      .openapi({
        description:
          "Only the vaults of this strategist (case-insensitive); with vault_addresses, the listed vaults must be " +
          "theirs; null as absent",
      }),
  })
  .openapi("PendingRedemptionsBatchRequest", {
    example: { vault_addresses: ["0x2c622344b5dc29dccc034ca76f123d4479d24122"] },
    description:
      "Both fields optional; an empty object selects every indexed vault. An unknown field is refused (422), so a " +
      "misspelt filter never selects every vault.",
  });

export const PendingRedemptionsBatchSchema = z
  .object({
    data: z.array(PendingRedemptionSummarySchema).openapi({
      description: "One summary per vault deployment (an address deployed on several chains gives one per chain)",
    }),
    total_requested: z.number().int().openapi({ description: "Vault deployments requested: len(data) + len(errors)" }),
    errors: z
      .array(z.object({ address: z.string(), reason: z.string() }))
      .openapi({ description: "Addresses that gave no summary, with why (unknown vault, not an EVM vault, ...)" }),
    total_successful: z.number().int().openapi({ description: "len(data)" }),
  })
  .openapi("PendingRedemptionsBatch");

// ---------------------------------------------------------------------------------------------
// Withdrawal queue

const QueueRequest = z.object({
  id: z.string().openapi({ description: "Event id of the request" }),
  owner: z.string().openapi({ description: "Holder whose shares are redeemed" }),
  receiver: z.string().openapi({ description: "Who is paid" }),
  shares_raw: Raw("Shares redeemed"),
  requested_at: DateTime,
  request_tx_hash: z.string(),
  claimable_date: Day.nullable().openapi({
    description: "lendingPool: the UTC date the request is claimable from; null for tokenizedVaultV2",
  }),
});

export const WithdrawalQueueSchema = z
  .object({
    chain_id: z.number().int(),
    vault: z.string(),
    family: z.string(),
    symbol: z.string().openapi({ description: "Symbol of the base asset" }),
    asset: z.object({ address: z.string(), symbol: z.string(), decimals: z.number().int() }),
    queue: z
      .object({
        head: z.number().int().openapi({ description: "Requests processed so far (`WithdrawalProcessed` events)" }),
        tail: z.number().int().openapi({ description: "Requests made so far (`WithdrawalRequested` events)" }),
        length: z.number().int().openapi({ description: "tail - head: requests waiting" }),
      })
      .nullable()
      .openapi({
        description:
          "The FIFO queue counters of a tokenizedVaultV2 (indexer.vault); always 0 for a lendingPool, whose " +
          "requests are scheduled by claimable date; null for an erc4626 vault, which has no redemption queue (its " +
          "withdraws are immediate)",
      }),
    pending_count: z.number().int().openapi({ description: "Requests with status `requested`" }),
    total_withdrawals_raw_amount: RawNumber("Assets of every pending request"),
    normalized_total_withdrawals_amount: z
      .string()
      .openapi({ description: "The same in asset units, exact decimal string", example: "1.5" }),
    total_assets: z.string().nullable().openapi({
      description: "The vault's total assets at its latest snapshot (raw integer string); null before the first",
    }),
    normalized_total_assets: z.string().nullable(),
    pending_withdrawals: z
      .array(
        QueueRequest.extend({
          date: Day.openapi({
            description:
              "Due date: the claimable date (lendingPool), the day the vault's lag has passed (tokenizedVaultV2), " +
              "else the UTC day of the request",
          }),
          amount_raw: RawNumber(
            "Assets to pay: lendingPool assets - fee; tokenizedVaultV2 shares x latest share price (estimate)",
          ),
          normalized_amount: z.string(),
          amount_estimated: z.boolean(),
          vault_percentage: z.string().nullable().openapi({
            description: "amount / total_assets x 100, 6 decimals; null without total assets",
            example: "1.250000",
          }),
          vault: z.string(),
          queue_position: z
            .number()
            .int()
            .nullable()
            .openapi({ description: "tokenizedVaultV2: 1 = the next request to be processed; null for lendingPool" }),
        }),
      )
      .openapi({
        description: "Pending requests in processing order (claimable date, then request order), at most `limit`",
      }),
    recent_processed: z
      .array(
        QueueRequest.extend({
          date: Day.openapi({ description: "UTC day of the processing" }),
          amount_raw: RawNumber("Assets paid or made claimable (`WithdrawalProcessed.assetsAmount`)"),
          normalized_amount: z.string(),
          processed_at: DateTime.nullable(),
          processed_tx_hash: z.string().nullable(),
        }),
      )
      .openapi({ description: "The latest processed requests, newest first, at most `limit`" }),
  })
  .openapi("WithdrawalQueue");
