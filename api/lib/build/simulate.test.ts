/**
 * What counts as a node without eth_simulateV1: the JSON-RPC codes for a missing or unsupported
 * method, and the words providers use for it; a revert, a timeout or a node that is down does not.
 * What counts as a node refusing eth_call's overrides, and a transaction's intrinsic gas.
 */
import { HttpRequestError, RpcRequestError, TimeoutError } from "viem";
import { describe, expect, it } from "vitest";
import { intrinsicGas, methodMissing, overridesRefused } from "./simulate.js";

const rpcError = (code: number, message: string) =>
  new RpcRequestError({ body: { method: "eth_simulateV1" }, error: { code, message }, url: "http://node" });

describe("methodMissing", () => {
  it("JSON-RPC's method not found and EIP-1474's method not supported", () => {
    expect(methodMissing(rpcError(-32601, "Method not found"))).toBe(true);
    expect(methodMissing(rpcError(-32004, "Method not supported"))).toBe(true);
  });

  it("providers' words under other codes", () => {
    for (const m of [
      "the method eth_simulateV1 does not exist/is not available",
      "Unsupported method: eth_simulateV1",
      "method eth_simulateV1 not supported on this network",
    ]) {
      expect(methodMissing(rpcError(-32000, m)), m).toBe(true);
    }
  });

  it("not a revert, a timeout, an HTTP error or a missing block", () => {
    expect(methodMissing(rpcError(3, "execution reverted"))).toBe(false);
    expect(methodMissing(rpcError(-32000, "header not found"))).toBe(false);
    expect(methodMissing(new TimeoutError({ body: {}, url: "http://node" }))).toBe(false);
    expect(methodMissing(new HttpRequestError({ url: "http://node", status: 502, details: "Bad Gateway" }))).toBe(
      false,
    );
    expect(methodMissing(new Error("connect ECONNREFUSED 127.0.0.1:8545"))).toBe(false);
  });
});

describe("overridesRefused", () => {
  it("a parameter the node does not know, in geth's words or by code, or a missing method", () => {
    expect(overridesRefused(rpcError(-32602, "too many arguments, want at most 2"))).toBe(true);
    expect(overridesRefused(rpcError(-32000, "state override is not supported"))).toBe(true);
    expect(overridesRefused(rpcError(-32601, "Method not found"))).toBe(true);
  });

  it("not a node that is down or a block it does not have", () => {
    expect(overridesRefused(rpcError(-32000, "header not found"))).toBe(false);
    expect(overridesRefused(new TimeoutError({ body: {}, url: "http://node" }))).toBe(false);
    expect(overridesRefused(new Error("connect ECONNREFUSED 127.0.0.1:8545"))).toBe(false);
  });
});

describe("intrinsicGas", () => {
  it("21,000 and 4 a zero byte, 16 any other", () => {
    expect(intrinsicGas("0x")).toBe(21_000n);
    expect(intrinsicGas("0x00ff0001")).toBe(21_000n + 4n + 16n + 4n + 16n);
  });
});
