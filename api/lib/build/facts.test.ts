/**
 * The kept facts' bounds: past MAX_ENTRIES the least recently used go first, so the facts builds
 * keep using (a busy pool, its tokens) survive a stream of new ones; a failed read is not kept.
 */
import { describe, expect, it } from "vitest";
import { learn, learnt, MAX_ENTRIES, remember } from "./facts.js";
import type { BuildSubaccount } from "./subaccount.js";

const sub = { chainId: 1, rpcUrl: "http://facts-test" } as BuildSubaccount;

describe("kept facts", () => {
  it("learnt facts in use outlive MAX_ENTRIES newer ones; the least recently used go", () => {
    learn(sub, "busy", 1);
    learn(sub, "idle", 2);
    for (let i = 0; i < MAX_ENTRIES - 1; i++) {
      if (i % 1000 === 0) expect(learnt(sub, "busy")).toBe(1); // in use
      learn(sub, `other:${i}`, i);
    }
    expect(learnt(sub, "busy")).toBe(1);
    expect(learnt(sub, "idle")).toBeUndefined();
    expect(learnt(sub, `other:${MAX_ENTRIES - 2}`)).toBe(MAX_ENTRIES - 2);
  });

  it("a remembered read is shared and kept; a failed one is tried again", async () => {
    let loads = 0;
    const load = async () => ++loads;
    expect(await Promise.all([remember(sub, "r", load), remember(sub, "r", load)])).toEqual([1, 1]);
    expect(await remember(sub, "r", load)).toBe(1);
    const failing = () => Promise.reject(new Error("node down"));
    await expect(remember(sub, "f", failing)).rejects.toThrow("node down");
    expect(await remember(sub, "f", load)).toBe(2);
  });
});
