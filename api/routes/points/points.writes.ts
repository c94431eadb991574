/**
 * The points write routes: wallet registration (EIP-712 signature, see api/auth/register-message.ts)
 * and the daily streak claim. Both need an API key with `points:write`; each runs in one
 * transaction with its audit row (api/lib/writes.ts). They write only registry tables: the
 * ledger's signup-bonus and streak entries are a view over those (derived.points_entry), so the
 * totals count them the moment the transaction commits.
 */
import { createRoute, type RouteHandler, z } from "@hono/zod-openapi";
import type { Hex } from "viem";
import { today as dayOfTime, dayToDate } from "../../../db/days.js";
import { formatFixed, parseFixed } from "../../../db/fixed.js";
import { REGISTER_DOMAIN_NAME, REGISTER_DOMAIN_VERSION, verifyRegistration } from "../../auth/register-message.js";
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

// ---- register --------------------------------------------------------------------------------

const RegisterBody = z
  .object({
    user_address: EvmAddress.openapi({ description: "The wallet registering (EOA or smart-contract wallet)" }),
    referrer_address: EvmAddress.nullable()
      .optional()
      .openapi({ description: "A registered wallet that referred this one" }),
    chain_id: z
      .number()
      .int()
      .min(1)
      .openapi({ description: "Chain of the EIP-712 domain; a smart-contract wallet's signature is checked on it" }),
    signature: z
      .string()
      .regex(/^0x[0-9a-fA-F]+$/, "must be 0x-prefixed hex")
      .max(20_000),
    nonce: z.string().min(8).max(128),
    expiry: z
      .number()
      .int()
      .min(0)
      .openapi({ description: "Unix time (seconds) after which the signature is refused" }),
  })
  .openapi("PointsRegister");

const RegisterResult = z
  .object({
    success: z.boolean(),
    message: z.string(),
    user_id: z.string().openapi({ format: "uuid" }),
    referral_bonus_awarded: z.boolean(),
  })
  .openapi("PointsRegisterResult");

export const register = createRoute({
  method: "post",
  path: "/platform/points/register",
  tags: TAG,
  summary: "Register a wallet for points (signed by the wallet)",
  description: [
    "Requires an API key with the scope `points:write`, and the wallet's signature of this EIP-712 typed data (viem's `signTypedData`; EOAs are checked by ecrecover, smart-contract wallets by EIP-1271 / ERC-6492 on `chain_id`):",
    "",
    "```",
    `domain: { name: "${REGISTER_DOMAIN_NAME}", version: "${REGISTER_DOMAIN_VERSION}", chainId: <chain_id> }`,
    'types:  { Register: [ { name: "user", type: "address" }, { name: "referrer", type: "address" }, { name: "nonce", type: "string" }, { name: "expiry", type: "uint256" } ] }',
    "message: { user: <user_address>, referrer: <referrer_address or 0x0000000000000000000000000000000000000000>, nonce: <nonce>, expiry: <expiry> }",
    "```",
    "",
    "Creates the user, the referral and (with a referrer) the signup bonus ledger entry (POINTS_SIGNUP_BONUS) in one transaction, exactly once: of concurrent identical requests one succeeds and the others are refused.",
    "",
    "Refusals (`code`): 400 `signature_expired` (expiry in the past), 400 `self_referral`, 400 `referrer_not_registered`, 403 `invalid_signature` (not signed by `user_address` for this message), 409 `nonce_used` (the nonce was spent: a replay), 409 `already_registered`, 503 `signature_unverifiable` (a contract wallet's signature and no reachable RPC for `chain_id`).",
  ].join("\n"),
  middleware: [requireScope("points:write")] as const,
  security: keySecurity,
  request: {
    headers: IdempotencyHeader,
    body: { required: true, content: { "application/json": { schema: RegisterBody } } },
  },
  responses: {
    200: jsonResponse("Registered", RegisterResult),
    ...writeResponses({
      400: "`signature_expired`, `self_referral`, `referrer_not_registered`",
      409: "`nonce_used`, `already_registered`",
      503: "`signature_unverifiable`",
    }),
  },
});

export const registerHandler: RouteHandler<typeof register, AppEnv> = async (c) => {
  const b = c.req.valid("json");
  const { config, now } = c.var.deps;
  const rules = config.points ?? DEFAULT_POINTS_AWARDS;
  const user = b.user_address.toLowerCase();
  const referrer = b.referrer_address ? b.referrer_address.toLowerCase() : null;
  const t = now();
  // Checked before the write transaction: a contract wallet's signature takes an RPC call (up to a
  // few seconds), which must not hold one of the few write connections.
  const before = async () => {
    if (b.expiry < Math.floor(t.getTime() / 1000))
      throw new Refusal(
        400,
        "signature_expired",
        `The signed message expired at ${new Date(b.expiry * 1000).toISOString()}`,
      );
    if (referrer === user) throw new Refusal(400, "self_referral", "A wallet cannot refer itself");
    // lower-cased: viem refuses a mixed-case address whose checksum is wrong (an all-caps one), and
    // the signed encoding of an address does not depend on its letter case
    const verdict = await verifyRegistration(
      { user: user as Hex, referrer: referrer as Hex | null, chainId: b.chain_id, nonce: b.nonce, expiry: b.expiry },
      b.signature as Hex,
      config.rpcUrls.get(b.chain_id),
    );
    if (verdict === "unverifiable") {
      throw new Refusal(
        503,
        "signature_unverifiable",
        `The signature is not user_address's ECDSA signature, and no RPC of chain ${b.chain_id} answered to check it as a contract wallet's`,
      );
    }
    if (verdict === "invalid")
      throw new Refusal(
        403,
        "invalid_signature",
        "The signature is not user_address's signature of this registration message",
      );
  };
  return runWrite(
    c,
    "points.register",
    { ...b, user_address: user, referrer_address: referrer },
    async (trx) => {
      const spent = await trx
        .insertInto("registry.register_nonce")
        .values({ address: user, nonce: b.nonce, chain_id: b.chain_id })
        .onConflict((oc) => oc.doNothing())
        .returning("nonce")
        .executeTakeFirst();
      if (!spent) throw new Refusal(409, "nonce_used", "This nonce was already used: sign a new message");
      if (referrer) {
        const known = await trx
          .selectFrom("registry.points_user")
          .select("address")
          .where("address", "=", referrer)
          .executeTakeFirst();
        if (!known) throw new Refusal(400, "referrer_not_registered", `The referrer ${referrer} is not registered`);
      }
      const bonus = referrer ? rules.signupBonus : "0";
      const row = await trx
        .insertInto("registry.points_user")
        .values({ address: user, referrer, chain_id: b.chain_id, registered_at: t, signup_bonus: bonus })
        .onConflict((oc) => oc.column("address").doNothing())
        .returning("id")
        .executeTakeFirst();
      if (!row) throw new Refusal(409, "already_registered", `${user} is already registered`);
      // the signup bonus reaches the ledger as this row: derived.points_entry is a view over it
      const awarded = parseFixed(bonus) > 0n;
      return {
        status: 200 as const,
        body: {
          success: true,
          message: referrer
            ? `Registered with referrer ${referrer}${awarded ? `; signup bonus of ${bonus} points` : ""}`
            : "Registered",
          user_id: row.id,
          referral_bonus_awarded: awarded,
        },
        target: `wallet:${user}`,
        detail: { referrer, chain_id: b.chain_id, signup_bonus: bonus, nonce: b.nonce },
      };
    },
    { before },
  );
};

// ---- daily streak claim -----------------------------------------------------------------------

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
    "Requires an API key with the scope `points:write`: the integration holding it vouches for the wallet (the wallet signs nothing here). The wallet must be registered, hold a position (derived.points_pool) and not have claimed this UTC day. The streak continues after a claim on the previous UTC day and restarts at 1 otherwise; a claim on day n of a streak earns min(POINTS_STREAK_BASE + POINTS_STREAK_STEP × (n − 1), POINTS_STREAK_MAX). Of concurrent claims for the same day exactly one succeeds.\n\nRefusals (`code`): 404 `user_not_found` (not registered), 409 `no_active_positions`, 409 `already_claimed`.",
  middleware: [requireScope("points:write")] as const,
  security: keySecurity,
  request: {
    headers: IdempotencyHeader,
    body: {
      required: true,
      content: { "application/json": { schema: z.object({ address: EvmAddress }).openapi("DailyStreakClaim") } },
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
