import { createRoute, z } from "@hono/zod-openapi";
import { EvmChainIdParam } from "../../lib/chain.js";
import { EvmAddress, errorResponses, openReadAuthResponses, openReadSecurity, QueryInt } from "../../lib/router.js";
import { openRoute, readKey } from "../../middleware/auth.js";

const TAG = ["points"];

const PoolSchema = z
  .object({
    amountDepositedInUsd: z.number().openapi({ description: "Current position, USD" }),
    nativeAmountDeposited: z.number().openapi({ description: "Current position, whole units of the vault's asset" }),
    totalPoints: z.number().openapi({ description: "Holding points earned in this vault" }),
    hasPendingRewards: z.boolean().openapi({ description: "The vault has a reward (multiplier) in force now" }),
    address: z.string(),
    chainId: z.number().int(),
    name: z.string().nullable(),
  })
  .openapi("PointsPool");

const ExternalSchema = z
  .object({
    protocol: z.string(),
    externalName: z.string(),
    amountDepositedInUsd: z.number(),
    nativeAmountDeposited: z.number(),
    totalPoints: z.number(),
    multiplier: z.number(),
  })
  .openapi("PointsExternal");

const ReferralSchema = z
  .object({
    totalPoints: z.number().openapi({ description: "Points the referrer earned from this referee" }),
    amountDepositedInUsd: z.number().openapi({ description: "The referee's current positions, USD" }),
    nativeAmountDeposited: z
      .number()
      .openapi({ description: "The referee's current positions: sum of whole asset units over its vaults" }),
  })
  .openapi("PointsReferral");

export const PointsRecordSchema = z
  .object({
    totalPoints: z.number().openapi({
      description:
        "Every source's points. Today's holding points are provisional: the whole UTC day at its latest snapshot " +
        "(docs/metrics.md), so the total can move either way until the day ends",
    }),
    referralEarnings: z.number(),
    streak: z.number().int(),
    daily_streak_points: z.number(),
    manual_points: z.number(),
    rank: z
      .number()
      .int()
      .nullable()
      .openapi({ description: "Leaderboard rank by total points; null for a wallet that is not on the leaderboard" }),
    pools: z.record(z.string(), PoolSchema).openapi({
      description:
        "Keyed by vault address (lower case); when the wallet holds the same address on several chains, those " +
        "entries are keyed `<address>:<chainId>`",
    }),
    external: z.record(z.string(), ExternalSchema),
    referrals: z.record(z.string(), ReferralSchema).openapi({ description: "Keyed by referee address" }),
    topVault: z
      .object({ lifetimeDeposit: z.number(), address: z.string(), chainId: z.number().int() })
      .nullable()
      .openapi({
        description:
          "Vault with the largest lifetime deposit valued in USD (at its asset's latest points-index price); " +
          "`lifetimeDeposit` in that vault's asset units; null when none",
      }),
  })
  .openapi("PointsRecord");

const UserParams = z.object({
  user_address: EvmAddress.openapi({
    param: { name: "user_address", in: "path" },
    example: "0x2c622344b5dc29dccc034ca76f123d4479d24122",
    description: "Wallet address (case-insensitive)",
  }),
});

const recordDescription =
  "Points of a wallet, live from the derived points views (derived.points_total, points_pool, points_referral); " +
  "`rank` comes from the points standings (derived.points_balance, ranks computed on read, never " +
  "POINTS_STANDINGS_MS old, default 10 s). A wallet with no points gets a zero record (rank null), not a 404.";

export const publicPoints = createRoute({
  method: "get",
  path: "/points/{user_address}",
  tags: TAG,
  summary: "Points record of a wallet",
  description: recordDescription,
  request: { params: UserParams },
  ...openRoute,
  responses: {
    200: { description: "Points record", content: { "application/json": { schema: PointsRecordSchema } } },
    ...openReadAuthResponses,
    ...errorResponses,
  },
});

export const platformPoints = createRoute({
  method: "get",
  path: "/platform/points/{user_address}",
  tags: TAG,
  summary: "Points record of a wallet",
  description: recordDescription,
  middleware: [readKey] as const,
  security: openReadSecurity,
  request: { params: UserParams },
  responses: {
    200: { description: "Points record", content: { "application/json": { schema: PointsRecordSchema } } },
    ...openReadAuthResponses,
    ...errorResponses,
  },
});

export const LeaderboardItemSchema = z
  .object({
    rank: z.number().int(),
    userAddress: z.string(),
    topVault: z
      .object({
        name: z.string().nullable(),
        address: z.string(),
        chainId: z.number().int(),
        deposit: z.object({
          amount: z.number().openapi({ description: "Lifetime deposit, whole asset units" }),
          asset: z.string().nullable(),
        }),
      })
      .nullable(),
    streakDays: z.number().int(),
    streakTooltip: z.string(),
    totalPoints: z.number(),
  })
  .openapi("LeaderboardItem");

export const LeaderboardSchema = z
  .object({
    page: z.number().int(),
    perPage: z.number().int(),
    totalItems: z.number().int(),
    totalPages: z.number().int(),
    items: z.array(LeaderboardItemSchema),
  })
  .openapi("Leaderboard");

export const leaderboard = createRoute({
  method: "get",
  path: "/platform/points/leaderboard",
  tags: TAG,
  summary: "Points leaderboard",
  description:
    "Paginated by rank (`sortBy` totalPoints: derived.points_balance.rank_total; streakDays: rank_streak), from " +
    "the points standings: ranks computed on read, never POINTS_STANDINGS_MS old (default 10 s). With " +
    "`wallet_address` or `ens_name`, only that wallet, with its rank, regardless of `page` (answered as page 1; no " +
    "items when it is not ranked). `ens_name` is an ENS name resolved on the chain `chain` (default 1) through " +
    "that chain's ENS Universal Resolver (`ENS_UNIVERSAL_RESOLVER_<chainId>`, else the one viem knows for the " +
    "chain) and the service's RPC endpoint for it; answers are cached for a minute. A name that does not resolve " +
    "(not registered, not a valid ENS name, no RPC endpoint or resolver for the chain, RPC unavailable) gives no " +
    "items, not an error; a 0x address given as `ens_name` is used as is. `wallet_address` wins over `ens_name`.",
  middleware: [readKey] as const,
  security: openReadSecurity,
  request: {
    query: z.object({
      page: QueryInt({ def: 1, min: 1 }).openapi({ type: "integer", default: 1, minimum: 1 }),
      perPage: QueryInt({ def: 10, min: 1, max: 100 }).openapi({
        type: "integer",
        default: 10,
        minimum: 1,
        maximum: 100,
      }),
      sortBy: z.enum(["totalPoints", "streakDays"]).default("totalPoints"),
      wallet_address: EvmAddress.optional(),
      ens_name: z
        .string()
        .min(1)
        .max(255)
        .optional()
        .openapi({
          description:
            "ENS name (e.g. `vitalik.eth`, normalised per ENSIP-15) or a 0x address; empty or longer than 255 " +
            "characters is a 422",
          example: "wallet0.eth",
        }),
      chain: EvmChainIdParam.default(1).openapi({
        type: "integer",
        default: 1,
        description: "Chain for name resolution (an EVM chain of the catalogue)",
      }),
    }),
  },
  responses: {
    200: { description: "Leaderboard page", content: { "application/json": { schema: LeaderboardSchema } } },
    ...openReadAuthResponses,
    ...errorResponses,
  },
});

export const StreakStatusSchema = z
  .object({
    canClaim: z
      .boolean()
      .openapi({ description: "Registered, has an active position, and has not claimed today (UTC)" }),
    reason: z
      .enum(["user_not_found", "no_active_positions", "already_claimed"])
      .nullable()
      .openapi({
        description:
          "Why `canClaim` is false (null when it is true): the wallet is not registered, holds no vault shares, or " +
          "claimed today (UTC); the claim route refuses with the same code",
      }),
    currentPoints: z
      .number()
      .openapi({ description: "Daily-streak points earned so far (sum of the wallet's claims)" }),
    streakDays: z
      .number()
      .int()
      .openapi({ description: "Streak of the last claim if it was today or yesterday (UTC), else 0" }),
    totalPoints: z.number(),
    timeUntilReset: z.number().int().openapi({ description: "Seconds until the next UTC midnight" }),
    lastClaimedAt: z.string().nullable(),
    hasActivePositions: z.boolean(),
  })
  .openapi("DailyStreakStatus");

export const streakStatus = createRoute({
  method: "get",
  path: "/platform/points/daily_streak/status",
  tags: TAG,
  summary: "Daily streak status of a wallet",
  description:
    "Whether the wallet can claim today's streak (UTC days) and, when it cannot, why: not " +
    "registered, no vault shares held, or claimed today; the claim route refuses with the same " +
    "code. With the streak, the points it earned and the seconds until the next UTC midnight.",
  middleware: [readKey] as const,
  security: openReadSecurity,
  request: { query: z.object({ address: EvmAddress }) },
  responses: {
    200: { description: "Streak status", content: { "application/json": { schema: StreakStatusSchema } } },
    ...openReadAuthResponses,
    ...errorResponses,
  },
});
