/**
 * The historical APY chart (pure: no I/O): one point per calendar day, each the simple APY over
 * the `period` days before it, (sp(D)/sp(D-period) - 1) * 365/period. Its last point is the
 * vault's published historical_apy for that horizon. Smoothing replaces every point but the
 * last by the mean of itself and its neighbours (a 3-day centred moving average), so the
 * series loses day-to-day noise while the last point stays the published figure.
 */
import { carried, type SeriesPoint } from "./series.js";

export interface ChartOptions {
  period: number;
  smoothing: boolean;
  /** the last `daysAgo` days; -1 = since inception */
  daysAgo: number;
  asOf: number;
}

export interface ChartPoint {
  day: number;
  value: number;
}

export function apyChart(series: readonly SeriesPoint[], o: ChartOptions): ChartPoint[] {
  if (!Number.isInteger(o.period) || o.period < 1) throw new Error("period must be a positive integer");
  const sp = carried(series);
  const firstValid = Math.min(...[...sp.keys()]);
  const raw: ChartPoint[] = [];
  const from = o.daysAgo < 0 ? firstValid + o.period : o.asOf - o.daysAgo + 1;
  for (let d = Math.max(from, firstValid + o.period); d <= o.asOf; d++) {
    const now = sp.get(d);
    const base = sp.get(d - o.period);
    if (now == null || base == null) continue;
    raw.push({ day: d, value: ((now / base - 1) * 365) / o.period });
  }
  if (!o.smoothing || raw.length < 3) return raw;
  return raw.map((p, i) => {
    if (i === raw.length - 1) return p;
    const window = raw.slice(Math.max(0, i - 1), i + 2);
    return { day: p.day, value: window.reduce((s, x) => s + x.value, 0) / window.length };
  });
}
