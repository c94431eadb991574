import { createPublicClient, custom, http, parseAbi } from "viem";
import { describe, expect, it } from "vitest";
import { failsForNow, isMissingState, isTransportError } from "./rpc-errors.js";

const ABI = parseAbi(["function lagDuration() view returns (uint256)"]);
const VAULT = "0x00000000000000000000000000000000000000aa";

/** The error readContract throws where the node answers eth_call with `answer` (a result, or an error thrown). */
async function failure(answer: () => unknown) {
  const client = createPublicClient({
    transport: custom({ request: async () => answer() }, { retryCount: 0 }),
  });
  return client.readContract({ address: VAULT, abi: ABI, functionName: "lagDuration" }).then(
    () => {
      throw new Error("it answered");
    },
    (err: unknown) => err,
  );
}

describe("isTransportError", () => {
  it("a call that ran is the contract's answer: a revert, or no data from an address without code", async () => {
    const reverted = await failure(() => {
      throw Object.assign(new Error("execution reverted"), { code: 3, data: "0x" });
    });
    expect(isTransportError(reverted)).toBe(false);
    expect(isTransportError(await failure(() => "0x"))).toBe(false);
  });

  it("a node that did not run it is the transport's: rate limited, missing method, unreachable", async () => {
    const limited = await failure(() => {
      throw Object.assign(new Error("rate limited"), { code: -32005 });
    });
    expect(isTransportError(limited)).toBe(true);
    const missing = await failure(() => {
      throw Object.assign(new Error("the method eth_call does not exist"), { code: -32601 });
    });
    expect(isTransportError(missing)).toBe(true);
    const dead = createPublicClient({ transport: http("http://127.0.0.1:1", { retryCount: 0 }) });
    const unreachable = await dead
      .readContract({ address: VAULT, abi: ABI, functionName: "lagDuration" })
      .catch((err: unknown) => err);
    expect(isTransportError(unreachable)).toBe(true);
  });
});

describe("isMissingState", () => {
  it("a node without the old state says so: a lasting answer", async () => {
    for (const message of [
      "missing trie node 0x6a1b… (path ) state 0x… is not available",
      "historical state 0xabc is not available",
      "header not found",
      "project ID does not have access to archive state",
    ]) {
      const err = await failure(() => {
        throw Object.assign(new Error(message), { code: -32000 });
      });
      expect(isMissingState(err), message).toBe(true);
    }
  });

  it("a timeout, a rate limit or a revert is not", async () => {
    const limited = await failure(() => {
      throw Object.assign(new Error("rate limited"), { code: -32005 });
    });
    const reverted = await failure(() => {
      throw Object.assign(new Error("execution reverted"), { code: 3, data: "0x" });
    });
    const slow = createPublicClient({ transport: http("http://10.255.255.1:9", { retryCount: 0, timeout: 50 }) });
    const timedOut = await slow
      .readContract({ address: VAULT, abi: ABI, functionName: "lagDuration" })
      .catch((err: unknown) => err);
    expect(isTransportError(timedOut)).toBe(true);
    for (const err of [limited, reverted, timedOut]) expect(isMissingState(err)).toBe(false);
    // what a read stored once throws on: the node's passing failures, not the contract's answer
    expect([limited, reverted, timedOut].map(failsForNow)).toEqual([true, false, true]);
  });
});
