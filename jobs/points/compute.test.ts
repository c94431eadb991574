import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { formatFixed, parseFixed, SCALE } from "../../db/fixed.js";
import {
  balanceChanges,
  computeIndex,
  cumLookup,
  type DayPricing,
  holdingAt,
  ledgerEntries,
  type PositionRow,
  pointsAt,
  pointsPerShare,
  type ReferralIn,
  settlePositions,
  type TransferIn,
} from "./compute.js";

const ZERO = "0x0";
const VAULT = "0xvault";
const excluded = new Set([ZERO, VAULT]);
const rules = { pointsPerUsdPerDay: parseFixed("1"), referralShare: parseFixed("0.1") };
const flat = (ratio: string, price: string | null, multiplier = "1"): DayPricing => ({
  ratio: parseFixed(ratio),
  price: price == null ? null : parseFixed(price),
  multiplier: parseFixed(multiplier),
});

/** positions per wallet, settled against an index */
function positionsOf(
  changes: ReturnType<typeof balanceChanges>,
  cumAt: (d: number) => bigint,
): Map<string, PositionRow[]> {
  const by = new Map<string, { day: number; shares: bigint }[]>();
  for (const c of changes) by.set(c.wallet, [...(by.get(c.wallet) ?? []), { day: c.day, shares: c.shares }]);
  return new Map([...by].map(([w, rows]) => [w, settlePositions(rows, cumAt)]));
}

describe("pointsPerShare and the index", () => {
  it("is ratio x price x multiplier x rate per raw share, at 36 decimals (6-decimal asset)", () => {
    // 1.5 raw asset per raw share, $2, x2: 6 points per 10^6 raw shares a day
    expect(pointsPerShare(flat("1.5", "2", "2"), 6, rules)).toBe(6n * 10n ** 30n);
    expect(pointsPerShare(flat("1.5", null), 6, rules)).toBe(0n);
    expect(pointsPerShare({ ratio: null, price: parseFixed("1"), multiplier: SCALE }, 6, rules)).toBe(0n);
  });

  it("18-decimal asset: one share worth $1 earns one point a day", () => {
    const pps = pointsPerShare(flat("1", "1"), 18, rules);
    expect(pps).toBe(10n ** 18n); // 1e-18 points per raw share, at 36 decimals
    expect(formatFixed(pointsAt(10n ** 18n, pps))).toBe("1.000000000000000000");
  });

  it("accumulates from the first day", () => {
    const idx = computeIndex(5, 7, 6, (d) => flat("1", "1", d === 6 ? "3" : "1"), rules);
    expect(idx.map((i) => [i.day, i.pointsPerShare, i.cum])).toEqual([
      [5, 10n ** 30n, 10n ** 30n],
      [6, 3n * 10n ** 30n, 4n * 10n ** 30n],
      [7, 10n ** 30n, 5n * 10n ** 30n],
    ]);
  });
});

describe("balanceChanges", () => {
  it("records end-of-day balances on the days they change, never for the zero address or the vault", () => {
    const transfers: TransferIn[] = [
      { day: 3, from: ZERO, to: "0xa", shares: 10n },
      { day: 3, from: "0xa", to: "0xb", shares: 4n },
      { day: 4, from: "0xb", to: "0xc", shares: 4n }, // b in and out the same day: no change that day
      { day: 4, from: ZERO, to: "0xb", shares: 4n },
      { day: 5, from: "0xa", to: VAULT, shares: 6n }, // a redemption request escrows the shares
    ];
    expect(balanceChanges(new Map([["0xd", 7n]]), transfers, excluded, 3, 5)).toEqual([
      { wallet: "0xa", day: 3, shares: 6n },
      { wallet: "0xa", day: 5, shares: 0n },
      { wallet: "0xb", day: 3, shares: 4n },
      { wallet: "0xc", day: 4, shares: 4n },
    ]);
  });

  it("with seed, records the start balances on the first day (holdings from before the first index day)", () => {
    const start = new Map([
      ["0xa", 5n],
      ["0xb", 3n],
      ["0xc", 0n],
    ]);
    expect(balanceChanges(start, [], excluded, 7, 9, true)).toEqual([
      { wallet: "0xa", day: 7, shares: 5n },
      { wallet: "0xb", day: 7, shares: 3n },
    ]);
    expect(
      balanceChanges(
        start,
        [
          { day: 7, from: "0xa", to: "0xc", shares: 5n },
          { day: 8, from: "0xb", to: "0xa", shares: 1n },
        ],
        excluded,
        7,
        9,
        true,
      ),
    ).toEqual([
      { wallet: "0xa", day: 8, shares: 1n },
      { wallet: "0xb", day: 7, shares: 3n },
      { wallet: "0xb", day: 8, shares: 2n },
      { wallet: "0xc", day: 7, shares: 5n },
    ]);
  });

  it("refuses transfers outside the range or out of order", () => {
    expect(() => balanceChanges(new Map(), [{ day: 9, from: ZERO, to: "0xa", shares: 1n }], excluded, 3, 5)).toThrow(
      /outside the range/,
    );
    expect(() =>
      balanceChanges(
        new Map(),
        [
          { day: 4, from: ZERO, to: "0xa", shares: 1n },
          { day: 3, from: ZERO, to: "0xa", shares: 1n },
        ],
        excluded,
        3,
        5,
      ),
    ).toThrow(/chain order/);
  });
});

describe("holding and referral points", () => {
  it("values end-of-day positions, applies the multiplier, pays referrers 10% (hand-computed)", () => {
    const transfers: TransferIn[] = [
      { day: 10, from: ZERO, to: "0xa", shares: 100_000_000n }, // 100 shares (6 decimals)
      { day: 10, from: ZERO, to: "0xb", shares: 50_000_000n },
      { day: 11, from: "0xa", to: VAULT, shares: 40_000_000n },
    ];
    const index = computeIndex(10, 11, 6, (d) => (d === 10 ? flat("1.5", "2", "2") : flat("1.5", "2")), rules);
    const cumAt = cumLookup(index);
    const positions = positionsOf(balanceChanges(new Map(), transfers, excluded, 10, 11), cumAt);
    const referrals = new Map<string, ReferralIn>([["0xb", { referrer: "0xa", sinceDay: 11 }]]);
    const rows = ledgerEntries(positions, index, referrals, rules).map((e) => [
      e.wallet,
      e.day,
      e.source,
      e.ref,
      formatFixed(e.points),
    ]);
    expect(rows).toEqual([
      ["0xa", 10, "holding", "", "600.000000000000000000"], // 100 x 1.5 x $2 x 2
      ["0xa", 11, "holding", "", "180.000000000000000000"], // 60 x 1.5 x $2
      ["0xb", 10, "holding", "", "300.000000000000000000"], // b registered on day 11: no referral yet
      ["0xb", 11, "holding", "", "150.000000000000000000"],
      ["0xa", 11, "referral", "0xb", "15.000000000000000000"],
    ]);
    // the stored rows: a's first position is settled at 600, its open one starts from P(60, I(10)) = 360
    expect(
      positions
        .get("0xa")!
        .map((r) => [
          r.day,
          r.nextDay,
          formatFixed(r.basePoints),
          r.points == null ? null : formatFixed(r.points),
          formatFixed(r.settledPoints),
        ]),
    ).toEqual([
      [10, 11, "0.000000000000000000", "600.000000000000000000", "0.000000000000000000"],
      [11, null, "360.000000000000000000", null, "600.000000000000000000"],
    ]);
    expect(formatFixed(holdingAt(positions.get("0xa")!, cumAt, 11))).toBe("780.000000000000000000");
  });

  it("truncates once, on the cumulative points: half a unit a day pays one unit every second day", () => {
    // 18-decimal asset at $0.5: one raw share earns 0.5e-18 points a day
    const index = computeIndex(0, 3, 18, () => flat("1", "0.5"), rules);
    const positions = positionsOf(
      balanceChanges(new Map(), [{ day: 0, from: ZERO, to: "0xa", shares: 1n }], excluded, 0, 3),
      cumLookup(index),
    );
    expect(ledgerEntries(positions, index, new Map(), rules).map((e) => e.points)).toEqual([0n, 1n, 0n, 1n]);
  });

  it("a vault without a price feed earns nothing; positions are still tracked", () => {
    const index = computeIndex(0, 1, 6, () => flat("1", null), rules);
    const positions = positionsOf(
      balanceChanges(new Map(), [{ day: 0, from: ZERO, to: "0xa", shares: 5_000_000n }], excluded, 0, 1),
      cumLookup(index),
    );
    expect(positions.get("0xa")!.map((r) => r.shares)).toEqual([5_000_000n]);
    expect(ledgerEntries(positions, index, new Map(), rules).map((e) => e.points)).toEqual([0n, 0n]);
  });

  it("a loss of share price lowers the day's points; holdings before the first snapshot day earn nothing", () => {
    const index = computeIndex(2, 3, 6, (d) => (d === 2 ? flat("1", "1") : flat("0.5", "1")), rules);
    const positions = positionsOf(
      balanceChanges(new Map(), [{ day: 0, from: ZERO, to: "0xa", shares: 2_000_000n }], excluded, 0, 3),
      cumLookup(index),
    );
    expect(ledgerEntries(positions, index, new Map(), rules).map((e) => [e.day, formatFixed(e.points)])).toEqual([
      [2, "2.000000000000000000"],
      [3, "1.000000000000000000"],
    ]);
  });

  it("property: one range equals day-by-day increments, and a wallet's entries sum to its settled rows", () => {
    const wallets = ["0xa", "0xb", "0xc", "0xd"];
    const transfer = fc.record({
      day: fc.integer({ min: 0, max: 9 }),
      from: fc.constantFrom(ZERO, VAULT, ...wallets),
      to: fc.constantFrom(ZERO, VAULT, ...wallets),
      shares: fc.bigInt({ min: 1n, max: 10n ** 20n }),
    });
    const day = fc.record({
      ratio: fc.bigInt({ min: 0n, max: 3n * SCALE }),
      price: fc.option(fc.bigInt({ min: 1n, max: 5n * SCALE })),
      m: fc.constantFrom(SCALE, 2n * SCALE, SCALE / 3n),
    });
    fc.assert(
      fc.property(
        fc.array(transfer, { maxLength: 30 }),
        fc.array(day, { minLength: 10, maxLength: 10 }),
        fc.integer({ min: 0, max: 9 }),
        (ts, days, since) => {
          const transfers = [...ts].sort((a, b) => a.day - b.day);
          const pricing = (d: number): DayPricing => ({
            ratio: days[d]!.ratio,
            price: days[d]!.price,
            multiplier: days[d]!.m,
          });
          const index = computeIndex(0, 9, 18, pricing, rules);
          const cumAt = cumLookup(index);
          const whole = balanceChanges(new Map(), transfers, excluded, 0, 9);
          // day by day, each from the balances at the end of the day before
          const balances = new Map<string, bigint>();
          const parts: typeof whole = [];
          for (let d = 0; d <= 9; d++) {
            const today = transfers.filter((t) => t.day === d);
            parts.push(...balanceChanges(new Map(balances), today, excluded, d, d));
            for (const t of today) {
              if (!excluded.has(t.from)) balances.set(t.from, (balances.get(t.from) ?? 0n) - t.shares);
              if (!excluded.has(t.to)) balances.set(t.to, (balances.get(t.to) ?? 0n) + t.shares);
            }
          }
          const byKey = (x: typeof whole) =>
            [...x].sort((a, b) => (a.wallet < b.wallet ? -1 : a.wallet > b.wallet ? 1 : a.day - b.day));
          expect(byKey(parts)).toEqual(byKey(whole));
          const positions = positionsOf(whole, cumAt);
          const referrals = new Map<string, ReferralIn>([["0xb", { referrer: "0xa", sinceDay: since }]]);
          const entries = ledgerEntries(positions, index, referrals, rules);
          for (const [w, rows] of positions) {
            const sum = entries
              .filter((e) => e.wallet === w && e.source === "holding")
              .reduce((s, e) => s + e.points, 0n);
            expect(sum).toBe(holdingAt(rows, cumAt, 9));
          }
          // referral: telescopes to trunc(share x H(9)) - trunc(share x H(since - 1))
          const b = positions.get("0xb");
          const refSum = entries.filter((e) => e.source === "referral").reduce((s, e) => s + e.points, 0n);
          const expected = b
            ? (rules.referralShare * holdingAt(b, cumAt, 9)) / SCALE -
              (rules.referralShare * holdingAt(b, cumAt, since - 1)) / SCALE
            : 0n;
          expect(refSum).toBe(expected);
        },
      ),
      { numRuns: 200 },
    );
  });
});
