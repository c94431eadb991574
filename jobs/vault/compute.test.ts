import fc from "fast-check";
import { describe, expect, it } from "vitest";
import { parseFixed } from "../../db/fixed.js";
import { annualize, computeVaultDays, type SnapshotIn, type VaultMeta } from "./compute.js";

const DAY = 86_400;
const usdc: VaultMeta = {
  chainId: 1,
  address: "0xv",
  name: "Stable",
  shareDecimals: 6,
  assetDecimals: 6,
  assetSymbol: "USDC",
  altAssetDecimals: null,
  strategistName: "S",
};
const weth: VaultMeta = { ...usdc, name: "ETH", shareDecimals: 18, assetDecimals: 18, assetSymbol: "WETH" };

function snap(
  day: number,
  ta: bigint,
  ts: bigint,
  ratio: string,
  price: string | null,
  extra: Partial<SnapshotIn> = {},
): SnapshotIn {
  return {
    id: `s${day}-${extra.timestamp ?? 0}`,
    timestamp: day * DAY + 3600,
    blockNumber: day * 10,
    totalAssets: ta,
    totalSupply: ts,
    ratio: parseFixed(ratio),
    price: price == null ? null : parseFixed(price),
    idleAssets: ta / 10n,
    subaccountAssets: 0n,
    altAssets: null,
    altPrice: null,
    ...extra,
  };
}

describe("computeVaultDays for an erc4626 vault", () => {
  const snaps = [
    snap(100, 1_000_000_000n, 1_000_000_000n, "1", "1", { idleAssets: 0n }),
    snap(101, 1_001_000_000n, 1_000_000_000n, "1.001", "1", { idleAssets: 0n }),
  ];
  it("the same daily rows and APYs as any family, and no unrealized PnL records", () => {
    const asPool = computeVaultDays(usdc, snaps, [], 100, 101);
    const as4626 = computeVaultDays({ ...usdc, family: "erc4626" }, snaps, [], 100, 101);
    expect(as4626.days).toEqual(asPool.days);
    expect(as4626.apy).toEqual(asPool.apy);
    expect(asPool.pnl.length).toBe(2);
    expect(as4626.pnl).toEqual([]);
  });
});

describe("computeVaultDays across a zero supply: shares minted after it are a new start", () => {
  // 1.08 on days 0-2; day 3: everything redeemed (supply 0, no ratio); day 5: a new deposit at
  // 1.0 (a LendingPool mints 1:1 again), 1.001 on day 6; day 8: redeemed and refilled within the day
  const empty = (day: number) => snap(day, 0n, 0n, "0", "1", { ratio: null });
  const snaps = [
    snap(100, 1_080_000_000n, 1_000_000_000n, "1.08", "1"),
    snap(101, 1_080_000_000n, 1_000_000_000n, "1.08", "1"),
    snap(102, 1_080_000_000n, 1_000_000_000n, "1.08", "1"),
    empty(103),
    snap(105, 500_000_000n, 500_000_000n, "1", "1"),
    snap(106, 500_500_000n, 500_000_000n, "1.001", "1"),
    snap(107, 500_500_000n, 500_000_000n, "1.001", "1"),
    { ...empty(108), id: "e108", timestamp: 108 * DAY + 60 },
    snap(108, 200_000_000n, 200_000_000n, "1", "1", { timestamp: 108 * DAY + 7200 }),
    snap(109, 200_200_000n, 200_000_000n, "1.001", "1"),
  ];
  const out = computeVaultDays(usdc, snaps, [], 100, 109);
  const apy = (day: number, h: string) => out.apy.find((a) => a.day === day && a.horizon === h);

  it("no APY window spans a day the supply went to 0: not the 7-day, not inception before it", () => {
    // day 106: 1.001 against day 105's 1.0 is the 1-day figure; 7 days back is before the reset
    expect(apy(106, "1")!.simpleApy).toBeCloseTo(0.001 * 365, 10);
    expect(apy(106, "7")).toBeUndefined();
    // inception restarts at day 105's snapshot, the first of the new start
    expect(apy(106, "inception")).toMatchObject({ spanDays: 1 });
    expect(apy(107, "inception")!.spanDays).toBe(2);
    expect(out.apy.filter((a) => a.simpleApy < 0)).toEqual([]); // 1.0 after 1.08 is no loss
  });

  it("a day the supply went to 0 and back has no daily figures against the day before", () => {
    const d108 = out.days.find((d) => d.day === 108)!;
    expect(d108).toMatchObject({
      sharePrice: "1.000000000000000000",
      dailyApy: null,
      dailyPnl: null,
      grossDailyApy: null,
    });
    expect(apy(108, "1")).toBeUndefined();
    expect(apy(109, "1")!.simpleApy).toBeCloseTo(0.001 * 365, 10);
    expect(apy(109, "inception")!.spanDays).toBe(1);
    expect(out.days.find((d) => d.day === 105)!.dailyApy).toBeNull(); // after day 4 without a ratio
  });

  it("the gross index carries over the resets: no fall is invented", () => {
    const gross = out.apy
      .filter((a) => a.horizon === "1")
      .map((a) => a.grossSimpleApy)
      .filter((x): x is number => x != null);
    expect(gross.length).toBeGreaterThan(3);
    expect(Math.min(...gross)).toBeGreaterThanOrEqual(0);
  });
});

describe("computeVaultDays (6 decimals, a missing day, a loss)", () => {
  // day 0: ratio 1; day 1: +0.1%; day 2: no snapshot; day 3: falls to 1.0005 (a loss)
  const snaps = [
    snap(100, 1_000_000_000n, 1_000_000_000n, "1", "1"),
    snap(101, 1_001_000_000n, 1_000_000_000n, "1.001", "1"),
    snap(103, 1_000_500_000n, 1_000_000_000n, "1.0005", "0.999"),
  ];
  const out = computeVaultDays(usdc, snaps, [], 100, 103);

  it("daily rows: figures, a missing day with nulls, the loss", () => {
    expect(out.days.map((d) => d.day)).toEqual([100, 101, 102, 103]);
    const [d0, d1, d2, d3] = out.days;
    expect(d0!.tvl).toBe("1000.000000000000000000");
    expect(d0!.dailyApy).toBeNull();
    expect(d1!.sharePrice).toBe("1.001000000000000000");
    expect(d1!.dailyApy).toBe(1.001 ** 365 - 1);
    expect(d1!.dailyPnl).toBe("1.000000000000000000"); // 0.001 per share x 1000 shares
    expect(d2).toMatchObject({
      missing: true,
      sharePrice: null,
      tvl: null,
      dailyApy: null,
      dailyPnl: null,
      totalAssets: null,
    });
    // against the carried sp (day 1's snapshot): two days of change, annualized over two days
    expect(d3!.dailyApy).toBe((1.0005 / 1.001) ** (365 / 2) - 1);
    expect(d3!.dailyApy!).toBeLessThan(0);
    expect(d3!.dailyPnl).toBe("-0.500000000000000000");
    expect(d3!.tvl).toBe("999.499500000000000000"); // 1000.5 x 0.999
  });

  it("APY: horizons longer than the history are absent; inception spans the history", () => {
    const day3 = out.apy.filter((a) => a.day === 103);
    expect(day3.map((a) => a.horizon).sort()).toEqual(["1", "inception"]);
    const h1 = day3.find((a) => a.horizon === "1")!;
    expect(h1.simpleApy).toBe((1.0005 / 1.001 - 1) * 365);
    const inc = day3.find((a) => a.horizon === "inception")!;
    expect(inc.spanDays).toBe(3);
    expect(inc.simpleApy).toBe(((1.0005 / 1 - 1) * 365) / 3);
    expect(inc.compoundApy).toBe(1.0005 ** (365 / 3) - 1);
    expect(inc.pnlPerShare).toBe(0.0005);
    expect(inc.dailyPnlPerShare).toBe(0.0005 / 3);
  });

  it("gross APY adds back the management fees charged", () => {
    const fees = [{ timestamp: 101 * DAY + 7200, amount: 1_001_000n }]; // 0.1% of total assets on day 1
    const g = computeVaultDays(usdc, snaps, fees, 100, 103);
    const a = g.apy.find((x) => x.day === 101 && x.horizon === "1")!;
    expect(a.grossSimpleApy).toBeCloseTo((1.001 * 1.001 - 1) * 365, 12);
    expect(a.grossSimpleApy).toBeGreaterThan(a.simpleApy);
    expect(g.days[1]!.feesCharged).toBe("1001000");
  });

  it("unrealized PnL per snapshot", () => {
    const s = snap(100, 1_000_000_000n, 1_000_000_000n, "1", "2", {
      idleAssets: 200_000_000n,
      subaccountAssets: 790_000_000n,
    });
    const p = computeVaultDays(usdc, [s], [], 100, 100).pnl[0]!;
    expect(p.tvlOnVault).toBe("1000.000000000000000000");
    expect(p.actualTvl).toBe("990.000000000000000000");
    expect(p.unrealizedPnlInAsset).toBe("-10.000000000000000000");
    expect(p.unrealizedPnl).toBe("-20.000000000000000000");
    expect(p.currentRedeemRatio).toBe("1.000000000000000000");
    expect(p.adjustedRedeemRatio).toBe("0.990000000000000000");
    expect([p.altAssets, p.altAssetPrice, p.altAssetsInAsset]).toEqual([null, null, null]);
  });
});

describe("unrealized PnL of a vault holding a second asset", () => {
  const e18 = 10n ** 18n;
  // A tokenizedVaultV2 of WETH that took 50 stETH at its contract rate 0.999: it reports
  // 100 + 49.95 WETH and holds 10 WETH idle, 90 WETH in subaccounts and the 50 stETH.
  const teth: VaultMeta = { ...weth, name: "Tokenized ETH", altAssetDecimals: 18 };
  const held = { idleAssets: 10n * e18, subaccountAssets: 90n * e18, altAssets: 50n * e18 };
  const ta = 149_950_000_000_000_000_000n;
  const pnlOf = (meta: VaultMeta, extra: Partial<SnapshotIn>) =>
    computeVaultDays(meta, [snap(20, ta, 100n * e18, "1.4995", "3000", { ...held, ...extra })], [], 20, 20).pnl[0]!;

  it("values the alt asset through its own feed: no PnL when its price matches the contract rate", () => {
    const p = pnlOf(teth, { altPrice: parseFixed("2997") });
    expect(p.altAssets).toBe("50.000000000000000000");
    expect(p.altAssetPrice).toBe("2997.000000000000000000");
    expect(p.altAssetsInAsset).toBe("49.950000000000000000"); // 50 x 2997 / 3000
    expect(p.tvlOnVault).toBe("149.950000000000000000");
    expect(p.actualTvl).toBe("149.950000000000000000");
    expect(p.unrealizedPnlInAsset).toBe("0.000000000000000000"); // the base asset alone: -49.95
    expect(p.unrealizedPnl).toBe("0.000000000000000000");
    expect(p.adjustedRedeemRatio).toBe("1.499500000000000000");
  });

  it("a depeg of the alt asset is unrealized PnL, in asset units and in USD", () => {
    const p = pnlOf(teth, { altPrice: parseFixed("2940") }); // 2 % under the base asset
    expect(p.altAssetsInAsset).toBe("49.000000000000000000");
    expect(p.unrealizedPnlInAsset).toBe("-0.950000000000000000");
    expect(p.unrealizedPnl).toBe("-2850.000000000000000000");
    expect(p.adjustedRedeemRatio).toBe("1.490000000000000000");
  });

  it("other decimals: 1 of an 18-decimal alt asset at a third of a 6-decimal base asset's price, truncated once", () => {
    const meta: VaultMeta = { ...usdc, altAssetDecimals: 18 };
    const held = { idleAssets: 2_000_000n, altAssets: e18, altPrice: parseFixed("1") };
    const s = snap(20, 3_000_000n, 3_000_000n, "1", "3", held);
    const p = computeVaultDays(meta, [s], [], 20, 20).pnl[0]!;
    expect(p.altAssetsInAsset).toBe("0.333333333333333333");
    expect(p.actualTvl).toBe("2.333333333333333333");
    expect(p.unrealizedPnlInAsset).toBe("-0.666666666666666667");
    expect(p.adjustedRedeemRatio).toBe("0.777777777777777777"); // per whole share: 2.333... / 3
  });

  it("without the alt asset's price it is left out of actual TVL, and says so", () => {
    const p = pnlOf(teth, { altPrice: null });
    expect([p.altAssets, p.altAssetPrice, p.altAssetsInAsset]).toEqual(["50.000000000000000000", null, null]);
    expect(p.actualTvl).toBe("100.000000000000000000");
    // nor without the base asset's (the alt asset's value in base-asset units needs both)
    const q = pnlOf(teth, { altPrice: parseFixed("2997"), price: null });
    expect([q.altAssetsInAsset, q.actualTvl, q.unrealizedPnl]).toEqual([null, "100.000000000000000000", null]);
  });

  it("none held needs no price", () => {
    const p = pnlOf(teth, { altAssets: 0n, altPrice: null });
    expect([p.altAssets, p.altAssetsInAsset, p.actualTvl]).toEqual([
      "0.000000000000000000",
      "0.000000000000000000",
      "100.000000000000000000",
    ]);
  });
});

describe("computeVaultDays (18 decimals)", () => {
  it("values WETH at its USD price and reports PnL in asset units", () => {
    const e18 = 10n ** 18n;
    const snaps = [snap(10, 50n * e18, 50n * e18, "1", "3000"), snap(11, 51n * e18, 50n * e18, "1.02", "3100.5")];
    const out = computeVaultDays(weth, snaps, [], 10, 11);
    expect(out.days[0]!.tvl).toBe("150000.000000000000000000");
    expect(out.days[1]!.tvl).toBe("158125.500000000000000000");
    expect(out.days[1]!.dailyPnl).toBe("1.000000000000000000"); // 0.02 x 50 shares
    expect(out.days[1]!.totalAssets).toBe((51n * e18).toString());
  });
});

describe("properties", () => {
  it("compound APY >= simple APY for gains (horizons up to a year)", () => {
    fc.assert(
      fc.property(fc.double({ min: 1, max: 3, noNaN: true }), fc.integer({ min: 1, max: 365 }), (x, h) => {
        const a = annualize(x, h);
        return a.compound >= a.simple - 1e-12;
      }),
    );
  });

  it("a range computed at once equals the same days computed one at a time", () => {
    const arb = fc.array(
      fc.record({
        gap: fc.integer({ min: 0, max: 3 }),
        growth: fc.integer({ min: -50, max: 200 }),
        fee: fc.integer({ min: 0, max: 1000 }),
      }),
      { minLength: 2, maxLength: 40 },
    );
    fc.assert(
      fc.property(arb, (steps) => {
        let day = 500;
        let ratio = 10n ** 18n;
        const snaps: SnapshotIn[] = [];
        const fees = [];
        for (const s of steps) {
          day += s.gap;
          ratio = (ratio * BigInt(100_000 + s.growth)) / 100_000n;
          const ta = (1_000_000n * ratio) / 10n ** 18n;
          snaps.push({
            ...snap(day, ta, 1_000_000n, "1", "1"),
            id: `x${snaps.length}`,
            timestamp: day * DAY + snaps.length,
            ratio,
          });
          fees.push({ timestamp: day * DAY + 5, amount: BigInt(s.fee) });
        }
        const whole = computeVaultDays(usdc, snaps, fees, 500, day);
        const parts = { days: [] as unknown[], apy: [] as unknown[], pnl: [] as unknown[] };
        for (let d = 500; d <= day; d++) {
          const o = computeVaultDays(usdc, snaps, fees, d, d);
          parts.days.push(...o.days);
          parts.apy.push(...o.apy);
          parts.pnl.push(...o.pnl);
        }
        expect(parts.days).toEqual(whole.days);
        expect(parts.apy).toEqual(whole.apy);
        expect(parts.pnl).toEqual(whole.pnl);
      }),
      { numRuns: 50 },
    );
  });
});
