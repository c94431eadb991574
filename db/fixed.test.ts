/** Fixed-point helpers: the shortcut from stored text to a number gives what the exact path gives. */
import { describe, expect, it } from "vitest";
import { fixedTextToNumber, formatFixed, parseFixed, toNumber } from "./fixed.js";

describe("fixedTextToNumber", () => {
  it("equals toNumber(parseFixed(text)) for every 18-decimal text, on random and edge values", () => {
    let seed = 12345n;
    const next = () => (seed = (seed * 6364136223846793005n + 1442695040888963407n) % 2n ** 64n);
    const values = [
      0n,
      1n,
      10n ** 18n,
      10n ** 18n - 1n,
      123456789012345678901234567890n,
      5n * 10n ** 17n,
      2n ** 53n * 10n ** 18n + 1n,
    ];
    for (let i = 0; i < 2000; i++) values.push(next() % 10n ** BigInt(1 + (i % 40)));
    for (const v of values) {
      for (const x of [v, -v]) {
        const text = formatFixed(x);
        expect(fixedTextToNumber(text), text).toBe(toNumber(parseFixed(text)));
      }
    }
  });

  it("declines other texts (fewer or more decimals, leading zeros, negative zero), which take the exact path", () => {
    for (const t of [
      "1.5",
      "1",
      "1.0000000000000000001",
      "01.000000000000000000",
      "-0.000000000000000000",
      "abc",
      "1e5",
    ]) {
      expect(fixedTextToNumber(t), t).toBeUndefined();
    }
  });
});
