/**
 * Exact fixed-point arithmetic with 18 decimals on bigint: amounts and USD values are computed
 * to the last digit (truncating toward zero at each documented step, like Postgres `trunc`).
 */
export const SCALE = 10n ** 18n;

/** Parses a decimal string ("12.5", "-0.000001", "7") into an 18-decimal scaled bigint. */
export function parseFixed(s: string): bigint {
  const m = /^(-)?(\d+)(?:\.(\d+))?$/.exec(s.trim());
  if (!m) throw new Error(`not a decimal number: "${s}"`);
  const frac = (m[3] ?? "").slice(0, 18).padEnd(18, "0");
  const v = BigInt(m[2]!) * SCALE + BigInt(frac);
  return m[1] ? -v : v;
}

/** A bigint scaled by 10^decimals as an exact decimal string with `decimals` decimals. */
export function formatDecimals(v: bigint, decimals: number): string {
  const scale = 10n ** BigInt(decimals);
  const neg = v < 0n;
  const abs = neg ? -v : v;
  return `${neg ? "-" : ""}${abs / scale}.${(abs % scale).toString().padStart(decimals, "0")}`;
}

/** An 18-decimal scaled bigint as an exact decimal string with 18 decimals. */
export function formatFixed(v: bigint): string {
  return formatDecimals(v, 18);
}

export function pow10(n: number): bigint {
  return 10n ** BigInt(n);
}

/** A raw token amount with `decimals` as an 18-decimal scaled value (exact for decimals <= 18). */
export function rawToFixed(raw: bigint, decimals: number): bigint {
  return decimals <= 18 ? raw * pow10(18 - decimals) : raw / pow10(decimals - 18);
}

/** a * b for two 18-decimal values, truncated. */
export function mulFixed(a: bigint, b: bigint): bigint {
  return (a * b) / SCALE;
}

/**
 * toNumber(parseFixed(text)) without the bigint round trip, when `text` already is the exact
 * 18-decimal string (how Postgres prints a numeric(78,18)): the same string, so the same number.
 * Undefined for any other text.
 */
export function fixedTextToNumber(text: string): number | undefined {
  return /^-?\d+\.\d{18}$/.test(text) && !/^-?0\d/.test(text) && !/^-0\.0+$/.test(text) ? Number(text) : undefined;
}

/**
 * An 18-decimal value as a JS number (display figures only): the nearest double to its exact
 * decimal string, which is also what `Number(text)` gives for the value read back from Postgres.
 */
export function toNumber(v: bigint): number {
  return Number(formatFixed(v));
}

/**
 * The USD TVL of `totalAssets` raw asset units at `price` (18-decimal USD per whole asset):
 * trunc(total_assets × price / 10^decimals), 18 decimals. The one formula of derived.vault_day's
 * `tvl` and of every route that shows a snapshot's TVL.
 */
export function tvlOf(totalAssets: bigint, price: bigint, assetDecimals: number): bigint {
  return (totalAssets * price) / pow10(assetDecimals);
}
