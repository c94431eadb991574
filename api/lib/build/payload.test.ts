import { describe, expect, it } from "vitest";
import { maxUint, uintString } from "./payload.js";

const messages = (bits: 128 | 256, v: string) => {
  const r = uintString(bits).safeParse(v);
  return r.success ? [] : r.error.issues.map((i) => i.message);
};

describe("uintString", () => {
  it("takes what the uint holds, leading zeros included", () => {
    expect(messages(256, maxUint(256).toString())).toEqual([]);
    expect(messages(128, maxUint(128).toString())).toEqual([]);
    expect(messages(256, `${"0".repeat(100)}1`)).toEqual([]);
  });

  it("refuses what it does not hold, however long", () => {
    expect(messages(256, (maxUint(256) + 1n).toString())).toEqual(["must be at most 2^256 - 1 (uint256)"]);
    expect(messages(128, (maxUint(128) + 1n).toString())).toEqual(["must be at most 2^128 - 1 (uint128)"]);
    expect(messages(256, "9".repeat(5000))).toEqual(["must be at most 2^256 - 1 (uint256)"]);
  });

  it("anything but digits is the pattern's refusal alone, never a thrown error", () => {
    for (const v of ["\u0000", "a\u0000b", "\ud800", "", "1.5", "-1", " 1"])
      expect(messages(256, v), JSON.stringify(v)).toEqual(["must be an integer as a string"]);
  });
});
