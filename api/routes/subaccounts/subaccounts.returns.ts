/**
 * A subaccount's realized returns from its valuation series (derived.subaccount_day), shared by
 * the health-factor route (realized APRs) and the subaccount list (`estimated_apr`).
 *
 * A window's return is its PnL over the capital it worked with: the net account value at its
 * start plus each day's net deposits weighted by the part of the window left after the day
 * (modified Dietz). Capital that arrived halfway through counts half; dividing by the start's
 * value alone would count the PnL of capital that came later as the start's return.
 */

/** One day of the series; `day`: days since 1970-01-01. */
export interface SeriesDay {
  day: number;
  net_account_value: number;
  total_pnl: number;
  total_net_deposits: number;
}

export interface WindowReturn {
  /** PnL over the window (USD); null without a row at its start */
  pnl: number | null;
  /** the PnL over the window's capital, × 365 / its days; null without capital */
  apr: number | null;
}

const NONE: WindowReturn = { pnl: null, apr: null };

/** The return over the `n` days up to the series' last day. `rows`: ascending by day. */
export function windowReturn(rows: readonly SeriesDay[], n: number): WindowReturn {
  const last = rows.at(-1);
  if (!last || n <= 0) return NONE;
  const start = rows.findIndex((r) => r.day === last.day - n);
  if (start < 0) return NONE;
  const then = rows[start]!;
  const pnl = last.total_pnl - then.total_pnl;
  let capital = then.net_account_value;
  for (let i = start + 1; i < rows.length; i++) {
    // a day's net deposits count up to the block it is read at: invested from its end
    const flow = rows[i]!.total_net_deposits - rows[i - 1]!.total_net_deposits;
    capital += (flow * (last.day - rows[i]!.day)) / n;
  }
  return { pnl, apr: capital > 0 ? (pnl / capital) * (365 / n) : null };
}

/** The return over the whole series (from its first day to its last). */
export function lifetimeReturn(rows: readonly SeriesDay[]): WindowReturn {
  const first = rows[0];
  const last = rows.at(-1);
  return first && last ? windowReturn(rows, last.day - first.day) : NONE;
}

/**
 * The subaccount list's `estimated_apr`: the 30-day realized APR, or the lifetime one while the
 * series is younger than 30 days. `rows`: at least its last 31 days, ascending.
 */
export function estimatedApr(rows: readonly SeriesDay[]): number | null {
  const first = rows[0];
  const last = rows.at(-1);
  if (!first || !last) return null;
  return last.day - first.day >= 30 ? windowReturn(rows, 30).apr : lifetimeReturn(rows).apr;
}
