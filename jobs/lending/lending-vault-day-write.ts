/**
 * Writes derived.lending_vault_day (its only writer): every lending vault's day from the indexed
 * snapshots. A day's row is its last snapshot (highest block); its `apy_7d` is the compound
 * growth of the share price from the row 7 days before, annualised over the seconds between the
 * two snapshots, null without that row or at a zero price.
 *
 * `full` recomputes the table whole; otherwise each vault's days from its last stored one on
 * (that day may have had snapshots since) are recomputed, its snapshots read from that day's
 * start through the (chain_id, vault, timestamp) index, and a vault without rows gets all of its
 * days: a run reads the snapshots since the last one, not every snapshot since launch (tens of
 * thousands a day at the demo's rates). One transaction either way.
 */
import { sql } from "kysely";
import { indexedVaults } from "../../db/batch.js";
import type { Db } from "../repo.js";

export async function replaceLendingVaultDays(db: Db, indexerSchema: string, full = true): Promise<number> {
  const snap = sql.id(indexerSchema, "lending_vault_snapshot");
  return db.transaction().execute(async (trx) => {
    if (full) await sql`DELETE FROM derived.lending_vault_day`.execute(trx);
    else
      await sql`
        DELETE FROM derived.lending_vault_day t USING (
          SELECT chain_id, vault, max(day) AS from_day FROM derived.lending_vault_day GROUP BY 1, 2) b
        WHERE t.chain_id = b.chain_id AND t.vault = b.vault AND t.day >= b.from_day`.execute(trx);
    // what is left is each vault's days before the recomputed ones: their start, per vault
    const r = await sql`
      WITH RECURSIVE ${indexedVaults("vv", snap)},
      kept AS (
        SELECT chain_id, vault, max(day) + 1 AS from_day FROM derived.lending_vault_day GROUP BY 1, 2
      ),
      bounds AS MATERIALIZED (
        SELECT vv.chain_id, vv.vault, coalesce(extract(epoch FROM k.from_day)::bigint, 0) AS from_ts
        FROM vv LEFT JOIN kept k ON k.chain_id = vv.chain_id AND k.vault = lower(vv.vault)
      ),
      s AS (
        SELECT DISTINCT ON (x.chain_id, x.vault, x.d)
          x.chain_id, x.vault, x.d, x.total_assets, x.total_supply, x.asset_share_ratio, x.block_number,
          x.timestamp
        FROM bounds b
        CROSS JOIN LATERAL (
          SELECT y.chain_id, lower(y.vault) AS vault, (to_timestamp(y.timestamp) AT TIME ZONE 'UTC')::date AS d,
            y.total_assets, y.total_supply, y.asset_share_ratio, y.block_number, y.timestamp
          FROM ${snap} y
          WHERE y.chain_id = b.chain_id AND y.vault = b.vault AND y.timestamp >= b.from_ts
          -- a fence: kept a per-vault index range scan, not flattened into a join over the table
          OFFSET 0) x
        ORDER BY x.chain_id, x.vault, x.d, x.block_number DESC
      ),
      p AS (
        SELECT chain_id, vault, d, asset_share_ratio, timestamp FROM s
        UNION ALL
        SELECT chain_id, vault, day, asset_share_ratio, timestamp FROM derived.lending_vault_day
      )
      INSERT INTO derived.lending_vault_day
        (chain_id, vault, day, total_assets, total_supply, asset_share_ratio, block_number, timestamp, apy_7d)
      SELECT s.chain_id, s.vault, s.d, s.total_assets, s.total_supply, s.asset_share_ratio, s.block_number,
        s.timestamp,
        CASE WHEN p.asset_share_ratio > 0 AND s.asset_share_ratio > 0 AND s.timestamp > p.timestamp
          THEN power((s.asset_share_ratio / p.asset_share_ratio)::float8,
                     365.0 * 86400 / (s.timestamp - p.timestamp)) - 1
        END
      FROM s LEFT JOIN p ON p.chain_id = s.chain_id AND p.vault = s.vault AND p.d = s.d - 7`.execute(trx);
    return Number(r.numAffectedRows ?? 0n);
  });
}
