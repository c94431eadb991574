import type { PublicClient } from "viem";
import { afterEach, describe, expect, it, vi } from "vitest";
import { LOOK_AGAIN_MS, MULTICALL3, MULTICALL3_OVERRIDE, multicallVia } from "./multicall3.js";

afterEach(() => {
  vi.useRealTimers();
});

/** A client whose chain has `code` at Multicall3's address, taking overrides or not. */
function client(code: string, overrides: boolean) {
  const calls = { getCode: 0, readContract: 0 };
  const c = {
    getCode: async () => {
      calls.getCode++;
      return code;
    },
    readContract: async () => {
      calls.readContract++;
      if (!overrides) throw new Error("too many arguments, want at most 2");
      return 7n;
    },
  };
  return { c: c as unknown as PublicClient, calls };
}

describe("multicallVia", () => {
  it("uses the chain's own Multicall3 where it has code there, looked at once", async () => {
    const { c, calls } = client("0x6080", true);
    expect(await multicallVia(c)).toEqual({ multicallAddress: MULTICALL3 });
    await multicallVia(c);
    expect(calls).toEqual({ getCode: 1, readContract: 0 });
  });

  it("puts its code there in an override where the chain lacks it, tried once; looked at again later", async () => {
    vi.useFakeTimers();
    const { c, calls } = client("0x", true);
    expect(await multicallVia(c)).toEqual({ multicallAddress: MULTICALL3, stateOverride: MULTICALL3_OVERRIDE });
    await multicallVia(c);
    expect(calls).toEqual({ getCode: 1, readContract: 1 });
    vi.advanceTimersByTime(LOOK_AGAIN_MS);
    await multicallVia(c);
    expect(calls).toEqual({ getCode: 2, readContract: 2 });
  });

  it("throws, naming Multicall3, where the node takes no override; asks again at the next call", async () => {
    const { c, calls } = client("0x", false);
    await expect(multicallVia(c)).rejects.toThrow(
      `no Multicall3 at ${MULTICALL3} on this chain, and the call with its code in a state override failed`,
    );
    await expect(multicallVia(c)).rejects.toThrow(/no Multicall3/);
    expect(calls.getCode).toBe(2);
  });
});
