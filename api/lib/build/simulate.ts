/**
 * Simulation of a built transaction against the chain's head, in one `eth_simulateV1` request:
 * reads before it, the transaction sent by the trader, reads after it, all in one simulated block
 * right after the head (its number + 1, its time + 1 s), each call seeing the state the previous
 * ones left. So the figures "before" and "after" (balances, a health factor) are the chain's own,
 * at the same state the transaction was simulated on. A failed transaction gives its revert data
 * decoded. The head is the one the build's read stage saw (`readAtHead`), so the simulation runs on
 * the state the checks were made on. A node without `eth_simulateV1` (before geth 1.14.9 and
 * Nethermind 1.28, and some providers and L2 clients still) is a 503 `simulation_unsupported`
 * that says so, rather than a chain that did not answer.
 */
import { type Abi, type Address, decodeFunctionResult, encodeFunctionData, type Hex, toHex } from "viem";
import { rpcCall } from "../../../onchain/rpc-fetch.js";
import { type DecodedRevert, decodeRevert } from "../revert-decode.js";
import type { Head } from "./head.js";
import type { ModuleTransaction } from "./module-call.js";
import { BuildRefusal } from "./refusal.js";
import type { BuildSubaccount } from "./subaccount.js";
import { phase } from "./timing.js";

export interface SimRead {
  to: Address;
  abi: Abi;
  functionName: string;
  args?: readonly unknown[];
}

export interface Simulation {
  success: boolean;
  /** the head block the simulation ran on top of */
  blockNumber: bigint;
  /** the simulated block's timestamp (the head's plus the node's block time) */
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
  if (c?.status !== "0x1" || c.returnData === "0x") return null;
  try {
    return decodeFunctionResult({ abi: r.abi, functionName: r.functionName, data: c.returnData });
  } catch {
    return null;
  }
}

/**
 * A node refusing the method itself: JSON-RPC's "method not found" (-32601) or EIP-1474's "method
 * not supported" (-32004), or a provider's words for either.
 */
export function methodMissing(err: unknown): boolean {
  const code = (err as { code?: unknown })?.code;
  if (code === -32601 || code === -32004) return true;
  // bounded: the pattern backtracks quadratically over a long text
  const text = `${(err as { details?: unknown })?.details ?? ""} ${(err as Error)?.message ?? ""}`.slice(0, 2_000);
  return /method\b.*\b(not found|does not exist|not available|not supported|unsupported)|unsupported method/i.test(
    text,
  );
}

export async function simulate(
  sub: BuildSubaccount,
  tx: ModuleTransaction,
  reads: { before?: readonly SimRead[]; after?: readonly SimRead[] },
  head: Head,
): Promise<Simulation> {
  const before = reads.before ?? [];
  const after = reads.after ?? [];
  const asCall = (r: SimRead) => ({
    to: r.to,
    data: encodeFunctionData({ abi: r.abi, functionName: r.functionName, args: (r.args ?? []) as unknown[] }),
  });
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
    if (methodMissing(err)) {
      throw new BuildRefusal(
        503,
        "simulation_unsupported",
        `The RPC node of chain ${sub.chainId} does not offer eth_simulateV1, which every build is simulated with: ` +
          `point PONDER_RPC_URL_${sub.chainId} at a node that does (geth 1.14.9 or later, Nethermind 1.28 or later, ` +
          "anvil)",
      );
    }
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
  return {
    success: ok,
    blockNumber: head.number,
    timestamp: BigInt(block.timestamp),
    gasUsed,
    gasLimit: (gasUsed * GAS_MARGIN_NUM) / GAS_MARGIN_DEN + GAS_MARGIN_ADD,
    revert: ok ? null : decodeRevert(data),
    returnData: data,
    before: before.map((r, i) => readResult(r, calls[i])),
    after: ok ? after.map((r, i) => readResult(r, calls[before.length + 1 + i])) : after.map(() => null),
  };
}
