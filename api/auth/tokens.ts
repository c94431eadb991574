/**
 * Bearer tokens of the OAuth 2.0 password flow (POST /api/v1/token): HS256 JWTs naming the
 * operator (`sub`) and the scopes of the account, valid TOKEN_TTL_S (default 15 min). The signing
 * key is TOKEN_SECRET or, unset, a random key created once in auth.api_secret, so every API
 * process of a deployment accepts every token. A disabled account's tokens stop working within
 * ACCOUNT_CACHE_MS (an account in use is re-read in the background before then: `recent` in
 * lib/kept.ts), and a token grants only the scopes its account still holds: one taken away
 * (`npm run operators -- scopes`) stops working as quickly. A password change ends the tokens
 * issued in an earlier second.
 */
import { randomBytes } from "node:crypto";
import { sign, verify } from "hono/jwt";
import type { Kysely } from "kysely";
import type { Database } from "../../db/schema.js";
import type { ReadDb } from "../lib/db.js";
import { recent } from "../lib/kept.js";

const ISSUER = "vault-yield-service";
const AUDIENCE = "vault-yield-api";
export const ACCOUNT_CACHE_MS = 2000;

/** TOKEN_SECRET when set, else the deployment's stored key (created on first use). */
export async function ensureTokenSecret(db: Kysely<Database>, configured?: string): Promise<string> {
  if (configured) return configured;
  await db
    .insertInto("auth.api_secret")
    .values({ name: "token_signing_key", value: randomBytes(48).toString("base64url") })
    .onConflict((oc) => oc.column("name").doNothing())
    .execute();
  const row = await db
    .selectFrom("auth.api_secret")
    .select("value")
    .where("name", "=", "token_signing_key")
    .executeTakeFirstOrThrow();
  return row.value;
}

export interface IssuedToken {
  access_token: string;
  token_type: "bearer";
  expires_in: number;
  scope: string;
}

export async function issueToken(
  secret: string,
  username: string,
  scopes: readonly string[],
  ttlS: number,
  nowS = Math.floor(Date.now() / 1000),
): Promise<IssuedToken> {
  const token = await sign(
    { iss: ISSUER, aud: AUDIENCE, sub: username, scope: scopes.join(" "), iat: nowS, exp: nowS + ttlS },
    secret,
    "HS256",
  );
  return { access_token: token, token_type: "bearer", expires_in: ttlS, scope: scopes.join(" ") };
}

export type TokenCheck =
  | { ok: true; username: string; scopes: string[] }
  | { ok: false; reason: "invalid" | "expired" | "disabled" | "revoked" };

interface Account {
  active: boolean;
  scopes: ReadonlySet<string>;
  /** unix seconds of the last password change */
  passwordChangedS: number;
}
const accounts = recent<Account>(ACCOUNT_CACHE_MS);

export async function checkToken(db: ReadDb, secret: string, token: string, now = Date.now()): Promise<TokenCheck> {
  let payload: Awaited<ReturnType<typeof verify>>;
  try {
    payload = await verify(token, secret, { alg: "HS256", iss: ISSUER, aud: AUDIENCE });
  } catch (err) {
    return { ok: false, reason: (err as Error)?.name === "JwtTokenExpired" ? "expired" : "invalid" };
  }
  const username = typeof payload.sub === "string" ? payload.sub : null;
  if (!username) return { ok: false, reason: "invalid" };
  const a = await accounts.get(
    username,
    async () => {
      const row = await db
        .selectFrom("auth.operator_account")
        .select(["disabled_at", "scopes", "password_changed_at"])
        .where("username", "=", username)
        .executeTakeFirst();
      return {
        active: row != null && row.disabled_at == null,
        scopes: new Set(row?.scopes ?? []),
        passwordChangedS: row ? Math.floor(new Date(row.password_changed_at).getTime() / 1000) : 0,
      };
    },
    now,
  );
  if (!a.active) return { ok: false, reason: "disabled" };
  // issued in a second before the password changed (tokens of that very second stay valid)
  if (typeof payload.iat !== "number" || payload.iat < a.passwordChangedS) return { ok: false, reason: "revoked" };
  const granted = typeof payload.scope === "string" ? payload.scope.split(" ").filter(Boolean) : [];
  return { ok: true, username, scopes: granted.filter((x) => a.scopes.has(x)) };
}
