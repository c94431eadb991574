/** A vault's daily share-ratio series, as the jobs' summary and the API's chart read it. */
export interface SeriesPoint {
  day: number;
  /** asset_share_ratio of the day's last snapshot; null on a missing day or without supply */
  ratio: number | null;
  /** no snapshot that day (derived.vault_day.missing): sp carried from the day before */
  missing: boolean;
}

/**
 * sp(D) for each day from the first of the series to its last, as the APY job reads it
 * (jobs/vault/compute.ts): a missing day carries the last snapshot's ratio; a day whose snapshot
 * has no ratio (no supply) has none, and neither have the missing days after it.
 */
export function carried(series: readonly SeriesPoint[]): Map<number, number> {
  const out = new Map<number, number>();
  let last: number | null = null;
  const sorted = [...series].sort((a, b) => a.day - b.day);
  if (sorted.length === 0) return out;
  for (let d = sorted[0]!.day, i = 0; d <= sorted[sorted.length - 1]!.day; d++) {
    while (i < sorted.length && sorted[i]!.day <= d) {
      const p = sorted[i]!;
      if (!p.missing) last = p.ratio != null && p.ratio > 0 ? p.ratio : null;
      i++;
    }
    if (last != null) out.set(d, last);
  }
  return out;
}

/**
 * Whether the day's snapshot shows no supply. Shares minted after such a day are a new start (a
 * LendingPool mints 1:1 again): no share price is compared across it (jobs/vault/compute.ts).
 */
export const isReset = (p: SeriesPoint) => !p.missing && !(p.ratio != null && p.ratio > 0);

/** Whether a day of `series` in (from, to] shows no supply: no figure spans from `from` to `to`. */
export function resetBetween(series: readonly SeriesPoint[]): (from: number, to: number) => boolean {
  const days = series
    .filter(isReset)
    .map((p) => p.day)
    .sort((a, b) => a - b);
  return (from, to) => days.some((d) => d > from && d <= to);
}
