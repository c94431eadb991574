/** A loan in the loan-book shape the original's client reads: amounts in whole tokens, dates ISO. */
import type { LoanView } from "../../onchain/loans.js";

const iso = (unix: number) => (unix > 0 ? new Date(unix * 1000).toISOString() : null);

export function loanJson(
  l: LoanView,
  token: { symbol: string; decimals: number; price: number | null },
  chainId: number,
) {
  const whole = (v: bigint) => Number(v) / 10 ** token.decimals;
  return {
    address: l.address,
    lender: l.lender,
    borrower: l.borrower,
    state: l.state,
    total_repaid: whole(l.totalRepaid),
    principal_token: {
      symbol: token.symbol,
      address: l.principalToken,
      decimals: token.decimals,
      price: token.price,
      chain: chainId,
    },
    principal_amount: whole(l.principalAmount),
    interest_amount: whole(l.interestOwed),
    upcoming_payment: { amount: whole(l.upcomingPayment.amount), due_date: iso(l.upcomingPayment.dueDate) },
    apr: Number(l.apr) / 100,
    initial_principal_amount: whole(l.initialPrincipalAmount),
    deployed_date: iso(l.deployedDate),
    payment_interval: l.paymentIntervalInSeconds,
    late: l.late,
    called: l.called,
  };
}
