/**
 * Limits on password checks (POST /api/v1/token), so a password cannot be guessed at speed and
 * scrypt cannot be used to exhaust the API's CPU and memory:
 *
 * - every attempt takes a point from its username's count (10 per 300 s) and from its client
 *   address's (100 per 300 s) before the password is hashed; a refused count answers 429 with
 *   Retry-After. A successful login gives its points back, so only failures use the budget.
 *   The counts live in Redis (shared by every API process), in this process while Redis fails
 *   (`FailoverLimiter`). A username's count is keyed by its SHA-256, never by the name itself.
 * - at most `running` checks hash at once (each takes 32 MiB and ~50–100 ms), `waiting` more
 *   queue; past that the attempt answers 503 with Retry-After: 1 and takes no point.
 */
import { createHash } from "node:crypto";
import type { Redis } from "ioredis";
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from "rate-limiter-flexible";
import { FailoverLimiter } from "../middleware/rate-limit.js";

export interface LoginLimits {
  /** attempts per username per `windowS` */
  perUser: number;
  /** attempts per client address per `windowS` */
  perAddress: number;
  windowS: number;
  /** password checks hashing at once */
  running: number;
  /** password checks waiting for one of the `running` slots */
  waiting: number;
}

export const LOGIN_LIMITS: LoginLimits = { perUser: 10, perAddress: 100, windowS: 300, running: 2, waiting: 16 };

export type Admission =
  | { ok: true; run<T>(check: () => Promise<T>): Promise<T>; succeeded(): Promise<void> }
  | { ok: false; status: 429 | 503; retryAfterS: number; detail: string };

/**
 * At most `running` tasks at once, `waiting` more queued (in order). A place is reserved
 * synchronously (`reserve`), so attempts admitted together cannot overfill the queue while
 * their counts are taken; `run` uses the reservation, `release` gives an unused one back.
 */
class Slots {
  private active = 0;
  private reserved = 0;
  private readonly queue: (() => void)[] = [];

  constructor(
    private readonly running: number,
    private readonly waiting: number,
  ) {}

  /** Takes a place to run or queue, or says there is none. */
  reserve(): boolean {
    if (this.active + this.queue.length + this.reserved >= this.running + this.waiting) return false;
    this.reserved++;
    return true;
  }

  release(): void {
    this.reserved--;
  }

  /** Runs a task on a place `reserve` took. */
  async run<T>(task: () => Promise<T>): Promise<T> {
    this.reserved--;
    if (this.active >= this.running) await new Promise<void>((resolve) => this.queue.push(resolve));
    else this.active++;
    try {
      return await task();
    } finally {
      const next = this.queue.shift();
      if (next) next();
      else this.active--;
    }
  }
}

export class LoginGuard {
  private readonly user: FailoverLimiter;
  private readonly address: FailoverLimiter;
  private readonly slots: Slots;

  constructor(
    redis: Redis | null,
    private readonly limits: LoginLimits = LOGIN_LIMITS,
    log: (msg: string) => void = () => {},
  ) {
    const counter = (name: string, points: number) => {
      const local = new RateLimiterMemory({ points, duration: limits.windowS, keyPrefix: `login-${name}` });
      const shared = redis
        ? new RateLimiterRedis({
            storeClient: redis,
            points,
            duration: limits.windowS,
            keyPrefix: `vaults:login-${name}`,
            useRedisPackage: false,
          })
        : local;
      return new FailoverLimiter(shared, local, (down, err) => {
        if (down) log(`login limits (${name}): Redis failed (${String(err)}); counting in this process`);
      });
    };
    this.user = counter("user", limits.perUser);
    this.address = counter("ip", limits.perAddress);
    this.slots = new Slots(limits.running, limits.waiting);
  }

  /**
   * Takes the attempt's points and a place among the checks, or says why it is refused (no
   * points taken on a 503). An admitted attempt must call `run` once, at once: the place is held
   * for it. Everything the check needs (the account's read too) belongs inside `run`.
   */
  async admit(username: string, address: string): Promise<Admission> {
    if (!this.slots.reserve())
      return { ok: false, status: 503, retryAfterS: 1, detail: "Too many logins in progress; retry in 1 s" };
    try {
      return await this.takePoints(username, address);
    } catch (err) {
      this.slots.release();
      throw err;
    }
  }

  private async takePoints(username: string, address: string): Promise<Admission> {
    const userKey = createHash("sha256").update(username).digest("base64url");
    const taken: [FailoverLimiter, string][] = [];
    for (const [limiter, key, what] of [
      [this.user, userKey, `for this username: ${this.limits.perUser}`],
      [this.address, address, `from this address: ${this.limits.perAddress}`],
    ] as const) {
      try {
        await limiter.consume(key);
        taken.push([limiter, key]);
      } catch (err) {
        if (!(err instanceof RateLimiterRes)) throw err;
        const retryAfterS = Math.max(1, Math.ceil(err.msBeforeNext / 1000));
        const detail = `Too many login attempts ${what} per ${this.limits.windowS} s; retry in ${retryAfterS} s`;
        this.slots.release();
        return { ok: false, status: 429, retryAfterS, detail };
      }
    }
    return {
      ok: true,
      run: (check) => this.slots.run(check),
      succeeded: async () => {
        await Promise.all(taken.map(([limiter, key]) => limiter.reward(key, 1)));
      },
    };
  }
}
