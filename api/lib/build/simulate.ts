/**
 * Simulation of a built transaction against the chain's head, in one request: reads before it, the
 * transaction sent by the trader, reads after it, each seeing the state the previous ones left.
 * So the figures "before" and "after" (balances, a health factor) are the chain's own, at the
 * same state the transaction was simulated on. A failed transaction gives its revert data
 * decoded. The head is the one the build's read stage saw (`readAtHead`), so the simulation runs
 * on the state the checks were made on.
 *
 * With `eth_simulateV1`, all in one simulated block right after the head (its number + 1, its time
 * + 1 s). A node without it (before geth 1.14.9 and Nethermind 1.28, and some providers and L2
 * clients still) is simulated with `eth_call` at the head instead, with a state override that
 * puts SimulationProbe's code at the trader's address: the probe makes the module call as the
 * trader between the reads (contracts/src/SimulationProbe.sol). Its block overrides place it in
 * the same block after the head; a node that refuses those runs it in the head's own block
 * context (its number and time). The probe measures the gas inside the call, before refunds, to
 * which the transaction's intrinsic gas is added. What a node has or lacks is kept for
 * ASK_AGAIN_MS per RPC URL; builds arriving while a URL's first one asks wait for its answer. A
 * node with neither method is a 503 `simulation_unsupported` that says so, rather than a chain
 * that did not answer.
 */
import { type Abi, type Address, decodeFunctionResult, encodeFunctionData, type Hex, hexToBytes, toHex } from "viem";
import { SimulationProbeAbi, SimulationProbeRuntimeCode } from "../../../abis/SimulationProbeAbi.js";
import { rpcCall } from "../../../onchain/rpc-fetch.js";
import { type DecodedRevert, decodeRevert } from "../revert-decode.js";
import type { Head } from "./head.js";
import { recordSimulation } from "./metrics.js";
import type { ModuleTransaction } from "./module-call.js";
import { type Kept, known, remember } from "./node-kept.js";
import { BuildRefusal } from "./refusal.js";
import type { BuildSubaccount } from "./subaccount.js";
import { phase } from "./timing.js";

export interface SimRead {
  to: Address;
  abi: Abi;
  functionName: string;
  args?: readonly unknown[];
}

/** The reads a simulation makes before and after the transaction. */
export interface SimReads {
  before?: readonly SimRead[];
  after?: readonly SimRead[];
}

/** How a build was simulated: `eth_simulateV1`, or `eth_call` with SimulationProbe's override. */
export const SIMULATION_METHODS = ["eth_simulateV1", "eth_call"] as const;
export type SimulationMethod = (typeof SIMULATION_METHODS)[number];

export interface Simulation {
  method: SimulationMethod;
  success: boolean;
  /** the head block the simulation ran on top of */
  blockNumber: bigint;
  /** the simulated block's timestamp (eth_simulateV1: the head's + 1 s; eth_call: the head's) */
  timestamp: bigint;
  gasUsed: bigint;
  /** the gas limit to send it with: the simulated use and a margin for the 63/64 rule */
  gasLimit: bigint;
  /** the decoded revert, when it failed */
  revert: DecodedRevert | null;
  /** the transaction's return data */
  returnData: Hex;
  /** the reads' results (null for a read that failed) */
  before: unknown[];
  after: unknown[];
}

const GAS_MARGIN_NUM = 13n;
const GAS_MARGIN_DEN = 10n;
const GAS_MARGIN_ADD = 30_000n;

/** What a node answers of each call in `eth_simulateV1` (the fields read here). */
interface RpcSimCall {
  status: string;
  returnData: Hex;
  gasUsed: Hex;
  error?: { data?: Hex };
}

/** A read's result: decoded when it succeeded with data, else null. */
function readResult(r: SimRead, c: RpcSimCall | undefined): unknown {
  return c?.status === "0x1" ? decodedRead(r, c.returnData) : null;
}

function decodedRead(r: SimRead, data: Hex | undefined): unknown {
  if (data === undefined || data === "0x") return null;
  try {
    return decodeFunctionResult({ abi: r.abi, functionName: r.functionName, data });
  } catch {
    return null;
  }
}

/** An RPC error's code, and its details and message as one text (bounded: the patterns matched
 * against it backtrack quadratically over a long one). */
function rpcErrorOf(err: unknown): { code: unknown; text: string } {
  const e = err as { code?: unknown; details?: unknown; message?: unknown } | undefined;
  return { code: e?.code, text: `${e?.details ?? ""} ${e?.message ?? ""}`.slice(0, 2_000) };
}

/**
 * A node refusing the method itself: JSON-RPC's "method not found" (-32601) or EIP-1474's "method
 * not supported" (-32004), or a provider's words for either.
 */
export function methodMissing(err: unknown): boolean {
  const { code, text } = rpcErrorOf(err);
  if (code === -32601 || code === -32004) return true;
  return /method\b.*\b(not found|does not exist|not available|not supported|unsupported)|unsupported method/i.test(
    text,
  );
}

/** eth_simulateV1, and eth_call's block overrides (its fourth parameter) */
const hasSimulateV1: Kept = new Map();
const hasBlockOverrides: Kept = new Map();
/** the first simulation of a URL whose eth_simulateV1 is not known: the others wait for it */
const asking = new Map<string, Promise<void>>();

export async function simulate(
  sub: BuildSubaccount,
  tx: ModuleTransaction,
  reads: SimReads,
  head: Head,
): Promise<Simulation> {
  if (known(hasSimulateV1, sub.rpcUrl) === undefined) {
    const pending = asking.get(sub.rpcUrl);
    if (!pending) return firstAsk(sub, tx, reads, head);
    await pending;
  }
  if (known(hasSimulateV1, sub.rpcUrl) === false) return probe(sub, tx, reads, head);
  const sim = await simulateV1(sub, tx, reads, head);
  if (sim) return sim;
  remember(hasSimulateV1, sub.rpcUrl, false);
  return probe(sub, tx, reads, head);
}

/** Asks the node for eth_simulateV1 while the builds arriving meanwhile wait for its answer. */
async function firstAsk(sub: BuildSubaccount, tx: ModuleTransaction, reads: SimReads, head: Head): Promise<Simulation> {
  let done = () => {};
  asking.set(sub.rpcUrl, new Promise<void>((resolve) => (done = resolve)));
  let sim: Simulation | null;
  try {
    sim = await simulateV1(sub, tx, reads, head);
    remember(hasSimulateV1, sub.rpcUrl, sim !== null);
  } finally {
    asking.delete(sub.rpcUrl);
    done();
  }
  return sim ?? probe(sub, tx, reads, head);
}

const asCall = (r: SimRead) => ({
  to: r.to,
  data: encodeFunctionData({ abi: r.abi, functionName: r.functionName, args: (r.args ?? []) as unknown[] }),
});

const gasLimitFor = (gasUsed: bigint) => (gasUsed * GAS_MARGIN_NUM) / GAS_MARGIN_DEN + GAS_MARGIN_ADD;

/** eth_simulateV1; null when the node does not offer it. */
async function simulateV1(
  sub: BuildSubaccount,
  tx: ModuleTransaction,
  reads: SimReads,
  head: Head,
): Promise<Simulation | null> {
  const before = reads.before ?? [];
  const after = reads.after ?? [];
  let block: { timestamp: Hex; calls: RpcSimCall[] } | undefined;
  try {
    // eth_simulateV1 itself (rpcCall), not viem's simulateBlocks, which formats every log and the block:
    // pinned on the head, as the block after it one second later (nodes differ in what they
    // simulate by default: anvil the head's own number and time, geth 12 s later)
    [block] = await phase("simulate", () =>
      rpcCall<{ timestamp: Hex; calls: RpcSimCall[] }[]>(sub.rpcUrl, "eth_simulateV1", [
        {
          blockStateCalls: [
            {
              blockOverrides: { number: toHex(head.number + 1n), time: toHex(head.timestamp + 1n) },
              calls: [
                ...before.map(asCall),
                { from: sub.from, to: tx.target, data: tx.data, value: toHex(tx.value) },
                ...after.map(asCall),
              ],
            },
          ],
        },
        toHex(head.number),
      ]),
    );
  } catch (err) {
    if (methodMissing(err)) return null;
    throw BuildRefusal.chain(sub.chainId, err);
  }
  const calls = block?.calls;
  if (!block || !calls || calls.length !== before.length + 1 + after.length) {
    throw BuildRefusal.chain(sub.chainId, new Error("eth_simulateV1 answered another number of calls"));
  }
  const main = calls[before.length]!;
  const ok = main.status === "0x1";
  const data = main.error?.data ?? main.returnData;
  const gasUsed = BigInt(main.gasUsed);
  recordSimulation(sub.chainId, "eth_simulateV1");
  return {
    method: "eth_simulateV1",
    success: ok,
    blockNumber: head.number,
    timestamp: BigInt(block.timestamp),
    gasUsed,
    gasLimit: gasLimitFor(gasUsed),
    revert: ok ? null : decodeRevert(data),
    returnData: data,
    before: before.map((r, i) => readResult(r, calls[i])),
    after: ok ? after.map((r, i) => readResult(r, calls[before.length + 1 + i])) : after.map(() => null),
  };
}

/** A transaction's intrinsic gas: 21,000 and its calldata (4 a zero byte, 16 any other). */
export function intrinsicGas(data: Hex): bigint {
  let gas = 21_000n;
  for (const b of hexToBytes(data)) gas += b === 0 ? 4n : 16n;
  return gas;
}

/** A node refusing eth_call's third parameter, the state override set. */
export function overridesRefused(err: unknown): boolean {
  if (methodMissing(err)) return true;
  const { code, text } = rpcErrorOf(err);
  return code === -32602 || /too many arguments|override/i.test(text);
}

const unsupported = (chainId: number) =>
  new BuildRefusal(
    503,
    "simulation_unsupported",
    `The RPC node of chain ${chainId} offers neither eth_simulateV1 nor eth_call with a state override, one of ` +
      `which every build is simulated with: point PONDER_RPC_URL_${chainId} at a node that does (geth 1.9 or ` +
      "later has state overrides, 1.14.9 or later eth_simulateV1; Nethermind, Erigon, reth, anvil)",
  );

/** eth_call at the head with SimulationProbe's code at the trader's address. */
async function probe(sub: BuildSubaccount, tx: ModuleTransaction, reads: SimReads, head: Head): Promise<Simulation> {
  const before = reads.before ?? [];
  const after = reads.after ?? [];
  const run = encodeFunctionData({
    abi: SimulationProbeAbi,
    functionName: "run",
    args: [before.map(asCall), tx.target, tx.value, tx.data, after.map(asCall)],
  });
  const call = (blockOverrides: boolean) =>
    rpcCall<Hex>(sub.rpcUrl, "eth_call", [
      { to: sub.from, data: run },
      toHex(head.number),
      { [sub.from]: { code: SimulationProbeRuntimeCode } },
      ...(blockOverrides ? [{ number: toHex(head.number + 1n), time: toHex(head.timestamp + 1n) }] : []),
    ]);
  let out: Hex;
  try {
    out = await phase("simulate", async () => {
      if (known(hasBlockOverrides, sub.rpcUrl) === false) return call(false);
      try {
        return await call(true);
      } catch (err) {
        if (!overridesRefused(err)) throw err;
        // perhaps only the block overrides (the fourth parameter, newer than state overrides)
        const withoutThem = await call(false);
        remember(hasBlockOverrides, sub.rpcUrl, false);
        return withoutThem;
      }
    });
  } catch (err) {
    if (overridesRefused(err)) throw unsupported(sub.chainId);
    throw BuildRefusal.chain(sub.chainId, err);
  }
  // a node that ignores the override calls the trader's own (empty) code
  if (out === "0x") throw unsupported(sub.chainId);
  let o: {
    timestamp: bigint;
    before: readonly Hex[];
    success: boolean;
    result: Hex;
    gasUsed: bigint;
    afterwards: readonly Hex[];
  };
  try {
    o = decodeFunctionResult({ abi: SimulationProbeAbi, functionName: "run", data: out });
  } catch {
    throw BuildRefusal.chain(
      sub.chainId,
      new Error(`eth_call with the simulation probe answered ${out.slice(0, 66)}…`),
    );
  }
  const gasUsed = o.gasUsed + intrinsicGas(tx.data);
  recordSimulation(sub.chainId, "eth_call");
  return {
    method: "eth_call",
    success: o.success,
    blockNumber: head.number,
    timestamp: o.timestamp,
    gasUsed,
    gasLimit: gasLimitFor(gasUsed),
    revert: o.success ? null : decodeRevert(o.result),
    returnData: o.result,
    before: before.map((r, i) => decodedRead(r, o.before[i])),
    after: o.success ? after.map((r, i) => decodedRead(r, o.afterwards[i])) : after.map(() => null),
  };
}
