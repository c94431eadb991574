/** A loan's funding and its borrower's commitment, in either order (src/loan-states.ts). */
import { describe, expect, it } from "vitest";
import { afterCommitment, afterFunded } from "../../src/loan-states.js";

describe("loan states", () => {
  it("funded then committed, or committed then funded: active either way", () => {
    expect(afterCommitment(afterFunded("preapproved"))).toBe("active");
    expect(afterFunded(afterCommitment("preapproved"))).toBe("active");
    expect(afterFunded("preapproved")).toBe("funded");
    expect(afterCommitment("preapproved")).toBe("funding_required");
  });

  it("an event that does not fit the state leaves it", () => {
    for (const state of ["active", "called", "matured", "closed", "cancelled"]) {
      expect(afterFunded(state)).toBe(state);
      expect(afterCommitment(state)).toBe(state);
    }
    expect(afterFunded("funded")).toBe("funded");
    expect(afterCommitment("funding_required")).toBe("funding_required");
  });
});
