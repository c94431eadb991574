/**
 * Multicall3, through which every batched read goes (viem's `multicall`, the builders' own
 * `aggregate3`). Most chains have it at its canonical address; on one that lacks it (a new chain,
 * one that refuses the keyless deployment), the reads put its runtime code there in the call's
 * state override, so they work the same on any node that takes state overrides in `eth_call`
 * (geth since 1.9, Erigon, Nethermind, Reth, Besu, anvil). Whether a node's chain has it is read
 * once per client (its code at the head) and kept LOOK_AGAIN_MS.
 */
import {
  type Address,
  BaseError,
  type BlockTag,
  ContractFunctionExecutionError,
  type ContractFunctionParameters,
  encodeFunctionData,
  type Hex,
  type PublicClient,
  parseAbi,
  type StateOverride,
} from "viem";
import { Multicall3RuntimeCode } from "../abis/Multicall3Abi.js";

export const MULTICALL3: Address = "0xcA11bde05977b3631167028862bE2a173976CA11";

/** The state override that puts Multicall3 at its canonical address. */
export const MULTICALL3_OVERRIDE: StateOverride = [{ address: MULTICALL3, code: Multicall3RuntimeCode }];

/** The same override as a JSON-RPC `eth_call` parameter (address to account fields). */
export const MULTICALL3_RPC_OVERRIDE = { [MULTICALL3]: { code: Multicall3RuntimeCode } } as const;

export interface MulticallVia {
  multicallAddress: Address;
  /** set when the chain lacks Multicall3: its code put there for the call */
  stateOverride?: StateOverride;
}

/** each client's look, and until when it holds (then it is looked at again) */
const via = new WeakMap<object, { look: Promise<MulticallVia>; until: number }>();
/** how long a look holds: a node upgraded, or a chain given Multicall3, is seen within it */
export const LOOK_AGAIN_MS = 10 * 60_000;

/**
 * What to add to a `client.multicall` call: Multicall3's address, and the override where the
 * chain has no code there. Where it is needed, the override is tried once first: a node that does
 * not take it makes this throw, saying so, rather than every read fail one by one. A failed look
 * (an RPC error) is not kept: the next call asks again; a good one is kept LOOK_AGAIN_MS.
 */
export function multicallVia(client: PublicClient): Promise<MulticallVia> {
  const kept = via.get(client);
  if (kept && Date.now() < kept.until) return kept.look;
  const p = look(client);
  via.set(client, { look: p, until: Date.now() + LOOK_AGAIN_MS });
  p.catch(() => via.delete(client));
  return p;
}

/**
 * The error of a chain without Multicall3 whose node did not run its code from the override:
 * the call failed (`err`, a node that refuses the parameter), or it answered no data (none: a
 * node that ignores it). The builders' own aggregate3 (api/lib/build/multicall.ts) throws it too.
 */
export function noMulticall3(err?: unknown): Error {
  const why = `no Multicall3 at ${MULTICALL3} on this chain`;
  if (err === undefined) return new Error(`${why}, and the node ignored its code in a state override`);
  const text = err instanceof BaseError ? err.shortMessage : err instanceof Error ? err.message : String(err);
  return new Error(`${why}, and the call with its code in a state override failed: ${text}`, { cause: err });
}

/** getBlockNumber(), the call that tries the override */
const BLOCK_NUMBER = encodeFunctionData({
  abi: parseAbi(["function getBlockNumber() view returns (uint256)"]),
  functionName: "getBlockNumber",
});

async function look(client: PublicClient): Promise<MulticallVia> {
  const code = await client.getCode({ address: MULTICALL3 });
  if (code && code !== "0x") return { multicallAddress: MULTICALL3 };
  const { data } = await client
    .call({ to: MULTICALL3, data: BLOCK_NUMBER, stateOverride: MULTICALL3_OVERRIDE })
    .catch((err: unknown) => {
      throw noMulticall3(err);
    });
  if (!data || data === "0x") throw noMulticall3();
  return { multicallAddress: MULTICALL3, stateOverride: MULTICALL3_OVERRIDE };
}

/** One call's outcome in `multicallEach`'s answer. */
export type CallOutcome =
  | { status: "success"; result: unknown; error?: undefined }
  | { status: "failure"; error: Error; result?: undefined };

/** viem's error of the aggregate3 call itself (every call of the batch carries it) */
const batchFailed = (err: unknown): err is ContractFunctionExecutionError =>
  err instanceof ContractFunctionExecutionError &&
  err.functionName === "aggregate3" &&
  err.contractAddress?.toLowerCase() === MULTICALL3.toLowerCase();

/**
 * `client.multicall` of `contracts` through Multicall3 (`multicallVia`), each call allowed to
 * fail. viem gives an eth_call that failed as a whole (an RPC error or timeout, a block the node
 * does not have or keep, an override it stopped taking) as a failure of every call in it, the
 * same as if each had reverted: read as "no balance", that would store zeros. Here that error is
 * thrown, and a look that put the override is made again at the next call. A failure in the
 * answer is the call's own: it reverted, or its address answered nothing.
 */
export async function multicallEach(
  client: PublicClient,
  params: {
    contracts: readonly ContractFunctionParameters[];
    blockNumber?: bigint;
    blockHash?: Hex;
    blockTag?: BlockTag;
  },
): Promise<CallOutcome[]> {
  const mc = await multicallVia(client);
  const res = (await client.multicall({
    ...mc,
    ...params,
    contracts: params.contracts as never,
    allowFailure: true,
  })) as CallOutcome[];
  for (const r of res) {
    if (r.status !== "failure" || !batchFailed(r.error)) continue;
    if (mc.stateOverride) via.delete(client);
    const { shortMessage, details } = r.error;
    const short = shortMessage.split("\n")[0]!;
    const why = details && !short.includes(details) ? `${short} (${details})` : short;
    const calls = `${res.length} call${res.length === 1 ? "" : "s"}`;
    throw new Error(`multicall of ${calls} failed: ${why}`, { cause: r.error });
  }
  return res;
}
