/**
 * Points from a per-vault cumulative points-per-share index (docs/metrics.md, "Points").
 *
 * Before, every holder of every vault got a ledger row, a pool update and a rewritten balance
 * row each day, so a day's work grew with the number of holders. Now a day writes one index
 * row per vault and position rows only for the wallets whose balance changed that day; the
 * per-day ledger, the per-vault pools, referral totals and balances with ranks are views that
 * compute from those rows when read, with the same names and columns as the tables they replace.
 *
 * - derived.points_entry: the registry's entries (signup bonuses, streak claims, manual points),
 *   the old table renamed, its holding and referral rows dropped.
 * - derived.points_rules: the points rules the jobs last ran with (the views need the referral share).
 * - derived.points_index: per vault and day, the day's points per raw share and the cumulative index.
 * - derived.points_vault: per vault, the index's last day (the valuation day of current positions).
 * - derived.points_position: per wallet, vault and day on which the wallet's end-of-day share
 *   balance changed, that balance and its settled points.
 * - derived.points_deposit: lifetime deposits per wallet and vault (the `topVault`).
 *
 * The holding and referral rows are recomputed by the workers: the jobs' rules key changed with
 * this rule, so every vault's fingerprints differ and the next fan-out recomputes all history.
 * FROZEN: once landed, never edit this file.
 */
import { type Kysely, sql } from "kysely";

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE derived.points_ledger RENAME TO points_entry`.execute(db);
  await sql`ALTER TABLE derived.points_entry RENAME CONSTRAINT points_ledger_pk TO points_entry_pk`.execute(db);
  await sql`ALTER INDEX derived.points_ledger_by_wallet RENAME TO points_entry_by_wallet`.execute(db);
  await sql`DELETE FROM derived.points_entry WHERE source IN ('holding', 'referral')`.execute(db);
  await sql`ALTER TABLE derived.points_entry DROP COLUMN shares, DROP COLUMN usd_value`.execute(db);
  await sql`DROP TABLE derived.points_pool, derived.points_referral, derived.points_balance`.execute(db);
  // referral totals and the ledger's referral rows look referees up by referrer
  await sql`CREATE INDEX IF NOT EXISTS points_user_by_referrer ON registry.points_user (referrer)`.execute(db);

  await sql`
    CREATE TABLE derived.points_rules (
      id boolean PRIMARY KEY DEFAULT true CHECK (id),
      points_per_usd_per_day numeric(78,18) NOT NULL,
      referral_share numeric(78,18) NOT NULL,
      updated_at timestamptz NOT NULL DEFAULT now()
    )`.execute(db);

  await sql`
    CREATE TABLE derived.points_index (
      chain_id integer NOT NULL,
      vault text NOT NULL,
      day date NOT NULL,
      asset_decimals integer NOT NULL,
      ratio numeric(78,18),
      price numeric(78,18),
      multiplier numeric(78,18) NOT NULL,
      points_per_share numeric(78,36) NOT NULL,
      cum_points_per_share numeric(78,36) NOT NULL,
      CONSTRAINT points_index_pk PRIMARY KEY (chain_id, vault, day)
    )`.execute(db);

  await sql`
    CREATE TABLE derived.points_vault (
      chain_id integer NOT NULL,
      vault text NOT NULL,
      day date NOT NULL,
      asset_decimals integer NOT NULL,
      ratio numeric(78,18),
      price numeric(78,18),
      cum_points_per_share numeric(78,36) NOT NULL,
      computed_at timestamptz NOT NULL,
      CONSTRAINT points_vault_pk PRIMARY KEY (chain_id, vault)
    )`.execute(db);

  await sql`
    CREATE TABLE derived.points_position (
      chain_id integer NOT NULL,
      vault text NOT NULL,
      wallet text NOT NULL,
      day date NOT NULL,
      shares numeric(78,0) NOT NULL,
      next_day date,
      base_points numeric(78,18) NOT NULL,
      points numeric(78,18),
      settled_points numeric(78,18) NOT NULL,
      CONSTRAINT points_position_pk PRIMARY KEY (chain_id, vault, wallet, day)
    )`.execute(db);
  await sql`CREATE INDEX points_position_by_wallet ON derived.points_position (wallet, chain_id, vault, day)`.execute(
    db,
  );
  await sql`CREATE INDEX points_position_open ON derived.points_position (chain_id, vault, wallet) WHERE next_day IS NULL`.execute(
    db,
  );
  await sql`CREATE INDEX points_position_by_day ON derived.points_position (chain_id, vault, day)`.execute(db);

  await sql`
    CREATE TABLE derived.points_deposit (
      chain_id integer NOT NULL,
      vault text NOT NULL,
      wallet text NOT NULL,
      lifetime_deposit numeric(78,18) NOT NULL,
      last_deposit_day date NOT NULL,
      CONSTRAINT points_deposit_pk PRIMARY KEY (chain_id, vault, wallet)
    )`.execute(db);
  await sql`CREATE INDEX points_deposit_by_wallet ON derived.points_deposit (wallet)`.execute(db);

  // I(d) of a vault: the cumulative index at the last index day <= d (0 before the first day).
  await sql`
    CREATE FUNCTION derived.points_cum(p_chain_id integer, p_vault text, p_day date) RETURNS numeric
    LANGUAGE sql STABLE PARALLEL SAFE AS $$
      SELECT coalesce((SELECT cum_points_per_share FROM derived.points_index
                        WHERE chain_id = p_chain_id AND vault = p_vault AND day <= p_day ORDER BY day DESC LIMIT 1), 0)
    $$`.execute(db);

  // Per wallet and vault: points earned there, the position valued at the index's last day and
  // the lifetime deposit. Every wallet that ever held shares of the vault has a row.
  await sql`
    CREATE VIEW derived.points_pool AS
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
    WHERE p.next_day IS NULL`.execute(db);

  // Per referrer and referee (registered with that referrer on day R): per vault,
  // trunc(share x H(last)) - trunc(share x H(R-1)), H being the referee's cumulative holding points there.
  await sql`
    CREATE VIEW derived.points_referral AS
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
    GROUP BY u.referrer, u.address`.execute(db);

  // The ledger: the registry's entries, and per day the holding points of every position and
  // the referral points of every referee, generated from the positions and the index.
  await sql`
    CREATE VIEW derived.points_ledger AS
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
    WHERE x.points > 0`.execute(db);

  // Per wallet: totals by source (no ranks: a filter on wallet reaches the tables' indexes).
  await sql`
    CREATE VIEW derived.points_total AS
    SELECT w.wallet,
      coalesce(pool.hp, 0) + coalesce(ref.rp, 0) + coalesce(extra.sb, 0) + coalesce(extra.ds, 0) + coalesce(extra.mp, 0) AS total_points,
      coalesce(pool.hp, 0) AS holding_points,
      coalesce(ref.rp, 0) AS referral_earnings,
      coalesce(extra.sb, 0) AS signup_bonus,
      coalesce(extra.ds, 0) AS daily_streak_points,
      coalesce(extra.mp, 0) AS manual_points,
      CASE WHEN streak.day >= (now() AT TIME ZONE 'UTC')::date - 1 THEN streak.streak_days ELSE 0 END AS streak_days,
      streak.day AS last_claim_day,
      coalesce(pool.usd, 0) AS usd_value,
      top.chain_id AS top_vault_chain_id, top.vault AS top_vault, top.lifetime_deposit AS top_vault_lifetime_deposit
    FROM (
      SELECT wallet FROM derived.points_position
      UNION SELECT referrer FROM registry.points_user WHERE referrer IS NOT NULL
      UNION SELECT wallet FROM derived.points_entry
      UNION SELECT address FROM registry.points_user
    ) w
    LEFT JOIN (SELECT wallet, sum(total_points) AS hp, sum(usd_value) AS usd FROM derived.points_pool GROUP BY wallet) pool ON pool.wallet = w.wallet
    LEFT JOIN (SELECT referrer AS wallet, sum(total_points) AS rp FROM derived.points_referral GROUP BY referrer) ref ON ref.wallet = w.wallet
    LEFT JOIN (
      SELECT wallet,
        sum(points) FILTER (WHERE source = 'signup_bonus') AS sb,
        sum(points) FILTER (WHERE source = 'daily_streak') AS ds,
        sum(points) FILTER (WHERE source = 'manual') AS mp
      FROM derived.points_entry GROUP BY wallet
    ) extra ON extra.wallet = w.wallet
    LEFT JOIN (SELECT DISTINCT ON (address) address, day, streak_days FROM registry.streak_claim ORDER BY address, day DESC) streak
      ON streak.address = w.wallet
    LEFT JOIN (
      SELECT DISTINCT ON (wallet) wallet, chain_id, vault, lifetime_deposit FROM derived.points_deposit
      WHERE lifetime_deposit > 0 ORDER BY wallet, lifetime_deposit DESC, chain_id, vault
    ) top ON top.wallet = w.wallet`.execute(db);

  // Per wallet: totals and ranks (1..N, ties broken by address), computed when read.
  await sql`
    CREATE VIEW derived.points_balance AS
    SELECT t.*,
      row_number() OVER (ORDER BY t.total_points DESC, t.wallet)::integer AS rank_total,
      row_number() OVER (ORDER BY t.streak_days DESC, t.wallet)::integer AS rank_streak,
      now() AS computed_at
    FROM derived.points_total t`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP VIEW derived.points_balance, derived.points_total, derived.points_ledger, derived.points_referral, derived.points_pool`.execute(
    db,
  );
  await sql`DROP FUNCTION derived.points_cum(integer, text, date)`.execute(db);
  await sql`DROP TABLE derived.points_deposit, derived.points_position, derived.points_vault, derived.points_index, derived.points_rules`.execute(
    db,
  );
  await sql`DROP INDEX IF EXISTS registry.points_user_by_referrer`.execute(db);
  await sql`ALTER TABLE derived.points_entry ADD COLUMN shares numeric(78,0), ADD COLUMN usd_value numeric(78,18)`.execute(
    db,
  );
  await sql`ALTER INDEX derived.points_entry_by_wallet RENAME TO points_ledger_by_wallet`.execute(db);
  await sql`ALTER TABLE derived.points_entry RENAME CONSTRAINT points_entry_pk TO points_ledger_pk`.execute(db);
  await sql`ALTER TABLE derived.points_entry RENAME TO points_ledger`.execute(db);
  // points_pool, points_referral and points_balance as 0001 made them, empty: the workers of
  // before this migration refill them (their rules key differs, so they recompute everything).
  await sql`
    CREATE TABLE derived.points_pool (
      wallet text NOT NULL, chain_id integer NOT NULL, vault text NOT NULL, total_points numeric(78,18) NOT NULL, position_day date,
      shares numeric(78,0) NOT NULL, native_amount numeric(78,18) NOT NULL, usd_value numeric(78,18) NOT NULL,
      lifetime_deposit numeric(78,18) NOT NULL DEFAULT 0,
      CONSTRAINT points_pool_pk PRIMARY KEY (wallet, chain_id, vault))`.execute(db);
  await sql`
    CREATE TABLE derived.points_referral (
      referrer text NOT NULL, referee text NOT NULL, total_points numeric(78,18) NOT NULL,
      CONSTRAINT points_referral_pk PRIMARY KEY (referrer, referee))`.execute(db);
  await sql`
    CREATE TABLE derived.points_balance (
      wallet text PRIMARY KEY, total_points numeric(78,18) NOT NULL, holding_points numeric(78,18) NOT NULL,
      referral_earnings numeric(78,18) NOT NULL, signup_bonus numeric(78,18) NOT NULL, daily_streak_points numeric(78,18) NOT NULL,
      manual_points numeric(78,18) NOT NULL, streak_days integer NOT NULL, last_claim_day date, usd_value numeric(78,18) NOT NULL,
      top_vault_chain_id integer, top_vault text, top_vault_lifetime_deposit numeric(78,18), rank_total integer NOT NULL,
      rank_streak integer NOT NULL, computed_at timestamptz NOT NULL)`.execute(db);
  await sql`CREATE INDEX points_balance_rank_total ON derived.points_balance (rank_total)`.execute(db);
  await sql`CREATE INDEX points_balance_rank_streak ON derived.points_balance (rank_streak)`.execute(db);
}
