/**
 * The multi-chain rule of every route about one vault (docs: README, "API rules"):
 * - the chain is the query parameter `chain_id` (the spec's name for it on governance and vault
 *   history), also accepted as `chain`; both given and different is a 422;
 * - without it, the vault on the lowest chain id its address has is served, on every route;
 * - the answer says which chain it served: header `X-Vault-Chain`, and a chain field in the body
 *   where its shape has room (records of a list each name their chain).
 * The withdrawal queue takes the chain in its path, as the spec has it.
 */
import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { CHAIN_IDS, EVM_CHAIN_IDS } from "../../config/chains.js";
import { type AppEnv, QueryInt } from "./router.js";

/**
 * A chain id of `ids`, as a query or path integer: read as every query integer is (FastAPI's
 * rule, `QueryInt`: a malformed one is `int_parsing`), then one of `ids` (else `enum`, one error
 * item). The document lists `ids` as the parameter's `enum`.
 */
function chainIdParam(ids: readonly number[], message: string) {
  const known = new Set(ids);
  return QueryInt({})
    .refine((v) => known.has(v), { message, params: { type: "enum" } })
    .openapi({ type: "integer", enum: [...ids] });
}

/** A chain id of the catalogue (config/chains.ts: the spec's chain list), as a query or path integer. */
export const ChainIdParam = chainIdParam(CHAIN_IDS, "Input should be a supported chain id (the spec's chain list)");

/**
 * A chain id of one of the catalogue's EVM chains: for a route that reads an EVM node. A non-EVM
 * chain (id 0 and below) has no node to ask, so it is the caller's error (422), not an outage.
 */
export const EvmChainIdParam = chainIdParam(
  EVM_CHAIN_IDS,
  "Input should be an EVM chain id of the catalogue (its non-EVM chains have no node to ask)",
);

/**
 * A chain id in a body that is stored or looked up in Postgres, whose chain columns are 32-bit
 * integers (every chain of the catalogue fits): a larger one is a 422, not an overflow.
 */
export const ChainIdBody = z.number().int().min(1).max(2_147_483_647);

const RULE =
  "Without it, the vault on the lowest chain id its address has is served; header `X-Vault-Chain` says which.";

/** The query fields of a one-vault route's chain: `chain_id`, and `chain` as its other spelling. */
const vaultChainFields = {
  chain_id: ChainIdParam.optional().openapi({
    type: "integer",
    description: `Chain id of the vault, when the same address is a vault on several chains. ${RULE}`,
    example: 1,
  }),
  chain: ChainIdParam.optional().openapi({
    type: "integer",
    description: "The same as `chain_id` (the other spelling).",
  }),
};

type ChainFields = { chain_id?: number | undefined; chain?: number | undefined };

/** Refinement of a query holding `vaultChainFields`: the two spellings must agree. */
function sameChain(q: ChainFields, ctx: z.RefinementCtx): void {
  if (q.chain_id != null && q.chain != null && q.chain_id !== q.chain) {
    ctx.addIssue({
      code: "custom",
      path: ["chain"],
      message: `chain (${q.chain}) and chain_id (${q.chain_id}) disagree: give one`,
    });
  }
}

/**
 * A one-vault query: `shape` plus the chain fields, their agreement checked. A parameter it does
 * not know is ignored, as FastAPI and every other query of the API ignore one.
 */
export function vaultChainQuery<S extends z.ZodRawShape>(shape: S) {
  return z.object({ ...shape, ...vaultChainFields }).superRefine((q, ctx) => sameChain(q as ChainFields, ctx));
}

/** The chain a request asked for, whichever spelling it used. */
export const requestedChain = (q: ChainFields): number | undefined => q.chain_id ?? q.chain;

/** The chain served, from the chains (ascending) an address is a vault on. */
export function pickChain(chains: readonly number[], requested: number | undefined): number | undefined {
  if (requested != null) return chains.includes(requested) ? requested : undefined;
  return chains[0];
}

/** Tells the client which chain's vault this answer is about. */
export function servedChain(c: Context<AppEnv>, chainId: number): void {
  c.header("x-vault-chain", String(chainId));
}
