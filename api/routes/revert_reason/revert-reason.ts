/**
 * GET /api/v1/revert_reason?tx_hash=&chain=: why a mined transaction reverted, every reverted
 * call frame decoded (api/lib/revert-decode.ts), from the node's call trace
 * (`debug_traceTransaction` with the callTracer). A node without `debug_*` gets the transaction
 * replayed as a call at its parent block: the reason is then approximate (the state before the
 * block, not before the transaction), and `source` says so. Answers of mined transactions are
 * cached per chain and hash.
 */
import { createRoute, type RouteHandler, z } from "@hono/zod-openapi";
import { LRUCache } from "lru-cache";
import { type Hex, type PublicClient, TransactionReceiptNotFoundError } from "viem";
import { serviceFault } from "../../lib/build/refusal.js";
import { EvmChainIdParam } from "../../lib/chain.js";
import { ErrorSchema } from "../../lib/errors.js";
import { chainClient } from "../../lib/protocols.js";
import { publicMessage } from "../../lib/public-error.js";
import { type DecodedRevert, decodeRevert } from "../../lib/revert-decode.js";
import { type AppEnv, errorResponses, jsonResponse, openReadAuthResponses } from "../../lib/router.js";
import { openRoute } from "../../middleware/auth.js";

const Reason = z
  .object({
    kind: z
      .enum(["empty", "error", "aave", "safe", "uniswap", "panic", "subaccount", "custom", "unknown"])
      .openapi({ description: "What decoded it: a string reason, a protocol's code, a panic, a custom error" }),
    name: z.string().openapi({ description: "The error's name, or the protocol code's name" }),
    args: z.array(z.string()),
    message: z.string().openapi({ description: "One readable sentence" }),
    data: z.string().openapi({ description: "The raw revert data" }),
    contract: z.string().nullable().openapi({ description: "The contract whose call frame reverted" }),
    depth: z.number().int().openapi({ description: "Call depth of that frame (0: the transaction's own call)" }),
  })
  .openapi("RevertReason");

const RevertReasonResult = z
  .object({
    tx_hash: z.string(),
    chain_id: z.number().int(),
    status: z.enum(["reverted", "success"]),
    source: z.enum(["trace", "replay"]).openapi({
      description: "`trace`: the node's call trace; `replay`: a call at the parent block (approximate)",
    }),
    error_messages: z.array(z.string()).openapi({ description: "Each reason as one sentence, root cause first" }),
    revert_reasons: z.array(Reason).openapi({ description: "Each distinct reverted frame, innermost first" }),
    universal_subaccount_errors: z
      .array(Reason)
      .openapi({ description: "The reasons raised by a subaccount's module (SubaccountModule custom errors)" }),
  })
  .openapi("RevertReasonResult");

type Result = z.infer<typeof RevertReasonResult>;
type Frame = { to?: string; output?: Hex; error?: string; calls?: Frame[] };

export const revertReason = createRoute({
  method: "get",
  path: "/revert_reason",
  tags: ["subaccounts"],
  summary: "Why a transaction reverted, every reverted call decoded",
  description:
    "Decodes every reverted call frame of a mined transaction: `Error(string)` reasons (with the meaning of Aave " +
    "v3's numeric codes, Safe's `GSxxx` codes and Uniswap's short codes), panics, and custom errors " +
    "(SubaccountModule's, listed again in `universal_subaccount_errors`). A successful transaction answers " +
    "`status: success` with empty lists. 404: no such transaction on that chain (or not mined yet); 503: no RPC " +
    "for the chain.",
  ...openRoute,
  request: {
    query: z.object({
      tx_hash: z
        .string()
        .regex(/^0x[0-9a-fA-F]{64}$/, "must be a 0x-prefixed 32-byte hex transaction hash")
        .openapi({ example: `0x${"ab".repeat(32)}` }),
      chain: EvmChainIdParam.openapi({
        type: "integer",
        example: 1,
        description: "Chain id of the transaction (an EVM chain of the catalogue)",
      }),
    }),
  },
  responses: {
    200: jsonResponse("The transaction's revert reasons", RevertReasonResult),
    404: jsonResponse("Unknown or pending transaction", ErrorSchema),
    503: jsonResponse("No RPC for the chain, or it did not answer", ErrorSchema),
    ...openReadAuthResponses,
    ...errorResponses,
  },
});

/**
 * A mined transaction's reasons do not change: kept by chain and hash, 1,000 of them, 32 MiB
 * together. A frame's revert data is as long as its contract made it (megabytes, for a whole
 * block's gas): an answer of over 1 MiB is answered, not kept.
 */
const cache = new LRUCache<string, Result>({
  max: 1000,
  maxSize: 32 * 1024 * 1024,
  maxEntrySize: 1024 * 1024,
  sizeCalculation: (r, key) => JSON.stringify(r).length + key.length,
});
/** the explanations being made: requests for one transaction at once share its trace */
const inflight = new Map<string, Promise<Result | null>>();

/** Every reverted frame, outermost first, with its depth. */
function revertedFrames(f: Frame, depth = 0, out: { f: Frame; depth: number }[] = []) {
  if (f.error) out.push({ f, depth });
  for (const c of f.calls ?? []) revertedFrames(c, depth + 1, out);
  return out;
}

/** The revert data an error of a viem call carries, if any. */
function revertData(err: unknown): Hex | undefined {
  let e: unknown = err;
  for (let i = 0; e != null && i < 10; i++) {
    const d = (e as { data?: unknown }).data;
    if (typeof d === "string" && d.startsWith("0x")) return d as Hex;
    if (d && typeof d === "object" && typeof (d as { data?: unknown }).data === "string")
      return (d as { data: Hex }).data;
    e = (e as { cause?: unknown }).cause;
  }
  return undefined;
}

const isMissingMethod = (err: unknown) =>
  /not (found|supported|available)|does not exist|unsupported|-32601/i.test(String((err as Error)?.message ?? err));

async function explain(client: PublicClient, chainId: number, hash: Hex): Promise<Result | null> {
  // not mined (or unknown) is a 404; a node that does not answer is thrown (503)
  const receipt = await client.getTransactionReceipt({ hash }).catch((err: unknown) => {
    if (err instanceof TransactionReceiptNotFoundError) return null;
    throw err;
  });
  if (!receipt) return null;
  const base = { tx_hash: hash, chain_id: chainId };
  if (receipt.status === "success") {
    return {
      ...base,
      status: "success",
      source: "trace",
      error_messages: [],
      revert_reasons: [],
      universal_subaccount_errors: [],
    };
  }
  let reasons: (DecodedRevert & { contract: string | null; depth: number })[];
  let source: "trace" | "replay" = "trace";
  try {
    const trace = (await client.request({
      method: "debug_traceTransaction" as never,
      params: [hash, { tracer: "callTracer" }] as never,
    })) as Frame;
    reasons = revertedFrames(trace)
      .reverse()
      .map(({ f, depth }) => {
        const d = decodeRevert(f.output);
        // a frame that failed without revert data: its error (out of gas, invalid opcode) says why
        const msg = d.kind === "empty" && f.error && f.error !== "execution reverted" ? f.error : d.message;
        return { ...d, message: msg, contract: f.to?.toLowerCase() ?? null, depth };
      });
  } catch (err) {
    if (!isMissingMethod(err)) throw err;
    source = "replay";
    const tx = await client.getTransaction({ hash });
    let data: Hex | undefined;
    try {
      await client.call({
        account: tx.from,
        to: tx.to ?? undefined,
        data: tx.input,
        value: tx.value,
        gas: tx.gas,
        blockNumber: receipt.blockNumber - 1n,
      });
    } catch (e) {
      data = revertData(e);
    }
    reasons = [{ ...decodeRevert(data), contract: tx.to?.toLowerCase() ?? null, depth: 0 }];
  }
  // the module and the Safe pass an inner revert up unchanged: one reason per distinct payload
  const seen = new Set<string>();
  const distinct = reasons.filter((r) => {
    const k = r.data === "0x" ? `${r.data}:${r.message}` : r.data;
    if (seen.has(k)) return false;
    seen.add(k);
    return true;
  });
  return {
    ...base,
    status: "reverted",
    source,
    error_messages: distinct.map((r) => r.message),
    revert_reasons: distinct,
    universal_subaccount_errors: distinct.filter((r) => r.kind === "subaccount"),
  };
}

export const revertReasonHandler: RouteHandler<typeof revertReason, AppEnv> = async (c) => {
  const { tx_hash, chain } = c.req.valid("query");
  const hash = tx_hash.toLowerCase() as Hex;
  const key = `${chain}:${hash}`;
  const hit = cache.get(key);
  if (hit) return c.json(hit, 200);
  const url = c.var.deps.config.rpcUrls.get(chain);
  if (!url) return c.json({ detail: `No RPC is configured for chain ${chain} (PONDER_RPC_URL_${chain})` }, 503);
  let r: Result | null;
  try {
    let pending = inflight.get(key);
    if (!pending) {
      pending = explain(chainClient(url), chain, hash).finally(() => inflight.delete(key));
      inflight.set(key, pending);
    }
    r = await pending;
  } catch (err) {
    if (serviceFault(err)) throw err; // a programming error: a 500, logged
    return c.json({ detail: `The RPC of chain ${chain} did not answer: ${publicMessage(err)}` }, 503);
  }
  if (!r) return c.json({ detail: `No mined transaction ${tx_hash} on chain ${chain}` }, 404);
  cache.set(key, r);
  return c.json(r, 200);
};
