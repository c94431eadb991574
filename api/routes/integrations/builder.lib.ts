/**
 * What the integration builders (lending market, perp deposits) share beyond the builder core:
 * their OpenAPI responses, a chain read whose failure is a 503, and a failed simulation turned
 * into its 409.
 */
import { type PublicClient, parseAbi } from "viem";
import { BuildRefusal, BuildRefusalSchema } from "../../lib/build/refusal.js";
import type { Simulation } from "../../lib/build/simulate.js";
import type { BuildSubaccount } from "../../lib/build/subaccount.js";
import { ErrorSchema, ValidationErrorSchema } from "../../lib/errors.js";
import { jsonResponse } from "../../lib/router.js";

export const ERC20 = parseAbi([
  "function balanceOf(address) view returns (uint256)",
  "function allowance(address owner, address spender) view returns (uint256)",
  "function decimals() view returns (uint8)",
  "function symbol() view returns (string)",
]);

/** The answers a builder route declares besides its 200. */
export function buildResponses(refusals: { 404: string; 409: string; 422: string }) {
  return {
    401: jsonResponse("No API key", ErrorSchema),
    403: jsonResponse("Invalid or revoked API key, or a key without the scope `transactions:build`", ErrorSchema),
    404: jsonResponse(refusals[404], BuildRefusalSchema),
    409: jsonResponse(refusals[409], BuildRefusalSchema),
    422: jsonResponse(refusals[422], ValidationErrorSchema),
    429: jsonResponse("Rate limit exceeded", ErrorSchema),
    503: jsonResponse(
      "`no_rpc`, `chain_unavailable` (it did not answer), `simulation_unsupported` (its node has neither eth_simulateV1 nor eth_call state overrides), " +
        "`read_only` (this process cannot write the audit)",
      BuildRefusalSchema,
    ),
  };
}

/** A chain read, a 503 when the chain does not answer. */
export async function chainRead<T>(sub: BuildSubaccount, f: (c: PublicClient) => Promise<T>): Promise<T> {
  try {
    return await f(sub.client);
  } catch (err) {
    throw BuildRefusal.chain(sub.chainId, err);
  }
}

/** Throws the 409 of a failed simulation: `simulation_failed`, its decoded reason named. */
export function requireSimulated(sim: Simulation, candidate: string): void {
  if (sim.success) return;
  const r = sim.revert!;
  throw new BuildRefusal(409, "simulation_failed", `The transaction would revert: ${r.message}`, {
    reasons: [{ candidate, kind: r.kind, name: r.name, message: r.message, data: r.data }],
  });
}
