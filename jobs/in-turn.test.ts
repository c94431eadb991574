import { describe, expect, it } from "vitest";
import { inTurn } from "./in-turn.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("inTurn", () => {
  it("keeps the items' order and never runs more than `width` at once", async () => {
    let running = 0;
    let most = 0;
    const out = await inTurn([5, 1, 4, 2, 3, 0], 3, async (x) => {
      running++;
      most = Math.max(most, running);
      await sleep(x * 3);
      running--;
      return x * 10;
    });
    expect(out).toEqual([50, 10, 40, 20, 30, 0]);
    expect(most).toBe(3);
  });

  it("rejects with the first failure and starts no item after it", async () => {
    const started: number[] = [];
    const run = inTurn([1, 2, 3, 4, 5, 6], 2, async (x) => {
      started.push(x);
      await sleep(5);
      if (x === 2) throw new Error("item 2");
      return x;
    });
    await expect(run).rejects.toThrow("item 2");
    await sleep(30);
    expect(started.length).toBeLessThanOrEqual(3);
  });

  it("handles no items and a width above their number", async () => {
    expect(await inTurn([], 4, async (x: number) => x)).toEqual([]);
    expect(await inTurn([7], 4, async (x) => x + 1)).toEqual([8]);
  });
});
