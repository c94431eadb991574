/** Realized returns from a valuation series built by hand (modified Dietz). */
import { describe, expect, it } from "vitest";
import { estimatedApr, lifetimeReturn, type SeriesDay, windowReturn } from "./subaccounts.returns.js";

/**
 * A series from day 100: `values[i]` the net account value of day 100 + i, `flows[i]` the net
 * deposits that arrived that day (counted in that day's value). PnL = value − cumulative deposits.
 */
function series(values: number[], flows: number[]): SeriesDay[] {
  let deposits = 0;
  return values.map((v, i) => {
    deposits += flows[i] ?? 0;
    return { day: 100 + i, net_account_value: v, total_pnl: v - deposits, total_net_deposits: deposits };
  });
}

describe("windowReturn", () => {
  it("without flows, is the PnL over the value at the start, annualized", () => {
    const rows = series([1000, 1001, 1002, 1003], [1000]);
    const r = windowReturn(rows, 3);
    expect(r.pnl).toBeCloseTo(3, 12);
    expect(r.apr).toBeCloseTo((3 / 1000) * (365 / 3), 12);
  });

  it("weights capital that arrived in the window by the part of it left", () => {
    // 1,000 at the start; 1,000 more at the end of day 2 of 4 (invested for the last 2 days)
    const rows = series([1000, 1000, 2000, 2002, 2004], [1000, 0, 1000, 0, 0]);
    const r = windowReturn(rows, 4);
    expect(r.pnl).toBeCloseTo(4, 12);
    const capital = 1000 + 1000 * (2 / 4);
    expect(r.apr).toBeCloseTo((4 / capital) * (365 / 4), 12);
    // dividing by the start's value alone would credit the start with the new capital's PnL
    expect(r.apr!).toBeLessThan((4 / 1000) * (365 / 4));
  });

  it("a flow on the window's last day adds no capital; a withdrawal takes its part out", () => {
    const onLast = series([1000, 1001, 1502], [1000, 0, 500]);
    expect(windowReturn(onLast, 2).apr).toBeCloseTo((2 / 1000) * (365 / 2), 12);
    const out = series([1000, 1001, 501, 502], [1000, 0, -500, 0]);
    const capital = 1000 - 500 * (1 / 3);
    expect(windowReturn(out, 3).apr).toBeCloseTo((2 / capital) * (365 / 3), 12);
  });

  it("is null without a row at the window's start, or without capital", () => {
    const rows = series([1000, 1001], [1000]);
    expect(windowReturn(rows, 7)).toEqual({ pnl: null, apr: null });
    expect(windowReturn([], 3)).toEqual({ pnl: null, apr: null });
    const empty = series([0, 0, 0], [0]);
    expect(windowReturn(empty, 2)).toEqual({ pnl: 0, apr: null });
  });
});

describe("lifetimeReturn and estimatedApr", () => {
  it("the lifetime window runs from the first day, whose value holds the capital that came before", () => {
    const rows = series([1000, 1005, 1010], [1000]);
    expect(lifetimeReturn(rows).apr).toBeCloseTo((10 / 1000) * (365 / 2), 12);
  });

  it("estimatedApr: 30 days once the series has them, the lifetime before", () => {
    const young = series([1000, 1001, 1002], [1000]);
    expect(estimatedApr(young)).toBeCloseTo(lifetimeReturn(young).apr!, 12);
    const values = Array.from({ length: 40 }, (_, i) => 1000 + i);
    const old = series(values, [1000]);
    expect(estimatedApr(old)).toBeCloseTo(windowReturn(old, 30).apr!, 12);
    expect(estimatedApr(old)).toBeCloseTo((30 / 1009) * (365 / 30), 12);
    // the list passes only the last 31 days: the same figure
    expect(estimatedApr(old.slice(-31))).toBeCloseTo(estimatedApr(old)!, 12);
    expect(estimatedApr([])).toBeNull();
  });
});
