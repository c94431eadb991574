import {
  createPublicClient,
  custom,
  decodeFunctionData,
  encodeAbiParameters,
  encodeFunctionResult,
  type Hex,
  type PublicClient,
  parseAbi,
} from "viem";
import { afterEach, describe, expect, it, vi } from "vitest";
import { LOOK_AGAIN_MS, MULTICALL3, MULTICALL3_OVERRIDE, multicallEach, multicallVia } from "./multicall3.js";

afterEach(() => {
  vi.useRealTimers();
});

/** A client whose chain has `code` at Multicall3's address, its node taking overrides, refusing or ignoring them. */
function client(code: string, overrides: boolean | "ignored") {
  const calls = { getCode: 0, call: 0 };
  const c = {
    getCode: async () => {
      calls.getCode++;
      return code;
    },
    call: async () => {
      calls.call++;
      if (overrides === false) throw new Error("too many arguments, want at most 2");
      return { data: overrides === "ignored" ? "0x" : `0x${"7".padStart(64, "0")}` };
    },
  };
  return { c: c as unknown as PublicClient, calls };
}

describe("multicallVia", () => {
  it("uses the chain's own Multicall3 where it has code there, looked at once", async () => {
    const { c, calls } = client("0x6080", true);
    expect(await multicallVia(c)).toEqual({ multicallAddress: MULTICALL3 });
    await multicallVia(c);
    expect(calls).toEqual({ getCode: 1, call: 0 });
  });

  it("puts its code there in an override where the chain lacks it, tried once; looked at again later", async () => {
    vi.useFakeTimers();
    const { c, calls } = client("0x", true);
    expect(await multicallVia(c)).toEqual({ multicallAddress: MULTICALL3, stateOverride: MULTICALL3_OVERRIDE });
    await multicallVia(c);
    expect(calls).toEqual({ getCode: 1, call: 1 });
    vi.advanceTimersByTime(LOOK_AGAIN_MS);
    await multicallVia(c);
    expect(calls).toEqual({ getCode: 2, call: 2 });
  });

  it("throws, naming Multicall3, where the node takes no override; asks again at the next call", async () => {
    const { c, calls } = client("0x", false);
    await expect(multicallVia(c)).rejects.toThrow(
      `no Multicall3 at ${MULTICALL3} on this chain, and the call with its code in a state override failed`,
    );
    await expect(multicallVia(c)).rejects.toThrow(/no Multicall3/);
    expect(calls.getCode).toBe(2);
  });

  it("throws where the node ignores the override (its call answers no data)", async () => {
    const { c } = client("0x", "ignored");
    await expect(multicallVia(c)).rejects.toThrow(
      `no Multicall3 at ${MULTICALL3} on this chain, and the node ignored its code in a state override`,
    );
  });
});

const AGGREGATE3 = parseAbi([
  "function aggregate3((address target, bool allowFailure, bytes callData)[] calls) payable returns ((bool success, bytes returnData)[] returnData)",
]);
const ERC20 = parseAbi(["function balanceOf(address) view returns (uint256)"]);
const TOKEN = "0x0000000000000000000000000000000000000a11";
const reads = (n: number) =>
  Array.from({ length: n }, () => ({ address: TOKEN, abi: ERC20, functionName: "balanceOf", args: [TOKEN] }) as const);

/**
 * A viem client over a node whose chain has `code` at Multicall3's address; its aggregate3 calls
 * answer `answer(calls)`: each call's (success, returnData), or an RPC error thrown.
 */
function node(code: Hex, answer: (calls: readonly unknown[]) => { success: boolean; returnData: Hex }[]) {
  const asked = { getCode: 0, aggregate3: 0 };
  const client = createPublicClient({
    transport: custom({
      async request({ method, params }: { method: string; params: unknown[] }) {
        if (method === "eth_getCode") {
          asked.getCode++;
          return code;
        }
        if (method !== "eth_call") throw new Error(`unexpected ${method}`);
        const { data } = params[0] as { data: Hex };
        // the override's try: getBlockNumber()
        if (data.length === 10) return encodeAbiParameters([{ type: "uint256" }], [7n]);
        asked.aggregate3++;
        const { args } = decodeFunctionData({ abi: AGGREGATE3, data });
        return encodeFunctionResult({ abi: AGGREGATE3, functionName: "aggregate3", result: answer(args[0]) });
      },
    }),
  });
  return { client, asked };
}

describe("multicallEach", () => {
  const five = encodeAbiParameters([{ type: "uint256" }], [5n]);

  it("gives each call its own outcome: a reverted call is its failure, the others' results stand", async () => {
    const { client } = node("0x6080", () => [
      { success: false, returnData: "0x" },
      { success: true, returnData: five },
    ]);
    const [reverted, read] = await multicallEach(client, { contracts: reads(2) });
    expect(reverted?.status).toBe("failure");
    expect(read).toEqual({ status: "success", result: 5n });
  });

  it("throws the node's error where the eth_call failed as a whole, not a failure of each call", async () => {
    const { client } = node("0x6080", () => {
      throw Object.assign(new Error("missing trie node 0xabc (path )"), { code: -32000 });
    });
    await expect(multicallEach(client, { contracts: reads(3), blockNumber: 1n })).rejects.toThrow(
      /^multicall of 3 calls failed: .*missing trie node 0xabc/,
    );
  });

  it("where the override put Multicall3, a failed call makes the next one look again", async () => {
    let fail = true;
    const { client, asked } = node("0x", () => {
      if (fail) throw Object.assign(new Error("too many arguments, want at most 2"), { code: -32602 });
      return [{ success: true, returnData: five }];
    });
    await expect(multicallEach(client, { contracts: reads(1) })).rejects.toThrow(/too many arguments/);
    expect(asked.getCode).toBe(1);
    fail = false;
    expect(await multicallEach(client, { contracts: reads(1) })).toEqual([{ status: "success", result: 5n }]);
    expect(asked).toEqual({ getCode: 2, aggregate3: 2 });
  });
});
