/**
 * Rate limits per API key (else per client address), counted in Redis so every API process
 * shares them (rate-limiter-flexible), reported in the IETF draft headers `RateLimit-Policy`,
 * `RateLimit-Limit`, `RateLimit-Remaining`, `RateLimit-Reset`; 429 with a JSON body past the
 * limit. If Redis is unreachable, an in-process limiter takes over (insurance) instead of
 * failing requests.
 */
import { createHash } from "node:crypto";
import { getConnInfo } from "@hono/node-server/conninfo";
import { createMiddleware } from "hono/factory";
import type { Redis } from "ioredis";
import { RateLimiterMemory, RateLimiterRedis, RateLimiterRes } from "rate-limiter-flexible";
import type { AppEnv } from "../lib/router.js";

export function rateLimit(redis: Redis | null, perMinute: number) {
  const memory = new RateLimiterMemory({ points: perMinute, duration: 60, keyPrefix: "api-rl" });
  const limiter = redis
    ? new RateLimiterRedis({ storeClient: redis, points: perMinute, duration: 60, keyPrefix: "vaults:api-rl", insuranceLimiter: memory, useRedisPackage: false })
    : memory;
  return createMiddleware<AppEnv>(async (c, next) => {
    const key = c.req.header("x-api-key");
    let who: string;
    if (key) who = `key:${createHash("sha256").update(key).digest("hex").slice(0, 32)}`;
    else {
      let addr = "unknown";
      try {
        addr = getConnInfo(c).remote.address ?? "unknown";
      } catch {
        // app.request() in tests has no socket
      }
      who = `ip:${addr}`;
    }
    let res: RateLimiterRes;
    let limited = false;
    try {
      res = await limiter.consume(who, 1);
    } catch (err) {
      if (!(err instanceof RateLimiterRes)) throw err;
      res = err;
      limited = true;
    }
    const reset = Math.max(0, Math.ceil(res.msBeforeNext / 1000));
    const headers = {
      "RateLimit-Policy": `${perMinute};w=60`,
      "RateLimit-Limit": String(perMinute),
      "RateLimit-Remaining": String(Math.max(0, res.remainingPoints)),
      "RateLimit-Reset": String(reset),
    };
    if (limited) {
      return c.json({ detail: `Rate limit exceeded: ${perMinute} requests per minute; retry in ${reset} s` }, 429, { ...headers, "Retry-After": String(reset) });
    }
    await next();
    for (const [k, v] of Object.entries(headers)) c.res.headers.set(k, v);
  });
}
