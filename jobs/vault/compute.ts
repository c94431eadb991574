/**
 * Per-vault computations over a vault's snapshot history (pure: no I/O). docs/metrics.md
 * defines every figure; `sp(D)` is the asset-per-share ratio of the last snapshot at or before
 * the end of UTC day D.
 */
import { dayOf } from "../../db/days.js";
import { formatFixed, mulFixed, pow10, rawToFixed, SCALE, toNumber, tvlOf } from "../../db/fixed.js";

export const HORIZONS = [1, 7, 30, 90, 180, 365] as const;
export type Horizon = (typeof HORIZONS)[number] | "inception";

export interface VaultMeta {
  chainId: number;
  address: string;
  name: string;
  shareDecimals: number;
  assetDecimals: number;
  assetSymbol: string;
  /** decimals of the second asset the vault holds (registry altAsset); null without one */
  altAssetDecimals: number | null;
  strategistName: string | null;
  /**
   * The vault's family (indexer.vault). An erc4626 vault's totalAssets is its own on-chain
   * accounting of what it holds, wherever it holds it (a Morpho market, say), with no registry
   * subaccounts: there is no reported figure to compare with holdings, so it has no unrealized
   * PnL records (docs/metrics.md). Absent: treated as one of the original's families.
   */
  family?: string;
}

export interface SnapshotIn {
  id: string;
  timestamp: number;
  blockNumber: number;
  totalAssets: bigint;
  totalSupply: bigint;
  /** asset_share_ratio (raw assets per raw share) scaled by 1e18; null when the supply is 0 */
  ratio: bigint | null;
  /** the ratio as a number, toNumber(ratio), when the reader had it for free (see ratioNumber) */
  ratioNumber?: number | undefined;
  /** asset USD price scaled by 1e18; null without a price feed */
  price: bigint | null;
  idleAssets: bigint;
  subaccountAssets: bigint;
  /** the alt asset held by the vault and its subaccounts, raw alt units; null without an alt asset */
  altAssets: bigint | null;
  /** the alt asset's USD price scaled by 1e18; null without its feed */
  altPrice: bigint | null;
}

export interface FeeIn {
  timestamp: number;
  /** management fee charged, raw asset units */
  amount: bigint;
}

export interface DayOut {
  day: number;
  missing: boolean;
  snapshotId: string | null;
  snapshotTimestamp: number | null;
  blockNumber: number | null;
  sharePrice: string | null;
  totalAssets: string | null;
  totalShares: string | null;
  assetShareRatio: string | null;
  assetUsdPrice: string | null;
  tvl: string | null;
  dailyApy: number | null;
  dailyPnl: string | null;
  feesCharged: string;
  grossDailyApy: number | null;
}

export interface ApyOut {
  day: number;
  horizon: string;
  spanDays: number;
  simpleApy: number;
  compoundApy: number;
  grossSimpleApy: number;
  grossCompoundApy: number;
  pnlPerShare: number;
  dailyPnlPerShare: number;
}

export interface PnlOut {
  snapshotId: string;
  day: number;
  timestamp: number;
  blockNumber: number;
  vaultName: string;
  strategistName: string | null;
  referenceAsset: string;
  assetPrice: string | null;
  tvlOnVault: string;
  actualTvl: string;
  /** alt asset held, alt units; null without an alt asset */
  altAssets: string | null;
  altAssetPrice: string | null;
  /** its value in base-asset units, counted in actualTvl; null when it holds some and a price is missing */
  altAssetsInAsset: string | null;
  currentRedeemRatio: string | null;
  adjustedRedeemRatio: string | null;
  unrealizedPnl: string | null;
  unrealizedPnlInAsset: string;
}

export interface VaultDaysOut {
  firstDay: number | null;
  days: DayOut[];
  apy: ApyOut[];
  pnl: PnlOut[];
}

/** Assets per whole share (human units), scaled by 1e18, from a raw ratio scaled by 1e18. */
export function sharePriceOf(ratio: bigint, meta: Pick<VaultMeta, "shareDecimals" | "assetDecimals">): bigint {
  const d = meta.shareDecimals - meta.assetDecimals;
  return d >= 0 ? ratio * pow10(d) : ratio / pow10(-d);
}

/**
 * The alt asset held, valued in base-asset units through both USD prices (scaled by 1e18,
 * truncated once): `alt / 10^altDecimals * altPrice / price`. Null without an alt asset; 0 when
 * none is held; null when some is held and either price (or the alt decimals) is missing or the
 * base price is 0: it cannot be valued, and actual TVL leaves it out (docs/metrics.md).
 */
export function altValueInAsset(
  x: Pick<SnapshotIn, "altAssets" | "altPrice" | "price">,
  altDecimals: number | null,
): bigint | null {
  if (x.altAssets == null) return null;
  if (x.altAssets === 0n) return 0n;
  if (x.altPrice == null || x.price == null || x.price <= 0n || altDecimals == null) return null;
  return (x.altAssets * x.altPrice * SCALE) / (x.price * pow10(altDecimals));
}

/** Simple and compound annualization of a growth factor `x` over `days` days. */
export function annualize(x: number, days: number): { simple: number; compound: number } {
  return { simple: ((x - 1) * 365) / days, compound: x ** (365 / days) - 1 };
}

/**
 * Daily rows, APY rows and unrealized PnL records for the days `from..to` (inclusive). Reads
 * the whole snapshot history (needed for the long horizons and inception), so computing a
 * range at once or one day at a time gives the same rows.
 */
export function computeVaultDays(
  meta: VaultMeta,
  snapshots: readonly SnapshotIn[],
  fees: readonly FeeIn[],
  from: number,
  to: number,
): VaultDaysOut {
  if (snapshots.length === 0) return { firstDay: null, days: [], apy: [], pnl: [] };
  for (let i = 1; i < snapshots.length; i++) {
    if (snapshots[i]!.timestamp < snapshots[i - 1]!.timestamp) throw new Error("snapshots must be sorted by timestamp");
  }
  const firstDay = dayOf(snapshots[0]!.timestamp);
  const n = to - firstDay + 1;
  if (n <= 0) return { firstDay, days: [], apy: [], pnl: [] };

  // last[i]: the last snapshot at or before the end of day firstDay+i; inDay[i]: one inside it.
  const last: (SnapshotIn | undefined)[] = new Array(n);
  const inDay: boolean[] = new Array(n).fill(false);
  const byDay: SnapshotIn[][] = Array.from({ length: n }, () => []);
  let k = 0;
  let cur: SnapshotIn | undefined;
  for (let i = 0; i < n; i++) {
    const d = firstDay + i;
    while (k < snapshots.length && dayOf(snapshots[k]!.timestamp) <= d) {
      cur = snapshots[k]!;
      if (dayOf(cur.timestamp) === d) byDay[i]!.push(cur);
      k++;
    }
    inDay[i] = byDay[i]!.length > 0;
    last[i] = cur;
  }
  // resets[i]: the days up to firstDay+i on which the supply was 0 at some snapshot. Shares minted
  // after that are a new start (LendingPool mints 1:1 again), so no share price is compared across
  // one: not in a day's figures, not in an APY window, and the gross index carries over it.
  const resets: number[] = new Array(n);
  for (let i = 0, count = 0; i < n; i++) {
    if (byDay[i]!.some((x) => x.totalSupply === 0n || x.ratio == null)) count++;
    resets[i] = count;
  }
  const resetOn = (i: number) => resets[i]! > (i > 0 ? resets[i - 1]! : 0);
  const crossesReset = (j: number, i: number) => resets[i]! > resets[j]!;
  // days from the day of the snapshot sp(i - 1) comes from to day i (1, or more after missing days)
  const stepDays = (i: number) => i - (dayOf(last[i - 1]!.timestamp) - firstDay);
  const feeByDay = new Array<bigint>(n).fill(0n);
  for (const f of fees) {
    const i = dayOf(f.timestamp) - firstDay;
    if (i >= 0 && i < n) feeByDay[i]! += f.amount;
  }
  const sp = (i: number): bigint | null => {
    const r = i >= 0 && i < n ? last[i]?.ratio : null;
    return r != null && r > 0n ? r : null;
  };
  // sp(i) as a number, converted once per day (toNumber formats the exact decimal)
  const spNum: (number | undefined)[] = new Array(n);
  const spN = (i: number): number => (spNum[i] ??= last[i]!.ratioNumber ?? toNumber(sp(i)!));

  // Gross index: the share price with management fees charged added back (docs/metrics.md).
  const gross: (number | null)[] = new Array(n).fill(null);
  let firstValid = -1;
  let lastGross = 1;
  for (let i = 0; i < n; i++) {
    const r = sp(i);
    if (r == null) continue;
    if (firstValid < 0) {
      firstValid = i;
      gross[i] = 1;
      continue;
    }
    const prev = sp(i - 1);
    const ta = last[i]!.totalAssets;
    const feeFactor = ta > 0n && feeByDay[i]! !== 0n ? 1 + toNumber((feeByDay[i]! * SCALE) / ta) : 1;
    // Over a day without a ratio, or one the supply went to 0 on, the index carries its last value.
    lastGross = prev == null || resetOn(i) ? lastGross : lastGross * (spN(i) / spN(i - 1)) * feeFactor;
    gross[i] = lastGross;
  }

  const days: DayOut[] = [];
  const apy: ApyOut[] = [];
  const pnl: PnlOut[] = [];
  const start = Math.max(from, firstDay) - firstDay;
  let since = Math.max(firstValid, 0);
  for (let i = start; i < n; i++) {
    const d = firstDay + i;
    const s = last[i]!;
    const r = sp(i);
    // the day before's sp, unless the supply went to 0 today (then today's figures start afresh)
    const rPrev = resetOn(i) ? null : sp(i - 1);
    if (inDay[i]) {
      const price = s.price;
      const prevShares = i > 0 ? last[i - 1]!.totalSupply : null;
      days.push({
        day: d,
        missing: false,
        snapshotId: s.id,
        snapshotTimestamp: s.timestamp,
        blockNumber: s.blockNumber,
        sharePrice: s.ratio == null ? null : formatFixed(sharePriceOf(s.ratio, meta)),
        totalAssets: s.totalAssets.toString(),
        totalShares: s.totalSupply.toString(),
        assetShareRatio: s.ratio == null ? null : formatFixed(s.ratio),
        assetUsdPrice: price == null ? null : formatFixed(price),
        tvl: price == null ? null : formatFixed(tvlOf(s.totalAssets, price, meta.assetDecimals)),
        // after missing days the growth since sp(i - 1)'s day, annualized over those days
        dailyApy: r != null && rPrev != null ? annualize(spN(i) / spN(i - 1), stepDays(i)).compound : null,
        dailyPnl:
          r != null && rPrev != null && prevShares != null
            ? formatFixed(((r - rPrev) * prevShares) / pow10(meta.assetDecimals))
            : null,
        feesCharged: feeByDay[i]!.toString(),
        grossDailyApy: r != null && rPrev != null ? annualize(gross[i]! / gross[i - 1]!, stepDays(i)).compound : null,
      });
    } else {
      days.push({
        day: d,
        missing: true,
        snapshotId: null,
        snapshotTimestamp: null,
        blockNumber: null,
        sharePrice: null,
        totalAssets: null,
        totalShares: null,
        assetShareRatio: null,
        assetUsdPrice: null,
        tvl: null,
        dailyApy: null,
        dailyPnl: null,
        feesCharged: feeByDay[i]!.toString(),
        grossDailyApy: null,
      });
    }

    if (r != null && firstValid >= 0) {
      // inception: since the first day with a ratio, or since the last day the supply went to 0
      // (its last snapshot is the new start's); `since` only moves forward as i does
      while (since < i && (crossesReset(since, i) || sp(since) == null)) since++;
      const horizons: [string, number][] = HORIZONS.map((h) => [String(h), h]);
      if (i - since >= 1) horizons.push(["inception", i - since]);
      for (const [name, h] of horizons) {
        const j = i - h;
        const rBase = j >= firstValid && !crossesReset(j, i) ? sp(j) : null;
        if (rBase == null || gross[j] == null || gross[i] == null) continue;
        const net = annualize(spN(i) / spN(j), h);
        const g = annualize(gross[i]! / gross[j]!, h);
        const pps = toNumber(sharePriceOf(r, meta) - sharePriceOf(rBase, meta));
        apy.push({
          day: d,
          horizon: name,
          spanDays: h,
          simpleApy: net.simple,
          compoundApy: net.compound,
          grossSimpleApy: g.simple,
          grossCompoundApy: g.compound,
          pnlPerShare: pps,
          dailyPnlPerShare: pps / h,
        });
      }
    }

    for (const x of meta.family === "erc4626" ? [] : byDay[i]!) {
      const tvlOnVault = rawToFixed(x.totalAssets, meta.assetDecimals);
      const baseRaw = x.idleAssets + x.subaccountAssets;
      const alt = altValueInAsset(x, meta.altAssetDecimals);
      const actualTvl = rawToFixed(baseRaw, meta.assetDecimals) + (alt ?? 0n);
      // actual TVL in raw base units scaled by 1e18 (exact for any asset decimals), per raw share
      const actualRaw18 = baseRaw * SCALE + (alt ?? 0n) * pow10(meta.assetDecimals);
      const inAsset = actualTvl - tvlOnVault;
      pnl.push({
        snapshotId: x.id,
        day: d,
        timestamp: x.timestamp,
        blockNumber: x.blockNumber,
        vaultName: meta.name,
        strategistName: meta.strategistName,
        referenceAsset: meta.assetSymbol,
        assetPrice: x.price == null ? null : formatFixed(x.price),
        tvlOnVault: formatFixed(tvlOnVault),
        actualTvl: formatFixed(actualTvl),
        altAssets:
          x.altAssets == null || meta.altAssetDecimals == null
            ? null
            : formatFixed(rawToFixed(x.altAssets, meta.altAssetDecimals)),
        altAssetPrice: x.altPrice == null ? null : formatFixed(x.altPrice),
        altAssetsInAsset: alt == null ? null : formatFixed(alt),
        currentRedeemRatio: x.ratio == null ? null : formatFixed(sharePriceOf(x.ratio, meta)),
        adjustedRedeemRatio: x.totalSupply > 0n ? formatFixed(sharePriceOf(actualRaw18 / x.totalSupply, meta)) : null,
        unrealizedPnl: x.price == null ? null : formatFixed(mulFixed(inAsset, x.price)),
        unrealizedPnlInAsset: formatFixed(inAsset),
      });
    }
  }
  return { firstDay, days, apy, pnl };
}
