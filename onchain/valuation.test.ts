/**
 * accountFigures' health factor and maintenance margin fraction on states built by hand: each kind
 * of debt against what secures it, and the lower of the two.
 */
import type { Address } from "viem";
import { describe, expect, it } from "vitest";
import type { LoanView } from "./loans.js";
import type { TokenRef } from "./positions.js";
import { accountFigures, type ChainState, withVenueChange } from "./valuation.js";

const ACCOUNT = `0x${"aa".repeat(20)}` as Address;
const LENDER = `0x${"bb".repeat(20)}` as Address;
const USDC = `0x${"cc".repeat(20)}` as Address;

/**
 * One chain's state: `held` USD in tokens, Aave collateral and debt, and loans it borrows (USDC),
 * of which `undrawn` USD each still in the loan.
 */
function state(o: {
  held: number;
  collateral?: number;
  threshold?: number;
  venueDebt?: number;
  loans?: number[];
  undrawn?: number;
}) {
  const collateral = o.collateral ?? 0;
  const venueDebt = o.venueDebt ?? 0;
  const loans: LoanView[] = (o.loans ?? []).map((usd, i) => ({
    address: `0x${String(i + 1).padStart(40, "0")}` as Address,
    lender: LENDER,
    borrower: ACCOUNT,
    principalToken: USDC,
    collateralToken: `0x${"00".repeat(20)}` as Address,
    state: "active",
    called: false,
    late: false,
    initialPrincipalAmount: BigInt(usd * 1e6),
    principalAmount: BigInt(usd * 1e6),
    apr: 1000n,
    maintenanceCollateralRatio: 0n,
    totalRepaid: 0n,
    totalInterestRepaid: 0n,
    interestOwed: 0n,
    principalDebtOwed: BigInt(usd * 1e6),
    undrawn: BigInt((o.undrawn ?? 0) * 1e6),
    nextPaymentDate: 0,
    upcomingPayment: { amount: 0n, dueDate: 0 },
    paymentIntervalInSeconds: 86_400,
    deployedDate: 0,
    maturityDate: 0,
  }));
  return {
    chainId: 1,
    positions: {
      chainId: 1,
      account: ACCOUNT,
      blockNumber: 1n,
      prices: new Map<string, TokenRef & { price: number | null }>([
        [USDC, { address: USDC, symbol: "USDC", decimals: 6, price: 1 }],
      ]),
      tokens: [],
      aave: null,
      morpho: [],
      lendingVaults: [],
      uniswap: [],
      stakerRewards: [],
      totals: {
        tokenValue: o.held,
        collateralValue: collateral,
        loanValue: venueDebt,
        liquidationCollateral: collateral * (o.threshold ?? 0.8),
        totalValue: o.held + collateral,
        netValue: o.held + collateral - venueDebt,
      },
      venues:
        collateral > 0 || venueDebt > 0
          ? [{ venue: "aave", debt: venueDebt, liquidation: collateral * (o.threshold ?? 0.8) }]
          : [],
      healthFactor: venueDebt > 0 ? (collateral * (o.threshold ?? 0.8)) / venueDebt : null,
    },
    loans,
    ledger: null,
    margin: [],
    deposits: [],
    depositsTo: null,
    inTransit: [],
    blockNumber: 1n,
    timestamp: 0,
  } satisfies ChainState;
}

describe("accountFigures: health factor", () => {
  it("is null without debt", () => {
    const f = accountFigures([state({ held: 1000, collateral: 500 })], ACCOUNT);
    expect(f.health_factor).toBeNull();
    expect(f.maintenance_margin_fraction).toBeNull();
  });

  it("with venue debt only, is the venue's: collateral at its threshold over its debt", () => {
    const f = accountFigures([state({ held: 10_000, collateral: 1000, threshold: 0.8, venueDebt: 500 })], ACCOUNT);
    expect(f.health_factor).toBeCloseTo(1.6, 12);
    // at a health factor of 1 the debt is 800: net 11,000 − 800 over 11,000
    expect(f.maintenance_margin_fraction).toBeCloseTo(1 - 800 / 11_000, 12);
  });

  it("with loans it borrows only, is the account over what it owes on them, not 0", () => {
    const f = accountFigures([state({ held: 850_000, loans: [100_000] })], ACCOUNT);
    expect(f.total_loan_value).toBeCloseTo(100_000, 6);
    expect(f.health_factor).toBeCloseTo(8.5, 12);
    // it reaches 1 when nothing is left once the loans are repaid: a net value of 0
    expect(f.maintenance_margin_fraction).toBe(0);
    expect(f.total_account_value - f.total_loan_value).toBeCloseTo(750_000, 6);
  });

  it("with both, is the lower: the venue's, or the loans' on what the venue's debt leaves", () => {
    // the venue binds: 800 / 500 = 1.6 against (11,000 − 500) / 1,000 = 10.5
    const venue = accountFigures(
      [state({ held: 10_000, collateral: 1000, threshold: 0.8, venueDebt: 500, loans: [1000] })],
      ACCOUNT,
    );
    expect(venue.health_factor).toBeCloseTo(1.6, 12);
    expect(venue.maintenance_margin_fraction).toBeCloseTo(1 - (800 + 1000) / 11_000, 12);
    // the loans bind: (1,100 − 500) / 1,000 = 0.6 against 1.6
    const loans = accountFigures(
      [state({ held: 100, collateral: 1000, threshold: 0.8, venueDebt: 500, loans: [1000] })],
      ACCOUNT,
    );
    expect(loans.health_factor).toBeCloseTo(0.6, 12);
    // the venue's margin fraction at 1 would be negative: the loans' 0 is reached first
    expect(loans.maintenance_margin_fraction).toBe(0);
    expect(loans.net_account_value).toBeLessThan(0);
  });

  it("counts what the borrower may still draw of a loan as its own: an undrawn line is no loss", () => {
    // 100,000 borrowed, 60,000 of it not drawn yet: the account holds 40,000 + 60,000
    const f = accountFigures([state({ held: 40_000, loans: [100_000], undrawn: 60_000 })], ACCOUNT);
    expect(f.total_account_value).toBeCloseTo(100_000, 6);
    expect(f.total_loan_value).toBeCloseTo(100_000, 6);
    expect(f.health_factor).toBeCloseTo(1, 12);
    // not for a loan it lends: the lender is owed the principal, drawn or not
    const lent = state({ held: 0, loans: [100_000], undrawn: 60_000 });
    const lender = accountFigures(
      [{ ...lent, loans: lent.loans.map((l) => ({ ...l, lender: ACCOUNT, borrower: LENDER })) }],
      ACCOUNT,
    );
    expect(lender.total_account_value).toBeCloseTo(100_000, 6);
  });

  it("sums every chain's debts and holdings before comparing", () => {
    const f = accountFigures(
      [
        state({ held: 0, collateral: 1000, threshold: 0.8, venueDebt: 400 }),
        { ...state({ held: 3000, loans: [2000] }), chainId: 8453 },
      ],
      ACCOUNT,
    );
    expect(f.health_factor).toBeCloseTo(Math.min(800 / 400, (4000 - 400) / 2000), 12);
  });

  it("holds each venue's debt against its own collateral: one venue's collateral covers no other's", () => {
    // chain 1: a Morpho market, 900 at its LLTV against 600 borrowed (1.5); chain 8453: Aave
    // collateral of 5,000 at 0.85 without debt. Pooled they would give (900 + 4,250) / 600.
    const morpho = { ...state({ held: 0 }), chainId: 1 };
    morpho.positions.venues = [{ venue: "morpho:0x01", debt: 600, liquidation: 900 }];
    morpho.positions.totals = { ...morpho.positions.totals, loanValue: 600, liquidationCollateral: 900 };
    morpho.positions.totals.collateralValue = 1000;
    morpho.positions.totals.totalValue = 1000;
    const aave = { ...state({ held: 0, collateral: 5000, threshold: 0.85 }), chainId: 8453 };
    const f = accountFigures([morpho, aave], ACCOUNT);
    expect(f.health_factor).toBeCloseTo(1.5, 12);
    expect(f.liquidation_collateral).toBeCloseTo(900 + 4250, 9);
    // at 1 the venues' debts have risen by 1.5: 900 of debt against an account of 6,000
    expect(f.maintenance_margin_fraction).toBeCloseTo(1 - 900 / 6000, 12);
    // two venues with debt on one chain: the lower of the two, not their pooled figure
    const both = state({ held: 0, collateral: 1000, threshold: 0.8, venueDebt: 200 });
    both.positions.venues.push({ venue: "morpho:0x02", debt: 500, liquidation: 600 });
    both.positions.totals.loanValue += 500;
    expect(accountFigures([both], ACCOUNT).health_factor).toBeCloseTo(600 / 500, 12);
  });
});

describe("withVenueChange: the figures once a simulated venue change lands", () => {
  const chains = () => [
    state({ held: 10_000, collateral: 1000, threshold: 0.8, venueDebt: 400, loans: [2000] }),
    { ...state({ held: 3000 }), chainId: 8453 },
  ];

  it("a borrow: debt and holdings up alike, so the venue's factor falls and the loans' does not move", () => {
    const before = accountFigures(chains(), ACCOUNT);
    const change = { chainId: 1, collateral: 0, debt: 200, liquidation: 0, value: 200 };
    const after = accountFigures(withVenueChange(chains(), change), ACCOUNT);
    expect(before.health_factor).toBeCloseTo(800 / 400, 12);
    expect(after.health_factor).toBeCloseTo(800 / 600, 12);
    expect(after.total_loan_value - before.total_loan_value).toBeCloseTo(200, 9);
    expect(after.net_account_value).toBeCloseTo(before.net_account_value, 9);
  });

  it("a withdrawal: collateral out, tokens in; the loans bind once the venue no longer does", () => {
    const change = { chainId: 1, collateral: -500, debt: 0, liquidation: -400, value: 0 };
    const after = accountFigures(withVenueChange(chains(), change), ACCOUNT);
    // venue: 400 / 400 = 1; loans: (14,000 − 400) / 2,000 = 6.8
    expect(after.health_factor).toBeCloseTo(1, 12);
    expect(after.total_collateral_value).toBeCloseTo(500, 9);
  });

  it("leaves the other chains and the states it was given as they were", () => {
    const states = chains();
    const out = withVenueChange(states, { chainId: 8453, collateral: 1, debt: 1, liquidation: 1, value: 1 });
    expect(out[0]).toBe(states[0]);
    expect(out[1]!.positions.totals.loanValue).toBe(1);
    // the change is the chain's Aave account's, listed there once it has debt
    expect(out[1]!.positions.venues).toEqual([{ venue: "aave", debt: 1, liquidation: 1 }]);
    expect(out[1]!.positions.healthFactor).toBe(1);
    expect(states[1]!.positions.totals.loanValue).toBe(0);
  });
});

describe("accountFigures: a debt no price values", () => {
  const USDX = `0x${"dd".repeat(20)}` as Address;
  /** `state` with its loans in USDX, a catalogue token without a feed (6 decimals) */
  const unpricedLoans = (o: Parameters<typeof state>[0]) => {
    const s = state(o);
    s.positions.prices.set(USDX, { address: USDX, symbol: "USDX", decimals: 6, price: null });
    return { ...s, loans: s.loans.map((l) => ({ ...l, principalToken: USDX })) } satisfies ChainState;
  };

  it("a loan it borrows in a token without a feed: listed, and the health factor unknown, not as if no debt", () => {
    const f = accountFigures([unpricedLoans({ held: 1000, loans: [100_000] })], ACCOUNT);
    expect(f.unpriced_debts).toEqual([{ chain_id: 1, token: USDX, symbol: "USDX", amount: 100_000 }]);
    expect(f.health_factor).toBeNull();
    expect(f.maintenance_margin_fraction).toBeNull();
    expect(f.total_loan_value).toBe(0); // left out of the USD totals, as the list says
  });

  it("hides a priced venue's figure too: the lowest of the factors is unknown", () => {
    const f = accountFigures([unpricedLoans({ held: 0, collateral: 1000, venueDebt: 500, loans: [10] })], ACCOUNT);
    expect(f.unpriced_debts).toHaveLength(1);
    expect(f.health_factor).toBeNull();
  });

  it("a loan it lends in such a token is no debt of its own; a repaid one is none", () => {
    const lent = unpricedLoans({ held: 1000, loans: [100] });
    const f = accountFigures([{ ...lent, loans: lent.loans.map((l) => ({ ...l, borrower: LENDER })) }], ACCOUNT);
    expect(f.unpriced_debts).toEqual([]);
    const repaid = unpricedLoans({ held: 1000, loans: [100] });
    const g = accountFigures(
      [{ ...repaid, loans: repaid.loans.map((l) => ({ ...l, principalDebtOwed: 0n, interestOwed: 0n })) }],
      ACCOUNT,
    );
    expect(g.unpriced_debts).toEqual([]);
  });

  it("a Morpho borrow without a price: listed, the chain's and the account's factors unknown", () => {
    const s = state({ held: 1000, collateral: 1000, venueDebt: 100 });
    const usdx = { address: USDX, symbol: "USDX", decimals: 6 };
    const morpho = {
      marketId: `0x${"01".repeat(32)}` as const,
      loanToken: usdx,
      collateralToken: { address: USDC, symbol: "USDC", decimals: 6 },
      lltv: 0.86,
      supplied: 0n,
      borrowed: 250n * 10n ** 6n,
      collateral: 1000n * 10n ** 6n,
      suppliedValue: null,
      borrowedValue: null,
      collateralValue: 1000,
    };
    const withMorpho = { ...s, positions: { ...s.positions, morpho: [morpho] } } satisfies ChainState;
    const f = accountFigures([withMorpho], ACCOUNT);
    expect(f.unpriced_debts).toEqual([{ chain_id: 1, token: USDX, symbol: "USDX", amount: 250 }]);
    expect(f.health_factor).toBeNull();
    // a change simulated on the chain keeps its venues' figure unknown
    const change = { chainId: 1, collateral: 0, debt: 10, liquidation: 0, value: 10 };
    expect(withVenueChange([withMorpho], change)[0]!.positions.healthFactor).toBeNull();
  });
});
