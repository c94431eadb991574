/**
 * The subaccount module's token allow-list, checked before any simulation: every builder folds
 * `allowedRead` of each token it moves into its read stage, and `requireAllowed` turns a token
 * the module would refuse (its `TokenNotAllowed` revert) into a 422 at the request field that named it.
 */
import { type Abi, type Address, parseAbi } from "viem";
import type { Read } from "./multicall.js";
import { BuildRefusal } from "./refusal.js";
import type { BuildSubaccount } from "./subaccount.js";

const MODULE = parseAbi(["function tokenAllowed(address) view returns (bool)"]) as Abi;

/** The read of whether the subaccount's module allows `token`. */
export const allowedRead = (sub: BuildSubaccount, token: Address): Read => ({
  address: sub.module,
  abi: MODULE,
  functionName: "tokenAllowed",
  args: [token],
});

/** A 422 `token_not_allowed` at `loc` naming every token whose read did not answer true. */
export function requireAllowed(
  tokens: readonly { address: Address; symbol: string }[],
  allowed: readonly (boolean | undefined)[],
  loc: (string | number)[],
): void {
  const refused = tokens.filter((_, i) => allowed[i] !== true);
  if (refused.length === 0) return;
  const names = refused.map((t) => `${t.symbol} (${t.address})`).join(", ");
  throw BuildRefusal.field(
    loc,
    `TokenNotAllowed: the subaccount's module does not allow ${names}: its governance must add it to the token list ` +
      "first",
    "token_not_allowed",
  );
}
