/**
 * Loans between subaccounts and others: a LoanRegistry per chain (each loan it creates or is given
 * emits `LoanRegistered(loan, lender, borrower)`, a factory source for the indexer), loan creation,
 * the calls a subaccount lender or borrower needs, and one read of every view a loan book shows.
 */
import { type Abi, type Address, getAddress, type Hex, type PublicClient, parseEventLogs } from "viem";
import { LoanRegistryAbi } from "../../../abis/LoanRegistryAbi.js";
import { type LoanView as OnchainLoanView, readLoans } from "../../../onchain/loans.js";
import { loanRegistry } from "./artifacts.js";
import type { AllowedCall } from "./safe.js";
import { type Ctx, deploy, write } from "./tx.js";

export interface LoansDeployment {
  chainId: number;
  registry: Address;
  owner: Address;
}

/** The chain's loan registry, owned by `owner` (default the deployer: the platform preapproving loans). */
export async function deployLoanRegistry(ctx: Ctx, opts: { owner?: Address } = {}): Promise<LoansDeployment> {
  const owner = getAddress(opts.owner ?? ctx.from);
  const registry = await deploy(ctx, loanRegistry(), [owner], "LoanRegistry");
  return { chainId: ctx.s.chainId, registry, owner };
}

export interface LoanSpec {
  lender: Address;
  borrower: Address;
  principalToken: Address;
  /** raw units of the principal token */
  principal: bigint;
  /** two decimals: 1250 = 12.50 % */
  aprWithTwoDecimals: bigint;
  termDays: bigint;
  /** default 30 days */
  paymentIntervalInSeconds?: bigint;
  /** default none (unsecured) */
  collateralToken?: Address;
  /** two decimals, default 0 (unsecured) */
  maintenanceCollateralRatio?: bigint;
}

const ZERO: Address = "0x0000000000000000000000000000000000000000";

/** Creates a preapproved loan through the registry (sent by `from`: the owner or a party). */
export async function createLoan(ctx: Ctx, registry: Address, spec: LoanSpec, from: Address = ctx.from) {
  const receipt = await write(
    ctx,
    registry,
    LoanRegistryAbi as Abi,
    "createLoan",
    [
      spec.lender,
      spec.borrower,
      spec.principalToken,
      spec.principal,
      spec.aprWithTwoDecimals,
      spec.termDays,
      spec.paymentIntervalInSeconds ?? 30n * 86_400n,
      spec.collateralToken ?? ZERO,
      spec.maintenanceCollateralRatio ?? 0n,
    ],
    from,
  );
  const [ev] = parseEventLogs({
    abi: LoanRegistryAbi,
    eventName: "LoanRegistered",
    logs: receipt.logs.map((l) => ({ ...l, topics: l.topics as [Hex, ...Hex[]] })) as never,
  });
  if (!ev) throw new Error(`createLoan: no LoanRegistered in ${receipt.transactionHash}`);
  return getAddress(ev.args.loan);
}

/**
 * The loan calls a subaccount needs as lender (`fund`, pulled under an exact approval; `cancel`,
 * `callLoan`, `proposeNewApr`) or as borrower (`borrowerCommitment`, `borrowerWithdraw` to itself,
 * repayments pulled under exact approvals, `acceptApr`). None carries a recipient argument: funds
 * only move between the loan and its two parties.
 */
export function loanSubaccountCalls(loan: Address, role: "lender" | "borrower"): AllowedCall {
  const signatures =
    role === "lender"
      ? ["fund()", "cancel()", "callLoan(uint256,uint256)", "proposeNewApr(uint256)"]
      : [
          "borrowerCommitment()",
          "borrowerWithdraw(uint256)",
          "repayInterests(uint256)",
          "repayPrincipal(uint256)",
          "acceptApr()",
        ];
  return { target: getAddress(loan), signatures };
}

export { LOAN_STATES, type LoanStateName } from "../../../onchain/loans.js";

/** Every view of a loan at one block (onchain/loans.ts), addresses checksummed, and the block. */
export type LoanView = OnchainLoanView & { blockNumber: bigint };

/** Every view of a loan at one block (default latest), through the service's own reader. */
export async function readLoan(client: PublicClient, loan: Address, blockNumber?: bigint): Promise<LoanView> {
  const block = blockNumber ?? (await client.getBlockNumber({ cacheTime: 0 }));
  const [v] = await readLoans(client, [loan], block);
  if (!v) throw new Error(`${loan} answers no loan views at block ${block}`);
  return {
    ...v,
    address: getAddress(v.address),
    lender: getAddress(v.lender),
    borrower: getAddress(v.borrower),
    principalToken: getAddress(v.principalToken),
    collateralToken: getAddress(v.collateralToken),
    blockNumber: block,
  };
}

/** Simple interest as the contract computes it: principal × apr (two decimals) × seconds / 365 days. */
export function loanInterest(principal: bigint, apr: bigint, seconds: bigint): bigint {
  return (principal * apr * seconds) / (10_000n * 365n * 86_400n);
}
