/** Loan handlers: every event is kept; the loan row follows its state and repayments. */
import { type Context, ponder } from "ponder:registry";
import { loan, loan_event } from "ponder:schema";
import { eventColumns, jsonArgs } from "./common";
import { afterCommitment, afterFunded } from "./loan-states";

type LoanPatch = (row: typeof loan.$inferSelect) => Partial<typeof loan.$inferInsert>;

async function record(
  context: Context,
  event: Parameters<typeof eventColumns>[0] & { args?: Record<string, unknown> | readonly unknown[] },
  name: string,
  patch?: LoanPatch,
) {
  const address = event.log.address.toLowerCase() as `0x${string}`;
  const key = { chain_id: context.chain.id, address };
  const row = await context.db.find(loan, key);
  if (!row) throw new Error(`Loan:${name} from ${address}, a loan no pool deployed (tx ${event.transaction.hash})`);
  await context.db.insert(loan_event).values({
    ...eventColumns(event, context.chain.id),
    vault: row.vault,
    loan: address,
    event: name,
    args: jsonArgs(event.args),
  });
  await context.db.update(loan, key).set({ ...(patch ? patch(row) : {}), updated_at: event.block.timestamp });
}

ponder.on("Loan:OnLoanFunded", async ({ event, context }) =>
  record(context, event, "OnLoanFunded", (r) => ({ state: afterFunded(r.state) })),
);
ponder.on("Loan:OnBorrowerCommitment", async ({ event, context }) =>
  record(context, event, "OnBorrowerCommitment", (r) => ({ state: afterCommitment(r.state) })),
);
ponder.on("Loan:OnBorrowerWithdrawal", async ({ event, context }) => record(context, event, "OnBorrowerWithdrawal"));
ponder.on("Loan:OnInterestsRepayment", async ({ event, context }) =>
  record(context, event, "OnInterestsRepayment", (r) => ({
    interest_repaid: r.interest_repaid + event.args.amount,
    total_repaid: r.total_repaid + event.args.amount,
  })),
);
ponder.on("Loan:OnPrincipalRepayment", async ({ event, context }) =>
  record(context, event, "OnPrincipalRepayment", (r) => ({
    principal_outstanding: r.principal_outstanding - event.args.amount,
    total_repaid: r.total_repaid + event.args.amount,
  })),
);
ponder.on("Loan:OnLoanCalled", async ({ event, context }) =>
  record(context, event, "OnLoanCalled", () => ({ state: "called" })),
);
ponder.on("Loan:OnLoanMatured", async ({ event, context }) =>
  record(context, event, "OnLoanMatured", () => ({ state: "matured" })),
);
ponder.on("Loan:OnLoanClosed", async ({ event, context }) =>
  record(context, event, "OnLoanClosed", () => ({ state: "closed" })),
);
ponder.on("Loan:OnLoanCancelled", async ({ event, context }) =>
  record(context, event, "OnLoanCancelled", () => ({ state: "cancelled" })),
);
ponder.on("Loan:OnNewAprProposed", async ({ event, context }) => record(context, event, "OnNewAprProposed"));
ponder.on("Loan:OnAprAcceptedByBorrower", async ({ event, context }) =>
  record(context, event, "OnAprAcceptedByBorrower", () => ({ apr_bps: event.args.newApr })),
);
ponder.on("Loan:OnCollateralRatioChanged", async ({ event, context }) =>
  record(context, event, "OnCollateralRatioChanged"),
);
ponder.on("Loan:OnCollateralCaptured", async ({ event, context }) => record(context, event, "OnCollateralCaptured"));
ponder.on("Loan:OnCollateralClaimed", async ({ event, context }) => record(context, event, "OnCollateralClaimed"));
