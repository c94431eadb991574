/**
 * Rate limits per API key (else per client address, `clientAddress`, an IPv6 one by its /64:
 * `addressCounter`; a key that is not genuine, made
 * up or revoked, counts against the address, so a stream of invented keys gets no limits of its
 * own: `RateLimitOptions.keyId`), counted in Redis so every API process
 * shares them (rate-limiter-flexible), reported in the IETF draft headers `RateLimit-Policy`,
 * `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset`; 429 with a JSON body past the
 * limit. If Redis is unreachable, errs or does not answer within REDIS_TIMEOUT_MS, an in-process
 * limiter takes over instead of failing or holding requests, alone for REDIS_BACKOFF_MS (so a hung
 * Redis makes one request wait, not every request), then Redis is asked again.
 *
 * A process takes points from Redis in batches of 1 % of the limit (at most 50) while plenty are
 * left, and spends them locally; near the limit it takes them one by one. So a busy key costs
 * one Redis round trip per batch instead of one per request. The next batch is taken when half of
 * the current one is spent, so requests do not wait for Redis in between; a process holds at most
 * 1.5 % of a key's limit unspent (counted as used until the window ends).
 */
import { isIPv4, isIPv6 } from "node:net";
import { getConnInfo } from "@hono/node-server/conninfo";
import type { Context } from "hono";
import { createMiddleware } from "hono/factory";
import { Redis } from "ioredis";
import { type RateLimiterAbstract, RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from "rate-limiter-flexible";
import type { AppEnv } from "../lib/router.js";
import { addResponseHeaders } from "./response-headers.js";

/** How long a rate-limit command waits for Redis's answer before the in-process count is used. */
export const REDIS_TIMEOUT_MS = 500;
/** After Redis failed or was slow, the in-process count alone for this long, then Redis again. */
export const REDIS_BACKOFF_MS = 5_000;

/**
 * The API's connection for the rate limits: a command fails at once while Redis is unreachable
 * (no offline queue) and after REDIS_TIMEOUT_MS when it does not answer (a hung or partitioned
 * Redis), so a request never waits on it longer.
 */
export function rateLimitRedis(url: string): Redis {
  const redis = new Redis(url, {
    maxRetriesPerRequest: 1,
    // counters of concurrent requests go to Redis in one round trip
    enableAutoPipelining: true,
    enableOfflineQueue: false,
    commandTimeout: REDIS_TIMEOUT_MS,
  });
  redis.on("error", () => {});
  return redis;
}

/** Whether `redis` is connected within `ms` (without an offline queue, a command fails before). */
export async function redisReady(redis: Redis, ms: number): Promise<boolean> {
  if (redis.status === "ready") return true;
  let timer: NodeJS.Timeout | undefined;
  let onReady = () => {};
  const ready = new Promise<boolean>((resolve) => {
    onReady = () => resolve(true);
    redis.once("ready", onReady);
    timer = setTimeout(() => resolve(false), ms);
  });
  try {
    return await ready;
  } finally {
    clearTimeout(timer);
    redis.off("ready", onReady);
  }
}

type Consumer = Pick<RateLimiterAbstract, "consume"> & { reward?(key: string, points: number): Promise<unknown> };

/**
 * The shared (Redis) count, or the in-process one while the shared count fails: from a failure
 * (an error or a timeout, not a refusal) on, the in-process count alone for `backoffMs`.
 */
export class FailoverLimiter implements Consumer {
  private downUntil = 0;

  constructor(
    private readonly shared: Consumer,
    private readonly local: Consumer,
    private readonly onChange: (down: boolean, err?: unknown) => void = () => {},
    private readonly backoffMs = REDIS_BACKOFF_MS,
  ) {}

  async consume(key: string | number, points?: number): Promise<RateLimiterRes> {
    if (Date.now() < this.downUntil) return this.local.consume(key, points);
    try {
      const res = await this.shared.consume(key, points);
      if (this.downUntil > 0) {
        this.downUntil = 0;
        this.onChange(false);
      }
      return res;
    } catch (err) {
      if (err instanceof RateLimiterRes) throw err;
      if (this.downUntil === 0) this.onChange(true, err);
      this.downUntil = Date.now() + this.backoffMs;
      return this.local.consume(key, points);
    }
  }

  /** Gives points back, to the count that took them (the in-process one while Redis is down). */
  async reward(key: string, points: number): Promise<void> {
    const to = Date.now() < this.downUntil ? this.local : this.shared;
    await to.reward?.(key, points).catch(() => {});
  }
}

interface Verdict {
  limited: boolean;
  remaining: number;
  msBeforeNext: number;
}

interface Reservation {
  left: number;
  /** the shared count's remaining points when this batch was taken */
  remaining: number;
  until: number;
}

export class BatchedLimiter {
  private readonly held = new Map<string, Reservation>();
  /** a caller's shared-store call in flight (a batch taken on demand, or a refill) */
  private readonly taking = new Map<string, Promise<unknown>>();
  readonly batch: number;

  constructor(
    private readonly limiter: Consumer,
    perMinute: number,
  ) {
    this.batch = Math.max(1, Math.min(50, Math.floor(perMinute / 100)));
  }

  async consume(who: string, now = Date.now()): Promise<Verdict> {
    const r = this.held.get(who);
    if (r && r.left > 0 && now < r.until) {
      r.left--;
      // half a batch left and plenty in the shared count: take the next batch now, so requests
      // do not all stop for the shared store's round trip when this one runs out
      if (this.batch > 1 && r.left < this.batch / 2 && r.remaining >= 3 * this.batch && !this.taking.has(who))
        this.refill(who);
      return { limited: false, remaining: r.remaining + r.left, msBeforeNext: r.until - now };
    }
    // concurrent requests of one caller wait for one batch, then spend it
    const pending = this.taking.get(who);
    if (pending) {
      await pending.catch(() => {});
      return this.consume(who, Date.now());
    }
    const p = this.take(who, r);
    this.taking.set(who, p);
    try {
      return await p;
    } finally {
      this.taking.delete(who);
    }
  }

  private async take(who: string, last: Reservation | undefined): Promise<Verdict> {
    // a batch only while at least two batches are left (as last seen), else one point
    const n = this.batch > 1 && last && last.remaining >= 2 * this.batch ? this.batch : 1;
    let res: RateLimiterRes;
    try {
      res = await this.limiter.consume(who, n);
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) throw err;
      this.held.delete(who);
      return { limited: true, remaining: 0, msBeforeNext: err.msBeforeNext };
    }
    const now = Date.now();
    if (this.held.size > 10_000) this.held.clear();
    this.held.set(who, { left: n - 1, remaining: res.remainingPoints, until: now + res.msBeforeNext });
    return { limited: false, remaining: res.remainingPoints + n - 1, msBeforeNext: res.msBeforeNext };
  }

  /** Adds a batch to a reservation in the background; a refusal or an error adds nothing. */
  private refill(who: string): void {
    const n = this.batch;
    const p = this.limiter.consume(who, n).then(
      (res) => {
        const cur = this.held.get(who);
        const now = Date.now();
        // points left of an earlier window are void: the count went up, so the window restarted
        const carried = cur && now < cur.until && res.remainingPoints <= cur.remaining - n ? cur.left : 0;
        this.held.set(who, { left: carried + n, remaining: res.remainingPoints, until: now + res.msBeforeNext });
      },
      () => {},
    );
    this.taking.set(who, p);
    void p.finally(() => {
      if (this.taking.get(who) === p) this.taking.delete(who);
    });
  }
}

/**
 * The client's address: the TCP peer's, or behind `hops` proxies that each append the address
 * they saw to X-Forwarded-For, the one `hops` places from the right of [...forwarded, peer]. What
 * a client writes into the header itself stays on the left, so it cannot choose its counter.
 */
export function clientAddress(peer: string, forwarded: string | undefined, hops: number): string {
  if (hops === 0 || !forwarded) return peer;
  const chain = [
    ...forwarded
      .split(",")
      .map((a) => a.trim())
      .filter((a) => a !== ""),
    peer,
  ];
  return chain[Math.max(0, chain.length - 1 - hops)]!;
}

/**
 * The counter a keyless client's address counts against: an IPv6 address by its /64, the block
 * one host or subscriber is given (else each of its 2^64 addresses would get a limit of its own),
 * an IPv4-mapped one (`::ffff:1.2.3.4`, a dual-stack socket's IPv4 peer) as the IPv4 address;
 * anything else as it is.
 */
export function addressCounter(address: string): string {
  const zone = address.indexOf("%");
  const a = zone < 0 ? address : address.slice(0, zone);
  if (!isIPv6(a)) return address;
  const g = ipv6Groups(a);
  if (g.slice(0, 5).every((x) => x === 0) && g[5] === 0xffff) {
    return [g[6]! >> 8, g[6]! & 255, g[7]! >> 8, g[7]! & 255].join(".");
  }
  return `${g
    .slice(0, 4)
    .map((x) => x.toString(16))
    .join(":")}::/64`;
}

/** The counter of a request's client address (`clientAddress`, then `addressCounter`). */
export function requestAddress(c: Context, trustProxyHops: number): string {
  let peer = "unknown";
  try {
    peer = getConnInfo(c).remote.address ?? "unknown";
  } catch {
    // app.request() in tests has no socket
  }
  return addressCounter(clientAddress(peer, c.req.header("x-forwarded-for"), trustProxyHops));
}

/** The eight 16-bit groups of a valid IPv6 address (`::` expanded, a dotted IPv4 tail read). */
function ipv6Groups(a: string): number[] {
  let s = a;
  const lastColon = s.lastIndexOf(":");
  const tail = s.slice(lastColon + 1);
  if (isIPv4(tail)) {
    const [b0, b1, b2, b3] = tail.split(".").map(Number) as [number, number, number, number];
    s = `${s.slice(0, lastColon + 1)}${((b0 << 8) | b1).toString(16)}:${((b2 << 8) | b3).toString(16)}`;
  }
  const [head = "", rest] = s.split("::");
  const h = head === "" ? [] : head.split(":");
  const r = rest == null || rest === "" ? [] : rest.split(":");
  const groups = [...h, ...Array<string>(8 - h.length - r.length).fill("0"), ...r];
  return groups.map((x) => Number.parseInt(x, 16));
}

export interface RateLimitOptions {
  /** how many proxies in front append to X-Forwarded-For (`clientAddress`) */
  trustProxyHops?: number;
  log?: (msg: string) => void;
  /** the id of the key a request sends when it is genuine and not revoked, else null */
  keyId?: (c: Context<AppEnv>, key: string) => Promise<string | null>;
}

export function rateLimit(redis: Redis | null, perMinute: number, opts: RateLimitOptions = {}) {
  const { trustProxyHops = 0, log = () => {}, keyId } = opts;
  const memory = new RateLimiterMemory({ points: perMinute, duration: 60, keyPrefix: "api-rl" });
  const shared = redis
    ? new FailoverLimiter(
        new RateLimiterRedis({
          storeClient: redis,
          points: perMinute,
          duration: 60,
          keyPrefix: "vaults:api-rl",
          useRedisPackage: false,
        }),
        memory,
        (down, err) =>
          log(
            down
              ? `rate limits: Redis failed (${err instanceof Error ? err.message : String(err)}); counting in this ` +
                  `process, asking Redis again every ${REDIS_BACKOFF_MS / 1000} s`
              : "rate limits: Redis answers again; counting there",
          ),
      )
    : memory;
  const limiter = new BatchedLimiter(shared, perMinute);
  const policy = `${perMinute};w=60`;
  const limit = String(perMinute);
  // a genuine key's counter is named by its id (never by the key itself, which Redis must not hold)
  const keyCounter = async (c: Context<AppEnv>, key: string): Promise<string | null> => {
    if (!keyId) return null;
    try {
      const id = await keyId(c, key);
      return id == null ? null : `key:${id}`;
    } catch {
      return null; // the key table unreadable: the auth middleware answers; count by address
    }
  };
  return createMiddleware<AppEnv>(async (c, next) => {
    const key = c.req.header("x-api-key");
    let who = key ? await keyCounter(c, key) : null;
    who ??= `ip:${requestAddress(c, trustProxyHops)}`;
    const v = await limiter.consume(who);
    const reset = Math.max(0, Math.ceil(v.msBeforeNext / 1000));
    addResponseHeaders(c, {
      "ratelimit-policy": policy,
      "ratelimit-limit": limit,
      "ratelimit-remaining": String(Math.max(0, v.remaining)),
      "ratelimit-reset": String(reset),
    });
    if (v.limited) {
      addResponseHeaders(c, { "retry-after": String(reset) });
      return c.json({ detail: `Rate limit exceeded: ${perMinute} requests per minute; retry in ${reset} s` }, 429);
    }
    await next();
  });
}
