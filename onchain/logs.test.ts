import {
  HttpRequestError,
  LimitExceededRpcError,
  ResponseBodyTooLargeError,
  RpcRequestError,
  TimeoutError,
} from "viem";
import { describe, expect, it } from "vitest";
import { logsInRange, PARALLEL_READS, unanswered } from "./logs.js";

/** A provider refusing more than `limit` blocks per request, as an RPC error; its calls recorded. */
function provider(limit: bigint) {
  const calls: [bigint, bigint][] = [];
  const read = async (from: bigint, to: bigint) => {
    calls.push([from, to]);
    if (to - from + 1n > limit) {
      const cause = new RpcRequestError({ body: {}, error: { code: -32005, message: "range too wide" }, url: "x" });
      throw new LimitExceededRpcError(cause);
    }
    const out: bigint[] = [];
    for (let b = from; b <= to; b++) if (b % 7n === 0n) out.push(b);
    return out;
  };
  return { read, calls };
}

describe("logsInRange", () => {
  it("reads a range at once when the provider takes it", async () => {
    const p = provider(10_000n);
    expect(await logsInRange(p.read, 0n, 999n)).toEqual(Array.from({ length: 143 }, (_, i) => BigInt(i * 7)));
    expect(p.calls).toEqual([[0n, 999n]]);
  });

  it("splits a refused range into halves, the results in block order, no block twice", async () => {
    const p = provider(300n);
    const got = await logsInRange(p.read, 5n, 2_004n);
    const want: bigint[] = [];
    for (let b = 5n; b <= 2_004n; b++) if (b % 7n === 0n) want.push(b);
    expect(got).toEqual(want);
    // the ranges that answered cover the range exactly once
    const answered = p.calls.filter(([a, b]) => b - a + 1n <= 300n).sort((x, y) => Number(x[0] - y[0]));
    expect(answered[0]![0]).toBe(5n);
    expect(answered.at(-1)![1]).toBe(2_004n);
    for (const [i, [a]] of answered.entries()) if (i > 0) expect(a).toBe(answered[i - 1]![1] + 1n);
  });

  it("a refused range of a million blocks: read in windows near the cap, never many at once", async () => {
    const p = provider(300n);
    let inFlight = 0;
    let most = 0;
    const read = async (from: bigint, to: bigint) => {
      most = Math.max(most, ++inFlight);
      await new Promise((r) => setTimeout(r, 1));
      try {
        return await p.read(from, to);
      } finally {
        inFlight--;
      }
    };
    const got = await logsInRange(read, 0n, 999_999n);
    expect(got.length).toBe(142_858); // the multiples of 7 below a million
    expect(got[1]! - got[0]!).toBe(7n);
    expect(most).toBeLessThanOrEqual(PARALLEL_READS);
    // windows of 1,000,000 / 2^12 = 244 blocks once the cap is found: about 4,100 reads, each
    // refusal costing one read (halving both halves of each range would also read every parent)
    const answered = p.calls.filter(([a, b]) => b - a + 1n <= 300n).length;
    expect(answered).toBeLessThan(4_200);
    expect(p.calls.length - answered).toBeLessThan(100);
  });

  it("a provider refusing every range, and no smallest split: refused, not read forever", async () => {
    const p = provider(0n);
    await expect(logsInRange(p.read, 0n, 1_000n, 0n)).rejects.toThrow(/range too wide/);
    expect(p.calls.length).toBeLessThan(50);
  });

  it("below the smallest split the provider's refusal is the caller's", async () => {
    const p = provider(50n);
    await expect(logsInRange(p.read, 0n, 999n, 200n)).rejects.toThrow(/range too wide/);
    expect(p.calls.every(([a, b]) => b - a >= 100n)).toBe(true);
  });

  it("a node not reached or not answering in time fails at once, not once per half", async () => {
    for (const err of [
      new HttpRequestError({ url: "http://127.0.0.1:1", details: "ECONNREFUSED" }),
      new TimeoutError({ body: {}, url: "http://127.0.0.1:1" }),
    ]) {
      let calls = 0;
      const read = async (): Promise<never> => {
        calls++;
        throw err;
      };
      await expect(logsInRange(read, 0n, 1_000_000n)).rejects.toBe(err);
      expect(calls).toBe(1);
    }
  });

  it("splits on an answer too large for the client and on an HTTP error status", () => {
    const tooLarge = new HttpRequestError({
      url: "x",
      cause: new ResponseBodyTooLargeError({ maxSize: 10, size: 20 }),
    });
    expect(unanswered(tooLarge)).toBe(false);
    expect(unanswered(new HttpRequestError({ url: "x", status: 413 }))).toBe(false);
    expect(unanswered(new HttpRequestError({ url: "x" }))).toBe(true);
    expect(unanswered(new Error("anything else"))).toBe(false);
  });
});
