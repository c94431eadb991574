/**
 * kept: stale-while-revalidate with one load at a time, and a forced fresh read. recent: never
 * older than its bound, re-read ahead in the background.
 */
import { describe, expect, it } from "vitest";
import { kept, recent } from "./kept.js";

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
    // the reload finishes only when the test lets it: the stale answers cannot have waited on it
    let release = () => {};
    const gate = new Promise<void>((r) => (release = r));
    const load = async () => {
      const n = ++loads;
      if (n > 1) await gate;
      return { n };
    };
    expect((await k.get(owner, "a", load)).n).toBe(1);
    await sleep(70);
    const stale = await Promise.all(Array.from({ length: 4 }, () => k.get(owner, "a", load)));
    expect(stale.map((g) => g.n)).toEqual([1, 1, 1, 1]);
    expect(loads).toBe(2); // one reload under way for all four
    release();
    await sleep(10);
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

/** A read whose answer the test gives when it chooses. */
function gatedReads() {
  const pending: ((v: { n: number } | Error) => void)[] = [];
  let sent = 0;
  const read = () => {
    sent++;
    return new Promise<{ n: number }>((resolve, reject) =>
      pending.push((v) => (v instanceof Error ? reject(v) : resolve(v))),
    );
  };
  const answer = async (v: { n: number } | Error) => {
    pending.shift()!(v);
    await sleep(0);
  };
  return { read, answer, sent: () => sent, waiting: () => pending.length };
}

describe("recent", () => {
  const AGE = 1000;
  /** a store holding `{ n: 1 }` for "k", read at 0 */
  const primed = async () => {
    const r = recent<{ n: number }>(AGE);
    const g = gatedReads();
    const first = r.get("k", g.read, 0);
    await g.answer({ n: 1 });
    await first;
    return { r, g };
  };

  it("one read for callers arriving together, then none until half the age", async () => {
    const r = recent<{ n: number }>(AGE);
    const g = gatedReads();
    const got = Promise.all(Array.from({ length: 8 }, () => r.get("k", g.read, 0)));
    expect(g.sent()).toBe(1);
    await g.answer({ n: 1 });
    expect((await got).map((v) => v.n)).toEqual(Array(8).fill(1));
    expect((await r.get("k", g.read, AGE / 2)).n).toBe(1);
    expect(g.sent()).toBe(1);
  });

  it("past half the age: served at once while one read replaces it", async () => {
    const { r, g } = await primed();
    // nobody waits on the read: these answer before it does
    expect((await r.get("k", g.read, 600)).n).toBe(1);
    expect((await r.get("k", g.read, 700)).n).toBe(1);
    expect(g.sent()).toBe(2);
    await g.answer({ n: 2 });
    // the new value counts from when its read was sent (600), not from when it came back
    expect((await r.get("k", g.read, 1100)).n).toBe(2);
    expect(g.sent()).toBe(2);
    const late = r.get("k", g.read, 1601);
    expect(g.waiting()).toBe(1); // past the whole age: the caller waits for a new read
    await g.answer({ n: 3 });
    expect((await late).n).toBe(3);
  });

  it("never serves a value older than the age: a revocation shows in time", async () => {
    const { r, g } = await primed();
    const after = r.get("k", g.read, AGE + 1);
    let settled = false;
    void after.then(() => (settled = true));
    await sleep(5);
    expect(settled).toBe(false);
    await g.answer({ n: 2 });
    expect((await after).n).toBe(2);
  });

  it("a read in flight since too long ago is not taken: it reads once more", async () => {
    const { r, g } = await primed();
    expect((await r.get("k", g.read, 900)).n).toBe(1); // background read sent at 900
    const caller = r.get("k", g.read, 2000); // waits for the read in flight, sent 1100 ms before
    await g.answer({ n: 2 });
    expect(g.waiting()).toBe(1);
    await g.answer({ n: 3 });
    expect((await caller).n).toBe(3);
  });

  it("a failed background read leaves the value; a failed read a caller waits for is thrown", async () => {
    const { r, g } = await primed();
    expect((await r.get("k", g.read, 600)).n).toBe(1);
    await g.answer(new Error("db down"));
    expect((await r.get("k", g.read, 900)).n).toBe(1); // and a new background read
    await g.answer(new Error("db down"));
    const late = expect(r.get("k", g.read, 1100)).rejects.toThrow("db down");
    await g.answer(new Error("db down"));
    await late;
  });

  it("keeps at most `max` values, the least recently used going first", async () => {
    const r = recent<{ n: number }>(AGE, 2);
    let reads = 0;
    const read = async () => ({ n: ++reads });
    await r.get("a", read, 0);
    await r.get("b", read, 0);
    await r.get("a", read, 1); // a used last
    await r.get("c", read, 2); // b goes
    expect(reads).toBe(3);
    await r.get("a", read, 3);
    expect(reads).toBe(3);
    await r.get("b", read, 4);
    expect(reads).toBe(4);
  });

  it("forget: the next caller reads again, and a read in flight then keeps nothing", async () => {
    const { r, g } = await primed();
    r.forget("k");
    const next = r.get("k", g.read, 100);
    expect(g.waiting()).toBe(1);
    r.forget("k"); // while that read is in flight
    await g.answer({ n: 2 });
    expect((await next).n).toBe(2); // its caller has it
    const after = r.get("k", g.read, 200); // but it was not kept
    expect(g.waiting()).toBe(1);
    await g.answer({ n: 3 });
    expect((await after).n).toBe(3);
    expect((await r.get("k", g.read, 300)).n).toBe(3);
    expect(g.sent()).toBe(3);
  });
});
