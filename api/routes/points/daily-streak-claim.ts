/**
 * POST /api/v1/platform/points/daily_streak/claim: a registered wallet's daily streak claim, with
 * an API key holding `points:write`. One transaction with its audit row (api/lib/writes.ts),
 * writing only registry.streak_claim: the claim reaches the ledger as that row
 * (derived.points_entry is a view over it), so the totals count it the moment it commits.
 */
import { createRoute, type RouteHandler, z } from "@hono/zod-openapi";
import { today as dayOfTime, dayToDate } from "../../../db/days.js";
import { formatFixed, parseFixed } from "../../../db/fixed.js";
import { DEFAULT_POINTS_AWARDS } from "../../env.js";
import {
  type AppEnv,
  EvmAddress,
  IdempotencyHeader,
  jsonResponse,
  keySecurity,
  writeResponses,
} from "../../lib/router.js";
import { Refusal, runWrite } from "../../lib/writes.js";
import { requireScope } from "../../middleware/auth.js";

const TAG = ["points"];

const ClaimResult = z
  .object({
    success: z.boolean(),
    pointsAwarded: z.number(),
    newStreakDays: z.number().int(),
    totalPoints: z.number().openapi({ description: "Total points as of the last points computation, plus this claim" }),
    message: z.string(),
  })
  .openapi("DailyStreakClaimResult");

export const streakClaim = createRoute({
  method: "post",
  path: "/platform/points/daily_streak/claim",
  tags: TAG,
  summary: "Claim today's daily streak points for a wallet",
  description:
    "Requires an API key with the scope `points:write`: the integration holding it vouches for the wallet (the " +
    "wallet signs nothing here). The wallet must be registered, hold a position (derived.points_pool) and not have " +
    "claimed this UTC day. The streak continues after a claim on the previous UTC day and restarts at 1 otherwise; " +
    "a claim on day n of a streak earns min(POINTS_STREAK_BASE + POINTS_STREAK_STEP × (n − 1), " +
    "POINTS_STREAK_MAX). Of concurrent claims for the same day exactly one succeeds.\n\nRefusals (`code`): 404 " +
    "`user_not_found` (not registered), 409 `no_active_positions`, 409 `already_claimed`.",
  middleware: [requireScope("points:write")] as const,
  security: keySecurity,
  request: {
    headers: IdempotencyHeader,
    body: {
      required: true,
      content: {
        "application/json": {
          schema: z
            .object({ address: EvmAddress })
            .openapi("DailyStreakClaim", { example: { address: "0x929bb7dff8de498a829e27e0004d467f70b91772" } }),
        },
      },
    },
  },
  responses: {
    200: jsonResponse("Claimed", ClaimResult),
    ...writeResponses({ 404: "`user_not_found`", 409: "`no_active_positions`, `already_claimed`" }),
  },
});

/** Points of a claim on day `streak` of a streak: min(base + step × (streak − 1), max). */
export function streakPoints(
  rules: { streakBase: string; streakStep: string; streakMax: string },
  streak: number,
): string {
  const p = parseFixed(rules.streakBase) + parseFixed(rules.streakStep) * BigInt(streak - 1);
  const max = parseFixed(rules.streakMax);
  return formatFixed(p < max ? p : max);
}

export const streakClaimHandler: RouteHandler<typeof streakClaim, AppEnv> = async (c) => {
  const wallet = c.req.valid("json").address.toLowerCase();
  const { config, now } = c.var.deps;
  const rules = config.points ?? DEFAULT_POINTS_AWARDS;
  const t = now();
  const day = dayOfTime(t.getTime());
  const today = dayToDate(day);
  const yesterday = dayToDate(day - 1);
  return runWrite(c, "points.streak_claim", { address: wallet }, async (trx) => {
    // the user's row serializes this wallet's claims
    const user = await trx
      .selectFrom("registry.points_user")
      .select("address")
      .where("address", "=", wallet)
      .forUpdate()
      .executeTakeFirst();
    if (!user) throw new Refusal(404, "user_not_found", `${wallet} is not registered for points`);
    const active = await trx
      .selectFrom("derived.points_pool")
      .select("wallet")
      .where("wallet", "=", wallet)
      .where("shares", ">", "0")
      .limit(1)
      .executeTakeFirst();
    if (!active) throw new Refusal(409, "no_active_positions", `${wallet} holds no vault position`);
    const last = await trx
      .selectFrom("registry.streak_claim")
      .select(["day", "streak_days"])
      .where("address", "=", wallet)
      .orderBy("day", "desc")
      .limit(1)
      .executeTakeFirst();
    const lastDay = last ? String(last.day).slice(0, 10) : null;
    if (lastDay != null && lastDay >= today)
      throw new Refusal(
        409,
        "already_claimed",
        `${wallet} already claimed on ${today} (UTC); the next claim opens at midnight UTC`,
      );
    const streak = lastDay === yesterday ? last!.streak_days + 1 : 1;
    const points = streakPoints(rules, streak);
    const ins = await trx
      .insertInto("registry.streak_claim")
      .values({ address: wallet, day: today, streak_days: streak, points, claimed_at: t })
      .onConflict((oc) => oc.doNothing())
      .returning("day")
      .executeTakeFirst();
    if (!ins) throw new Refusal(409, "already_claimed", `${wallet} already claimed on ${today} (UTC)`);
    // live totals: they include the claim just written (derived.points_entry reads the registry)
    const bal = await trx
      .selectFrom("derived.points_total")
      .select("total_points")
      .where("wallet", "=", wallet)
      .executeTakeFirst();
    const total = parseFixed(String(bal?.total_points ?? "0"));
    return {
      status: 200 as const,
      body: {
        success: true,
        pointsAwarded: Number(points),
        newStreakDays: streak,
        totalPoints: Number(formatFixed(total)),
        message: streak > 1 ? `Day ${streak} of your streak` : "Streak started",
      },
      target: `wallet:${wallet}`,
      detail: { day: today, streak_days: streak, points },
    };
  });
};
