/**
 * Holding points weighted by the time each balance was held on the days it moved.
 *
 * Until now a wallet earned a day's points on its end-of-day balance: shares held from 23:59 to
 * 00:01 earned a full day, shares held from 08:00 to 16:00 nothing. Now, on a day its balance
 * moves, a wallet earns trunc(S x points_per_share / 86400), S being its share-seconds of the day
 * (the last balance counted to the day's end); on the days it holds unchanged, as before.
 *
 * - derived.points_position gains `day_share_seconds` (S of the row's first day). Its
 *   `base_points` becomes P(shares, day) minus the first day's points, so the points up to a day
 *   d >= day stay `settled_points + P(shares, d) - base_points`. A row is written on every day the
 *   balance moves, round trips within a day included; a row of an exit to 0 keeps the points of
 *   the time held in a negative base.
 * - points_pool, points_referral and points_ledger read rows without shares too (the ledger
 *   only on their first day), and the ledger's first day of a row is
 *   `P(shares, day) - base_points`. Same columns: the views are replaced in place.
 *
 * Existing rows get S = shares x 86400, which with their base reads as before; the workers'
 * rules key changes with this rule (`time:`), so the next fan-out recomputes all history.
 *
 * FROZEN: once landed, never edit this file.
 */
import { type Kysely, sql } from "kysely";

/** P(shares, I) of a position row `p` at a cumulative index (no points without shares). */
const P = (p: string, cum: string) => `trunc(greatest(${p}.shares, 0) * ${cum}, 18)`;

/** H(d) of row `p` at index day `i`, and H(d-1) (the settled points on the row's first day). */
const H = `p.settled_points + ${P("p", "i.cum_points_per_share")} - p.base_points`;
const H_BEFORE = `CASE WHEN i.day = p.day THEN p.settled_points
  ELSE p.settled_points + ${P("p", "(i.cum_points_per_share - i.points_per_share)")} - p.base_points END`;
/** the index days a position row earns on: all of its days, or its first alone without shares */
const ROW_DAYS = `i.chain_id = p.chain_id AND i.vault = p.vault AND i.day >= p.day
  AND (p.next_day IS NULL OR i.day < p.next_day) AND (p.shares > 0 OR i.day = p.day)`;

const LEDGER = `
    SELECT e.wallet, e.day, e.source, e.chain_id, e.vault, e.ref, e.points, NULL::numeric(78,0) AS shares, NULL::numeric(78,18) AS usd_value
    FROM derived.points_entry e
    UNION ALL
    SELECT p.wallet, i.day, 'holding', p.chain_id, p.vault, '',
      (${H}) - (${H_BEFORE}),
      p.shares,
      CASE WHEN i.ratio IS NULL OR i.price IS NULL OR p.shares <= 0 THEN 0
        ELSE trunc(trunc(p.shares * i.ratio, 0) * power(10::numeric, -i.asset_decimals) * i.price, 18) END
    FROM derived.points_position p
    JOIN derived.points_index i ON ${ROW_DAYS}
    UNION ALL
    SELECT x.referrer, x.day, 'referral', x.chain_id, x.vault, x.referee, x.points, NULL, NULL
    FROM (
      SELECT u.referrer, u.address AS referee, i.day, p.chain_id, p.vault,
        trunc(r.referral_share * (${H}), 18) - trunc(r.referral_share * (${H_BEFORE}), 18) AS points
      FROM registry.points_user u
      CROSS JOIN derived.points_rules r
      JOIN derived.points_position p ON p.wallet = u.address
      JOIN derived.points_index i ON ${ROW_DAYS}
        AND i.day >= (u.registered_at AT TIME ZONE 'UTC')::date
      WHERE u.referrer IS NOT NULL
    ) x
    WHERE x.points > 0`;

// ---- the views as migration 0007 made them (end-of-day balances): `down` restores them, and
// the new pool and referral views below are these with one expression each replaced ----

const POOL_0007 = `
    SELECT p.wallet, p.chain_id, p.vault,
      p.settled_points + CASE WHEN p.shares > 0 AND v.day >= p.day THEN trunc(p.shares * v.cum_points_per_share, 18) - p.base_points ELSE 0 END
        AS total_points,
      v.day AS position_day,
      greatest(p.shares, 0) AS shares,
      CASE WHEN p.shares > 0 AND v.ratio IS NOT NULL THEN trunc(p.shares * v.ratio, 0) * power(10::numeric, -v.asset_decimals) ELSE 0 END
        AS native_amount,
      CASE WHEN p.shares > 0 AND v.ratio IS NOT NULL AND v.price IS NOT NULL
        THEN trunc(trunc(p.shares * v.ratio, 0) * power(10::numeric, -v.asset_decimals) * v.price, 18) ELSE 0 END AS usd_value,
      coalesce(d.lifetime_deposit, 0) AS lifetime_deposit
    FROM derived.points_position p
    LEFT JOIN derived.points_vault v ON v.chain_id = p.chain_id AND v.vault = p.vault
    LEFT JOIN derived.points_deposit d ON d.chain_id = p.chain_id AND d.vault = p.vault AND d.wallet = p.wallet
    WHERE p.next_day IS NULL`;

const REFERRAL_0007 = `
    SELECT u.referrer, u.address AS referee,
      sum(trunc(r.referral_share * pl.total_points, 18) - trunc(r.referral_share * coalesce(hb.h, 0), 18)) AS total_points
    FROM registry.points_user u
    CROSS JOIN derived.points_rules r
    JOIN derived.points_pool pl ON pl.wallet = u.address
    LEFT JOIN LATERAL (
      SELECT q.settled_points + CASE WHEN q.shares > 0
               THEN trunc(q.shares * derived.points_cum(q.chain_id, q.vault, (u.registered_at AT TIME ZONE 'UTC')::date - 1), 18) - q.base_points
               ELSE 0 END AS h
      FROM derived.points_position q
      WHERE q.chain_id = pl.chain_id AND q.vault = pl.vault AND q.wallet = pl.wallet AND q.day <= (u.registered_at AT TIME ZONE 'UTC')::date - 1
      ORDER BY q.day DESC LIMIT 1
    ) hb ON true
    WHERE u.referrer IS NOT NULL
    GROUP BY u.referrer, u.address`;

const LEDGER_0007 = `
    SELECT e.wallet, e.day, e.source, e.chain_id, e.vault, e.ref, e.points, NULL::numeric(78,0) AS shares, NULL::numeric(78,18) AS usd_value
    FROM derived.points_entry e
    UNION ALL
    SELECT p.wallet, i.day, 'holding', p.chain_id, p.vault, '',
      trunc(p.shares * i.cum_points_per_share, 18) - trunc(p.shares * (i.cum_points_per_share - i.points_per_share), 18),
      p.shares,
      CASE WHEN i.ratio IS NULL OR i.price IS NULL THEN 0
        ELSE trunc(trunc(p.shares * i.ratio, 0) * power(10::numeric, -i.asset_decimals) * i.price, 18) END
    FROM derived.points_position p
    JOIN derived.points_index i ON i.chain_id = p.chain_id AND i.vault = p.vault AND i.day >= p.day AND (p.next_day IS NULL OR i.day < p.next_day)
    WHERE p.shares > 0
    UNION ALL
    SELECT x.referrer, x.day, 'referral', x.chain_id, x.vault, x.referee, x.points, NULL, NULL
    FROM (
      SELECT u.referrer, u.address AS referee, i.day, p.chain_id, p.vault,
        trunc(r.referral_share * (p.settled_points + trunc(p.shares * i.cum_points_per_share, 18) - p.base_points), 18)
          - trunc(r.referral_share * (p.settled_points + trunc(p.shares * (i.cum_points_per_share - i.points_per_share), 18) - p.base_points), 18) AS points
      FROM registry.points_user u
      CROSS JOIN derived.points_rules r
      JOIN derived.points_position p ON p.wallet = u.address AND p.shares > 0
      JOIN derived.points_index i ON i.chain_id = p.chain_id AND i.vault = p.vault AND i.day >= p.day AND (p.next_day IS NULL OR i.day < p.next_day)
        AND i.day >= (u.registered_at AT TIME ZONE 'UTC')::date
      WHERE u.referrer IS NOT NULL
    ) x
    WHERE x.points > 0`;

/** A part of a 0007 view, replaced (checked to be there). */
function replaced(view: string, old: string, by: string): string {
  if (!view.includes(old)) throw new Error(`0018: not in the 0007 view: ${old}`);
  return view.replace(old, by);
}

const POOL = replaced(
  POOL_0007,
  "CASE WHEN p.shares > 0 AND v.day >= p.day THEN trunc(p.shares * v.cum_points_per_share, 18) - p.base_points",
  `CASE WHEN v.day >= p.day THEN ${P("p", "v.cum_points_per_share")} - p.base_points`,
);

const REFERRAL = replaced(
  REFERRAL_0007,
  `CASE WHEN q.shares > 0
               THEN trunc(q.shares * derived.points_cum(q.chain_id, q.vault, (u.registered_at AT TIME ZONE 'UTC')::date - 1), 18) - q.base_points
               ELSE 0 END`,
  `${P("q", "derived.points_cum(q.chain_id, q.vault, (u.registered_at AT TIME ZONE 'UTC')::date - 1)")} - q.base_points`,
);

async function replaceViews(db: Kysely<unknown>, pool: string, referral: string, ledger: string): Promise<void> {
  await sql`CREATE OR REPLACE VIEW derived.points_pool AS ${sql.raw(pool)}`.execute(db);
  await sql`CREATE OR REPLACE VIEW derived.points_referral AS ${sql.raw(referral)}`.execute(db);
  await sql`CREATE OR REPLACE VIEW derived.points_ledger AS ${sql.raw(ledger)}`.execute(db);
}

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE derived.points_position ADD COLUMN day_share_seconds numeric(78,0)`.execute(db);
  await sql`UPDATE derived.points_position SET day_share_seconds = shares * 86400`.execute(db);
  await sql`ALTER TABLE derived.points_position ALTER COLUMN day_share_seconds SET NOT NULL`.execute(db);
  await replaceViews(db, POOL, REFERRAL, LEDGER);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  // the workers of before recompute all history (their rules key differs) and rewrite the rows
  await replaceViews(db, POOL_0007, REFERRAL_0007, LEDGER_0007);
  await sql`ALTER TABLE derived.points_position DROP COLUMN day_share_seconds`.execute(db);
}
