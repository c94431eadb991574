/**
 * A subaccount's account-wide figures from its state on each chain (positions and loans at one
 * block per chain), shared by the live routes and the valuation series job. USD throughout.
 *
 * - account value: what it holds (tokens, supplies, collateral, LP positions, lending-vault
 *   shares), what the loans it lends are owed, its balances on the perp core ledger and its
 *   bridge deposits on their way there, and what it may still draw of the loans it borrows;
 * - loan value: Aave and Morpho debts plus what it owes on the loans it borrows (those of the
 *   chain's loan registry and the lending pools' loans indexed to it);
 * - health factor: the lowest of each lending venue's (an Aave account, a Morpho market: its
 *   collateral at its liquidation threshold over its debt; collateral at one venue does not
 *   secure another's debt) and the loans' (what the account holds less the venues' debts, over
 *   what it owes on the loans it borrows: their lenders' recourse is the account, as a
 *   cross-margin account's), null without debt.
 */
import { type Abi, type Address, type PublicClient, parseAbi } from "viem";
import { multicallEach } from "../config/multicall3.js";
import type { ChainProtocols } from "../config/registry.js";
import type { IndexedPerp } from "../db/perp-deposits.js";
import { type LoanView, loansOf, readLoans } from "./loans.js";
import {
  byLedgerKey,
  keyText,
  type MarginBalance,
  type MarginKey,
  marginKeysOf,
  type PerpDeposit,
  readDeposits,
  readInTransit,
  readMargin,
} from "./margin.js";
import {
  chainVenuesFactor,
  type PositionHints,
  readPositions,
  type SubaccountPositions,
  unpricedBorrow,
  venuesHealthFactor,
} from "./positions.js";

export interface ChainState {
  chainId: number;
  positions: SubaccountPositions;
  loans: LoanView[];
  /** the perp core ledger, when this chain holds it */
  ledger: Address | null;
  /** its balances on the perp core ledger, when this chain holds it (else empty) */
  margin: MarginBalance[];
  /** its deposits through this chain's perp bridges up to the block, and the ledger they go to */
  deposits: PerpDeposit[];
  depositsTo: { chainId: number; ledger: Address } | null;
  /** on the ledger's chain: the deposits of every chain not answered at its block (withInTransit) */
  inTransit: PerpDeposit[];
  blockNumber: bigint;
  /** block time of the read, unix seconds */
  timestamp: number;
  /** on the ledger's chain: the ledger keys `margin` was read for (`keyText`) */
  marginKeys?: string[];
  /** the loans' principal tokens outside the chain's catalogue, as they describe themselves */
  loanTokens?: Map<string, { symbol: string; decimals: number }>;
}

const ERC20_META = parseAbi(["function decimals() view returns (uint8)", "function symbol() view returns (string)"]);

/**
 * The decimals and symbol of loan principal tokens the catalogue does not list (a loan registry
 * takes any token), read at the block; a token that does not answer both is left out.
 */
async function readLoanTokens(client: PublicClient, tokens: readonly Address[], blockNumber: bigint) {
  const res = await multicallEach(client, {
    blockNumber,
    contracts: tokens.flatMap((address) =>
      (["decimals", "symbol"] as const).map((functionName) => ({ address, abi: ERC20_META as Abi, functionName })),
    ),
  });
  const out = new Map<string, { symbol: string; decimals: number }>();
  tokens.forEach((t, i) => {
    const [d, sym] = [res[2 * i]!, res[2 * i + 1]!];
    if (d.status === "success" && sym.status === "success") {
      out.set(t.toLowerCase(), { decimals: Number(d.result), symbol: String(sym.result) });
    }
  });
  return out;
}

/**
 * The subaccount's state on one chain at one block. `perp`: its indexed bridge deposits on every
 * chain and the ledger's indexed credits to it (db/perp-deposits.ts), whose chains, tokens and
 * destinations are the ledger keys read. `poolLoans`: the lending-pool loans on this chain it
 * borrows, as indexed (db/loan-parties.ts): a pool's loans are not in the loan registry.
 * `hints`: its indexed Uniswap positions (db/uniswap-positions.ts), where the staker's own list
 * is too long to read.
 */
export async function readChainState(
  client: PublicClient,
  protocols: ChainProtocols,
  account: Address,
  block: { number: bigint; timestamp: bigint },
  perp: IndexedPerp,
  poolLoans: readonly Address[] = [],
  hints: PositionHints = {},
): Promise<ChainState> {
  const core = protocols.perp?.core;
  const ledger = core && core.chainId === protocols.chainId ? core.ledger : null;
  // deposits whose ledger the catalogue does not name cannot be followed: none is read
  const bridges = protocols.perp && core ? [protocols.perp.bridgeA, protocols.perp.bridgeB] : [];
  const keys = marginKeysOf([...perp.deposits, ...perp.credits]);
  const [positions, registered, pooled, margin, deposits] = await Promise.all([
    readPositions(client, protocols, account, block.number, hints),
    protocols.loanRegistry ? loansOf(client, protocols.loanRegistry, account, block.number) : Promise.resolve([]),
    // a loan not deployed yet at the block reads as no loan (readLoans leaves it out)
    readLoans(client, poolLoans, block.number),
    ledger ? readMargin(client, ledger, account, block.number, keys) : Promise.resolve([]),
    bridges.length > 0
      ? readDeposits(client, protocols.chainId, bridges, account, block.number, perp.deposits)
      : Promise.resolve([]),
  ]);
  const loans = [...registered, ...pooled.filter((l) => !registered.some((r) => r.address === l.address))];
  const offCatalogue = [...new Set(loans.map((l) => l.principalToken))].filter((t) => !positions.prices.has(t));
  const loanTokens = offCatalogue.length > 0 ? await readLoanTokens(client, offCatalogue, block.number) : undefined;
  return {
    chainId: protocols.chainId,
    positions,
    loans,
    ledger,
    margin,
    deposits,
    depositsTo: core ? { chainId: core.chainId, ledger: core.ledger.toLowerCase() as Address } : null,
    inTransit: [],
    blockNumber: block.number,
    timestamp: Number(block.timestamp),
    ...(loanTokens ? { loanTokens } : {}),
    ...(ledger ? { marginKeys: keys.map(keyText) } : {}),
  };
}

/** Reads `account`'s balances on the ledger on `chainId` at `blockNumber`, of `keys`. */
export type MarginReader = (
  chainId: number,
  ledger: Address,
  account: Address,
  keys: readonly MarginKey[],
  blockNumber: bigint,
) => Promise<MarginBalance[]>;

/** The margin reader straight from each chain's client. */
export const marginFrom =
  (clientOf: (chainId: number) => PublicClient): MarginReader =>
  (chainId, ledger, account, keys, blockNumber) =>
    readMargin(clientOf(chainId), ledger, account, blockNumber, keys);

/** Reads which of `deposits` the ledger on `chainId` had not answered at `blockNumber`. */
export type TransitReader = (
  chainId: number,
  ledger: Address,
  deposits: readonly PerpDeposit[],
  blockNumber: bigint,
) => Promise<PerpDeposit[]>;

/** The reader straight from each chain's client. */
export const transitFrom =
  (clientOf: (chainId: number) => PublicClient): TransitReader =>
  (chainId, ledger, deposits, blockNumber) =>
    readInTransit(clientOf(chainId), ledger, deposits, blockNumber);

/**
 * `states` with each ledger's chain's `inTransit` filled: the deposits read on the chains whose
 * bridges go to that ledger, not answered by it at its block. Without the ledger's chain in
 * `states` none of them is counted. A deposit the bridges' logs found and the indexer has not
 * (it is behind) may be credited already, under a ledger key no indexed row names: `margin`
 * reads those keys' balances too, so a credited deposit is in neither list only once it is in
 * the balances.
 */
export async function withInTransit(
  states: readonly ChainState[],
  read: TransitReader,
  margin?: MarginReader,
): Promise<ChainState[]> {
  return Promise.all(
    states.map(async (s) => {
      const ledger = s.ledger?.toLowerCase();
      const deposits = states
        .filter((x) => x.depositsTo?.chainId === s.chainId && x.depositsTo.ledger === ledger)
        .flatMap((x) => x.deposits);
      if (s.ledger == null || deposits.length === 0) return s;
      const unread = marginKeysOf(deposits).filter((k) => !(s.marginKeys ?? []).includes(keyText(k)));
      const [inTransit, more] = await Promise.all([
        read(s.chainId, s.ledger, deposits, s.blockNumber),
        margin && unread.length > 0
          ? margin(s.chainId, s.ledger, s.positions.account, unread, s.blockNumber)
          : Promise.resolve([]),
      ]);
      if (more.length === 0) return { ...s, inTransit };
      const balances = [...s.margin, ...more].sort(byLedgerKey);
      return { ...s, inTransit, margin: balances, marginKeys: [...(s.marginKeys ?? []), ...unread.map(keyText)] };
    }),
  );
}

/** The decimals of `token`: the chain catalogue's, a loan token's own, else 18. */
export function tokenDecimals(s: ChainState, token: string): number {
  const t = token.toLowerCase();
  return s.positions.prices.get(t)?.decimals ?? s.loanTokens?.get(t)?.decimals ?? 18;
}

/** The symbol of `token`: the chain catalogue's, a loan token's own, else null. */
export function tokenSymbol(s: ChainState, token: string): string | null {
  const t = token.toLowerCase();
  return s.positions.prices.get(t)?.symbol ?? s.loanTokens?.get(t)?.symbol ?? null;
}

/** USD per whole `token` on the chain (null without a feed). */
export function tokenPrice(s: ChainState, token: string): number | null {
  return s.positions.prices.get(token.toLowerCase())?.price ?? null;
}

const OPEN = (l: LoanView) => l.state !== "closed" && l.state !== "cancelled" && l.state !== "inactive";

/**
 * What is owed on a loan now (interest and principal), whole tokens, and its USD value; and the
 * USD value of the principal its borrower may still draw (0 without a price).
 */
export function loanDebtValue(
  l: LoanView,
  s: ChainState,
): { debt: number; interest: number; value: number | null; undrawnValue: number } {
  const d = tokenDecimals(s, l.principalToken);
  const debt = Number(l.interestOwed + l.principalDebtOwed) / 10 ** d;
  const interest = Number(l.interestOwed) / 10 ** d;
  const price = tokenPrice(s, l.principalToken);
  const undrawnValue = (Number(l.undrawn) / 10 ** d) * (price ?? 0);
  return { debt, interest, value: price == null ? null : debt * price, undrawnValue };
}

/**
 * A core-ledger balance (or a deposit in transit) in whole tokens and USD, priced on its source
 * chain (the value is null without that chain's state or a feed for the token).
 */
export function marginValue(
  m: MarginBalance,
  states: readonly ChainState[],
): { decimals: number; balance: number; value: number | null } {
  const source = states.find((s) => s.chainId === m.chainId);
  const decimals = source ? tokenDecimals(source, m.token) : 18;
  const balance = Number(m.raw) / 10 ** decimals;
  const price = source ? tokenPrice(source, m.token) : null;
  return { decimals, balance, value: price == null ? null : balance * price };
}

/**
 * An open debt no USD price values: a Morpho borrow or a loan it borrows in a token without a
 * feed (or whose feed did not answer at the block). Its amount is in whole tokens.
 */
export interface UnpricedDebt {
  chain_id: number;
  token: string;
  symbol: string | null;
  amount: number;
}

/** Every open debt of `account` that no price values, on every chain read. */
export function unpricedDebts(states: readonly ChainState[], account: string): UnpricedDebt[] {
  const a = account.toLowerCase();
  const out: UnpricedDebt[] = [];
  for (const s of states) {
    for (const m of s.positions.morpho.filter(unpricedBorrow)) {
      const amount = Number(m.borrowed) / 10 ** m.loanToken.decimals;
      out.push({ chain_id: s.chainId, token: m.loanToken.address.toLowerCase(), symbol: m.loanToken.symbol, amount });
    }
    for (const l of s.loans.filter(OPEN)) {
      if (l.borrower !== a) continue;
      const v = loanDebtValue(l, s);
      if (v.value != null || v.debt === 0) continue;
      const symbol = tokenSymbol(s, l.principalToken);
      out.push({ chain_id: s.chainId, token: l.principalToken.toLowerCase(), symbol, amount: v.debt });
    }
  }
  return out;
}

/** One line naming the debts no price values: "250 USDX 0xdd… on chain 8453, …". */
export function unpricedText(debts: readonly UnpricedDebt[]): string {
  return debts.map((d) => `${d.amount} ${d.symbol ?? "of"} ${d.token} on chain ${d.chain_id}`).join(", ");
}

export interface AccountFigures {
  total_account_value: number;
  total_collateral_value: number;
  total_loan_value: number;
  /** interest owed on the loans it borrows, USD */
  total_loan_interest_amount: number;
  liquidation_collateral: number;
  net_account_value: number;
  health_factor: number | null;
  /** the margin fraction (net / account value) at which the health factor is 1; null without debt */
  maintenance_margin_fraction: number | null;
  /**
   * Debts no price values: left out of the USD totals, and the health factor and the maintenance
   * margin fraction are null while there is one (unknown: counting it as 0 would overstate them)
   */
  unpriced_debts: UnpricedDebt[];
}

/**
 * What `account` owes and is owed on the open loans of one chain, USD: `borrowed` (principal and
 * interest owed on the loans it borrows), `interest` (of which interest), `undrawn` (principal of
 * those it has not drawn yet: still in the loan, its own to draw) and `lent` (owed to it).
 */
export function chainLoanTotals(s: ChainState, account: string) {
  const a = account.toLowerCase();
  const t = { borrowed: 0, lent: 0, interest: 0, undrawn: 0 };
  for (const l of s.loans.filter(OPEN)) {
    const v = loanDebtValue(l, s);
    const price = tokenPrice(s, l.principalToken) ?? 0;
    if (l.borrower === a) {
      t.borrowed += v.value ?? 0;
      t.interest += v.interest * price;
      t.undrawn += v.undrawnValue;
    }
    if (l.lender === a) t.lent += v.value ?? 0;
  }
  return t;
}

export function accountFigures(states: readonly ChainState[], account: string): AccountFigures {
  let borrowed = 0;
  let lent = 0;
  let interest = 0;
  let undrawn = 0;
  for (const s of states) {
    const t = chainLoanTotals(s, account);
    borrowed += t.borrowed;
    lent += t.lent;
    interest += t.interest;
    undrawn += t.undrawn;
  }
  const sum = (f: (s: ChainState) => number) => states.reduce((t, s) => t + f(s), 0);
  const liquidation = sum((s) => s.positions.totals.liquidationCollateral);
  const venueDebt = sum((s) => s.positions.totals.loanValue);
  const loanValue = venueDebt + borrowed;
  const perp = (list: readonly MarginBalance[]) => list.reduce((t, m) => t + (marginValue(m, states).value ?? 0), 0);
  const margin = sum((s) => perp(s.margin) + perp(s.inTransit));
  const accountValue = sum((s) => s.positions.totals.totalValue) + lent + undrawn + margin;
  // each debt against what secures it: a venue's, its own collateral at its threshold; the loans
  // it borrows, the account less the venues' debts (1: nothing left once they are repaid)
  const factors: number[] = [];
  // the margin fraction at which each reaches 1: the venues' when their debts, risen alike, reach
  // the lowest venue's collateral at its threshold; the loans' when the account's net value is 0
  const margins: number[] = [];
  const venues = venuesHealthFactor(states.flatMap((s) => s.positions.venues));
  if (venues != null) {
    factors.push(venues);
    if (accountValue > 0) margins.push(1 - (venueDebt * venues + borrowed) / accountValue);
  }
  if (borrowed > 0) {
    factors.push((accountValue - venueDebt) / borrowed);
    margins.push(0);
  }
  const unpriced = unpricedDebts(states, account);
  const known = unpriced.length === 0;
  return {
    total_account_value: accountValue,
    total_collateral_value: sum((s) => s.positions.totals.collateralValue),
    total_loan_value: loanValue,
    total_loan_interest_amount: interest,
    liquidation_collateral: liquidation,
    net_account_value: accountValue - loanValue,
    health_factor: known && factors.length > 0 ? Math.min(...factors) : null,
    maintenance_margin_fraction: known && margins.length > 0 && accountValue > 0 ? Math.max(...margins) : null,
    unpriced_debts: unpriced,
  };
}

/**
 * A change at one chain's Aave account (the lending-market builders' venue), USD: its collateral,
 * its debt, its collateral at the liquidation threshold, and the account value (what the account
 * holds there, supplies included). A swap's is a change of value alone.
 */
export interface VenueChange {
  chainId: number;
  collateral: number;
  debt: number;
  liquidation: number;
  value: number;
}

/**
 * The states with a venue change applied to its chain's totals: what `accountFigures` sees once
 * a transaction the change was simulated from lands (a borrow, a withdrawal).
 */
export function withVenueChange(states: readonly ChainState[], c: VenueChange): ChainState[] {
  return states.map((s) => {
    if (s.chainId !== c.chainId) return s;
    const t = s.positions.totals;
    const listed = s.positions.venues.some((v) => v.venue === "aave");
    const aave = { venue: "aave", debt: 0, liquidation: 0 };
    const venues = (listed ? s.positions.venues : [...s.positions.venues, aave]).map((v) =>
      v.venue === "aave" ? { ...v, debt: v.debt + c.debt, liquidation: v.liquidation + c.liquidation } : v,
    );
    const totals = {
      ...t,
      collateralValue: t.collateralValue + c.collateral,
      loanValue: t.loanValue + c.debt,
      liquidationCollateral: t.liquidationCollateral + c.liquidation,
      totalValue: t.totalValue + c.value,
      netValue: t.netValue + c.value - c.debt,
    };
    const positions = { ...s.positions, totals, venues, healthFactor: chainVenuesFactor(s.positions.morpho, venues) };
    return { ...s, positions };
  });
}
