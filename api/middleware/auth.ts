/**
 * Credentials. `requireKey`: the `x-api-key` header on the routes the spec marks with a key
 * requirement (401 without it, 403 with a wrong or revoked one). `readKey`: every other read route;
 * it answers without a key, but a key that is sent is checked (403 when wrong or revoked), and an
 * operator can close the institutional reads (`API_READS_REQUIRE_KEY=1`: 401 without a key). `requireScope(scope)`: the
 * write routes, a key holding `scope`, or, where the route allows it, an operator's bearer token holding it
 * (401 with `WWW-Authenticate: Bearer` when the token is missing, invalid or expired; 403 with
 * code `insufficient_scope` when the credential lacks the scope).
 */
import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import type { Scope } from "../auth/scopes.js";
import { checkToken } from "../auth/tokens.js";
import { checkKey, type KeyCheck } from "../keys.js";
import { type AppEnv, openReadSecurity, type Principal } from "../lib/router.js";

/**
 * The lookup of the key a request sends, made once per request: the rate limiter (which waits
 * for it only briefly) and the key middleware share it, so a database that hangs costs a keyed
 * request one lookup's timeout, not two.
 */
export function sentKeyCheck(c: Context<AppEnv>, key: string): Promise<KeyCheck> {
  const kept = c.get("keyCheck");
  if (kept?.key === key) return kept.result;
  const result = checkKey(c.var.deps.db, key.trim());
  result.catch(() => {}); // awaited by whoever needs it; a route that does not must not crash on it
  c.set("keyCheck", { key, result });
  return result;
}

/**
 * The id of the key a request sends if the request's lookup (`sentKeyCheck`) says within `waitMs`
 * that it is genuine and not revoked, else null (the key middleware still awaits the lookup).
 */
export async function genuineKeyId(c: Context<AppEnv>, key: string, waitMs: number): Promise<string | null> {
  let timer: NodeJS.Timeout | undefined;
  const late = new Promise<null>((resolve) => {
    timer = setTimeout(() => resolve(null), waitMs);
  });
  try {
    const r = await Promise.race([sentKeyCheck(c, key), late]);
    return r?.ok ? r.id : null;
  } finally {
    clearTimeout(timer);
  }
}

async function keyPrincipal(c: Context<AppEnv>, key: string): Promise<Principal | Response> {
  const r = await sentKeyCheck(c, key);
  if (!r.ok) return c.json({ detail: r.reason === "revoked" ? "API key revoked" : "Invalid API key" }, 403);
  return { kind: "api_key", id: r.id, scopes: r.scopes };
}

const MISSING_KEY = "Missing API key: send it in the x-api-key header";

function keyMiddleware(required: (c: Context<AppEnv>) => boolean) {
  return createMiddleware<AppEnv>(async (c, next) => {
    const key = c.req.header("x-api-key");
    if (!key) {
      if (required(c)) return c.json({ detail: MISSING_KEY }, 401);
      return next();
    }
    const p = await keyPrincipal(c, key);
    if (p instanceof Response) return p;
    c.set("apiKeyId", p.id);
    c.set("principal", p);
    await next();
  });
}

export const requireKey = keyMiddleware(() => true);

/** Institutional reads the spec does not mark: open unless the operator closed them. */
export const readKey = keyMiddleware((c) => c.var.deps.config.readsRequireKey === true);

/** Public-surface reads: always open; a key that is sent is checked. */
export const publicKey = keyMiddleware(() => false);

const BEARER = /^Bearer\s+(\S+)\s*$/i;

export function requireScope(scope: Scope, opts: { bearer?: boolean } = {}) {
  return createMiddleware<AppEnv>(async (c, next) => {
    const key = c.req.header("x-api-key");
    const auth = opts.bearer ? c.req.header("authorization") : undefined;
    let p: Principal | Response;
    if (key) p = await keyPrincipal(c, key);
    else if (auth) {
      const m = BEARER.exec(auth);
      const secret = c.var.deps.config.tokenSecret;
      if (!m || !secret) {
        c.header("WWW-Authenticate", 'Bearer error="invalid_token"');
        return c.json({ detail: "Invalid bearer token", code: "invalid_token" }, 401);
      }
      const t = await checkToken(c.var.deps.db, secret, m[1]!);
      if (!t.ok) {
        c.header("WWW-Authenticate", `Bearer error="invalid_token", error_description="token ${t.reason}"`);
        return c.json(
          {
            detail:
              t.reason === "expired"
                ? "Bearer token expired"
                : t.reason === "disabled"
                  ? "Operator account disabled"
                  : t.reason === "revoked"
                    ? "Bearer token revoked: the account's password changed after it was issued"
                    : "Invalid bearer token",
            code: "invalid_token",
          },
          401,
        );
      }
      p = { kind: "operator", id: t.username, scopes: t.scopes };
    } else {
      if (opts.bearer) c.header("WWW-Authenticate", "Bearer");
      const detail = opts.bearer
        ? "Not authenticated: send an API key (x-api-key) or a bearer token (Authorization: Bearer …)"
        : MISSING_KEY;
      return c.json({ detail }, 401);
    }
    if (p instanceof Response) return p;
    if (!p.scopes.includes(scope)) {
      return c.json(
        {
          detail: `The ${p.kind === "api_key" ? "API key" : "operator account"} lacks the scope "${scope}"`,
          code: "insufficient_scope",
        },
        403,
      );
    }
    if (p.kind === "api_key") c.set("apiKeyId", p.id);
    c.set("principal", p);
    await next();
  });
}

/** Route options of a read that is always open (public surface, strategy APY, strategists). */
export const openRoute = { middleware: [publicKey], security: openReadSecurity };

/**
 * The health routes (liveness `/v1/`, `/api/v1/ping`): open, and a key sent to them is not
 * looked up, so a probe that sends one answers within the route's own bounds while the
 * database hangs (the liveness root never touches it).
 */
export const healthRoute = { security: [{}] };
