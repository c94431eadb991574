/**
 * Shared by the subaccount routes: a subaccount's registry rows (one per chain it is registered
 * on) and its positions and loans read live on each of those chains at the head.
 */
import type { Address } from "viem";
import { getChain } from "../../../config/chains.js";
import { type LoanView, loansOf } from "../../../onchain/loans.js";
import { readPositions, type SubaccountPositions } from "../../../onchain/positions.js";
import type { ReadDb } from "../../lib/db.js";
import { chainClient, chainProtocols, NoRpc } from "../../lib/protocols.js";

export interface SubaccountRow {
  id: string;
  chain_id: number;
  vault: string;
  address: string;
  internal_name: string | null;
  friendly_name: string | null;
  status: string;
  subaccount_type: string;
  min_health_factor: string | null;
}

/** Every registry row of `address` (lower-cased), ordered by chain. */
export async function subaccountRows(db: ReadDb, address?: string): Promise<SubaccountRow[]> {
  let q = db
    .selectFrom("registry.subaccount")
    .select([
      "id",
      "chain_id",
      "vault",
      "address",
      "internal_name",
      "friendly_name",
      "status",
      "subaccount_type",
      "min_health_factor",
    ])
    .orderBy("address")
    .orderBy("chain_id")
    .orderBy("vault");
  if (address) q = q.where("address", "=", address.toLowerCase());
  return (await q.execute()) as SubaccountRow[];
}

export const chainName = (chainId: number) => getChain(chainId)?.name ?? String(chainId);

/** What a subaccount holds and owes on one chain. */
export interface ChainState {
  chainId: number;
  positions: SubaccountPositions;
  loans: LoanView[];
  /** block time of the read, unix seconds */
  timestamp: number;
}

/**
 * The subaccount's state on every chain it is registered on that has a protocols entry, read at
 * each chain's head. A chain without an RPC throws NoRpc.
 */
export async function readChains(
  db: ReadDb,
  rpcUrls: ReadonlyMap<number, string>,
  rows: readonly SubaccountRow[],
): Promise<ChainState[]> {
  const catalogue = await chainProtocols(db);
  const chains = [...new Set(rows.map((r) => r.chain_id))].filter((c) => catalogue.has(c));
  const account = rows[0]!.address as Address;
  return Promise.all(
    chains.map(async (chainId): Promise<ChainState> => {
      const url = rpcUrls.get(chainId);
      if (!url) throw new NoRpc(chainId);
      const client = chainClient(url);
      const p = catalogue.get(chainId)!;
      const block = await client.getBlock();
      const [positions, loans] = await Promise.all([
        readPositions(client, p, account, block.number),
        p.loanRegistry ? loansOf(client, p.loanRegistry, account, block.number) : Promise.resolve([]),
      ]);
      return { chainId, positions, loans, timestamp: Number(block.timestamp) };
    }),
  );
}

/** A loan's outstanding debt (interest owed and principal), in whole tokens valued in USD. */
export function loanDebtValue(l: LoanView, s: ChainState): { debt: number; value: number | null } {
  const t = s.positions.tokens.find((x) => x.token.address === l.principalToken);
  const decimals = t?.token.decimals ?? tokenDecimals(s, l.principalToken);
  const debt = Number(l.interestOwed + l.principalDebtOwed) / 10 ** decimals;
  const price = tokenPrice(s, l.principalToken);
  return { debt, value: price == null ? null : debt * price };
}

/** The chain catalogue's decimals of `token` (18 when unknown). */
export function tokenDecimals(s: ChainState, token: string): number {
  return s.positions.prices.get(token.toLowerCase())?.decimals ?? 18;
}

/** USD per whole `token` on the chain (null without a feed). */
export function tokenPrice(s: ChainState, token: string): number | null {
  return s.positions.prices.get(token.toLowerCase())?.price ?? null;
}

/** Loan value summed across chains, for the loans the subaccount borrows and those it lends. */
export function loanTotals(states: readonly ChainState[], account: string) {
  let borrowed = 0;
  let lent = 0;
  for (const s of states)
    for (const l of s.loans) {
      if (l.state === "closed" || l.state === "cancelled" || l.state === "inactive") continue;
      const v = loanDebtValue(l, s).value ?? 0;
      if (l.borrower === account) borrowed += v;
      if (l.lender === account) lent += v;
    }
  return { borrowed, lent };
}

/** Account-wide figures across chains: the health factor counts borrowed loans as unsecured debt. */
export function accountTotals(states: readonly ChainState[], account: string) {
  const loans = loanTotals(states, account);
  const sum = (f: (s: ChainState) => number) => states.reduce((t, s) => t + f(s), 0);
  const collateral = sum((s) => s.positions.totals.collateralValue);
  const liquidation = sum((s) => s.positions.totals.liquidationCollateral);
  const loanValue = sum((s) => s.positions.totals.loanValue) + loans.borrowed;
  const accountValue = sum((s) => s.positions.totals.totalValue) + loans.lent;
  return {
    total_account_value: accountValue,
    total_collateral_value: collateral,
    total_loan_value: loanValue,
    net_account_value: accountValue - loanValue,
    health_factor: loanValue > 0 ? liquidation / loanValue : null,
  };
}
