/**
 * An account's loans as indexed: the lending-pool loans it borrows (indexer.loan, written by the
 * indexer's src/vaults.ts), per chain, and whether it is a party to any indexed loan, a pool's or a
 * loan registry's (indexer.loanbook_loan, src/loanbook.ts). A pool's loans are not in the chains'
 * loan registries, so the live account reads (onchain/valuation.ts) read them from this list. The
 * API's subaccount routes and the valuation series job read it.
 */
import { type QueryExecutorProvider, sql } from "kysely";
import type { Address } from "viem";

export interface IndexedLoans {
  /** per chain, the lending-pool loans the account borrows (any state) */
  poolBorrowed: Map<number, Address[]>;
  /** the chains where it lends or borrows an indexed loan, in order */
  partyChains: number[];
}

/** What is indexed of `account`'s loans; nothing before the indexer's views exist. */
export async function indexedLoans(db: QueryExecutorProvider, schema: string, account: string): Promise<IndexedLoans> {
  const who = account.toLowerCase();
  try {
    const { rows } = await sql<{ chain_id: number; address: string; pool: boolean }>`
      SELECT chain_id, address, true AS pool FROM ${sql.id(schema, "loan")} WHERE borrower = ${who}
      UNION ALL
      SELECT chain_id, address, false AS pool FROM ${sql.id(schema, "loanbook_loan")}
      WHERE borrower = ${who} OR lender = ${who}
      ORDER BY chain_id, address`.execute(db);
    const poolBorrowed = new Map<number, Address[]>();
    for (const r of rows.filter((x) => x.pool)) {
      const list = poolBorrowed.get(r.chain_id) ?? [];
      list.push(r.address.toLowerCase() as Address);
      poolBorrowed.set(r.chain_id, list);
    }
    return { poolBorrowed, partyChains: [...new Set(rows.map((r) => r.chain_id))] };
  } catch (err) {
    // before the indexer's views exist nothing is indexed
    if ((err as { code?: string }).code === "42P01") return { poolBorrowed: new Map(), partyChains: [] };
    throw err;
  }
}
