/**
 * A loan's state after its funding and its borrower's commitment, for pool loans (src/loans.ts)
 * and registry loans (src/loanbook.ts) alike. The two come in either order: the first moves a
 * preapproved loan to `funded` or `funding_required`, the second makes it `active`. An event that
 * does not fit the state (a repeat, or one after the loan moved on) leaves the state as it is.
 */
export function afterFunded(state: string): string {
  if (state === "preapproved") return "funded";
  if (state === "funding_required") return "active";
  return state;
}

export function afterCommitment(state: string): string {
  if (state === "preapproved") return "funding_required";
  if (state === "funded") return "active";
  return state;
}
