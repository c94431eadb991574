/**
 * The points-rollup job: the ledger entries that come from the registry (signup bonuses, streak
 * claims, manual points), rebuilt in derived.points_entry from the registry tables, and the
 * points rules the views compute with (derived.points_rules). Balances, pools, referral totals
 * and ranks are views over the vault-days jobs' index and position rows: nothing per wallet is
 * rewritten here.
 */
import { sql } from "kysely";
import { formatFixed } from "../../db/fixed.js";
import type { Db } from "../repo.js";
import type { PointsRules } from "./compute.js";

export async function runPointsRollup(db: Db, rules: PointsRules): Promise<{ entries: number }> {
  return db.transaction().execute(async (trx) => {
    // Serialize rollups: two at once would both rebuild the entries.
    await sql`SELECT pg_advisory_xact_lock(hashtext('derived.points_rollup'))`.execute(trx);
    await sql`
      INSERT INTO derived.points_rules (id, points_per_usd_per_day, referral_share, updated_at)
      VALUES (true, ${formatFixed(rules.pointsPerUsdPerDay)}, ${formatFixed(rules.referralShare)}, now())
      ON CONFLICT (id) DO UPDATE SET points_per_usd_per_day = excluded.points_per_usd_per_day, referral_share = excluded.referral_share,
        updated_at = excluded.updated_at
      WHERE (derived.points_rules.points_per_usd_per_day, derived.points_rules.referral_share)
        IS DISTINCT FROM (excluded.points_per_usd_per_day, excluded.referral_share)`.execute(trx);
    // The registry holds every entry the API wrote to the ledger: write what differs, drop what
    // the registry no longer has (an operator's manual entry deleted, a test's registry reset).
    await sql`
      CREATE TEMP TABLE points_entry_want ON COMMIT DROP AS
      SELECT address AS wallet, (registered_at AT TIME ZONE 'UTC')::date AS day, 'signup_bonus'::text AS source, coalesce(referrer, '') AS ref, signup_bonus AS points
        FROM registry.points_user WHERE signup_bonus > 0
      UNION ALL
      SELECT address, day, 'daily_streak', '', points FROM registry.streak_claim WHERE points <> 0
      UNION ALL
      SELECT lower(wallet), (created_at AT TIME ZONE 'UTC')::date, 'manual', id::text, points FROM registry.manual_points`.execute(
      trx,
    );
    await sql`
      DELETE FROM derived.points_entry e WHERE e.chain_id = 0 AND e.vault = ''
        AND NOT EXISTS (SELECT 1 FROM points_entry_want w WHERE w.wallet = e.wallet AND w.day = e.day AND w.source = e.source AND w.ref = e.ref)`.execute(
      trx,
    );
    const res = await sql`
      INSERT INTO derived.points_entry AS e (wallet, day, source, chain_id, vault, ref, points)
      SELECT wallet, day, source, 0, '', ref, points FROM points_entry_want
      -- the API writes the entry of a registration or a claim with it: the same entry
      ON CONFLICT (chain_id, vault, day, source, wallet, ref) DO UPDATE SET points = excluded.points WHERE e.points IS DISTINCT FROM excluded.points`.execute(
      trx,
    );
    return { entries: Number(res.numAffectedRows ?? 0n) };
  });
}
