/** A vault's daily share-ratio series, as the jobs' summary and the API's chart read it. */
export interface SeriesPoint {
  day: number;
  /** asset_share_ratio of the day's last snapshot; null on a missing day or without supply */
  ratio: number | null;
}

/** sp(D) with missing days carried from the last day that had a snapshot. */
export function carried(series: readonly SeriesPoint[]): Map<number, number> {
  const out = new Map<number, number>();
  let last: number | null = null;
  const sorted = [...series].sort((a, b) => a.day - b.day);
  if (sorted.length === 0) return out;
  for (let d = sorted[0]!.day, i = 0; d <= sorted[sorted.length - 1]!.day; d++) {
    while (i < sorted.length && sorted[i]!.day <= d) {
      if (sorted[i]!.ratio != null && sorted[i]!.ratio! > 0) last = sorted[i]!.ratio;
      i++;
    }
    if (last != null) out.set(d, last);
  }
  return out;
}
