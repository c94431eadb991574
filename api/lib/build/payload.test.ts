import { describe, expect, it } from "vitest";
import { CHAIN_IDS, EVM_CHAIN_IDS } from "../../../config/chains.js";
import { amountFields, amountOrAllFields, buildFields, maxUint, rawAmount, uintString, wholeToRaw } from "./payload.js";
import { BuildRefusal } from "./refusal.js";

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

describe("wholeToRaw", () => {
  it("takes whole units to the token's decimals; zeros past them change nothing", () => {
    expect(wholeToRaw("5", 6, ["body", "amount"])).toBe(5_000_000n);
    expect(wholeToRaw("5.0000000", 6, ["body", "amount"])).toBe(5_000_000n);
    expect(wholeToRaw("1.250000000000", 6, ["body", "amount"])).toBe(1_250_000n);
    expect(wholeToRaw("0.000001", 6, ["body", "amount"])).toBe(1n);
  });

  it("refuses a digit the token cannot hold, on the field", () => {
    let err: unknown;
    try {
      wholeToRaw("0.0000001", 6, ["body", "amount"]);
    } catch (e) {
      err = e;
    }
    expect(err).toBeInstanceOf(BuildRefusal);
    expect((err as Error).message).toMatch(/at most 6 after the point/);
  });
});

describe("buildFields.chain", () => {
  const chain = buildFields.chain;
  it("takes an EVM chain of the catalogue", () => {
    expect(chain.safeParse(8453).success).toBe(true);
    expect(chain.safeParse(1).success).toBe(true);
  });

  it("refuses any other id as an enum error: unknown, non-EVM, or not an integer", () => {
    const nonEvm = CHAIN_IDS.filter((id) => !EVM_CHAIN_IDS.includes(id));
    expect(nonEvm.length).toBeGreaterThan(0);
    for (const v of [...nonEvm, 5, 31337]) {
      const r = chain.safeParse(v);
      expect(r.success, String(v)).toBe(false);
      const issue = r.error?.issues[0];
      expect(issue?.code === "custom" && issue.params, String(v)).toEqual({ type: "enum" });
    }
    expect(chain.safeParse(1.5).success).toBe(false);
  });
});

describe("amountOrAllFields.amount", () => {
  it("refuses what is no decimal number, naming all: true for the whole position", () => {
    const r = amountOrAllFields.amount.safeParse("max");
    expect(r.error?.issues.map((i) => i.message)).toEqual([
      'must be a decimal number as a string (for the whole position: "all": true, no amount)',
    ]);
    expect(amountOrAllFields.amount.safeParse("1.5").success).toBe(true);
    expect(amountFields.amount.safeParse("max").error?.issues[0]?.message).toBe("must be a decimal number as a string");
  });
});

describe("rawAmount", () => {
  const refusal = (f: () => unknown) => {
    try {
      f();
    } catch (err) {
      return (err as BuildRefusal).body();
    }
    throw new Error("not refused");
  };
  it("takes exactly one of amount and amount_raw; names all: true where the operation takes it", () => {
    expect(rawAmount({ amount: "1.5" }, 6)).toBe(1_500_000n);
    expect(rawAmount({ amount_raw: "7" }, 6)).toBe(7n);
    expect(refusal(() => rawAmount({}, 6))).toEqual({
      detail: [{ loc: ["body", "amount"], msg: "Give exactly one of amount and amount_raw", type: "value_error" }],
    });
    expect(refusal(() => rawAmount({ amount: "1", amount_raw: "1" }, 6, ["body"], true))).toEqual({
      detail: [
        {
          loc: ["body", "amount"],
          msg: 'Give exactly one of amount and amount_raw (or "all": true for the whole position)',
          type: "value_error",
        },
      ],
    });
    expect(refusal(() => rawAmount({ amount_raw: "0" }, 6))).toMatchObject({
      detail: [{ loc: ["body", "amount_raw"], type: "greater_than" }],
    });
  });
});
