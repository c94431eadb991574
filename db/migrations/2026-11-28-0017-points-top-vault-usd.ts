/**
 * A wallet's top vault (derived.points_total's top_vault, served as the points record's
 * `topVault`) is the one of its largest lifetime deposit valued in USD, at each vault's last
 * points-index price (derived.points_vault.price). Until now it was the largest amount in each
 * vault's own asset units, so 1,000 USDC outranked 300 WETH. A vault without a price comes after
 * those with one. The view keeps its columns; only the choice of the top vault changes.
 *
 * FROZEN: once landed, never edit this file.
 */
import { type Kysely, sql } from "kysely";

/** The view as migration 0007 made it (the top vault by asset units). */
const BY_UNITS = `
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
    ) top ON top.wallet = w.wallet`;

const TOP_BY_UNITS = `
      SELECT DISTINCT ON (wallet) wallet, chain_id, vault, lifetime_deposit FROM derived.points_deposit
      WHERE lifetime_deposit > 0 ORDER BY wallet, lifetime_deposit DESC, chain_id, vault`;

const TOP_BY_USD = `
      SELECT DISTINCT ON (d.wallet) d.wallet, d.chain_id, d.vault, d.lifetime_deposit FROM derived.points_deposit d
      LEFT JOIN derived.points_vault pv ON pv.chain_id = d.chain_id AND pv.vault = d.vault
      WHERE d.lifetime_deposit > 0
      ORDER BY d.wallet, d.lifetime_deposit * pv.price DESC NULLS LAST, d.lifetime_deposit DESC, d.chain_id, d.vault`;

if (!BY_UNITS.includes(TOP_BY_UNITS)) throw new Error("0017: the view's top-vault subquery is not 0007's");

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE OR REPLACE VIEW derived.points_total AS ${sql.raw(BY_UNITS.replace(TOP_BY_UNITS, TOP_BY_USD))}`.execute(
    db,
  );
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`CREATE OR REPLACE VIEW derived.points_total AS ${sql.raw(BY_UNITS)}`.execute(db);
}
