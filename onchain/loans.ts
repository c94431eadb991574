/**
 * The loans an account lends or borrows, from a chain's LoanRegistry (`loansOf`), each with every
 * view of the original's loan contract at one block, in two or three multicalls. Shared by the
 * API's loan books and subaccount summary and by the jobs.
 */
import { type Abi, type Address, type PublicClient, parseAbi } from "viem";
import { LoanAbi } from "../abis/LoanAbi.js";
import { LoanRegistryAbi } from "../abis/LoanRegistryAbi.js";
import { multicallEach, multicallVia } from "../config/multicall3.js";

/** The original's state names, by `loanState()` number. */
export const LOAN_STATES = [
  "inactive",
  "preapproved",
  "funding_required",
  "funded",
  "active",
  "cancelled",
  "matured",
  "closed",
] as const;
export type LoanStateName = (typeof LOAN_STATES)[number];

export interface LoanView {
  address: Address;
  lender: Address;
  borrower: Address;
  principalToken: Address;
  collateralToken: Address;
  state: LoanStateName;
  /** called by the lender (the state stays active until repaid or matured) */
  called: boolean;
  late: boolean;
  initialPrincipalAmount: bigint;
  principalAmount: bigint;
  /** APR with two decimals: 1250 = 12.50 % */
  apr: bigint;
  /** two decimals; 0 for an unsecured loan */
  maintenanceCollateralRatio: bigint;
  totalRepaid: bigint;
  totalInterestRepaid: bigint;
  interestOwed: bigint;
  principalDebtOwed: bigint;
  /**
   * the principal the loan holds that its borrower may still draw (`borrowerWithdraw`: active and
   * not called), in the principal token; 0 otherwise. The borrower owes it and holds a claim to it.
   */
  undrawn: bigint;
  /** `getNextPaymentDate()`, unix seconds */
  nextPaymentDate: number;
  upcomingPayment: { amount: bigint; dueDate: number };
  paymentIntervalInSeconds: number;
  deployedDate: number;
  maturityDate: number;
}

const VIEWS = [
  "lender",
  "borrower",
  "principalToken",
  "collateralToken",
  "loanState",
  "callbackDeadline",
  "isLate",
  "initialPrincipalAmount",
  "principalAmount",
  "apr",
  "maintenanceCollateralRatio",
  "totalRepaid",
  "totalInterestRepaid",
  "getDebt",
  "getNextPaymentDate",
  "getUpcomingPayment",
  "paymentIntervalInSeconds",
  "deployedDate",
  "maturityDate",
] as const;

const BALANCE_OF = parseAbi(["function balanceOf(address) view returns (uint256)"]);

/**
 * Every view of `loans` at `blockNumber`, and what the borrower may still draw of each (a second
 * multicall, for the loans it can draw from); a loan whose reads fail (not a loan) is left out.
 */
export async function readLoans(client: PublicClient, loans: readonly Address[], blockNumber: bigint) {
  const views = await readLoanViews(client, loans, blockNumber);
  const drawable = views.filter((l) => l.state === "active" && !l.called);
  if (drawable.length === 0) return views;
  const held = (await client.multicall({
    ...(await multicallVia(client)),
    blockNumber,
    allowFailure: false,
    contracts: drawable.map((l) => ({
      address: l.principalToken,
      abi: BALANCE_OF,
      functionName: "balanceOf",
      args: [l.address],
    })),
  })) as bigint[];
  drawable.forEach((l, i) => {
    l.undrawn = held[i]!;
  });
  return views;
}

async function readLoanViews(client: PublicClient, loans: readonly Address[], blockNumber: bigint) {
  if (loans.length === 0) return [];
  const res = await multicallEach(client, {
    blockNumber,
    contracts: loans.flatMap((address) =>
      VIEWS.map((functionName) => ({ address, abi: LoanAbi as Abi, functionName })),
    ),
  });
  return loans.flatMap((address, i): LoanView[] => {
    const part = res.slice(i * VIEWS.length, (i + 1) * VIEWS.length);
    if (part.some((r) => r.status !== "success")) return [];
    const v = Object.fromEntries(VIEWS.map((n, k) => [n, part[k]!.result])) as Record<(typeof VIEWS)[number], unknown>;
    const [interestOwed, principalDebtOwed] = v.getDebt as readonly [bigint, bigint];
    const [amount, dueDate] = v.getUpcomingPayment as readonly [bigint, bigint];
    return [
      {
        address: address.toLowerCase() as Address,
        lender: (v.lender as Address).toLowerCase() as Address,
        borrower: (v.borrower as Address).toLowerCase() as Address,
        principalToken: (v.principalToken as Address).toLowerCase() as Address,
        collateralToken: (v.collateralToken as Address).toLowerCase() as Address,
        state: LOAN_STATES[Number(v.loanState)] ?? "inactive",
        called: (v.callbackDeadline as bigint) > 0n,
        late: v.isLate as boolean,
        initialPrincipalAmount: v.initialPrincipalAmount as bigint,
        principalAmount: v.principalAmount as bigint,
        apr: v.apr as bigint,
        maintenanceCollateralRatio: v.maintenanceCollateralRatio as bigint,
        totalRepaid: v.totalRepaid as bigint,
        totalInterestRepaid: v.totalInterestRepaid as bigint,
        interestOwed,
        principalDebtOwed,
        undrawn: 0n,
        nextPaymentDate: Number(v.getNextPaymentDate),
        upcomingPayment: { amount, dueDate: Number(dueDate) },
        paymentIntervalInSeconds: Number(v.paymentIntervalInSeconds),
        deployedDate: Number(v.deployedDate),
        maturityDate: Number(v.maturityDate),
      },
    ];
  });
}

/** The loans `account` lends or borrows, as the chain's LoanRegistry lists them. */
export async function loansOf(
  client: PublicClient,
  registry: Address,
  account: Address,
  blockNumber: bigint,
): Promise<LoanView[]> {
  const list = (await client.readContract({
    address: registry,
    abi: LoanRegistryAbi as Abi,
    functionName: "loansOf",
    args: [account],
    blockNumber,
  })) as Address[];
  return readLoans(client, list, blockNumber);
}
