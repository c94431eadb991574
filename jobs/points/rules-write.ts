/**
 * Writes derived.points_rules (its only writer): the points rules the workers run with, which the
 * points views compute with (the referral share). The points-rollup job, the last step of every
 * fan-out, calls it. The ledger's registry entries need no writer here: derived.points_entry is a
 * view over the registry (migration 0010).
 */
import { sql } from "kysely";
import { formatFixed } from "../../db/fixed.js";
import type { Db } from "../repo.js";
import type { PointsRules } from "./compute.js";

/** Records `rules`; true when they differ from the stored ones. */
export async function writePointsRules(db: Db, rules: PointsRules): Promise<boolean> {
  const res = await sql`
    INSERT INTO derived.points_rules AS r (id, points_per_usd_per_day, referral_share, updated_at)
    VALUES (true, ${formatFixed(rules.pointsPerUsdPerDay)}, ${formatFixed(rules.referralShare)}, now())
    ON CONFLICT (id) DO UPDATE SET points_per_usd_per_day = excluded.points_per_usd_per_day,
      referral_share = excluded.referral_share, updated_at = excluded.updated_at
    WHERE (r.points_per_usd_per_day, r.referral_share)
      IS DISTINCT FROM (excluded.points_per_usd_per_day, excluded.referral_share)`.execute(db);
  return Number(res.numAffectedRows ?? 0n) > 0;
}
