/** The direct aggregate3 codec against viem's ABI encoding of Multicall3, on random calls. */
import { type Abi, decodeFunctionData, encodeFunctionResult, type Hex, toHex } from "viem";
import { describe, expect, it } from "vitest";
import { Multicall3Abi } from "../../../abis/Multicall3Abi.js";
import { decodeAggregate3, encodeAggregate3 } from "./multicall.js";

const abi = Multicall3Abi as Abi;
let seed = 7;
const rand = (n: number) => {
  seed = (seed * 1_103_515_245 + 12_345) % 2 ** 31;
  return seed % n;
};
const bytes = (n: number): Hex => toHex(Uint8Array.from({ length: n }, () => rand(256)));
const address = () => toHex(Uint8Array.from({ length: 20 }, () => rand(256))) as `0x${string}`;
const lengths = [0, 1, 4, 31, 32, 33, 36, 68, 100, 320, 1000];

describe("aggregate3 codec", () => {
  it("encodes as viem does, for 0 to 12 calls of every length around a word", () => {
    for (let n = 0; n <= 12; n++) {
      const calls = Array.from({ length: n }, () => ({
        target: address(),
        callData: bytes(lengths[rand(lengths.length)]!),
      }));
      const decoded = decodeFunctionData({ abi, data: encodeAggregate3(calls) });
      expect(decoded.functionName).toBe("aggregate3");
      expect(decoded.args![0]).toEqual(
        calls.map((c) => ({
          target: expect.stringMatching(new RegExp(c.target, "i")),
          allowFailure: true,
          callData: c.callData,
        })),
      );
    }
  });

  it("decodes what viem encodes: successes, failures, empty and odd-length data", () => {
    for (let n = 0; n <= 12; n++) {
      const results = Array.from({ length: n }, () => ({
        success: rand(3) > 0,
        returnData: bytes(lengths[rand(lengths.length)]!),
      }));
      const data = encodeFunctionResult({ abi, functionName: "aggregate3", result: results } as never);
      expect(decodeAggregate3(data)).toEqual(results);
    }
  });

  it("refuses a truncated or empty answer", () => {
    const data = encodeFunctionResult({
      abi,
      functionName: "aggregate3",
      result: [{ success: true, returnData: bytes(64) }],
    } as never);
    expect(() => decodeAggregate3(data.slice(0, -2) as Hex)).toThrow(/too short/);
    expect(() => decodeAggregate3("0x")).toThrow(/too short/);
  });
});
