/**
 * The request fields and the answer every transaction builder shares: the chain and the sender in
 * the body; a transaction (`target`, `data`, `value`, `gas_limit`) for the trader to sign, with
 * the inner calls and approvals it makes and its simulation. Amounts travel as raw integer
 * strings beside decimal-normalised numbers.
 */
import { z } from "@hono/zod-openapi";
import { formatUnits, parseUnits } from "viem";
import { EVM_CHAIN_IDS, isEvmChain } from "../../../config/chains.js";
import { EvmAddress, jsonResponse, strictInt } from "../router.js";
import type { ModuleTransaction } from "./module-call.js";
import { BuildRefusal } from "./refusal.js";
import { SIMULATION_METHODS, type Simulation } from "./simulate.js";
import type { BuildSubaccount } from "./subaccount.js";

const EVM_CHAIN_MESSAGE = "Input should be an EVM chain id of the catalogue (a transaction is built for an EVM chain)";

/** Body fields of every builder. */
export const buildFields = {
  chain: strictInt(
    z
      .number()
      .int()
      .refine((v) => isEvmChain(v), { message: EVM_CHAIN_MESSAGE, params: { type: "enum" } }),
  ).openapi({ description: "Chain id the transaction is for", enum: [...EVM_CHAIN_IDS], example: 8453 }),
  from: EvmAddress.optional().openapi({
    description:
      "The trader who will send it (a TRADER of the subaccount's module; its RELAYER may send it too); default: the " +
      "indexed trader",
  }),
};

/** The largest value of a Solidity uint of `bits` bits. */
export const maxUint = (bits: 128 | 256) => (1n << BigInt(bits)) - 1n;

/**
 * An unsigned integer as a decimal string that fits a Solidity uint of `bits` bits: a larger one
 * is a 422 on its field, not an encoding error of the chain call it would go into.
 */
export const uintString = (bits: 128 | 256) =>
  z
    .string()
    .regex(/^\d+$/, "must be an integer as a string")
    // zod runs the refinement after a failed regex too: BigInt only of digits
    .refine((v) => !/^\d+$/.test(v) || fitsUint(v, bits), {
      message: `must be at most 2^${bits} - 1 (uint${bits})`,
    });

/**
 * Whether a string of digits fits a uint of `bits` bits. BigInt of a megabyte of digits takes
 * over 100 ms: a number longer than the largest one's digits (leading zeros aside) is too large
 * without it.
 */
function fitsUint(digits: string, bits: 128 | 256): boolean {
  const v = digits.replace(/^0+/, "");
  const max = maxUint(bits);
  return v.length <= max.toString().length && BigInt(v || "0") <= max;
}

/** `s` without the `c`s at its end (a loop: `/0+$/` takes quadratic time on a long string). */
function trimEnd(s: string, c: string): string {
  let end = s.length;
  while (end > 0 && s[end - 1] === c) end--;
  return s.slice(0, end);
}

/**
 * An amount in whole units (a decimal string) in raw units of a token of `decimals`: a 422 on
 * `loc` for more decimals than the token has or more than a uint256 holds.
 */
export function wholeToRaw(whole: string, decimals: number, loc: (string | number)[]): bigint {
  // zeros past the token's decimals change nothing ("5.0000000" of a 6-decimal token is exact)
  const [whole0, fraction = ""] = whole.split(".");
  const frac = trimEnd(fraction, "0");
  if (frac.length > decimals)
    throw BuildRefusal.field(loc, `The token has ${decimals} decimals: at most ${decimals} after the point`);
  const int = whole0!.replace(/^0+/, "") || "0";
  const tooLarge = () => BuildRefusal.field(loc, "Too large: more than 2^256 - 1 raw units", "less_than_equal");
  // whole units past 2^256 are raw units past it whatever the decimals: no parse of a long one
  if (!fitsUint(int, 256)) throw tooLarge();
  const raw = parseUnits(frac ? `${int}.${frac}` : int, decimals);
  if (raw > maxUint(256)) throw tooLarge();
  return raw;
}

const wholeAmount = (message: string) =>
  z
    .string()
    .regex(/^\d+(\.\d+)?$/, message)
    .optional()
    .openapi({ description: 'In whole token units, e.g. "1.5"', example: "1000" });

/** An amount: decimal units (`amount`) or raw integer units (`amount_raw`), exactly one. */
export const amountFields = {
  amount: wholeAmount("must be a decimal number as a string"),
  amount_raw: uintString(256)
    .optional()
    .openapi({ description: "In the token's smallest unit", example: "1000000000" }),
};

/** `amountFields` of an operation that also takes `all: true` (the whole position), which says so. */
export const amountOrAllFields = {
  ...amountFields,
  amount: wholeAmount('must be a decimal number as a string (for the whole position: "all": true, no amount)'),
};

/**
 * The raw amount of `{amount, amount_raw}` in a token of `decimals`; a 422 unless exactly one is
 * given (`orAll`: the operation also takes `all: true`, which the refusal then names).
 */
/**
 * Exactly one of `amount` and `amount_raw`: what needs no token's decimals, checked by each builder
 * before it reads the chain (a request wrong on its face is a 422 whatever the chain's state).
 */
export function requireOneAmount(
  body: { amount?: string | undefined; amount_raw?: string | undefined },
  loc: (string | number)[] = ["body"],
  orAll = false,
): void {
  if ((body.amount == null) === (body.amount_raw == null)) {
    const or = orAll ? ' (or "all": true for the whole position)' : "";
    throw BuildRefusal.field([...loc, "amount"], `Give exactly one of amount and amount_raw${or}`);
  }
}

export function rawAmount(
  body: { amount?: string | undefined; amount_raw?: string | undefined },
  decimals: number,
  loc: (string | number)[] = ["body"],
  orAll = false,
): bigint {
  requireOneAmount(body, loc, orAll);
  let raw: bigint;
  // a refusal names the field the caller sent
  const field = body.amount_raw != null ? "amount_raw" : "amount";
  if (body.amount_raw != null) raw = BigInt(body.amount_raw);
  else raw = wholeToRaw(body.amount!, decimals, [...loc, "amount"]);
  if (raw === 0n) throw BuildRefusal.field([...loc, field], "Must be greater than 0", "greater_than");
  return raw;
}

/** A decimal-normalised number beside its raw string. */
export const units = (raw: bigint, decimals: number) => ({
  raw: raw.toString(),
  amount: Number(formatUnits(raw, decimals)),
});

/** A raw amount in whole units as exact decimal text, for messages (no exponent: 0.000000001). */
export const wholeText = (raw: bigint, decimals: number) => formatUnits(raw, decimals);

export const Units = z
  .object({
    raw: z.string().openapi({ description: "In the token's smallest unit", example: "1500000" }),
    amount: z.number().openapi({ description: "In whole token units", example: 1.5 }),
  })
  .openapi("Units");

export const SimulationSchema = z
  .object({
    success: z.literal(true),
    method: z.enum(SIMULATION_METHODS).openapi({
      description:
        "`eth_simulateV1`, in a block after the head. `eth_call`: the node has no eth_simulateV1, so the build ran " +
        "in an eth_call at the head with a state override putting a probe contract at `from`, which makes the " +
        "module call as the trader: in the same block after the head when the node takes block overrides, else " +
        "in the head's own (see `timestamp`); its `gas_used` is measured before refunds (a receipt shows less)",
    }),
    block_number: z.number().int().openapi({ description: "The head block it was simulated on top of" }),
    timestamp: z
      .number()
      .int()
      .openapi({
        description:
          "The simulated block's time (eth_simulateV1: the head's + 1 s; eth_call: the head's): what accrues " +
          "(interest) is as of then",
      }),
    gas_used: z.string(),
  })
  .openapi("BuildSimulation");

export const TransactionPayloadSchema = z
  .object({
    build_id: z.string().openapi({ description: "Its row in the build audit (registry.build_audit)" }),
    chain_id: z.number().int(),
    subaccount: z.string().openapi({ description: "The Safe" }),
    module: z.string().openapi({ description: "Its SubaccountModule (the transaction's target)" }),
    from: z.string().openapi({ description: "Who must send it: a TRADER of the module (its RELAYER may send it too)" }),
    target: z.string(),
    data: z.string(),
    value: z.string().openapi({ description: "Wei, as an integer string", example: "0" }),
    gas_limit: z.string().openapi({
      description:
        "The simulated gas use and a margin: execution only. A chain that charges its L1 data in L2 gas " +
        "(Arbitrum) needs more: estimate it again there (eth_estimateGas) before sending",
    }),
    calls: z
      .array(z.object({ target: z.string(), value: z.string(), data: z.string(), description: z.string() }))
      .openapi({ description: "The calls the module makes as the Safe, in order" }),
    approvals: z
      .array(z.object({ token: z.string(), spender: z.string(), amount_raw: z.string() }))
      .openapi({ description: "Exact approvals the module sets first and resets to 0 after" }),
    simulation: SimulationSchema,
  })
  .openapi("TransactionPayload");

export type TransactionPayload = z.infer<typeof TransactionPayloadSchema>;

/** The shared part of a builder's answer. */
export function transactionPayload(
  buildId: string,
  sub: BuildSubaccount,
  tx: ModuleTransaction,
  sim: Simulation,
): TransactionPayload {
  return {
    build_id: buildId,
    chain_id: sub.chainId,
    subaccount: sub.safe,
    module: sub.module,
    from: sub.from,
    target: tx.target,
    data: tx.data,
    value: tx.value.toString(),
    gas_limit: sim.gasLimit.toString(),
    calls: tx.calls.map((c) => ({
      target: c.target,
      value: c.value.toString(),
      data: c.data,
      description: c.description,
    })),
    approvals: tx.approvals.map((a) => ({ token: a.token, spender: a.spender, amount_raw: a.amount.toString() })),
    simulation: {
      success: true,
      method: sim.method,
      block_number: Number(sim.blockNumber),
      timestamp: Number(sim.timestamp),
      gas_used: sim.gasUsed.toString(),
    },
  };
}

/** A builder route's 200: the payload, and where the build's time went (`timing.ts`). */
export const builtResponse = <S>(description: string, schema: S) => ({
  ...jsonResponse(description, schema),
  headers: {
    "Server-Timing": {
      description:
        "Where the build's time went, in milliseconds: `before` (from the request's arrival to the " +
        "builder's start: rate limit, key, validation), `read` (the read stage at the head), `simulate` " +
        "(the simulations), `build` (the builder in all), `audit` (recording the answer). Also on refusals.",
      schema: {
        type: "string" as const,
        example: "before;dur=0.4, read;dur=2.1, simulate;dur=3.4, build;dur=7.9, audit;dur=1.2",
      },
    },
  },
});
