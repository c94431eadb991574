/**
 * Institutional routes of the platform analytics (strategy APY snapshots, strategists,
 * unrealized PnL, vault history) and of redemptions and withdrawals. Strategy APY reads and the
 * strategist list need no key (as in the spec); every other route needs `x-api-key`.
 */
import { createRoute, z } from "@hono/zod-openapi";
import { vaultChainQuery } from "../../lib/chain.js";
import { DateOrDateTime } from "../../lib/query-dates.js";
import {
  EvmAddress,
  errorResponses,
  jsonResponse as json,
  openReadAuthResponses,
  openReadSecurity,
  QueryInt,
  VaultAddress,
  vaultJsonResponse,
} from "../../lib/router.js";
import { openRoute, readKey } from "../../middleware/auth.js";
import { HistoryCursor } from "./platform.lib.js";
import {
  notFoundResponse,
  StrategistListItemSchema,
  StrategyApySnapshotReadSchema,
  UnrealizedPnlRatioPointSchema,
  UnrealizedPnlRecordSchema,
  unavailableResponse,
  VaultHistoryRecordSchema,
} from "./platform.schemas.js";

const VaultPath = z.object({ vault_address: VaultAddress.openapi({ param: { name: "vault_address", in: "path" } }) });

// ---------------------------------------------------------------------------------------------
// Strategy APY and strategists (no key)

export const strategyApyList = createRoute({
  method: "get",
  path: "/platform/strategy_apy",
  tags: ["platform"],
  summary: "Strategy APY snapshots of every vault, newest first",
  description:
    "Every snapshot posted with POST /platform/strategy_apy (registry.strategy_apy_snapshot), " +
    "newest `snapshot_datetime` first, ties by id. An empty array when none was posted.",
  ...openRoute,
  responses: {
    200: json("Snapshots, newest first", z.array(StrategyApySnapshotReadSchema)),
    ...openReadAuthResponses,
    ...errorResponses,
  },
});

export const strategyApyByVault = createRoute({
  method: "get",
  path: "/platform/strategy_apy/{vault_address}",
  tags: ["platform"],
  summary: "Strategy APY snapshots of one vault, newest first",
  description: "404 when the address is neither a vault of the registry nor has snapshots.",
  request: { params: VaultPath },
  ...openRoute,
  responses: {
    200: json("Snapshots of the vault, newest first", z.array(StrategyApySnapshotReadSchema)),
    ...notFoundResponse,
    ...openReadAuthResponses,
    ...errorResponses,
  },
});

export const strategistList = createRoute({
  method: "get",
  path: "/platform/strategist",
  tags: ["platform"],
  summary: "Strategists, by name",
  description:
    "The strategists of the registry (registry.strategist), ordered by name then id; `offset` " +
    "skips that many, `limit` caps the page (default 100, at most 1000).",
  request: {
    query: z.object({
      offset: QueryInt({ def: 0, min: 0 }).openapi({ type: "integer", default: 0, minimum: 0 }),
      limit: QueryInt({ def: 100, min: 1, max: 1000 }).openapi({
        type: "integer",
        default: 100,
        minimum: 1,
        maximum: 1000,
      }),
    }),
  },
  ...openRoute,
  responses: {
    200: json("Strategists ordered by name", z.array(StrategistListItemSchema)),
    ...openReadAuthResponses,
    ...errorResponses,
  },
});

// ---------------------------------------------------------------------------------------------
// Unrealized PnL

export const unrealizedPnl = createRoute({
  method: "get",
  path: "/platform/unrealized_pnl",
  tags: ["platform"],
  summary: "Unrealized PnL records of a vault, newest first",
  description:
    "One record per share-ratio snapshot (derived.unrealized_pnl, see docs/metrics.md). `start_date` and " +
    "`end_date` are inclusive bounds on the record's timestamp: a date covers its whole UTC day. " +
    "`fields=ratio` gives slim points `{timestamp, current_redeem_ratio, adjusted_redeem_ratio, collateral_ratio}` " +
    "with `collateral_ratio = actual_tvl / tvl_on_vault`. " +
    "An address deployed on several chains: `chain_id` (or `chain`) picks one, else the lowest chain id is served; " +
    "every record and point names its `chain_id`, and header `X-Vault-Chain` says which. 404 for an unknown vault; " +
    "422 when start_date is after end_date.",
  middleware: [readKey] as const,
  security: openReadSecurity,
  request: {
    query: vaultChainQuery({
      vault_address: VaultAddress,
      limit: QueryInt({ min: 1 })
        .optional()
        .openapi({ type: "integer", minimum: 1, description: "At most this many records (newest first)" }),
      start_date: DateOrDateTime.optional(),
      end_date: DateOrDateTime.optional(),
      fields: z
        .enum(["ratio"])
        .optional()
        .openapi({ description: "`ratio`: slim collateral-ratio points instead of full records" }),
    }),
  },
  responses: {
    200: vaultJsonResponse(
      "Records (or ratio points), newest first",
      z.union([z.array(UnrealizedPnlRecordSchema), z.array(UnrealizedPnlRatioPointSchema)]),
    ),
    ...notFoundResponse,
    ...openReadAuthResponses,
    ...unavailableResponse,
    ...errorResponses,
  },
});

export const unrealizedPnlLatest = createRoute({
  method: "get",
  path: "/platform/unrealized_pnl/latest",
  tags: ["platform"],
  summary: "The newest unrealized PnL record of every vault",
  description:
    "For every vault deployment (chain and address), its newest derived.unrealized_pnl record: " +
    "the same fields as GET /platform/unrealized_pnl, defined in docs/metrics.md. Ordered by " +
    "chain id, then address. 503 when the derived tables cannot be read.",
  middleware: [readKey] as const,
  security: openReadSecurity,
  responses: {
    200: json("One record per vault and chain, by chain and address", z.array(UnrealizedPnlRecordSchema)),
    ...openReadAuthResponses,
    ...unavailableResponse,
    ...errorResponses,
  },
});

// ---------------------------------------------------------------------------------------------
// Vault history

export const vaultHistoryArchived = createRoute({
  method: "get",
  path: "/platform/vault_history/archived",
  tags: ["platform"],
  summary: "Vaults whose history is fully backfilled",
  description: "Distinct lower-cased vault addresses of ops.vault_backfill, sorted.",
  middleware: [readKey] as const,
  security: openReadSecurity,
  responses: { 200: json("Vault addresses", z.array(z.string())), ...openReadAuthResponses, ...errorResponses },
});

export const vaultHistory = createRoute({
  method: "get",
  path: "/platform/vault_history/{vault_address}",
  tags: ["platform"],
  summary: "Deposits and withdrawals of a vault, newest first",
  description:
    "From indexer.vault_event. `wallet` matches the position holder (`owner`), the receiver, or the depositor who " +
    "sent a deposit; `wallet` in the records is the position holder (see the schema). " +
    "`Withdraw` events are emitted when a queued redemption is processed. Ordered by block and log index, newest " +
    "first. " +
    "Each record names its asset (`asset_address`, `asset_symbol`, `asset_decimals`) and gives `amount`, the raw " +
    "amount in whole tokens. " +
    "Paging: a full page comes with header `X-Next-Before`; pass it as `before` for the next, older page. " +
    "An address deployed on several chains: `chain_id` (or `chain`) picks one, else the lowest chain id is served " +
    "(header `X-Vault-Chain`). " +
    "404 for an unknown vault, or for a known vault not deployed on `chain_id`; a parameter the route does not " +
    "know is ignored.",
  middleware: [readKey] as const,
  security: openReadSecurity,
  request: {
    params: VaultPath,
    query: vaultChainQuery({
      wallet: EvmAddress.optional().openapi({ description: "Only events of this wallet (case-insensitive)" }),
      type: z.enum(["deposit", "withdraw"]).optional(),
      limit: QueryInt({ def: 5000, min: 1, max: 5000 }).openapi({
        type: "integer",
        default: 5000,
        minimum: 1,
        maximum: 5000,
      }),
      before: HistoryCursor.optional(),
    }),
  },
  responses: {
    200: vaultJsonResponse("Vault history records, newest first", z.array(VaultHistoryRecordSchema), true),
    ...notFoundResponse,
    ...openReadAuthResponses,
    ...unavailableResponse,
    ...errorResponses,
  },
});
