/**
 * Loan books: every loan of each chain's LoanRegistry (`LoanRegistered`, a factory source for the
 * loans' own events). A loan's terms and state are read at its registration (a lending pool's
 * loan can be registered after it started); its events from then on move the state.
 */
import { type Context, ponder } from "ponder:registry";
import { loanbook_event, loanbook_loan } from "ponder:schema";
import { LoanAbi } from "../abis/LoanAbi";
import { multicallVia } from "../config/multicall3";
import { directClient, eventColumns, jsonArgs } from "./common";
import { afterCommitment, afterFunded } from "./loan-states";
import { readAtBlock } from "./read-at-block";
import { findVault } from "./registry";

type Ev = Parameters<typeof eventColumns>[0];
type Row = typeof loanbook_loan.$inferSelect;
const lc = (a: string) => a.toLowerCase() as `0x${string}`;

/** Loan.state()'s enum, in its order. */
const STATES = ["preapproved", "funded", "active", "called", "matured", "closed", "funding_required", "cancelled"];

ponder.on("LoanRegistry:LoanRegistered", async ({ event, context }) => {
  const address = lc(event.args.loan);
  const c = (functionName: string) => ({ address, abi: LoanAbi, functionName }) as const;
  const r = (await readAtBlock(
    async (atBlock) =>
      directClient(context.chain.id).multicall({
        ...(await multicallVia(directClient(context.chain.id))),
        allowFailure: false,
        ...(atBlock ? { blockNumber: event.block.number } : {}),
        contracts: [
          c("principalToken"),
          c("collateralToken"),
          c("initialPrincipalAmount"),
          c("principalAmount"),
          c("totalRepaid"),
          c("totalInterestRepaid"),
          c("apr"),
          c("termDays"),
          c("paymentIntervalInSeconds"),
          c("deployedDate"),
          c("state"),
        ] as never,
      }),
    `loan ${address} at block ${event.block.number}`,
  )) as unknown[];
  const lender = lc(event.args.lender);
  const collateral = lc(r[1] as string);
  const { id: _id, ...cols } = eventColumns(event, context.chain.id);
  await context.db.insert(loanbook_loan).values({
    ...cols,
    address,
    registry: lc(event.log.address),
    vault: findVault(context.chain.id, lender)?.address ?? null,
    lender,
    borrower: lc(event.args.borrower),
    principal_token: lc(r[0] as string),
    collateral_token: collateral === "0x0000000000000000000000000000000000000000" ? null : collateral,
    initial_principal: r[2] as bigint,
    principal_outstanding: r[3] as bigint,
    total_repaid: r[4] as bigint,
    interest_repaid: r[5] as bigint,
    apr_bps: r[6] as bigint,
    term_days: r[7] as bigint,
    payment_interval: r[8] as bigint,
    deployed_date: r[9] as bigint,
    state: STATES[Number(r[10])] ?? String(r[10]),
    updated_at: event.block.timestamp,
  });
});

async function record(
  context: Context,
  event: Ev & { args?: Record<string, unknown> | readonly unknown[] },
  name: string,
  patch?: (row: Row) => Partial<typeof loanbook_loan.$inferInsert>,
) {
  const key = { chain_id: context.chain.id, address: lc(event.log.address) };
  const row = await context.db.find(loanbook_loan, key);
  if (!row) return; // an event of its registration block before the registration: read with its terms
  await context.db.insert(loanbook_event).values({
    ...eventColumns(event, context.chain.id),
    loan: key.address,
    event: name,
    args: jsonArgs(event.args),
  });
  // the terms were read at the end of the registration block: a later event of that block is in them
  const inRead = event.block.number === row.block_number && event.log.logIndex > row.log_index;
  if (inRead) return;
  await context.db.update(loanbook_loan, key).set({ ...(patch ? patch(row) : {}), updated_at: event.block.timestamp });
}

ponder.on("RegistryLoan:OnLoanFunded", async ({ event, context }) =>
  record(context, event, "OnLoanFunded", (r) => ({ state: afterFunded(r.state) })),
);
ponder.on("RegistryLoan:OnBorrowerCommitment", async ({ event, context }) =>
  record(context, event, "OnBorrowerCommitment", (r) => ({ state: afterCommitment(r.state) })),
);
ponder.on("RegistryLoan:OnBorrowerWithdrawal", async ({ event, context }) =>
  record(context, event, "OnBorrowerWithdrawal"),
);
ponder.on("RegistryLoan:OnInterestsRepayment", async ({ event, context }) =>
  record(context, event, "OnInterestsRepayment", (r) => ({
    interest_repaid: r.interest_repaid + event.args.amount,
    total_repaid: r.total_repaid + event.args.amount,
  })),
);
ponder.on("RegistryLoan:OnPrincipalRepayment", async ({ event, context }) =>
  record(context, event, "OnPrincipalRepayment", (r) => ({
    principal_outstanding: r.principal_outstanding - event.args.amount,
    total_repaid: r.total_repaid + event.args.amount,
  })),
);
ponder.on("RegistryLoan:OnLoanCalled", async ({ event, context }) =>
  record(context, event, "OnLoanCalled", () => ({ state: "called" })),
);
ponder.on("RegistryLoan:OnLoanMatured", async ({ event, context }) =>
  record(context, event, "OnLoanMatured", () => ({ state: "matured" })),
);
ponder.on("RegistryLoan:OnLoanClosed", async ({ event, context }) =>
  record(context, event, "OnLoanClosed", () => ({ state: "closed" })),
);
ponder.on("RegistryLoan:OnLoanCancelled", async ({ event, context }) =>
  record(context, event, "OnLoanCancelled", () => ({ state: "cancelled" })),
);
ponder.on("RegistryLoan:OnNewAprProposed", async ({ event, context }) => record(context, event, "OnNewAprProposed"));
ponder.on("RegistryLoan:OnAprAcceptedByBorrower", async ({ event, context }) =>
  record(context, event, "OnAprAcceptedByBorrower", () => ({ apr_bps: event.args.newApr })),
);
ponder.on("RegistryLoan:OnCollateralRatioChanged", async ({ event, context }) =>
  record(context, event, "OnCollateralRatioChanged"),
);
ponder.on("RegistryLoan:OnCollateralCaptured", async ({ event, context }) =>
  record(context, event, "OnCollateralCaptured"),
);
ponder.on("RegistryLoan:OnCollateralClaimed", async ({ event, context }) =>
  record(context, event, "OnCollateralClaimed"),
);
