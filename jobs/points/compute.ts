/**
 * Holding and referral points of one vault over a range of days (pure: no I/O). Rules in
 * docs/metrics.md: each day a wallet earns
 *   usd = trunc(trunc(shares * ratio) as assets) * price;  points = usd * multiplier * pointsPerUsdPerDay
 * (18-decimal fixed point, truncated at each product), and the referrer of a registered user
 * earns referralShare of the referee's points from the referee's registration day on.
 */
import { mulFixed, rawToFixed, SCALE } from "../lib/fixed.js";

export interface PointsRules {
  /** points per USD of position per day, 18-decimal fixed point */
  pointsPerUsdPerDay: bigint;
  /** referrer's share of a referee's daily points, 18-decimal fixed point (0.1 = 10%) */
  referralShare: bigint;
}

export interface TransferIn {
  day: number;
  from: string;
  to: string;
  shares: bigint;
}

export interface DayPricing {
  /** raw asset per raw share, 18-decimal fixed point (null without supply) */
  ratio: bigint | null;
  /** asset USD price, 18-decimal fixed point (null without a price feed) */
  price: bigint | null;
  /** product of the vault's active rewards' multipliers that day, 18-decimal (1e18 when none) */
  multiplier: bigint;
}

export interface ReferralIn {
  referrer: string;
  /** first day the referral counts: the referee's registration day */
  sinceDay: number;
}

export interface HoldingInput {
  assetDecimals: number;
  from: number;
  to: number;
  /** share balances at the end of day from-1 */
  startBalances: ReadonlyMap<string, bigint>;
  /** share transfers of days from..to, in chain order */
  transfers: readonly TransferIn[];
  pricing: (day: number) => DayPricing;
  referrals: ReadonlyMap<string, ReferralIn>;
  /** addresses that never earn points (the zero address, the vault escrowing shares) */
  excluded: ReadonlySet<string>;
  rules: PointsRules;
}

export interface LedgerEntry {
  wallet: string;
  day: number;
  source: "holding" | "referral";
  ref: string;
  points: bigint;
  shares: bigint | null;
  usdValue: bigint | null;
}

export interface Position {
  shares: bigint;
  nativeAmount: bigint;
  usdValue: bigint;
}

export interface HoldingOutput {
  entries: LedgerEntry[];
  /** end-of-range position of every wallet that held shares at the start or moved any */
  positions: Map<string, Position>;
}

export function valuePosition(shares: bigint, p: DayPricing, assetDecimals: number): { native: bigint; usd: bigint } {
  const assetsRaw = p.ratio == null ? 0n : (shares * p.ratio) / SCALE;
  const native = rawToFixed(assetsRaw, assetDecimals);
  return { native, usd: p.price == null ? 0n : mulFixed(native, p.price) };
}

export function computeHoldingPoints(input: HoldingInput): HoldingOutput {
  const balances = new Map<string, bigint>();
  const touched = new Set<string>();
  for (const [w, b] of input.startBalances) {
    if (input.excluded.has(w)) continue;
    touched.add(w);
    if (b !== 0n) balances.set(w, b);
  }
  const entries: LedgerEntry[] = [];
  let t = 0;
  const transfers = input.transfers;
  for (let day = input.from; day <= input.to; day++) {
    while (t < transfers.length && transfers[t]!.day <= day) {
      const x = transfers[t++]!;
      if (x.day < input.from) throw new Error(`transfer on day ${x.day} is before the range start ${input.from}`);
      if (!input.excluded.has(x.from)) {
        balances.set(x.from, (balances.get(x.from) ?? 0n) - x.shares);
        touched.add(x.from);
      }
      if (!input.excluded.has(x.to)) {
        balances.set(x.to, (balances.get(x.to) ?? 0n) + x.shares);
        touched.add(x.to);
      }
    }
    const p = input.pricing(day);
    for (const [wallet, shares] of balances) {
      if (shares <= 0n) continue;
      const { usd } = valuePosition(shares, p, input.assetDecimals);
      const points = mulFixed(mulFixed(usd, p.multiplier), input.rules.pointsPerUsdPerDay);
      entries.push({ wallet, day, source: "holding", ref: "", points, shares, usdValue: usd });
      const ref = input.referrals.get(wallet);
      if (ref && day >= ref.sinceDay) {
        const rp = mulFixed(points, input.rules.referralShare);
        if (rp > 0n) entries.push({ wallet: ref.referrer, day, source: "referral", ref: wallet, points: rp, shares: null, usdValue: null });
      }
    }
  }
  if (t < transfers.length) throw new Error(`transfer on day ${transfers[t]!.day} is after the range end ${input.to}`);
  const positions = new Map<string, Position>();
  const endPricing = input.pricing(input.to);
  for (const w of touched) {
    const shares = balances.get(w) ?? 0n;
    const v = shares > 0n ? valuePosition(shares, endPricing, input.assetDecimals) : { native: 0n, usd: 0n };
    positions.set(w, { shares: shares > 0n ? shares : 0n, nativeAmount: v.native, usdValue: v.usd });
  }
  return { entries, positions };
}
