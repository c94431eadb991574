import { describe, expect, it } from "vitest";
import { belowMinimum } from "./health-floor.js";

describe("belowMinimum", () => {
  it("names the health factors against the minimum", () => {
    const r = belowMinimum("The borrow", { minimum: 1.5, before: 2, after: 1.2, below: true, unpriced: [] });
    expect([r.status, r.code]).toEqual([409, "below_min_health_factor"]);
    expect(r.message).toContain("from 2.0000 to 1.2000, below its min_health_factor 1.5");
  });

  it("with a debt no price values, says the health factor is unknown and names the debt", () => {
    const token = `0x${"dd".repeat(20)}`;
    const unpriced = [{ chain_id: 8453, token, symbol: "USDX", amount: 250 }];
    const r = belowMinimum("The swap", { minimum: 1.5, before: null, after: null, below: true, unpriced });
    expect([r.status, r.code]).toEqual([409, "health_factor_unknown"]);
    expect(r.message).toContain(`250 USDX ${token} on chain 8453`);
    expect(r.message).toContain("allow_below_min_health_factor: true");
  });
});
