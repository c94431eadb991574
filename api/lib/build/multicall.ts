/**
 * Many reads in one `eth_call`: Multicall3's `aggregate3` with every call allowed to fail, each
 * result decoded with its own ABI, or its raw revert data kept (for decodeRevert). Unlike viem's
 * `multicall`, a failed call hands back the bytes it reverted with, and calls need not be views
 * (QuoterV2's quotes are non-view functions meant for eth_call). On a chain without Multicall3
 * (its call answers no data), the call is made again with Multicall3's code put at its address in
 * a state override (config/multicall3.ts), and the node's URL is kept as lacking it for 10 min.
 */
import { type Abi, type Address, decodeFunctionResult, encodeFunctionData, type Hex, toHex } from "viem";
import { MULTICALL3, MULTICALL3_RPC_OVERRIDE, noMulticall3 } from "../../../config/multicall3.js";
import { rpcCall } from "../../../onchain/rpc-fetch.js";
import { type Kept, known, remember } from "./node-kept.js";

export interface Read {
  address: Address;
  abi: Abi;
  functionName: string;
  args?: readonly unknown[];
}

export type ReadResult = { ok: true; value: unknown } | { ok: false; data: Hex };

/** aggregate3((address,bool,bytes)[]): its selector */
const AGGREGATE3 = "0x82ad56cb";
const word = (n: number) => n.toString(16).padStart(64, "0");

/**
 * aggregate3's calldata, written directly (viem's encoder walks the ABI for every call: this is
 * every build's read stage). Each call is allowed to fail. Checked against viem's encoding in
 * multicall.test.ts.
 */
export function encodeAggregate3(calls: readonly { target: Address; callData: Hex }[]): Hex {
  const heads: string[] = [];
  const tails: string[] = [];
  let offset = calls.length * 32;
  for (const c of calls) {
    const data = c.callData.slice(2);
    const bytes = data.length / 2;
    const padded = data.padEnd(Math.ceil(bytes / 32) * 64, "0");
    heads.push(word(offset));
    const tail = `${c.target.slice(2).toLowerCase().padStart(64, "0")}${word(1)}${word(96)}${word(bytes)}${padded}`;
    tails.push(tail);
    offset += tail.length / 2;
  }
  return `${AGGREGATE3}${word(32)}${word(calls.length)}${heads.join("")}${tails.join("")}` as Hex;
}

/** aggregate3's answer, (bool success, bytes returnData)[], read directly. */
export function decodeAggregate3(data: Hex): { success: boolean; returnData: Hex }[] {
  const hex = data.slice(2);
  const at = (byte: number) => {
    const w = hex.slice(byte * 2, byte * 2 + 64);
    if (w.length !== 64) throw new Error("aggregate3 answer too short");
    const n = Number.parseInt(w, 16);
    if (!Number.isSafeInteger(n)) throw new Error("aggregate3 answer malformed");
    return n;
  };
  const base = at(0);
  const n = at(base);
  const out: { success: boolean; returnData: Hex }[] = [];
  for (let i = 0; i < n; i++) {
    const tuple = base + 32 + at(base + 32 + i * 32);
    const len = at(tuple + at(tuple + 32));
    const start = (tuple + at(tuple + 32) + 32) * 2;
    if (start + len * 2 > hex.length) throw new Error("aggregate3 answer too short");
    out.push({ success: at(tuple) !== 0, returnData: `0x${hex.slice(start, start + len * 2)}` });
  }
  return out;
}

/** whether each node URL's chain has Multicall3, once one of its answers said it lacks it */
const hasMulticall3: Kept = new Map();
const empty = (d: Hex | null) => d == null || d === "0x";

/** aggregate3's answer, through the override where the chain lacks Multicall3. */
async function aggregate3(rpcUrl: string, data: Hex, block: string): Promise<Hex> {
  const call = (override: boolean) =>
    rpcCall<Hex | null>(rpcUrl, "eth_call", [
      { to: MULTICALL3, data },
      block,
      ...(override ? [MULTICALL3_RPC_OVERRIDE] : []),
    ]);
  const lacks = known(hasMulticall3, rpcUrl) === false;
  if (!lacks) {
    const plain = await call(false);
    if (!empty(plain)) return plain!;
  }
  let put: Hex | null;
  try {
    put = await call(true);
  } catch (err) {
    throw noMulticall3(err);
  }
  if (empty(put)) throw noMulticall3();
  remember(hasMulticall3, rpcUrl, false);
  return put!;
}

/**
 * The reads' results in order, from the node at `rpcUrl` (`rpcCall`: this is every build's read
 * stage); throws only when the RPC itself fails.
 */
export async function aggregate(rpcUrl: string, reads: readonly Read[], blockNumber?: bigint): Promise<ReadResult[]> {
  if (reads.length === 0) return [];
  const calls = reads.map((r) => ({
    target: r.address,
    callData: encodeFunctionData({ abi: r.abi, functionName: r.functionName, args: (r.args ?? []) as unknown[] }),
  }));
  const data = await aggregate3(
    rpcUrl,
    encodeAggregate3(calls),
    blockNumber !== undefined ? toHex(blockNumber) : "latest",
  );
  const results = decodeAggregate3(data);
  if (results.length !== reads.length)
    throw new Error(`aggregate3 answered ${results.length} of ${reads.length} calls`);
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
