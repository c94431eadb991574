/**
 * Simulation of a built transaction against the chain's head, in one `eth_simulateV1` request:
 * reads before it, the transaction sent by the trader, reads after it, all in one simulated block
 * right after the head (its number + 1, its time + 1 s), each call seeing the state the previous
 * ones left. So the figures "before" and "after" (balances, a health factor) are the chain's own,
 * at the same state the transaction was simulated on. A failed transaction gives its revert data
 * decoded. The head is the one the build's read stage saw (`readAtHead`), so the simulation runs on
 * the state the checks were made on.
 */
import type { Abi, Address, Hex } from "viem";
import { type DecodedRevert, decodeRevert } from "../revert-decode.js";
import type { Head } from "./head.js";
import type { ModuleTransaction } from "./module-call.js";
import { BuildRefusal } from "./refusal.js";
import type { BuildSubaccount } from "./subaccount.js";

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
    abi: r.abi,
    functionName: r.functionName,
    args: (r.args ?? []) as unknown[],
  });
  type Block = { number: bigint | null; timestamp: bigint; calls: unknown[] };
  let block: Block | undefined;
  try {
    // pinned on the head, as the block after it one second later: nodes differ in what they
    // simulate by default (anvil: the head's own number and time; geth: 12 s later)
    [block] = (await sub.client.simulateBlocks({
      blockNumber: head.number,
      blocks: [
        {
          blockOverrides: { number: head.number + 1n, time: head.timestamp + 1n },
          calls: [
            ...before.map(asCall),
            { account: sub.from, to: tx.target, data: tx.data, value: tx.value },
            ...after.map(asCall),
          ] as never,
        },
      ],
    })) as unknown as Block[];
  } catch (err) {
    throw BuildRefusal.chain(sub.chainId, err);
  }
  const calls = block!.calls as unknown as { status: string; data: Hex; gasUsed: bigint; result?: unknown }[];
  const main = calls[before.length]!;
  const ok = main.status === "success";
  const result = (c: { status: string; result?: unknown } | undefined) =>
    c && c.status === "success" ? (c.result ?? null) : null;
  return {
    success: ok,
    blockNumber: head.number,
    timestamp: block!.timestamp,
    gasUsed: main.gasUsed,
    gasLimit: (main.gasUsed * GAS_MARGIN_NUM) / GAS_MARGIN_DEN + GAS_MARGIN_ADD,
    revert: ok ? null : decodeRevert(main.data),
    returnData: main.data,
    before: calls.slice(0, before.length).map(result),
    after: ok ? calls.slice(before.length + 1).map(result) : after.map(() => null),
  };
}
