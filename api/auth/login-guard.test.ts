import { describe, expect, it } from "vitest";
import { LoginGuard } from "./login-guard.js";

const limits = { perUser: 3, perAddress: 5, windowS: 60, running: 1, waiting: 1 };

/** Admits an attempt and, if admitted, runs its (instant) check, as the route must. */
async function attempt(g: LoginGuard, user: string, address: string) {
  const a = await g.admit(user, address);
  if (a.ok) await a.run(async () => true);
  return a;
}

describe("LoginGuard", () => {
  it("refuses a username past its failures, not another username", async () => {
    const g = new LoginGuard(null, limits);
    for (let i = 0; i < 3; i++) expect((await attempt(g, "alice", "10.0.0.1")).ok).toBe(true);
    const refused = await attempt(g, "alice", "10.0.0.2");
    expect(refused).toMatchObject({ ok: false, status: 429 });
    if (!refused.ok) {
      expect(refused.retryAfterS).toBeGreaterThan(0);
      expect(refused.detail).toContain("for this username: 3 per 60 s");
    }
    expect((await attempt(g, "bob", "10.0.0.2")).ok).toBe(true);
  });

  it("refuses an address past its attempts over every username", async () => {
    const g = new LoginGuard(null, limits);
    for (let i = 0; i < 5; i++) expect((await attempt(g, `u${i}`, "10.0.0.9")).ok).toBe(true);
    const refused = await attempt(g, "u9", "10.0.0.9");
    expect(refused).toMatchObject({ ok: false, status: 429 });
    if (!refused.ok) expect(refused.detail).toContain("from this address: 5 per 60 s");
    expect((await attempt(g, "u9", "10.0.0.10")).ok).toBe(true);
  });

  it("gives a successful login's points back", async () => {
    const g = new LoginGuard(null, limits);
    for (let i = 0; i < 10; i++) {
      const a = await attempt(g, "alice", "10.0.0.1");
      expect(a.ok).toBe(true);
      if (a.ok) await a.succeeded();
    }
  });

  it("runs checks one at a time, queues one, answers 503 past that", async () => {
    const g = new LoginGuard(null, { ...limits, perUser: 100, perAddress: 100 });
    let release = () => {};
    let running = 0;
    let most = 0;
    const gate = new Promise<void>((r) => (release = r));
    const check = async () => {
      most = Math.max(most, ++running);
      await gate;
      running--;
      return true;
    };
    const a = await g.admit("a", "x");
    const b = await g.admit("b", "x");
    if (!a.ok || !b.ok) throw new Error("refused");
    const runs = [a.run(check), b.run(check)];
    const c = await g.admit("c", "x");
    expect(c).toMatchObject({ ok: false, status: 503, retryAfterS: 1 });
    release();
    expect(await Promise.all(runs)).toEqual([true, true]);
    expect(most).toBe(1);
    expect((await g.admit("c", "x")).ok).toBe(true);
  });

  it("admits no more than its places when attempts arrive together", async () => {
    const g = new LoginGuard(null, { ...limits, perUser: 100, perAddress: 100, running: 2, waiting: 3 });
    const burst = await Promise.all(Array.from({ length: 20 }, (_, i) => g.admit(`u${i}`, "x")));
    expect(burst.filter((a) => a.ok)).toHaveLength(5);
    expect(burst.filter((a) => !a.ok && a.status === 503)).toHaveLength(15);
    for (const a of burst) if (a.ok) await a.run(async () => true);
    expect((await attempt(g, "later", "x")).ok).toBe(true);
  });

  it("gives the place back when the count refuses", async () => {
    const g = new LoginGuard(null, { ...limits, perUser: 1, perAddress: 100, running: 1, waiting: 0 });
    expect((await attempt(g, "alice", "x")).ok).toBe(true);
    expect(await g.admit("alice", "x")).toMatchObject({ ok: false, status: 429 });
    expect(await g.admit("alice", "x")).toMatchObject({ ok: false, status: 429 });
    expect((await attempt(g, "bob", "x")).ok).toBe(true);
  });
});
