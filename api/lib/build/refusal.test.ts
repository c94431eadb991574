import {
  AbiDecodingZeroDataError,
  encodeFunctionData,
  HttpRequestError,
  parseAbi,
  RpcRequestError,
  TimeoutError,
} from "viem";
import { describe, expect, it } from "vitest";
import { BuildRefusal, encodingFault, serviceFault } from "./refusal.js";

const ABI = parseAbi(["function f(uint128 a, address b)"]);
const thrown = (f: () => unknown): unknown => {
  try {
    f();
  } catch (err) {
    return err;
  }
  throw new Error("did not throw");
};

describe("serviceFault: the service's own errors, not the chain's", () => {
  it("a value viem cannot encode, also as the cause of another error, and programming errors", () => {
    const big = thrown(() => encodeFunctionData({ abi: ABI, functionName: "f", args: [1n << 128n, "0x01"] }));
    expect(big).toMatchObject({ name: "IntegerOutOfRangeError" });
    expect(serviceFault(big)).toBe(true);
    expect(serviceFault(new Error("wrapped", { cause: big }))).toBe(true);
    const addr = thrown(() => encodeFunctionData({ abi: ABI, functionName: "f", args: [1n, "0x01"] }));
    expect(serviceFault(addr)).toBe(true);
    expect(serviceFault(thrown(() => (null as unknown as { x: number }).x))).toBe(true);
    expect(serviceFault(thrown(() => BigInt("1.5")))).toBe(true);
  });

  it("a chain call's error is the chain's unless viem could not encode the call", () => {
    const big = thrown(() => encodeFunctionData({ abi: ABI, functionName: "f", args: [1n << 128n, "0x01"] }));
    expect(encodingFault(big)).toBe(true);
    expect(BuildRefusal.chain(1, big)).toBe(big);
    // a node's malformed answer that trips the decoding: still the chain's
    const malformed = thrown(() => BigInt((undefined as unknown as { gasUsed: string })?.gasUsed as string));
    expect(encodingFault(malformed)).toBe(false);
    expect(BuildRefusal.chain(1, malformed)).toMatchObject({ status: 503, code: "chain_unavailable" });
  });

  it("the chain's errors: transport, node, timeouts, answers that do not decode or parse", () => {
    const url = "http://127.0.0.1:1";
    expect(serviceFault(new HttpRequestError({ url, details: "ECONNREFUSED" }))).toBe(false);
    expect(serviceFault(new RpcRequestError({ url, body: {}, error: { code: -32000, message: "x" } }))).toBe(false);
    expect(serviceFault(new TimeoutError({ url, body: {} }))).toBe(false);
    expect(serviceFault(new AbiDecodingZeroDataError())).toBe(false);
    expect(serviceFault(thrown(() => JSON.parse("{")))).toBe(false);
    expect(serviceFault(new Error("anything else"))).toBe(false);
    expect(serviceFault("a string")).toBe(false);
  });
});
