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

  it("refuses a megabyte of digits at once, and reads one behind a megabyte of zeros", () => {
    // a body's size limit lets a megabyte through: BigInt of it took over 100 ms per field
    expect(messages(256, "9".repeat(1_000_000))).toEqual(["must be at most 2^256 - 1 (uint256)"]);
    expect(messages(128, `${"0".repeat(1_000_000)}${maxUint(128)}`)).toEqual([]);
    expect(messages(128, `${"0".repeat(1_000_000)}${maxUint(128) + 1n}`)).toEqual([
      "must be at most 2^128 - 1 (uint128)",
    ]);
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

  const refusal = (whole: string) => {
    try {
      wholeToRaw(whole, 18, ["body", "amount"]);
    } catch (e) {
      return e instanceof BuildRefusal ? e.message : `not a refusal: ${e}`;
    }
    return "taken";
  };

  it("answers a megabyte-long amount at once: too many decimals, or too large", () => {
    // trailing zeros were trimmed with /0+$/, quadratic on a long fraction (minutes for a megabyte)
    expect(refusal(`1.${"0".repeat(1_000_000)}1`)).toMatch(/at most 18 after the point/);
    expect(wholeToRaw(`1.5${"0".repeat(1_000_000)}`, 18, ["body", "amount"])).toBe(15n * 10n ** 17n);
    expect(refusal("9".repeat(1_000_000))).toMatch(/Too large: more than 2\^256 - 1 raw units/);
    expect(wholeToRaw(`${"0".repeat(1_000_000)}2.5`, 6, ["body", "amount"])).toBe(2_500_000n);
  });

  it("refuses whole units whose raw amount passes 2^256 by its decimals", () => {
    const max = maxUint(256);
    expect(wholeToRaw(max.toString(), 0, ["body", "amount"])).toBe(max);
    expect(refusal(max.toString())).toMatch(/Too large/);
    expect(refusal(`${max / 10n ** 18n + 1n}`)).toMatch(/Too large/);
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
