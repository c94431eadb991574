import { describe, expect, it } from "vitest";
import { midnightWait } from "../helpers.js";

describe("midnightWait (a test file's guard against the UTC day changing under it)", () => {
  const at = (h: number, m: number, s: number) => Date.UTC(2026, 11, 3, h, m, s);
  it("waits only near midnight, until `afterS` into the new day", () => {
    expect(midnightWait(90, 240, at(12, 0, 0))).toBe(0);
    expect(midnightWait(90, 240, at(23, 58, 0))).toBe(0);
    expect(midnightWait(90, 240, at(23, 59, 0))).toBe(60 + 240);
    expect(midnightWait(90, 240, at(0, 0, 0))).toBe(240);
    expect(midnightWait(90, 240, at(0, 3, 0))).toBe(60);
    expect(midnightWait(90, 240, at(0, 4, 0))).toBe(0);
  });
});
