/** kept: stale-while-revalidate with one load at a time, and a forced fresh read. */
import { describe, expect, it } from "vitest";
import { kept } from "./kept.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

describe("kept", () => {
  it("loads once for requests arriving together, then serves from memory", async () => {
    const k = kept<{ n: number }>(10_000);
    const owner = {};
    let loads = 0;
    const load = async () => {
      loads++;
      await sleep(20);
      return { n: loads };
    };
    const got = await Promise.all(Array.from({ length: 8 }, () => k.get(owner, "a", load)));
    expect(got.map((g) => g.n)).toEqual(Array(8).fill(1));
    expect((await k.get(owner, "a", load)).n).toBe(1);
    expect(loads).toBe(1);
    // another owner (another database) has its own values
    expect((await k.get({}, "a", load)).n).toBe(2);
  });

  it("once old, serves the kept value while one load replaces it", async () => {
    const k = kept<{ n: number }>(50);
    const owner = {};
    let loads = 0;
    const load = async () => {
      loads++;
      await sleep(30);
      return { n: loads };
    };
    expect((await k.get(owner, "a", load)).n).toBe(1);
    await sleep(70);
    const t = performance.now();
    const stale = await Promise.all(Array.from({ length: 4 }, () => k.get(owner, "a", load)));
    expect(performance.now() - t).toBeLessThan(20); // nobody waited on the reload
    expect(stale.map((g) => g.n)).toEqual([1, 1, 1, 1]);
    await sleep(50);
    expect((await k.get(owner, "a", load)).n).toBe(2);
    expect(loads).toBe(2);
  });

  it("fresh: loads again first when the value is older than asked, and a failed load is thrown", async () => {
    const k = kept<{ n: number }>(10_000);
    const owner = {};
    let loads = 0;
    const load = async () => ({ n: ++loads });
    await k.get(owner, "a", load);
    expect((await k.fresh(owner, "a", load, 1000)).n).toBe(1);
    await sleep(30);
    expect((await k.fresh(owner, "a", load, 10)).n).toBe(2);
    await expect(k.get(owner, "b", async () => Promise.reject(new Error("db down")))).rejects.toThrow("db down");
    expect((await k.get(owner, "b", load)).n).toBe(3);
  });
});
