/**
 * Many reads in one `eth_call`: Multicall3's `aggregate3` with every call allowed to fail, each
 * result decoded with its own ABI, or its raw revert data kept (for decodeRevert). Unlike viem's
 * `multicall`, a failed call hands back the bytes it reverted with, and calls need not be views
 * (QuoterV2's quotes are non-view functions meant for eth_call).
 */
import { type Abi, type Address, decodeFunctionResult, encodeFunctionData, type Hex, type PublicClient } from "viem";
import { Multicall3Abi } from "../../../abis/Multicall3Abi.js";
import { MULTICALL3 } from "../../../onchain/positions.js";

export interface Read {
  address: Address;
  abi: Abi;
  functionName: string;
  args?: readonly unknown[];
}

export type ReadResult = { ok: true; value: unknown } | { ok: false; data: Hex };

const abi = Multicall3Abi as Abi;

/** The reads' results in order; throws only when the RPC itself fails. */
export async function aggregate(
  client: PublicClient,
  reads: readonly Read[],
  blockNumber?: bigint,
): Promise<ReadResult[]> {
  if (reads.length === 0) return [];
  const calls = reads.map((r) => ({
    target: r.address,
    allowFailure: true,
    callData: encodeFunctionData({ abi: r.abi, functionName: r.functionName, args: (r.args ?? []) as unknown[] }),
  }));
  const { data } = await client.call({
    to: MULTICALL3,
    data: encodeFunctionData({ abi, functionName: "aggregate3", args: [calls] }),
    ...(blockNumber !== undefined ? { blockNumber } : {}),
  });
  const results = decodeFunctionResult({ abi, functionName: "aggregate3", data: data ?? "0x" }) as readonly {
    success: boolean;
    returnData: Hex;
  }[];
  return results.map((res, i): ReadResult => {
    if (!res.success) return { ok: false, data: res.returnData };
    const r = reads[i]!;
    try {
      return {
        ok: true,
        value: decodeFunctionResult({ abi: r.abi, functionName: r.functionName, data: res.returnData }),
      };
    } catch {
      // e.g. a call to an address without code "succeeds" with no data
      return { ok: false, data: res.returnData };
    }
  });
}

/** The value of a successful read (a single output decoded as itself, several as an array), else undefined. */
export const readValue = <T>(r: ReadResult | undefined): T | undefined => (r?.ok ? (r.value as T) : undefined);
