import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { formatFixed, parseFixed, SCALE } from "../lib/fixed.js";
import { computeHoldingPoints, type DayPricing, type HoldingInput, type TransferIn } from "./compute.js";

const ZERO = "0x0";
const rules = { pointsPerUsdPerDay: parseFixed("1"), referralShare: parseFixed("0.1") };
const flat = (ratio: string, price: string | null, multiplier = "1"): DayPricing => ({
  ratio: parseFixed(ratio),
  price: price == null ? null : parseFixed(price),
  multiplier: parseFixed(multiplier),
});

function input(over: Partial<HoldingInput>): HoldingInput {
  return {
    assetDecimals: 6,
    from: 10,
    to: 10,
    startBalances: new Map(),
    transfers: [],
    pricing: () => flat("1", "1"),
    referrals: new Map(),
    excluded: new Set([ZERO, "0xvault"]),
    rules,
    ...over,
  };
}

describe("computeHoldingPoints", () => {
  it("values end-of-day positions, applies the multiplier, pays referrers 10%", () => {
    const out = computeHoldingPoints(
      input({
        from: 10,
        to: 11,
        transfers: [
          { day: 10, from: ZERO, to: "0xa", shares: 100_000_000n }, // 100 shares (6 decimals)
          { day: 10, from: ZERO, to: "0xb", shares: 50_000_000n },
          { day: 11, from: "0xa", to: "0xvault", shares: 40_000_000n }, // a redemption request escrows shares
        ],
        pricing: (d) => (d === 10 ? flat("1.5", "2", "2") : flat("1.5", "2")),
        referrals: new Map([["0xb", { referrer: "0xa", sinceDay: 11 }]]),
      }),
    );
    const rows = out.entries.map((e) => [e.wallet, e.day, e.source, e.ref, formatFixed(e.points)]);
    expect(rows).toEqual([
      ["0xa", 10, "holding", "", "600.000000000000000000"], // 100 x 1.5 x $2 x 2
      ["0xb", 10, "holding", "", "300.000000000000000000"], // b registered on day 11: no referral yet
      ["0xa", 11, "holding", "", "180.000000000000000000"], // 60 x 1.5 x $2
      ["0xb", 11, "holding", "", "150.000000000000000000"],
      ["0xa", 11, "referral", "0xb", "15.000000000000000000"],
    ]);
    expect(out.positions.get("0xa")).toEqual({ shares: 60_000_000n, nativeAmount: parseFixed("90"), usdValue: parseFixed("180") });
    expect(out.positions.has("0xvault")).toBe(false);
  });

  it("a vault without a price feed earns no points but keeps positions", () => {
    const out = computeHoldingPoints(input({ startBalances: new Map([["0xa", 5_000_000n]]), pricing: () => flat("1", null) }));
    expect(out.entries[0]!.points).toBe(0n);
    expect(out.positions.get("0xa")!.nativeAmount).toBe(5n * SCALE);
  });

  it("18-decimal assets", () => {
    const out = computeHoldingPoints(
      input({ assetDecimals: 18, startBalances: new Map([["0xa", 2n * 10n ** 18n]]), pricing: () => flat("1.01", "3000") }),
    );
    expect(formatFixed(out.entries[0]!.points)).toBe("6060.000000000000000000");
  });

  it("property: a range at once gives the same ledger as one day at a time (recompute == incremental)", () => {
    const wallets = ["0x1", "0x2", "0x3", "0x4"];
    const arb = fc.array(
      fc.record({ day: fc.integer({ min: 0, max: 9 }), from: fc.constantFrom(ZERO, ...wallets), to: fc.constantFrom(...wallets, "0xvault"), shares: fc.bigInt({ min: 1n, max: 10n ** 9n }) }),
      { maxLength: 30 },
    );
    fc.assert(
      fc.property(arb, (raw) => {
        // keep balances non-negative: only move what the sender has
        const bal = new Map<string, bigint>();
        const transfers: TransferIn[] = [];
        for (const t of [...raw].sort((a, b) => a.day - b.day)) {
          const have = t.from === ZERO ? t.shares : (bal.get(t.from) ?? 0n);
          const s = t.shares <= have ? t.shares : have;
          if (s === 0n || t.from === t.to) continue;
          if (t.from !== ZERO) bal.set(t.from, (bal.get(t.from) ?? 0n) - s);
          bal.set(t.to, (bal.get(t.to) ?? 0n) + s);
          transfers.push({ ...t, shares: s });
        }
        const pricing = (d: number) => flat(`1.${d}1`, `${d + 1}.5`, d % 3 === 0 ? "1.5" : "1");
        const referrals = new Map([["0x2", { referrer: "0x1", sinceDay: 4 }]]);
        const whole = computeHoldingPoints(input({ from: 0, to: 9, transfers, pricing, referrals }));
        let start = new Map<string, bigint>();
        const entries = [];
        for (let d = 0; d <= 9; d++) {
          const o = computeHoldingPoints(input({ from: d, to: d, startBalances: start, transfers: transfers.filter((t) => t.day === d), pricing, referrals }));
          entries.push(...o.entries);
          start = new Map([...o.positions].map(([w, p]) => [w, p.shares]));
        }
        // the same entries (the order within a day follows map insertion and does not matter)
        const key = (e: { day: number; source: string; wallet: string; ref: string }) => `${e.day}|${e.source}|${e.wallet}|${e.ref}`;
        const sort = <T extends { day: number; source: string; wallet: string; ref: string }>(xs: T[]) => [...xs].sort((a, b) => (key(a) < key(b) ? -1 : 1));
        expect(sort(entries)).toEqual(sort(whole.entries));
      }),
      { numRuns: 100 },
    );
  });
});
