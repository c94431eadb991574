/**
 * The one read stage of a build: the state a builder checks and plans from, read at the chain's
 * head in a single eth_call (Multicall3 `aggregate3`). The call also reads the head itself (its
 * number and time, as the node executed the call) and whether the Safe still has the subaccount's
 * module enabled, so the simulation that follows runs on exactly the state the checks saw, and a
 * Safe that dropped its module is a 409 `stale_subaccount` without a round trip of its own.
 */
import { type Abi, parseAbi } from "viem";
import { MULTICALL3 } from "../../../config/multicall3.js";
import { aggregate, type Read, type ReadResult, readValue } from "./multicall.js";
import { BuildRefusal } from "./refusal.js";
import { type BuildSubaccount, forgetModule } from "./subaccount.js";
import { phase } from "./timing.js";

export interface Head {
  number: bigint;
  timestamp: bigint;
}

const MC = parseAbi([
  "function getBlockNumber() view returns (uint256)",
  "function getCurrentBlockTimestamp() view returns (uint256)",
]) as Abi;
const SAFE = parseAbi(["function isModuleEnabled(address module) view returns (bool)"]) as Abi;

/** `reads` at the head, with the head; throws the 409 of a Safe without its module, a 503 of a dead RPC. */
export async function readAtHead(
  sub: BuildSubaccount,
  reads: readonly Read[],
): Promise<{ head: Head; results: ReadResult[] }> {
  let res: ReadResult[];
  try {
    res = await phase("read", () =>
      aggregate(sub.rpcUrl, [
        { address: MULTICALL3, abi: MC, functionName: "getBlockNumber" },
        { address: MULTICALL3, abi: MC, functionName: "getCurrentBlockTimestamp" },
        { address: sub.safe, abi: SAFE, functionName: "isModuleEnabled", args: [sub.module] },
        ...reads,
      ]),
    );
  } catch (err) {
    throw BuildRefusal.chain(sub.chainId, err);
  }
  const number = readValue<bigint>(res[0]);
  const timestamp = readValue<bigint>(res[1]);
  if (number === undefined || timestamp === undefined) {
    throw BuildRefusal.chain(sub.chainId, new Error("Multicall3 did not answer the head block"));
  }
  if (readValue<boolean>(res[2]) !== true) {
    forgetModule(sub.chainId, sub.safe);
    throw new BuildRefusal(
      409,
      "stale_subaccount",
      `${sub.safe} no longer has its SubaccountModule ${sub.module} enabled on chain ${sub.chainId}: it cannot act ` +
        "through the module",
    );
  }
  return { head: { number, timestamp }, results: res.slice(3) };
}
