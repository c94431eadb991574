/** Batched reservations of rate-limit points: fewer shared-store calls, never more than the limit. */

import { Hono } from "hono";
import { RateLimiterMemory } from "rate-limiter-flexible";
import { describe, expect, it } from "vitest";
import { addressCounter, BatchedLimiter, clientAddress, rateLimit } from "./rate-limit.js";

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

describe("the keyless client's address (TRUST_PROXY_HOPS)", () => {
  it("is the TCP peer without trusted proxies, whatever X-Forwarded-For says", () => {
    expect(clientAddress("10.0.0.9", undefined, 0)).toBe("10.0.0.9");
    expect(clientAddress("10.0.0.9", "1.2.3.4", 0)).toBe("10.0.0.9");
  });

  it("is the address the nearest trusted proxy saw; what the client wrote stays on the left", () => {
    // client 1.2.3.4 -> balancer (appends 1.2.3.4) -> API, whose peer is the balancer
    expect(clientAddress("10.0.0.2", "1.2.3.4", 1)).toBe("1.2.3.4");
    // the same client forging a header of its own: the balancer appends the real address
    expect(clientAddress("10.0.0.2", "6.6.6.6, 1.2.3.4", 1)).toBe("1.2.3.4");
    // two proxies: CDN (appends the client) -> balancer (appends the CDN) -> API
    expect(clientAddress("10.0.0.2", "6.6.6.6, 1.2.3.4, 172.16.0.5", 2)).toBe("1.2.3.4");
    // fewer entries than hops (a request that bypassed a proxy): the left-most there is
    expect(clientAddress("10.0.0.2", "1.2.3.4", 3)).toBe("1.2.3.4");
    expect(clientAddress("10.0.0.2", " , ", 1)).toBe("10.0.0.2");
  });

  it("counts an IPv6 client by its /64, an IPv4-mapped one as IPv4", () => {
    expect(addressCounter("2001:db8:1:2:aaaa:bbbb:cccc:dddd")).toBe("2001:db8:1:2::/64");
    expect(addressCounter("2001:db8:1:2::1")).toBe("2001:db8:1:2::/64");
    expect(addressCounter("2001:0DB8:0001:0002:0:0:0:9")).toBe("2001:db8:1:2::/64");
    expect(addressCounter("2001:db8::")).toBe("2001:db8:0:0::/64");
    expect(addressCounter("::1")).toBe("0:0:0:0::/64");
    expect(addressCounter("fe80::1%eth0")).toBe("fe80:0:0:0::/64");
    expect(addressCounter("64:ff9b::192.0.2.33")).toBe("64:ff9b:0:0::/64");
    expect(addressCounter("::ffff:192.0.2.33")).toBe("192.0.2.33");
    expect(addressCounter("::ffff:c000:221")).toBe("192.0.2.33");
    for (const other of ["192.0.2.33", "unknown", "not an address", "1.2.3.4:80", ""])
      expect(addressCounter(other)).toBe(other);
  });

  it("keyless callers behind one balancer get a counter each", async () => {
    const app = (hops: number) => {
      const a = new Hono();
      a.use(rateLimit(null, 2, { trustProxyHops: hops }) as never);
      a.get("/", (c) => c.text("ok"));
      return a;
    };
    const hit = (a: Hono, xff: string) => a.request("/", { headers: { "x-forwarded-for": xff } });
    const trusting = app(1);
    for (const client of ["1.1.1.1", "2.2.2.2"]) {
      expect((await hit(trusting, client)).status).toBe(200);
      expect((await hit(trusting, `9.9.9.9, ${client}`)).status).toBe(200);
      expect((await hit(trusting, client)).status).toBe(429);
    }
    // not trusting the header: one counter for everyone behind the balancer
    const plain = app(0);
    expect((await hit(plain, "1.1.1.1")).status).toBe(200);
    expect((await hit(plain, "2.2.2.2")).status).toBe(200);
    expect((await hit(plain, "3.3.3.3")).status).toBe(429);
    // a new IPv6 address per request in one /64: one counter; the next /64 has its own
    const v6 = app(1);
    expect((await hit(v6, "2001:db8:0:1::a")).status).toBe(200);
    expect((await hit(v6, "2001:db8:0:1::b")).status).toBe(200);
    expect((await hit(v6, "2001:db8:0:1:ffff::c")).status).toBe(429);
    expect((await hit(v6, "2001:db8:0:2::a")).status).toBe(200);
  });
});

describe("the counter of a request with a key", () => {
  const GENUINE = "vk_000000000001_genuine";
  const app = () => {
    const a = new Hono();
    const keyId = async (_c: unknown, key: string) => (key === GENUINE ? "key-1" : null);
    a.use(rateLimit(null, 2, { keyId }) as never);
    a.get("/", (c) => c.text("ok"));
    return a;
  };
  const hit = (a: Hono, key?: string) => a.request("/", key ? { headers: { "x-api-key": key } } : {});

  it("is the key's own for a genuine key, apart from its address", async () => {
    const a = app();
    expect((await hit(a)).status).toBe(200);
    expect((await hit(a)).status).toBe(200);
    expect((await hit(a)).status).toBe(429);
    expect((await hit(a, GENUINE)).status).toBe(200);
    expect((await hit(a, GENUINE)).status).toBe(200);
    expect((await hit(a, GENUINE)).status).toBe(429);
  });

  it("is the address's for made-up keys: a new key per request gets no limit of its own", async () => {
    const a = app();
    expect((await hit(a, "vk_made_up_1")).status).toBe(200);
    expect((await hit(a, "vk_made_up_2")).status).toBe(200);
    const third = await hit(a, "vk_made_up_3");
    expect(third.status).toBe(429);
    expect((await hit(a)).status).toBe(429);
  });

  it("is the address's when the key cannot be checked", async () => {
    const a = new Hono();
    const keyId = async () => {
      throw new Error("database down");
    };
    a.use(rateLimit(null, 1, { keyId }) as never);
    a.get("/", (c) => c.text("ok"));
    expect((await hit(a, GENUINE)).status).toBe(200);
    expect((await hit(a)).status).toBe(429);
  });
});
