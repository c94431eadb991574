/** The latest figures of a vault from its daily series (pure: no I/O). */
import { carried, type SeriesPoint } from "../../db/series.js";

export type { SeriesPoint };

export interface ApyPoint {
  horizon: string;
  simpleApy: number;
  compoundApy: number;
  grossSimpleApy: number;
  grossCompoundApy: number;
  pnlPerShare: number;
  dailyPnlPerShare: number;
}

export interface VaultSummary {
  historicalApy: Record<string, number>;
  historicalCompoundApy: Record<string, number>;
  grossApy: Record<string, number>;
  grossCompoundApy: Record<string, number>;
  pnlPerShare: Record<string, number>;
  dailyPnlPerShare: Record<string, number>;
  returns: Record<string, number>;
  liquidApy7d: number | null;
  liquidApy30d: number | null;
  maxDrawdown: number | null;
  maxDailyDrawdown: number | null;
}

/**
 * max_drawdown: the largest fall of sp from its running peak, 1 - sp(D)/max(sp(d <= D));
 * max_daily_drawdown: the largest fall from one day with a snapshot to the next,
 * 1 - sp(D)/sp(previous day with a snapshot). Both are >= 0 (0: never fell), null with
 * fewer than two days of ratios.
 */
export function drawdowns(series: readonly SeriesPoint[]): {
  maxDrawdown: number | null;
  maxDailyDrawdown: number | null;
} {
  const pts = [...series].filter((p) => p.ratio != null && p.ratio > 0).sort((a, b) => a.day - b.day);
  if (pts.length < 2) return { maxDrawdown: null, maxDailyDrawdown: null };
  let peak = pts[0]!.ratio!;
  let maxDd = 0;
  let maxDaily = 0;
  for (let i = 1; i < pts.length; i++) {
    const r = pts[i]!.ratio!;
    peak = Math.max(peak, r);
    maxDd = Math.max(maxDd, 1 - r / peak);
    maxDaily = Math.max(maxDaily, 1 - r / pts[i - 1]!.ratio!);
  }
  return { maxDrawdown: maxDd, maxDailyDrawdown: maxDaily };
}

export function computeVaultSummary(
  series: readonly SeriesPoint[],
  asOf: number,
  apy: readonly ApyPoint[],
): VaultSummary {
  const sp = carried(series);
  const pick = (f: (a: ApyPoint) => number) => Object.fromEntries(apy.map((a) => [a.horizon, f(a)]));
  const returns: Record<string, number> = {};
  const now = sp.get(asOf);
  for (const h of [1, 7, 30]) {
    const base = sp.get(asOf - h);
    if (now != null && base != null && series.some((p) => p.day <= asOf - h && p.ratio != null))
      returns[String(h)] = now / base - 1;
  }
  const byH = new Map(apy.map((a) => [a.horizon, a]));
  return {
    historicalApy: pick((a) => a.simpleApy),
    historicalCompoundApy: pick((a) => a.compoundApy),
    grossApy: pick((a) => a.grossSimpleApy),
    grossCompoundApy: pick((a) => a.grossCompoundApy),
    pnlPerShare: pick((a) => a.pnlPerShare),
    dailyPnlPerShare: pick((a) => a.dailyPnlPerShare),
    returns,
    liquidApy7d: byH.get("7")?.compoundApy ?? null,
    liquidApy30d: byH.get("30")?.compoundApy ?? null,
    ...drawdowns(series),
  };
}
