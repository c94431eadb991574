import { describe, expect, it } from "vitest";
import { apyChart } from "../../db/chart.js";
import { computeVaultSummary, drawdowns } from "./summary.js";
import { summaryDay, summaryRows } from "./summary-write.js";

describe("drawdowns", () => {
  it("max drawdown from the running peak and the largest one-day fall", () => {
    const s = [
      { day: 1, ratio: 1.0, missing: false },
      { day: 2, ratio: 1.1, missing: false },
      { day: 3, ratio: 0.99, missing: false }, // -10% from the peak 1.1, in one day
      { day: 4, ratio: null, missing: true },
      { day: 5, ratio: 0.88, missing: false }, // -20% from the peak, -11.1% from day 3
      { day: 6, ratio: 1.2, missing: false },
    ];
    const d = drawdowns(s);
    expect(d.maxDrawdown).toBeCloseTo(0.2, 12);
    expect(d.maxDailyDrawdown).toBeCloseTo(1 - 0.88 / 0.99, 12);
  });
  it("never falling gives 0; a single point gives null", () => {
    expect(
      drawdowns([
        { day: 1, ratio: 1, missing: false },
        { day: 2, ratio: 1.1, missing: false },
      ]),
    ).toEqual({ maxDrawdown: 0, maxDailyDrawdown: 0 });
    expect(drawdowns([{ day: 1, ratio: 1, missing: false }])).toEqual({ maxDrawdown: null, maxDailyDrawdown: null });
  });
  it("a day without supply starts afresh: 1.0 minted after 1.08 is no fall", () => {
    const s = [
      { day: 1, ratio: 1.08, missing: false },
      { day: 2, ratio: 1.07, missing: false }, // the one real fall
      { day: 3, ratio: null, missing: false }, // everything redeemed
      { day: 4, ratio: 1.0, missing: false },
      { day: 5, ratio: 1.001, missing: false },
    ];
    const d = drawdowns(s);
    expect(d.maxDrawdown).toBeCloseTo(1 - 1.07 / 1.08, 12);
    expect(d.maxDailyDrawdown).toBeCloseTo(1 - 1.07 / 1.08, 12);
    expect(drawdowns(s.slice(2))).toEqual({ maxDrawdown: 0, maxDailyDrawdown: 0 });
  });
});

describe("summary and chart", () => {
  const series = Array.from({ length: 40 }, (_, i) => ({
    day: 100 + i,
    ratio: i === 20 ? null : 1 + i * 0.001,
    missing: i === 20,
  }));
  it("returns over 1/7/30 days; absent when the history is shorter", () => {
    const s = computeVaultSummary(series, 139, []);
    expect(s.returns["1"]).toBe(1.039 / 1.038 - 1);
    expect(s.returns["30"]).toBe(1.039 / 1.009 - 1);
    const short = computeVaultSummary(series.slice(0, 5), 104, []);
    expect(short.returns["7"]).toBeUndefined();
  });
  it("chart: one point per day, the last equals the published simple APY of the horizon", () => {
    const pts = apyChart(series, { period: 7, smoothing: false, daysAgo: 10, asOf: 139 });
    expect(pts.map((p) => p.day)).toEqual(Array.from({ length: 10 }, (_, i) => 130 + i));
    expect(pts[9]!.value).toBe(((1.039 / 1.032 - 1) * 365) / 7);
    const smooth = apyChart(series, { period: 7, smoothing: true, daysAgo: 10, asOf: 139 });
    expect(smooth[9]!.value).toBe(pts[9]!.value);
    expect(smooth[5]!.value).toBeCloseTo((pts[4]!.value + pts[5]!.value + pts[6]!.value) / 3, 12);
    // the missing day 120 carries day 119's ratio
    const all = apyChart(series, { period: 7, smoothing: false, daysAgo: -1, asOf: 139 });
    expect(all[0]!.day).toBe(107);
    expect(all.find((p) => p.day === 120)!.value).toBe(((1.019 / 1.013 - 1) * 365) / 7);
  });
  it("chart: a smoothed day has the same value whatever window shows it", () => {
    const wavy = series.map((p, i) => ({ ...p, ratio: p.ratio == null ? null : p.ratio + (i % 3) * 0.0004 }));
    const opts = { period: 7, smoothing: true, asOf: 139 };
    const short = apyChart(wavy, { ...opts, daysAgo: 5 });
    const long = apyChart(wavy, { ...opts, daysAgo: 7 });
    const raw = apyChart(wavy, { ...opts, smoothing: false, daysAgo: 8 });
    expect(short[0]!.day).toBe(135);
    expect(short[0]!.value).toBe(long.find((p) => p.day === 135)!.value);
    const at = (d: number) => raw.find((p) => p.day === d)!.value;
    expect(short[0]!.value).toBeCloseTo((at(134) + at(135) + at(136)) / 3, 12);
    // a window of one day is the last point, never smoothed
    expect(apyChart(wavy, { ...opts, daysAgo: 1 })).toEqual([{ day: 139, value: at(139) }]);
  });
  it("a day without supply has no share price: not carried, as the APY job reads it", () => {
    // day 130 has a snapshot without supply; day 131 has none; 132 has supply again
    const gap = series.map((p) =>
      p.day === 130 ? { ...p, ratio: null } : p.day === 131 ? { ...p, ratio: null, missing: true } : p,
    );
    const pts = apyChart(gap, { period: 1, smoothing: false, daysAgo: 6, asOf: 135 });
    // 130 and 131 have no sp; 132's base (131) has none either
    expect(pts.map((p) => p.day)).toEqual([133, 134, 135]);
    const smooth = apyChart(gap, { period: 1, smoothing: true, daysAgo: 6, asOf: 135 });
    // 133's neighbours: only 134 has a value
    expect(smooth[0]!.value).toBeCloseTo((pts[0]!.value + pts[1]!.value) / 2, 12);
    expect(computeVaultSummary(gap, 131, []).returns).toEqual({});
    expect(computeVaultSummary(gap, 132, []).returns["1"]).toBeUndefined();
    // nor does a window that spans it: the shares after it are a new start
    expect(computeVaultSummary(gap, 132, []).returns["7"]).toBeUndefined();
    expect(computeVaultSummary(gap, 139, []).returns["7"]).toBe(1.039 / 1.032 - 1);
    // 133-136 span day 130; 137 and 138 have no base (130 and 131 have no sp)
    const week = apyChart(gap, { period: 7, smoothing: false, daysAgo: 10, asOf: 139 });
    expect(week.map((p) => p.day)).toEqual([139]);
    // a missing day carries the last snapshot's ratio
    expect(computeVaultSummary(series, 121, []).returns["1"]).toBe(1.021 / 1.019 - 1);
  });
  it("a summary is as of the last day with a snapshot: today before its first is no day of no growth", () => {
    const v = { chainId: 1, address: "0x0000000000000000000000000000000000000001" };
    const days = [...series, { day: 140, ratio: null, missing: true }];
    expect(summaryDay(days)).toBe(139);
    const apy = [
      {
        horizon: "1",
        simpleApy: 0.365,
        compoundApy: 0.44,
        grossSimpleApy: 0.365,
        grossCompoundApy: 0.44,
        pnlPerShare: 0.001,
        dailyPnlPerShare: 0.001,
      },
    ];
    const data = { tvl: "10", sharePrice: "1.039", snapshotTimestamp: 139 * 86400 };
    const [row] = summaryRows([{ vault: v, days, lastWithData: data, apy, apyComputedAt: null }]);
    expect(row!.as_of_day).toBe("1970-05-20");
    expect((row!.returns as Record<string, number>)["1"]).toBe(1.039 / 1.038 - 1);
    expect(row!.historical_apy).toEqual({ 1: 0.365 });
    // a vault whose every day is missing (none can be, but the day must still be defined)
    expect(summaryDay([{ day: 5, ratio: null, missing: true }])).toBe(5);
  });
});
