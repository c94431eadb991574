/**
 * POST /api/v1/platform/points/register: a wallet registers for points with its EIP-712
 * signature (api/auth/register-message.ts), with an API key holding `points:write`. One
 * transaction with its audit row (api/lib/writes.ts), writing only registry tables: the signup
 * bonus reaches the ledger as the user's row (derived.points_entry is a view over it).
 */
import { createRoute, type RouteHandler, z } from "@hono/zod-openapi";
import { type Hex, zeroAddress } from "viem";
import { parseFixed } from "../../../db/fixed.js";
import { REGISTER_DOMAIN_NAME, REGISTER_DOMAIN_VERSION, verifyRegistration } from "../../auth/register-message.js";
import { DEFAULT_POINTS_AWARDS } from "../../env.js";
import { ChainIdBody } from "../../lib/chain.js";
import {
  type AppEnv,
  EvmAddress,
  IdempotencyHeader,
  jsonResponse,
  keySecurity,
  laxInt,
  laxUint256,
  PgText,
  writeResponses,
} from "../../lib/router.js";
import { Refusal, runWrite } from "../../lib/writes.js";
import { requireScope } from "../../middleware/auth.js";

const TAG = ["points"];

const RegisterBody = z
  .object({
    user_address: EvmAddress.openapi({ description: "The wallet registering (EOA or smart-contract wallet)" }),
    referrer_address: EvmAddress.nullable()
      .optional()
      .openapi({
        description:
          "A registered wallet that referred this one; null, absent or the zero address (as the signed message " +
          "encodes none) for no referrer",
      }),
    chain_id: laxInt(ChainIdBody).openapi({
      description: "Chain of the EIP-712 domain; a smart-contract wallet's signature is checked on it",
    }),
    signature: z
      .string()
      .regex(/^0x[0-9a-fA-F]+$/, "must be 0x-prefixed hex")
      .max(20_000),
    nonce: PgText().min(8).max(128),
    expiry: laxUint256(
      "Unix time (seconds) after which the signature is refused: the message's uint256, a JSON integer or, past " +
        "2^53 - 1 (2^256 - 1 for never), a string of digits",
    ),
  })
  .openapi("PointsRegister", {
    example: {
      user_address: "0x929bb7dff8de498a829e27e0004d467f70b91772",
      referrer_address: null,
      chain_id: 1,
      signature: `0x${"ab".repeat(65)}`,
      nonce: "b7e3c1f0a9d24e58",
      expiry: 1798761600,
    },
  });

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
    "Requires an API key with the scope `points:write`, and the wallet's signature of this EIP-712 typed data " +
      "(viem's `signTypedData`; EOAs are checked by ecrecover, smart-contract wallets by EIP-1271 / ERC-6492 on " +
      "`chain_id`):",
    "",
    "```",
    `domain: { name: "${REGISTER_DOMAIN_NAME}", version: "${REGISTER_DOMAIN_VERSION}", chainId: <chain_id> }`,
    'types:  { Register: [ { name: "user", type: "address" }, { name: "referrer", type: "address" }, { name: ' +
      '"nonce", type: "string" }, { name: "expiry", type: "uint256" } ] }',
    "message: { user: <user_address>, referrer: <referrer_address or 0x0000000000000000000000000000000000000000>, " +
      "nonce: <nonce>, expiry: <expiry> }",
    "```",
    "",
    "Creates the user, the referral and (with a referrer) the signup bonus ledger entry (POINTS_SIGNUP_BONUS) in " +
      "one transaction, exactly once: of concurrent identical requests one succeeds and the others are refused.",
    "",
    "Refusals (`code`): 400 `signature_expired` (expiry in the past), 400 `self_referral`, 400 " +
      "`referrer_not_registered`, 403 `invalid_signature` (not signed by `user_address` for this message), 409 " +
      "`nonce_used` (the nonce was spent: a replay), 409 `already_registered`, 503 `signature_unverifiable` (a " +
      "contract wallet's signature and no reachable RPC for `chain_id`).",
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

/** The request as recorded: an integer a JSON number holds exactly as one, a larger one as its digits. */
const jsonInteger = (n: bigint) => (n <= BigInt(Number.MAX_SAFE_INTEGER) ? Number(n) : n.toString());

export const registerHandler: RouteHandler<typeof register, AppEnv> = async (c) => {
  const b = c.req.valid("json");
  const { config, now } = c.var.deps;
  const rules = config.points ?? DEFAULT_POINTS_AWARDS;
  const user = b.user_address.toLowerCase();
  // the signed message encodes "no referrer" as the zero address: the body may say it the same way
  const given = b.referrer_address?.toLowerCase();
  const referrer = given && given !== zeroAddress ? given : null;
  const t = now();
  // Checked before the write transaction: a contract wallet's signature takes an RPC call (up to a
  // few seconds), which must not hold one of the few write connections.
  const before = async () => {
    if (b.expiry < BigInt(Math.floor(t.getTime() / 1000)))
      throw new Refusal(
        400,
        "signature_expired",
        `The signed message expired at ${new Date(Number(b.expiry) * 1000).toISOString()}`,
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
        `The signature is not user_address's ECDSA signature, and no RPC of chain ${b.chain_id} answered to check ` +
          `it as a contract wallet's`,
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
    { ...b, user_address: user, referrer_address: referrer, expiry: jsonInteger(b.expiry) },
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
