/**
 * Holding and referral points (pure: no I/O). Rules in docs/metrics.md, "Points".
 *
 * Per vault and day d the index grows by the points one raw share earns that day,
 *   pointsPerShare(d) = trunc(ratio x price x multiplier x pointsPerUsdPerDay / 10^asset_decimals, 36 decimals)
 *   I(d) = I(d-1) + pointsPerShare(d)        (I = 0 before the vault's first snapshot day)
 * and s shares held through days a..b earn exactly P(s, b) - P(s, a-1), where
 *   P(s, d) = trunc(s x I(d), 18 decimals)
 * (the daily differences telescope). On a day its balance moves, a wallet earns for the time it
 * held each balance: trunc(S x pointsPerShare(d) / 86400), S being its share-seconds of the day
 * (the last balance counted to the day's end). So a day costs one index row per vault plus one
 * row per wallet whose balance moved, never a row per holder. A referrer earns, per vault and day
 * from the referee's registration day on, trunc(share x H(d)) - trunc(share x H(d-1)), H being the
 * referee's cumulative holding points in that vault.
 */
import { DAY_SECONDS } from "../../db/days.js";
import { SCALE } from "../../db/fixed.js";

export interface PointsRules {
  /** points per USD of position per day, 18-decimal fixed point */
  pointsPerUsdPerDay: bigint;
  /** referrer's share of a referee's daily points, 18-decimal fixed point (0.1 = 10%) */
  referralShare: bigint;
}

export interface TransferIn {
  day: number;
  /** the block's timestamp, seconds (within `day`) */
  timestamp: number;
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

/** Decimals of the points-per-share index. */
export const INDEX_DECIMALS = 36;
export const INDEX_SCALE = 10n ** 36n;

/** Points one raw share earns on a day, INDEX_DECIMALS fixed point (0 without a ratio or a price). */
export function pointsPerShare(p: DayPricing, assetDecimals: number, rules: PointsRules): bigint {
  if (p.ratio == null || p.price == null) return 0n;
  // four 18-decimal factors (72 decimals) over 10^asset_decimals, kept to 36 decimals
  return (p.ratio * p.price * p.multiplier * rules.pointsPerUsdPerDay) / 10n ** BigInt(36 + assetDecimals);
}

export interface IndexDay {
  day: number;
  pricing: DayPricing;
  pointsPerShare: bigint;
  /** I(day), INDEX_DECIMALS fixed point */
  cum: bigint;
}

/** The index of days firstDay..to (cumulative from firstDay, where I(firstDay - 1) = 0). */
export function computeIndex(
  firstDay: number,
  to: number,
  assetDecimals: number,
  pricing: (day: number) => DayPricing,
  rules: PointsRules,
): IndexDay[] {
  const out: IndexDay[] = [];
  let cum = 0n;
  for (let day = firstDay; day <= to; day++) {
    const p = pricing(day);
    const pps = pointsPerShare(p, assetDecimals, rules);
    cum += pps;
    out.push({ day, pricing: p, pointsPerShare: pps, cum });
  }
  return out;
}

/**
 * I(d) for any day from an index of consecutive days: 0 before its first day, the last day's
 * value after its last (nothing has been earned there yet).
 */
export function cumLookup(index: readonly IndexDay[]): (day: number) => bigint {
  const cumOf = new Map(index.map((i) => [i.day, i.cum]));
  const first = index[0]?.day ?? Infinity;
  const last = index.at(-1)?.day ?? -Infinity;
  return (d) => (d < first ? 0n : (cumOf.get(Math.min(d, last)) ?? 0n));
}

/** P(s, I): the points, 18-decimal fixed point, that `shares` have earned at cumulative index `cum`. */
export function pointsAt(shares: bigint, cum: bigint): bigint {
  return shares > 0n ? (shares * cum) / (INDEX_SCALE / SCALE) : 0n;
}

/** trunc(share x h, 18) for two 18-decimal values. */
export function referralPart(share: bigint, h: bigint): bigint {
  return (share * h) / SCALE;
}

export interface BalanceChange {
  wallet: string;
  day: number;
  /** the wallet's share balance at the end of `day` (and on until its next change) */
  shares: bigint;
  /** Σ balance x seconds held over `day`, the last balance counted to the day's end */
  shareSeconds: bigint;
}

/** A day's seconds, for share-seconds */
const DAY_N = BigInt(DAY_SECONDS);

/**
 * The days from..to on which a wallet's share balance moved, with its end-of-day balance and its
 * share-seconds of the day: every day whose balance or share-seconds differ from holding the day
 * before's balance all day (a round trip within a day moves it; a transfer in and out within
 * one block does not). `startBalances` are the balances at the end of day from-1. With `seed`,
 * every start balance counts as a move on day `from` (the vault's first index day: holdings
 * from before it are recorded there). Excluded addresses (the zero address, the vault escrowing
 * shares) are never positions. Sorted by wallet, then day.
 */
export function balanceChanges(
  startBalances: ReadonlyMap<string, bigint>,
  transfers: readonly TransferIn[],
  excluded: ReadonlySet<string>,
  from: number,
  to: number,
  seed = false,
): BalanceChange[] {
  const balances = new Map<string, bigint>();
  for (const [w, b] of startBalances) if (!excluded.has(w)) balances.set(w, b);
  const out: BalanceChange[] = [];
  let t = 0;
  let prevDay = -Infinity;
  if (seed && (transfers.length === 0 || transfers[0]!.day > from)) {
    for (const [w, b] of balances) if (b !== 0n) out.push({ wallet: w, day: from, shares: b, shareSeconds: b * DAY_N });
  }
  while (t < transfers.length) {
    const day = transfers[t]!.day;
    if (day < from || day > to) throw new Error(`transfer on day ${day} is outside the range ${from}..${to}`);
    if (day < prevDay) throw new Error(`transfers are not in chain order (day ${day} after day ${prevDay})`);
    prevDay = day;
    const dayEnd = (day + 1) * DAY_SECONDS;
    // per wallet that moves: its balance before the day, held all day (what a day without
    // moves earns), and its share-seconds counted as if each balance were held to the day's end
    const moved = new Map<string, { b0: bigint; seconds: bigint }>();
    if (seed && day === from) for (const [w, b] of balances) moved.set(w, { b0: 0n, seconds: b * DAY_N });
    for (; t < transfers.length && transfers[t]!.day === day; t++) {
      const x = transfers[t]!;
      if (x.timestamp < day * DAY_SECONDS || x.timestamp >= dayEnd)
        throw new Error(`transfer at ${x.timestamp} is not on its day ${day}`);
      for (const [w, delta] of [
        [x.from, -x.shares],
        [x.to, x.shares],
      ] as const) {
        if (excluded.has(w)) continue;
        const b = balances.get(w) ?? 0n;
        const m = moved.get(w) ?? { b0: b, seconds: b * DAY_N };
        moved.set(w, m);
        m.seconds += delta * BigInt(dayEnd - x.timestamp);
        balances.set(w, b + delta);
      }
    }
    for (const [w, m] of moved) {
      const b = balances.get(w)!;
      if (b !== m.b0 || m.seconds !== m.b0 * DAY_N) out.push({ wallet: w, day, shares: b, shareSeconds: m.seconds });
    }
  }
  return out.sort((a, b) => (a.wallet < b.wallet ? -1 : a.wallet > b.wallet ? 1 : a.day - b.day));
}

/**
 * The points of a day on which the balance moved: trunc(shareSeconds x pointsPerShare / 86400),
 * 18-decimal fixed point (`pps` at INDEX_DECIMALS); none for no share-seconds (as `pointsAt`).
 */
export function movedDayPoints(shareSeconds: bigint, pps: bigint): bigint {
  return shareSeconds > 0n ? (shareSeconds * pps) / (DAY_N * (INDEX_SCALE / SCALE)) : 0n;
}

export interface PositionRow {
  day: number;
  shares: bigint;
  /** share-seconds of the row's first day */
  shareSeconds: bigint;
  /** the day of the wallet's next change; null while held */
  nextDay: number | null;
  /**
   * P(shares, day) - the first day's points (movedDayPoints), so that the points up to a day
   * d >= day are P(shares, d) - basePoints; negative on a day the wallet left
   */
  basePoints: bigint;
  /** P(shares, nextDay - 1) - basePoints; null while held */
  points: bigint | null;
  /** sum of the points of the wallet's earlier rows */
  settledPoints: bigint;
}

/**
 * One wallet's position rows in one vault from its balance changes (sorted by day), `cumAt(d)`
 * giving I(d): what derived.points_position stores.
 */
export function settlePositions(
  changes: readonly { day: number; shares: bigint; shareSeconds: bigint }[],
  cumAt: (day: number) => bigint,
): PositionRow[] {
  let settled = 0n;
  return changes.map((c, k) => {
    const next = changes[k + 1]?.day ?? null;
    const first = movedDayPoints(c.shareSeconds, cumAt(c.day) - cumAt(c.day - 1));
    const base = pointsAt(c.shares, cumAt(c.day)) - first;
    const points = next == null ? null : pointsAt(c.shares, cumAt(next - 1)) - base;
    const row = {
      day: c.day,
      shares: c.shares,
      shareSeconds: c.shareSeconds,
      nextDay: next,
      basePoints: base,
      points,
      settledPoints: settled,
    };
    settled += points ?? 0n;
    return row;
  });
}

/** H(d): a wallet's cumulative holding points in the vault at the end of day d, from its position rows. */
export function holdingAt(rows: readonly PositionRow[], cumAt: (day: number) => bigint, day: number): bigint {
  let row: PositionRow | undefined;
  for (const r of rows) if (r.day <= day) row = r;
  if (!row) return 0n;
  return row.settledPoints + pointsAt(row.shares, cumAt(day)) - row.basePoints;
}

/**
 * Per-day holding and referral entries of one vault, for the days of the index: what the view
 * derived.points_ledger generates, as the unit tests' reference.
 */
export function ledgerEntries(
  positions: ReadonlyMap<string, readonly PositionRow[]>,
  index: readonly IndexDay[],
  referrals: ReadonlyMap<string, ReferralIn>,
  rules: PointsRules,
): { wallet: string; day: number; source: "holding" | "referral"; ref: string; points: bigint }[] {
  const cumAt = cumLookup(index);
  const first = index[0]?.day ?? 0;
  const last = index.at(-1)?.day ?? -1;
  const out: { wallet: string; day: number; source: "holding" | "referral"; ref: string; points: bigint }[] = [];
  for (const [wallet, rows] of positions) {
    const ref = referrals.get(wallet);
    for (const r of rows) {
      // a row without shares earns only on its first day (the time held before leaving)
      const end = r.shares > 0n ? Math.min(r.nextDay == null ? last : r.nextDay - 1, last) : r.day;
      for (let d = Math.max(r.day, first); d <= end; d++) {
        const h1 = r.settledPoints + pointsAt(r.shares, cumAt(d)) - r.basePoints;
        const h0 = d === r.day ? r.settledPoints : r.settledPoints + pointsAt(r.shares, cumAt(d - 1)) - r.basePoints;
        out.push({ wallet, day: d, source: "holding", ref: "", points: h1 - h0 });
        if (ref && d >= ref.sinceDay) {
          const p = referralPart(rules.referralShare, h1) - referralPart(rules.referralShare, h0);
          if (p > 0n) out.push({ wallet: ref.referrer, day: d, source: "referral", ref: wallet, points: p });
        }
      }
    }
  }
  return out;
}
