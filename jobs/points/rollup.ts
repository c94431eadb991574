/**
 * The points-rollup job: ledger entries from the registry (signup bonuses, streak claims,
 * manual points), lifetime deposits, and the balance and ranks of every wallet, rebuilt in
 * one transaction from the ledger and its per-vault and per-referral totals.
 */
import { sql } from "kysely";
import { dayToDate } from "../lib/days.js";
import type { Db } from "../repo.js";

export async function runPointsRollup(db: Db, indexerSchema: string, today: number): Promise<{ wallets: number }> {
  const e = (t: string) => sql.id(indexerSchema, t);
  return db.transaction().execute(async (trx) => {
    // Serialize rollups: two at once would both rebuild the balances.
    await sql`SELECT pg_advisory_xact_lock(hashtext('derived.points_rollup'))`.execute(trx);
    // Registry entries carry chain_id 0 and vault '': the primary key's prefix finds them.
    // They are rebuilt from the registry, which holds every entry the API wrote to the ledger.
    await sql`DELETE FROM derived.points_ledger WHERE chain_id = 0 AND vault = '' AND source IN ('signup_bonus', 'daily_streak', 'manual')`.execute(trx);
    await sql`
      INSERT INTO derived.points_ledger (wallet, day, source, chain_id, vault, ref, points)
      SELECT address, (registered_at AT TIME ZONE 'UTC')::date, 'signup_bonus', 0, '', coalesce(referrer, ''), signup_bonus
        FROM registry.points_user WHERE signup_bonus > 0
      UNION ALL
      SELECT address, day, 'daily_streak', 0, '', '', points FROM registry.streak_claim WHERE points <> 0
      UNION ALL
      SELECT lower(wallet), (created_at AT TIME ZONE 'UTC')::date, 'manual', 0, '', id::text, points FROM registry.manual_points
      -- the API writes the entry of a registration or a claim with it: one committed after the
      -- DELETE above is the same entry
      ON CONFLICT (chain_id, vault, day, source, wallet, ref) DO UPDATE SET points = EXCLUDED.points`.execute(trx);

    await sql`
      UPDATE derived.points_pool p SET lifetime_deposit = x.total
      FROM (
        SELECT ev.chain_id, lower(ev.vault) AS vault, lower(ev.receiver) AS wallet,
               trunc(sum(ev.assets) / (10::numeric ^ max(v.asset_decimals)), 18) AS total
        FROM ${e("vault_event")} ev JOIN ${e("vault")} v ON v.chain_id = ev.chain_id AND v.address = ev.vault
        WHERE ev.kind = 'deposit' GROUP BY 1, 2, 3
      ) x
      WHERE p.wallet = x.wallet AND p.chain_id = x.chain_id AND p.vault = x.vault AND p.lifetime_deposit IS DISTINCT FROM x.total`.execute(trx);

    await sql`DELETE FROM derived.points_balance`.execute(trx);
    const res = await sql`
      INSERT INTO derived.points_balance (wallet, total_points, holding_points, referral_earnings, signup_bonus, daily_streak_points,
        manual_points, streak_days, last_claim_day, usd_value, top_vault_chain_id, top_vault, top_vault_lifetime_deposit,
        rank_total, rank_streak, computed_at)
      WITH pool AS (
        SELECT wallet, sum(total_points) AS hp, sum(usd_value) AS usd FROM derived.points_pool GROUP BY wallet
      ), top AS (
        SELECT DISTINCT ON (wallet) wallet, chain_id, vault, lifetime_deposit FROM derived.points_pool
        WHERE lifetime_deposit > 0 ORDER BY wallet, lifetime_deposit DESC, chain_id, vault
      ), ref AS (
        SELECT referrer AS wallet, sum(total_points) AS rp FROM derived.points_referral GROUP BY 1
      ), extra AS (
        SELECT wallet,
          sum(points) FILTER (WHERE source = 'signup_bonus') AS sb,
          sum(points) FILTER (WHERE source = 'daily_streak') AS ds,
          sum(points) FILTER (WHERE source = 'manual') AS mp
        FROM derived.points_ledger WHERE chain_id = 0 AND vault = '' AND source IN ('signup_bonus', 'daily_streak', 'manual') GROUP BY wallet
      ), streak AS (
        SELECT DISTINCT ON (address) address AS wallet, day, streak_days FROM registry.streak_claim ORDER BY address, day DESC
      ), wallets AS (
        SELECT wallet FROM pool UNION SELECT wallet FROM ref UNION SELECT wallet FROM extra UNION SELECT address FROM registry.points_user
      ), t AS (
        SELECT w.wallet, coalesce(pool.hp, 0) AS hp, coalesce(ref.rp, 0) AS rp, coalesce(extra.sb, 0) AS sb,
          coalesce(extra.ds, 0) AS ds, coalesce(extra.mp, 0) AS mp,
          CASE WHEN streak.day >= ${dayToDate(today - 1)}::date THEN streak.streak_days ELSE 0 END AS sd,
          streak.day AS last_claim, coalesce(pool.usd, 0) AS usd, top.chain_id AS top_chain, top.vault AS top_vault, top.lifetime_deposit AS top_dep
        FROM wallets w
        LEFT JOIN pool ON pool.wallet = w.wallet LEFT JOIN ref ON ref.wallet = w.wallet
        LEFT JOIN extra ON extra.wallet = w.wallet LEFT JOIN streak ON streak.wallet = w.wallet
        LEFT JOIN top ON top.wallet = w.wallet
      )
      SELECT wallet, hp + rp + sb + ds + mp, hp, rp, sb, ds, mp, sd, last_claim, usd, top_chain, top_vault, top_dep,
        row_number() OVER (ORDER BY hp + rp + sb + ds + mp DESC, wallet),
        row_number() OVER (ORDER BY sd DESC, wallet),
        now()
      FROM t`.execute(trx);
    return { wallets: Number(res.numAffectedRows ?? 0n) };
  });
}
