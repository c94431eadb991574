import { createHash } from "node:crypto";
import { describe, expect, it } from "vitest";
import { AUDIT_PREFIX_CHARS, boundedJson } from "./audit.js";

describe("boundedJson", () => {
  it("keeps JSON within the bound as it is", () => {
    const j = JSON.stringify({ a: "x".repeat(100) });
    expect(boundedJson(j, j.length)).toBe(j);
  });

  it("over the bound keeps the length, the hash and a prefix, as valid JSON", () => {
    const j = JSON.stringify({ amount: `1.${"0".repeat(900_000)}1`, s: "\ud83d\ude00".repeat(10_000) });
    const b = JSON.parse(boundedJson(j, 16 * 1024)) as Record<string, unknown>;
    expect(b).toEqual({
      truncated: true,
      chars: j.length,
      sha256: createHash("sha256").update(j).digest("hex"),
      prefix: j.slice(0, AUDIT_PREFIX_CHARS),
    });
    expect(JSON.stringify(b).length).toBeLessThan(AUDIT_PREFIX_CHARS + 200);
  });
});
