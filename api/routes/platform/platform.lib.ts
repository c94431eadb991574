/**
 * Helpers of the platform routes: address normalisation, raw-amount formatting, dates, the
 * directory of indexed vaults (cached briefly: the hot vault-history route needs one query only)
 * and the "unknown vault" check shared by every route that takes a vault address.
 */
import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { DateBound } from "../../../db/days.js";
import type { AppEnv } from "../../lib/router.js";
import { isMissingRelation } from "../../lib/vaults.js";

export const EVM_ADDRESS_RE = /^0x[0-9a-fA-F]{40}$/;

export const isEvmAddress = (a: string): boolean => EVM_ADDRESS_RE.test(a);

/** EVM addresses are case-insensitive: lower-cased. Other chains' addresses are kept as given. */
export const normAddress = (a: string): string => (isEvmAddress(a) ? a.toLowerCase() : a);

/** A position in a vault's event history, newest first: `<block_number>:<log_index>` (or a block). */
export const HistoryCursor = z
  .string()
  .regex(/^\d{1,20}(:\d{1,10})?$/, "Input should be a cursor `<block_number>:<log_index>` (header X-Next-Before)")
  // a log index is a Postgres integer: past it, the comparison would fail in the database
  .refine((v) => Number(v.split(":")[1] ?? 0) <= 2_147_483_647, "The cursor's log index must be at most 2147483647")
  .transform((v) => {
    const [block, log] = v.split(":");
    return { block: BigInt(block!), log: log == null ? null : Number(log) };
  })
  .openapi({
    type: "string",
    description:
      "Only events older than this position: the `X-Next-Before` header of the previous page, or a block number",
    example: "1234567:3",
  });

// ---------------------------------------------------------------------------------------------
// Amounts

const pow10 = (n: number): bigint => 10n ** BigInt(n);

/** A raw integer amount as an exact decimal string in whole units ("1.5", "0", "-2.25"). */
export function formatUnits(raw: bigint | string, decimals: number): string {
  let v = typeof raw === "bigint" ? raw : BigInt(raw);
  const neg = v < 0n;
  if (neg) v = -v;
  const d = pow10(decimals);
  const int = v / d;
  const frac = decimals > 0 ? (v % d).toString().padStart(decimals, "0").replace(/0+$/, "") : "";
  return `${neg ? "-" : ""}${int}${frac ? `.${frac}` : ""}`;
}

/** A raw integer amount in whole units as a JSON number (display figure). */
export const human = (raw: bigint | string, decimals: number): number => Number(formatUnits(raw, decimals));

/** A numeric column read as a string, or null, as a JSON number (display figure). */
export const num = (v: string | number | null | undefined): number | null => (v == null ? null : Number(v));

/** `part / whole * 100` as a decimal string with 6 places (truncated), or null when whole is 0. */
export function percentString(part: bigint, whole: bigint | null): string | null {
  if (whole == null || whole === 0n) return null;
  const scaled = (part * 100n * 1_000_000n) / whole;
  const neg = scaled < 0n;
  const a = neg ? -scaled : scaled;
  return `${neg ? "-" : ""}${a / 1_000_000n}.${(a % 1_000_000n).toString().padStart(6, "0")}`;
}

// ---------------------------------------------------------------------------------------------
// Dates

/** Unix seconds (numeric column as string) to an ISO date-time. */
export const isoFromUnix = (s: string | number): string => new Date(Number(s) * 1000).toISOString();

/** The UTC day of a Date, `YYYY-MM-DD`. */
export const utcDay = (d: Date): string => d.toISOString().slice(0, 10);

/** Days from `a` to `b`, both `YYYY-MM-DD`. */
export const daysBetween = (a: string, b: string): number =>
  Math.round((Date.parse(`${b}T00:00:00Z`) - Date.parse(`${a}T00:00:00Z`)) / 86_400_000);

/** `YYYY-MM-DD` shifted by n days. */
export const addDays = (day: string, n: number): string =>
  utcDay(new Date(Date.parse(`${day}T00:00:00Z`) + n * 86_400_000));

/** Inclusive lower bound in unix seconds. */
export const lowerBoundSec = (b: DateBound): number => Math.ceil(b.ms / 1000);
/** Inclusive upper bound in unix seconds: a date covers its whole day. */
export const upperBoundSec = (b: DateBound): number =>
  b.kind === "date" ? Math.floor(b.ms / 1000) + 86_399 : Math.floor(b.ms / 1000);

// ---------------------------------------------------------------------------------------------
// Vaults

/**
 * The 404 of a vault the registry has on `chainId` that the indexer does not follow (a non-EVM
 * chain's, or one whose indexing has not started): known, but with nothing indexed to answer.
 */
export function vaultNotIndexed(c: Context<AppEnv>, address: string, chainId: number, what: string) {
  const on = chainId > 0 ? `chain ${chainId}` : "a non-EVM chain";
  return c.json({ detail: `Vault ${address} is in the registry but not indexed (${on}): ${what}` }, 404);
}

/** The 404 of an unknown vault. */
export function vaultNotFound(c: Context<AppEnv>, address: string, chainId?: number) {
  return c.json(
    { detail: chainId != null ? `Vault ${address} not found on chain ${chainId}` : `Vault ${address} not found` },
    404,
  );
}

/** Runs `fn`; a missing table/view answers 503 instead of 500. */
export async function guard<R>(c: Context<AppEnv>, fn: () => Promise<R>): Promise<R | Response> {
  try {
    return await fn();
  } catch (err) {
    if (isMissingRelation(err))
      return c.json({ detail: "Service unavailable: the indexed or derived tables are not available yet" }, 503);
    throw err;
  }
}
