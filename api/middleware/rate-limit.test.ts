/** Batched reservations of rate-limit points: fewer shared-store calls, never more than the limit. */

import { RateLimiterMemory } from "rate-limiter-flexible";
import { describe, expect, it } from "vitest";
import { BatchedLimiter } from "./rate-limit.js";

class Counting extends RateLimiterMemory {
  calls = 0;
  override consume(key: string | number, points?: number, options?: { [key: string]: unknown }) {
    this.calls++;
    return super.consume(key, points, options);
  }
}

describe("BatchedLimiter", () => {
  it("takes 1 % of the limit per shared call while plenty is left", async () => {
    const shared = new Counting({ points: 10_000, duration: 60 });
    const l = new BatchedLimiter(shared, 10_000);
    expect(l.batch).toBe(50);
    for (let i = 0; i < 1000; i++) expect((await l.consume("k")).limited).toBe(false);
    expect(shared.calls).toBeLessThanOrEqual(22); // 1 single + 20 batches
    const state = await shared.get("k");
    expect(state!.consumedPoints).toBeGreaterThanOrEqual(1000);
    expect(state!.consumedPoints).toBeLessThanOrEqual(1000 + 75); // at most 1.5 batches held unspent
  });

  it("two processes sharing one store never admit more than the limit in a window", async () => {
    const shared = new Counting({ points: 500, duration: 60 });
    const a = new BatchedLimiter(shared, 500);
    const b = new BatchedLimiter(shared, 500);
    let admitted = 0;
    for (let i = 0; i < 700; i++) if (!(await (i % 3 ? a : b).consume("k")).limited) admitted++;
    expect(admitted).toBeLessThanOrEqual(500);
    expect(admitted).toBeGreaterThanOrEqual(500 - 2 * a.batch); // at most a batch held unspent per process
    const last = await a.consume("k");
    expect(last).toMatchObject({ limited: true, remaining: 0 });
    expect(last.msBeforeNext).toBeGreaterThan(0);
  });

  it("concurrent requests of one caller share one reservation; small limits count one by one", async () => {
    const shared = new Counting({ points: 3, duration: 60 });
    const l = new BatchedLimiter(shared, 3);
    expect(l.batch).toBe(1);
    const v = await Promise.all([1, 2, 3, 4].map(() => l.consume("k")));
    expect(v.map((x) => x.limited)).toEqual([false, false, false, true]);
    expect(v[0]!.remaining).toBe(2);
  });

  it("takes the next batch while half of the current one is left, so callers do not wait for the store", async () => {
    // a shared store whose answers wait until released
    class Gated extends RateLimiterMemory {
      calls = 0;
      gate: Promise<void> = Promise.resolve();
      override async consume(key: string | number, points?: number, options?: { [key: string]: unknown }) {
        this.calls++;
        await this.gate;
        return super.consume(key, points, options);
      }
    }
    const shared = new Gated({ points: 10_000, duration: 60 });
    const l = new BatchedLimiter(shared, 10_000);
    for (let i = 0; i < 2; i++) await l.consume("k"); // one point, then a batch of 50 (49 left)
    expect(shared.calls).toBe(2);
    let release!: () => void;
    shared.gate = new Promise((r) => (release = r));
    // spending down to half a batch starts a refill, which hangs at the gate...
    for (let i = 0; i < 25; i++) await l.consume("k");
    expect(shared.calls).toBe(3);
    // ...while the rest of the batch is still spent without waiting for it
    let settled = 0;
    const rest = Array.from({ length: 24 }, () =>
      l.consume("k").then((v) => {
        settled++;
        return v;
      }),
    );
    await new Promise((r) => setTimeout(r, 20));
    expect(settled).toBe(24);
    // once the batch is gone, callers wait for the refill instead of starting another call
    const waiting = l.consume("k");
    await new Promise((r) => setTimeout(r, 20));
    expect(shared.calls).toBe(3);
    release();
    expect((await waiting).limited).toBe(false);
    expect((await Promise.all(rest)).every((v) => !v.limited)).toBe(true);
    const state = await shared.get("k");
    expect(state!.consumedPoints).toBe(1 + 50 + 50);
  });
});
