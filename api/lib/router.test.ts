import { describe, expect, it } from "vitest";
import { VAULT_ADDRESS_PATTERN, VaultAddress } from "./router.js";

describe("VaultAddress", () => {
  it("the document's pattern takes exactly what the route takes", () => {
    const pattern = new RegExp(VAULT_ADDRESS_PATTERN);
    const hex = "2c622344b5dc29dccc034ca76f123d4479d24122";
    const samples = [
      `0x${hex}`,
      `0x${hex.toUpperCase()}`,
      `0X${hex}`,
      `0x${hex}00`,
      `0x${hex.slice(2)}`,
      "0x",
      "0X",
      "So11111111111111111111111111111111111111112",
      "GABCDEFGHIJKLMNOPQRSTUVWXYZ234567",
      "0abc",
      "x".repeat(128),
      "x".repeat(129),
      "",
      "abc-def",
      "abc def",
    ];
    for (const s of samples) expect(pattern.test(s), s).toBe(VaultAddress.safeParse(s).success);
  });
});

describe("VaultAddress refusals", () => {
  it("a malformed EVM address is a pattern mismatch, as every other address", () => {
    const r = VaultAddress.safeParse("0xabc");
    const issue = r.error?.issues[0];
    expect(issue?.message).toBe("must be a 0x-prefixed 20-byte hex address");
    expect(issue?.code === "custom" && issue.params).toEqual({ type: "string_pattern_mismatch" });
  });
});
