/** Operator accounts (the bearer-token side of the write routes), for the CLI and the tests. */
import { type Kysely, sql } from "kysely";
import type { Database } from "../../db/schema.js";
import { hashPassword, passwordProblem } from "./passwords.js";
import { isScope } from "./scopes.js";

export const USERNAME_RE = /^[a-z0-9][a-z0-9._@-]{2,63}$/;

export function usernameProblem(u: string): string | null {
  return USERNAME_RE.test(u)
    ? null
    : "must be 3 to 64 characters: lower-case letters, digits, . _ @ - (starting with a letter or digit)";
}

function check(username: string, password: string | null, scopes: readonly string[] | null): void {
  const u = usernameProblem(username);
  if (u) throw new Error(`username "${username}" ${u}`);
  const p = password == null ? null : passwordProblem(password);
  if (p) throw new Error(`password ${p}`);
  const bad = (scopes ?? []).filter((s) => !isScope(s));
  if (bad.length) throw new Error(`unknown scope(s): ${bad.join(", ")}`);
}

export async function createOperator(
  db: Kysely<Database>,
  username: string,
  password: string,
  scopes: readonly string[],
): Promise<void> {
  check(username, password, scopes);
  const res = await db
    .insertInto("auth.operator_account")
    .values({ username, password_hash: await hashPassword(password), scopes: [...new Set(scopes)] })
    .onConflict((oc) => oc.column("username").doNothing())
    .executeTakeFirst();
  if (Number(res.numInsertedOrUpdatedRows ?? 0n) === 0) throw new Error(`operator "${username}" exists already`);
}

/** Changes the password, the scopes, or enables / disables the account; false when there is no such account. */
export async function updateOperator(
  db: Kysely<Database>,
  username: string,
  change: { password?: string; scopes?: readonly string[]; disabled?: boolean },
): Promise<boolean> {
  check(username, change.password ?? null, change.scopes ?? null);
  const set: Record<string, unknown> = { updated_at: new Date() };
  if (change.password !== undefined) {
    set.password_hash = await hashPassword(change.password);
    set.password_changed_at = set.updated_at; // ends the tokens issued before (api/auth/tokens.ts)
  }
  if (change.scopes !== undefined) set.scopes = [...new Set(change.scopes)];
  // disabling a disabled account keeps the time it was disabled
  if (change.disabled !== undefined) set.disabled_at = change.disabled ? sql`coalesce(disabled_at, now())` : null;
  const res = await db
    .updateTable("auth.operator_account")
    .set(set)
    .where("username", "=", username)
    .executeTakeFirst();
  return Number(res.numUpdatedRows) > 0;
}
