/**
 * Writes registry.portfolio_cache (its only writer): every registered subaccount's portfolio data
 * per chain, replaced whole in one transaction, so a reader sees one read of the chains or the
 * one before, and a subaccount no longer registered loses its rows.
 */
import { sql } from "kysely";
import type { Db } from "../repo.js";

export interface PortfolioRow {
  chain_id: number;
  vault: string;
  subaccount: string;
  data: unknown;
}

/** Replaces the rows of `chains` with `rows` (the other chains' rows are kept). */
export async function replacePortfolios(
  db: Db,
  chains: readonly number[],
  rows: readonly PortfolioRow[],
): Promise<void> {
  await db.transaction().execute(async (trx) => {
    // one run at a time: two would interleave their deletes and inserts
    await sql`SELECT pg_advisory_xact_lock(hashtext('registry.portfolio_cache'))`.execute(trx);
    if (chains.length > 0) await trx.deleteFrom("registry.portfolio_cache").where("chain_id", "in", chains).execute();
    if (rows.length > 0)
      await trx
        .insertInto("registry.portfolio_cache")
        .values(rows.map((r) => ({ ...r, data: JSON.stringify(r.data), cached_at: new Date() })))
        .execute();
  });
}
