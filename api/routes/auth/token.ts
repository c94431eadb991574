/**
 * POST /api/v1/token: the OAuth 2.0 password flow (RFC 6749 §4.3) for operator accounts made with
 * `npm run operators`. Form fields `username`, `password`, optional `grant_type` (`password`) and
 * `scope` (a subset of the account's scopes; default all). Answers a short-lived bearer token.
 * Issuing a token changes nothing, so Idempotency-Key does not apply here.
 */
import { createRoute, type RouteHandler, z } from "@hono/zod-openapi";
import type { MiddlewareHandler } from "hono";
import { LOGIN_LIMITS, LoginGuard } from "../../auth/login-guard.js";
import { usernameProblem } from "../../auth/operators.js";
import { dummyHash, verifyPassword } from "../../auth/passwords.js";
import { issueToken } from "../../auth/tokens.js";
import { ErrorSchema, RefusalSchema, ValidationErrorSchema } from "../../lib/errors.js";
import { type AppDeps, type AppEnv, jsonResponse as json } from "../../lib/router.js";
import { requestAddress } from "../../middleware/rate-limit.js";
import type { Surfaces } from "../index.js";

const TokenForm = z
  .object({
    username: z.string().min(1).max(200),
    password: z.string().min(1).max(1024),
    grant_type: z.string().optional().openapi({ description: "`password` when given" }),
    scope: z
      .string()
      .max(1000)
      .optional()
      .openapi({ description: "Space-separated scopes wanted; default: every scope of the account" }),
  })
  .openapi("TokenRequest", {
    example: { username: "ops-alice", password: "correct horse battery staple", grant_type: "password" },
  });

const FORM_TYPES = /^\s*(application\/x-www-form-urlencoded|multipart\/form-data)\s*(;|$)/i;

/**
 * The body must be a form. Any other content type is answered here with a 422 naming the form
 * types: the app's generic answer to an undeclared content type asks for JSON.
 */
const formBody: MiddlewareHandler<AppEnv> = async (c, next) => {
  if (FORM_TYPES.test(c.req.header("content-type") ?? "")) return next();
  const msg = "Input should be a form body (content-type: application/x-www-form-urlencoded or multipart/form-data)";
  return c.json({ detail: [{ loc: ["body"], msg, type: "model_attributes_type" }] }, 422);
};

const TokenSchema = z
  .object({
    access_token: z.string(),
    token_type: z.literal("bearer"),
    expires_in: z.number().int().openapi({ description: "Seconds until the token expires" }),
    scope: z.string().openapi({ description: "Space-separated scopes the token grants" }),
  })
  .openapi("Token");

export const token = createRoute({
  method: "post",
  path: "/token",
  tags: ["auth"],
  middleware: [formBody] as const,
  summary: "Bearer token for an operator account (OAuth 2.0 password flow)",
  description:
    "Send the form fields `username` and `password` (application/x-www-form-urlencoded or multipart/form-data). " +
    "The token is an HS256 JWT valid `expires_in` seconds (TOKEN_TTL_S, default 900); send it as `Authorization: " +
    "Bearer <token>` to the routes that accept it (POST /platform/strategy_apy). Wrong credentials, an unknown or " +
    "a disabled account all answer 401. " +
    `Attempts are limited before the password is checked: ${LOGIN_LIMITS.perUser} per username and ` +
    `${LOGIN_LIMITS.perAddress} per client address per ${LOGIN_LIMITS.windowS} s (a successful login ` +
    "does not count), past which the answer is 429 with Retry-After; while " +
    `${LOGIN_LIMITS.running + LOGIN_LIMITS.waiting} checks are in progress, 503 with Retry-After: 1. ` +
    "Refusals (`code`): 400 `unsupported_grant_type`, 400 `invalid_scope` (a scope the account does not hold).",
  request: {
    body: {
      required: true,
      content: {
        "application/x-www-form-urlencoded": { schema: TokenForm },
        "multipart/form-data": { schema: TokenForm },
      },
    },
  },
  responses: {
    200: json("A bearer token", TokenSchema),
    400: json("`unsupported_grant_type` or `invalid_scope`", RefusalSchema),
    401: json("Incorrect username or password", ErrorSchema),
    422: json("Validation error", ValidationErrorSchema),
    429: json("Rate limit exceeded, or too many login attempts for the username or address", ErrorSchema),
    503: json("Bearer tokens are not configured on this process, or too many logins in progress", ErrorSchema),
  },
});

/** One guard per app (its counts are shared through the app's Redis). */
const guards = new WeakMap<AppDeps, LoginGuard>();

export const tokenHandler: RouteHandler<typeof token, AppEnv> = async (c) => {
  const f = c.req.valid("form");
  const { db, config } = c.var.deps;
  if (f.grant_type !== undefined && f.grant_type !== "password")
    return c.json({ detail: `grant_type must be "password"`, code: "unsupported_grant_type" }, 400);
  if (!config.tokenSecret) return c.json({ detail: "Bearer tokens are not configured on this process" }, 503);
  let guard = guards.get(c.var.deps);
  if (!guard) {
    const log = c.var.log;
    guard = new LoginGuard(c.var.deps.redis, LOGIN_LIMITS, (msg) => log?.warn(msg));
    guards.set(c.var.deps, guard);
  }
  const admission = await guard.admit(f.username, requestAddress(c, config.trustProxyHops ?? 0));
  if (!admission.ok) {
    c.header("Retry-After", String(admission.retryAfterS));
    return c.json({ detail: admission.detail }, admission.status);
  }
  const { account, ok } = await admission.run(async () => {
    // a name no account can have (e.g. one holding NUL, which Postgres text refuses) is unknown
    const account = usernameProblem(f.username)
      ? undefined
      : await db
          .selectFrom("auth.operator_account")
          .select(["username", "password_hash", "scopes", "disabled_at"])
          .where("username", "=", f.username)
          .executeTakeFirst();
    // an unknown user costs one hash too, so timing does not tell which usernames exist
    const hash = account?.password_hash ?? (await dummyHash());
    return { account, ok: await verifyPassword(f.password, hash) };
  });
  if (!account || !ok || account.disabled_at != null) {
    c.header("WWW-Authenticate", "Bearer");
    return c.json({ detail: "Incorrect username or password" }, 401);
  }
  await admission.succeeded();
  let scopes = account.scopes;
  if (f.scope !== undefined && f.scope.trim() !== "") {
    const wanted = [...new Set(f.scope.trim().split(/\s+/))];
    const foreign = wanted.filter((s) => !account.scopes.includes(s));
    if (foreign.length)
      return c.json({ detail: `The account does not hold: ${foreign.join(", ")}`, code: "invalid_scope" }, 400);
    scopes = wanted;
  }
  c.header("Cache-Control", "no-store");
  return c.json(await issueToken(config.tokenSecret, account.username, scopes, config.tokenTtlS ?? 900), 200);
};

export function registerAuth({ inst }: Surfaces): void {
  inst.openapi(token, tokenHandler);
}
