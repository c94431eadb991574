/** The latest figures of a vault from its daily series (pure: no I/O). */
import { carried, isReset, resetBetween, type SeriesPoint } from "../../db/series.js";

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
 * fewer than two days of ratios in a row. A day without supply starts afresh: the peak and the
 * day before are forgotten (a LendingPool mints 1:1 again after it, which is no fall).
 */
export function drawdowns(series: readonly SeriesPoint[]): {
  maxDrawdown: number | null;
  maxDailyDrawdown: number | null;
} {
  const pts = [...series].filter((p) => !p.missing).sort((a, b) => a.day - b.day);
  let peak: number | null = null;
  let prev: number | null = null;
  let maxDd: number | null = null;
  let maxDaily: number | null = null;
  for (const p of pts) {
    if (isReset(p)) {
      peak = prev = null;
      continue;
    }
    const r = p.ratio!;
    if (prev != null && peak != null) {
      peak = Math.max(peak, r);
      maxDd = Math.max(maxDd ?? 0, 1 - r / peak);
      maxDaily = Math.max(maxDaily ?? 0, 1 - r / prev);
    } else peak = r;
    prev = r;
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
  const crosses = resetBetween(series);
  for (const h of [1, 7, 30]) {
    const base = sp.get(asOf - h);
    const since = series.some((p) => p.day <= asOf - h && p.ratio != null);
    if (now != null && base != null && since && !crosses(asOf - h, asOf)) returns[String(h)] = now / base - 1;
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
