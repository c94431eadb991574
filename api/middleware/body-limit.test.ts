import { describe, expect, it } from "vitest";
import { nestedDeeper } from "./body-limit.js";

describe("nestedDeeper", () => {
  it("counts arrays and objects, not brackets inside strings", () => {
    expect(nestedDeeper('{"a":[1,{"b":2}]}', 3)).toBe(false);
    expect(nestedDeeper('{"a":[1,{"b":[2]}]}', 3)).toBe(true);
    expect(nestedDeeper('{"a":"[[[[{{{{"}', 1)).toBe(false);
    expect(nestedDeeper('{"a":"\\"[[[["}', 1)).toBe(false); // an escaped quote does not end the string
    expect(nestedDeeper('["\\\\",[[[]]]]', 3)).toBe(true); // an escaped backslash does
    expect(nestedDeeper(`${"[".repeat(200_000)}${"]".repeat(200_000)}`, 64)).toBe(true);
    expect(nestedDeeper("", 0)).toBe(false);
  });
});
