import { describe, expect, it } from "vitest";
import { CONTRACT_ABIS, handledSelectors, registeredHandlerNames } from "../../bench/handlers.js";
import { REPO_ROOT } from "../../scripts/lib/indexer.js";

describe("bench:index's list of the indexer's handlers", () => {
  it("knows the ABI of every contract a handler is registered on (a new family needs its entry)", () => {
    const names = registeredHandlerNames(REPO_ROOT);
    const selectors = handledSelectors(names);
    const contracts = new Set(names.map((n) => n.slice(0, n.indexOf(":"))));
    for (const c of contracts) {
      if (names.some((n) => n.startsWith(`${c}:`) && !/:(setup|block)$/.test(n))) {
        expect(CONTRACT_ABIS[c], c).toBeDefined();
        expect(selectors.get(c)?.size, c).toBeGreaterThan(0);
      }
    }
    expect(contracts.has("Erc4626Vault")).toBe(true);
  });
});
