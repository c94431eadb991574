/**
 * The historical APY chart (pure: no I/O): one point per calendar day, each the simple APY over
 * the `period` days before it, (sp(D)/sp(D-period) - 1) * 365/period. Its last point is the
 * vault's published historical_apy for that horizon. Smoothing replaces every point but the
 * last by the mean of itself and its neighbours that have a value (a 3-day centred moving
 * average, the day before the window included), so the series loses day-to-day noise while the
 * last point stays the published figure. Days without sp (no supply) have no point, nor has a
 * day whose period spans one (the shares after it are a new start, as the APY job reads them).
 */
import { carried, resetBetween, type SeriesPoint } from "./series.js";

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
  const from = Math.max(o.daysAgo < 0 ? firstValid + o.period : o.asOf - o.daysAgo + 1, firstValid + o.period);
  // the day before the window too: the first point's smoothing takes it as a neighbour, so a
  // day's value is the same whatever window it is shown in
  const raw = new Map<number, number>();
  const crosses = resetBetween(series);
  for (let d = from - 1; d <= o.asOf; d++) {
    const now = sp.get(d);
    const base = sp.get(d - o.period);
    if (now != null && base != null && !crosses(d - o.period, d)) raw.set(d, ((now / base - 1) * 365) / o.period);
  }
  const shown = [...raw].filter(([d]) => d >= from).map(([day, value]) => ({ day, value }));
  if (!o.smoothing) return shown;
  const lastDay = shown.at(-1)?.day;
  return shown.map((p) => {
    if (p.day === lastDay) return p;
    const window = [p.day - 1, p.day, p.day + 1].flatMap((d) => (raw.has(d) ? [raw.get(d)!] : []));
    return { day: p.day, value: window.reduce((s, x) => s + x, 0) / window.length };
  });
}
