/**
 * Why a builder did not build: a 422 for a request the service can tell is wrong before asking
 * the chain (FastAPI's body, `loc` naming the field), a 404 for something unknown, a 409 when the
 * chain's state refuses it (each decoded reason listed), a 503 when a chain did not answer.
 */
import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { publicMessage } from "../public-error.js";
import type { DecodedRevert } from "../revert-decode.js";

/** A short message of an error fit for an answer (api/lib/public-error.ts). */
export const errMessage = publicMessage;

/** viem's errors for values it cannot encode into a call: never the chain's doing. */
const ENCODING_ERRORS = new Set([
  "AbiEncodingArrayLengthMismatchError",
  "AbiEncodingBytesSizeMismatchError",
  "AbiEncodingLengthMismatchError",
  "AbiFunctionNotFoundError",
  "IntegerOutOfRangeError",
  "InvalidAbiEncodingTypeError",
  "InvalidAddressError",
  "InvalidArrayError",
  "SizeOverflowError",
]);

/** Whether viem refused to encode a value the service put into a call, anywhere in the causes. */
export function encodingFault(err: unknown): boolean {
  for (let e = err, depth = 0; e instanceof Error && depth < 10; e = e.cause, depth++)
    if (ENCODING_ERRORS.has(e.name)) return true;
  return false;
}

/**
 * Whether a build's error, not wrapped as a refusal, is the service's own fault rather than the
 * chain's: an encoding fault (a request its validation let through) or a programming error. Such
 * a build is a 500, logged, not a 503 `chain_unavailable`.
 */
export function serviceFault(err: unknown): boolean {
  if (encodingFault(err)) return true;
  if (err instanceof TypeError || err instanceof RangeError || err instanceof ReferenceError) return true;
  return err instanceof SyntaxError && !/JSON/.test(err.message);
}

export type BuildStatus = 404 | 409 | 422 | 503;

export class BuildRefusal extends Error {
  constructor(
    readonly status: BuildStatus,
    readonly code: string,
    readonly detail: string,
    /** 422: where in the request; 409: the decoded revert reasons */
    readonly extra: { loc?: (string | number)[]; type?: string; reasons?: RefusedReason[] } = {},
  ) {
    super(detail);
  }

  /** A 422 about one field of the request. */
  static field(loc: (string | number)[], msg: string, type = "value_error"): BuildRefusal {
    return new BuildRefusal(422, type, msg, { loc, type });
  }

  /**
   * What to throw for an error of a chain call: a 503, the chain did not answer; or the error
   * itself when viem could not encode the call (`encodingFault`), for `runBuild` to answer 500.
   * Other errors there (a node's malformed answer included) are the chain's.
   */
  static chain(chainId: number, err: unknown): unknown {
    if (encodingFault(err)) return err;
    return new BuildRefusal(503, "chain_unavailable", `Chain ${chainId} did not answer: ${errMessage(err)}`);
  }

  /** The body the refusal answers with. */
  body(): unknown {
    if (this.status === 422) {
      return { detail: [{ loc: this.extra.loc ?? ["body"], msg: this.detail, type: this.extra.type ?? this.code }] };
    }
    return {
      detail: this.detail,
      code: this.code,
      ...(this.extra.reasons ? { reasons: this.extra.reasons } : {}),
    };
  }

  respond(c: Context) {
    return c.json(this.body() as never, this.status);
  }
}

/** One decoded reason a candidate or a simulation failed. */
export interface RefusedReason {
  /** which candidate (a swap route, or the operation) */
  candidate: string;
  kind: DecodedRevert["kind"] | "quote";
  name: string;
  message: string;
  data: string;
}

export const RefusedReasonSchema = z
  .object({
    candidate: z.string(),
    kind: z.string().openapi({ description: "subaccount (our module's errors), aave, safe, uniswap, error, panic, …" }),
    name: z.string().openapi({ example: "TokenNotAllowed" }),
    message: z.string(),
    data: z.string().openapi({ description: "The raw revert data" }),
  })
  .openapi("RefusedReason");

export const BuildRefusalSchema = z
  .object({
    detail: z.string(),
    code: z.string().openapi({
      description:
        "404: unknown_subaccount, unknown_pool, unknown_position, unknown_market, unknown_bridge; 409: " +
        "stale_subaccount, simulation_failed, no_route, position_not_owned, empty_position, range_unfundable, " +
        "nothing_to_claim, below_min_health_factor, health_factor_unknown, price_impact_too_high; 503: no_rpc, " +
        "chain_unavailable, simulation_unsupported, read_only",
    }),
    reasons: z.array(RefusedReasonSchema).optional().openapi({ description: "Each decoded revert reason (409)" }),
  })
  .openapi("BuildRefusal");
