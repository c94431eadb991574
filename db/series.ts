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
