/**
 * Writes derived.lending_vault_day (its only writer): every lending vault's day from the indexed
 * snapshots, recomputed whole in one statement pair inside one transaction (the table holds a row
 * per vault-day, a few thousand at most). A day's row is its last snapshot (highest block); its
 * `apy_7d` is the compound growth of the share price from the row 7 days before, annualised over
 * the seconds between the two snapshots, null without that row or at a zero price.
 */
import { sql } from "kysely";
import type { Db } from "../repo.js";

export async function replaceLendingVaultDays(db: Db, indexerSchema: string): Promise<number> {
  return db.transaction().execute(async (trx) => {
    await sql`DELETE FROM derived.lending_vault_day`.execute(trx);
    const r = await sql`
      WITH s AS (
        SELECT DISTINCT ON (chain_id, vault, d)
          chain_id, lower(vault) AS vault, (to_timestamp(timestamp) AT TIME ZONE 'UTC')::date AS d,
          total_assets, total_supply, asset_share_ratio, block_number, timestamp
        FROM ${sql.id(indexerSchema, "lending_vault_snapshot")}
        ORDER BY chain_id, vault, d, block_number DESC
      )
      INSERT INTO derived.lending_vault_day
        (chain_id, vault, day, total_assets, total_supply, asset_share_ratio, block_number, timestamp, apy_7d)
      SELECT s.chain_id, s.vault, s.d, s.total_assets, s.total_supply, s.asset_share_ratio, s.block_number,
        s.timestamp,
        CASE WHEN p.asset_share_ratio > 0 AND s.asset_share_ratio > 0 AND s.timestamp > p.timestamp
          THEN power((s.asset_share_ratio / p.asset_share_ratio)::float8,
                     365.0 * 86400 / (s.timestamp - p.timestamp)) - 1
        END
      FROM s LEFT JOIN s p ON p.chain_id = s.chain_id AND p.vault = s.vault AND p.d = s.d - 7`.execute(trx);
    return Number(r.numAffectedRows ?? 0n);
  });
}
