import { describe, expect, it } from "vitest";
import { apyChart } from "../../db/chart.js";
import { computeVaultSummary, drawdowns } from "./summary.js";

describe("drawdowns", () => {
  it("max drawdown from the running peak and the largest one-day fall", () => {
    const s = [
      { day: 1, ratio: 1.0 },
      { day: 2, ratio: 1.1 },
      { day: 3, ratio: 0.99 }, // -10% from the peak 1.1, in one day
      { day: 4, ratio: null }, // missing
      { day: 5, ratio: 0.88 }, // -20% from the peak, -11.1% from day 3
      { day: 6, ratio: 1.2 },
    ];
    const d = drawdowns(s);
    expect(d.maxDrawdown).toBeCloseTo(0.2, 12);
    expect(d.maxDailyDrawdown).toBeCloseTo(1 - 0.88 / 0.99, 12);
  });
  it("never falling gives 0; a single point gives null", () => {
    expect(
      drawdowns([
        { day: 1, ratio: 1 },
        { day: 2, ratio: 1.1 },
      ]),
    ).toEqual({ maxDrawdown: 0, maxDailyDrawdown: 0 });
    expect(drawdowns([{ day: 1, ratio: 1 }])).toEqual({ maxDrawdown: null, maxDailyDrawdown: null });
  });
});

describe("summary and chart", () => {
  const series = Array.from({ length: 40 }, (_, i) => ({ day: 100 + i, ratio: i === 20 ? null : 1 + i * 0.001 }));
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
});
