import type { PublicClient } from "viem";
import { afterEach, describe, expect, it, vi } from "vitest";
import { LOOK_AGAIN_MS, MULTICALL3, MULTICALL3_OVERRIDE, multicallVia } from "./multicall3.js";

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
