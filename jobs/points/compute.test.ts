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
  movedDayPoints,
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
const DAY = 86_400;
/** a transfer `sec` seconds into `day` */
const tx = (day: number, from: string, to: string, shares: bigint, sec = 0): TransferIn => ({
  day,
  timestamp: day * DAY + sec,
  from,
  to,
  shares,
});
/** s shares held all day */
const allDay = (s: bigint) => s * BigInt(DAY);
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
  const by = new Map<string, Omit<(typeof changes)[number], "wallet">[]>();
  for (const { wallet, ...c } of changes) by.set(wallet, [...(by.get(wallet) ?? []), c]);
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
  it("records end-of-day balances on the days they move, never for the zero address or the vault", () => {
    const transfers: TransferIn[] = [
      tx(3, ZERO, "0xa", 10n),
      tx(3, "0xa", "0xb", 4n),
      tx(4, "0xb", "0xc", 4n, 600), // b out and in within one block: no move that day
      tx(4, ZERO, "0xb", 4n, 600),
      tx(5, "0xa", VAULT, 6n), // a redemption request escrows the shares
    ];
    expect(balanceChanges(new Map([["0xd", 7n]]), transfers, excluded, 3, 5)).toEqual([
      { wallet: "0xa", day: 3, shares: 6n, shareSeconds: allDay(6n) },
      { wallet: "0xa", day: 5, shares: 0n, shareSeconds: 0n },
      { wallet: "0xb", day: 3, shares: 4n, shareSeconds: allDay(4n) },
      { wallet: "0xc", day: 4, shares: 4n, shareSeconds: 4n * BigInt(DAY - 600) },
    ]);
  });

  it("counts each balance for the seconds it was held; a round trip within a day is a move", () => {
    const h = 3600;
    const transfers: TransferIn[] = [
      tx(2, ZERO, "0xa", 9n, 8 * h), // a: 08:00 to 16:00
      tx(2, "0xa", ZERO, 9n, 16 * h),
      tx(2, ZERO, "0xb", 5n, DAY - 60), // b: 23:59 to 00:01
      tx(3, "0xb", ZERO, 5n, 60),
      tx(3, "0xc", "0xd", 2n, 6 * h), // c holds 3 from before, sends 2 at 06:00
    ];
    expect(balanceChanges(new Map([["0xc", 3n]]), transfers, excluded, 2, 3)).toEqual([
      { wallet: "0xa", day: 2, shares: 0n, shareSeconds: 9n * BigInt(8 * h) },
      { wallet: "0xb", day: 2, shares: 5n, shareSeconds: 5n * 60n },
      { wallet: "0xb", day: 3, shares: 0n, shareSeconds: 5n * 60n },
      { wallet: "0xc", day: 3, shares: 1n, shareSeconds: 3n * BigInt(6 * h) + 1n * BigInt(18 * h) },
      { wallet: "0xd", day: 3, shares: 2n, shareSeconds: 2n * BigInt(18 * h) },
    ]);
  });

  it("with seed, records the start balances on the first day (holdings from before the first index day)", () => {
    const start = new Map([
      ["0xa", 5n],
      ["0xb", 3n],
      ["0xc", 0n],
    ]);
    expect(balanceChanges(start, [], excluded, 7, 9, true)).toEqual([
      { wallet: "0xa", day: 7, shares: 5n, shareSeconds: allDay(5n) },
      { wallet: "0xb", day: 7, shares: 3n, shareSeconds: allDay(3n) },
    ]);
    expect(
      balanceChanges(start, [tx(7, "0xa", "0xc", 5n, DAY / 2), tx(8, "0xb", "0xa", 1n)], excluded, 7, 9, true),
    ).toEqual([
      // a held its 5 until noon of the first day: recorded with that half day
      { wallet: "0xa", day: 7, shares: 0n, shareSeconds: 5n * BigInt(DAY / 2) },
      { wallet: "0xa", day: 8, shares: 1n, shareSeconds: allDay(1n) },
      { wallet: "0xb", day: 7, shares: 3n, shareSeconds: allDay(3n) },
      { wallet: "0xb", day: 8, shares: 2n, shareSeconds: allDay(2n) },
      { wallet: "0xc", day: 7, shares: 5n, shareSeconds: 5n * BigInt(DAY / 2) },
    ]);
  });

  it("refuses transfers outside the range, out of order or off their day", () => {
    expect(() => balanceChanges(new Map(), [tx(9, ZERO, "0xa", 1n)], excluded, 3, 5)).toThrow(/outside the range/);
    expect(() => balanceChanges(new Map(), [tx(4, ZERO, "0xa", 1n), tx(3, ZERO, "0xa", 1n)], excluded, 3, 5)).toThrow(
      /chain order/,
    );
    expect(() => balanceChanges(new Map(), [tx(4, ZERO, "0xa", 1n, DAY)], excluded, 3, 5)).toThrow(/not on its day/);
  });
});

describe("holding and referral points", () => {
  it("values end-of-day positions, applies the multiplier, pays referrers 10% (hand-computed)", () => {
    const transfers: TransferIn[] = [
      tx(10, ZERO, "0xa", 100_000_000n), // 100 shares (6 decimals)
      tx(10, ZERO, "0xb", 50_000_000n),
      tx(11, "0xa", VAULT, 40_000_000n),
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
    // the stored rows: a's first position is settled at 600; its open one's base is
    // P(60, I(11)) = 540 less its first day's 180
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

  it("weighs a moving day by the time held: 08:00-16:00 earns a third, 23:59-00:01 two minutes", () => {
    const h = 3600;
    const transfers: TransferIn[] = [
      tx(20, ZERO, "0xa", 90_000_000n, 8 * h), // 90 shares (6 decimals), 08:00 to 16:00
      tx(20, "0xa", ZERO, 90_000_000n, 16 * h),
      tx(20, ZERO, "0xb", 72_000_000n, DAY - 60), // 72 shares, 23:59 to 00:01
      tx(21, "0xb", ZERO, 72_000_000n, 60),
      tx(21, ZERO, "0xa", 10_000_000n, 12 * h), // a again at noon, held on
    ];
    // one raw share earns 1e-6 points a day ($1 per 10^6 raw shares)
    const index = computeIndex(20, 22, 6, () => flat("1", "1"), rules);
    const cumAt = cumLookup(index);
    const positions = positionsOf(balanceChanges(new Map(), transfers, excluded, 20, 22), cumAt);
    const rows = ledgerEntries(positions, index, new Map(), rules).map((e) => [e.wallet, e.day, formatFixed(e.points)]);
    expect(rows).toEqual([
      ["0xa", 20, "30.000000000000000000"], // 90 x 8/24
      ["0xa", 21, "5.000000000000000000"], // 10 x 12/24
      ["0xa", 22, "10.000000000000000000"],
      ["0xb", 20, "0.050000000000000000"], // 72 x 60 s / 86400 s
      ["0xb", 21, "0.050000000000000000"],
    ]);
    // the exit rows keep what was earned: a negative base, no shares
    const a = positions.get("0xa")!;
    expect(a.map((r) => [r.day, r.shares, formatFixed(r.basePoints), formatFixed(r.settledPoints)])).toEqual([
      [20, 0n, "-30.000000000000000000", "0.000000000000000000"],
      [21, 10_000_000n, "15.000000000000000000", "30.000000000000000000"], // P(10, I(21)) = 20, less 5
    ]);
    expect(formatFixed(holdingAt(a, cumAt, 22))).toBe("45.000000000000000000");
    expect(formatFixed(holdingAt(positions.get("0xb")!, cumAt, 22))).toBe("0.100000000000000000");
  });

  it("truncates once, on the cumulative points: half a unit a day pays one unit every second day", () => {
    // 18-decimal asset at $0.5: one raw share earns 0.5e-18 points a day
    const index = computeIndex(0, 3, 18, () => flat("1", "0.5"), rules);
    const positions = positionsOf(
      balanceChanges(new Map(), [tx(0, ZERO, "0xa", 1n)], excluded, 0, 3),
      cumLookup(index),
    );
    expect(ledgerEntries(positions, index, new Map(), rules).map((e) => e.points)).toEqual([0n, 1n, 0n, 1n]);
  });

  it("a vault without a price feed earns nothing; positions are still tracked", () => {
    const index = computeIndex(0, 1, 6, () => flat("1", null), rules);
    const positions = positionsOf(
      balanceChanges(new Map(), [tx(0, ZERO, "0xa", 5_000_000n)], excluded, 0, 1),
      cumLookup(index),
    );
    expect(positions.get("0xa")!.map((r) => r.shares)).toEqual([5_000_000n]);
    expect(ledgerEntries(positions, index, new Map(), rules).map((e) => e.points)).toEqual([0n, 0n]);
  });

  it("a loss of share price lowers the day's points; holdings before the first snapshot day earn nothing", () => {
    const index = computeIndex(2, 3, 6, (d) => (d === 2 ? flat("1", "1") : flat("0.5", "1")), rules);
    const positions = positionsOf(
      balanceChanges(new Map(), [tx(0, ZERO, "0xa", 2_000_000n)], excluded, 0, 3),
      cumLookup(index),
    );
    expect(ledgerEntries(positions, index, new Map(), rules).map((e) => [e.day, formatFixed(e.points)])).toEqual([
      [2, "2.000000000000000000"],
      [3, "1.000000000000000000"],
    ]);
  });

  it("property: one range equals day-by-day increments; entries weigh each moving day by the seconds held", () => {
    const wallets = ["0xa", "0xb", "0xc", "0xd"];
    const transfer = fc
      .record({
        day: fc.integer({ min: 0, max: 9 }),
        // whole hours make blocks with several transfers (and same-block round trips) common
        sec: fc.oneof(
          fc.integer({ min: 0, max: DAY - 1 }),
          fc.integer({ min: 0, max: 23 }).map((x) => x * 3600),
        ),
        from: fc.constantFrom(ZERO, VAULT, ...wallets),
        to: fc.constantFrom(ZERO, VAULT, ...wallets),
        shares: fc.bigInt({ min: 1n, max: 10n ** 20n }),
      })
      .map((x) => tx(x.day, x.from, x.to, x.shares, x.sec));
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
          const transfers = [...ts].sort((a, b) => a.timestamp - b.timestamp);
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
          // each wallet's points of each day, from its share-seconds summed independently: every
          // transfer up to the day's end counts its shares for the part of the day after it
          const moves = transfers.flatMap((t) => [
            { w: t.to, delta: t.shares, at: t.timestamp },
            { w: t.from, delta: -t.shares, at: t.timestamp },
          ]);
          const rowDays = new Set(whole.map((c) => `${c.wallet}|${c.day}`));
          const holdings = ledgerEntries(positions, index, new Map(), rules);
          for (const w of wallets) {
            for (let d = 0; d <= 9; d++) {
              const end = (d + 1) * DAY;
              const mine = moves.filter((m) => m.w === w && m.at < end);
              const seconds = mine.reduce((s, m) => s + m.delta * BigInt(Math.min(DAY, end - m.at)), 0n);
              const balance = mine.reduce((s, m) => s + m.delta, 0n);
              const pps = cumAt(d) - cumAt(d - 1);
              const got = holdings.find((e) => e.wallet === w && e.day === d)?.points ?? 0n;
              if (rowDays.has(`${w}|${d}`)) expect(got).toBe(movedDayPoints(seconds, pps));
              else {
                // a day without a move holds the day before's balance all day
                expect(seconds).toBe(allDay(balance));
                expect(got).toBe(pointsAt(balance, cumAt(d)) - pointsAt(balance, cumAt(d - 1)));
              }
            }
          }
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
