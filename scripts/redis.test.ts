/** A real redis-server for BullMQ: start, check its configuration, stop, restart; REDIS_URL handling. */
import { mkdtempSync, rmSync } from "node:fs";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { isPortOpen, stopAll } from "./lib/procs.js";
import { ensureRedisServer, keepRedisRunning, type RedisInstance, resolveRedis, startRedis } from "./lib/redis.js";

const PORT = 63795;
const PORT_LOCAL = 63796;
const lines: string[] = [];
const log = (l: string) => lines.push(l);
let dir: string;

async function query(url: string, ...args: string[]): Promise<unknown> {
  const client = new Redis(url, { lazyConnect: true, maxRetriesPerRequest: 0, retryStrategy: () => null, protocol: 2 });
  client.on("error", () => {});
  try {
    await client.connect();
    return await client.call(args[0]!, args.slice(1));
  } finally {
    client.disconnect();
  }
}

beforeAll(async () => {
  dir = mkdtempSync(join(tmpdir(), "redis-test-"));
  // Installs the Debian package on first use (root + apt-get), else finds the binary.
  await ensureRedisServer((l) => console.log(`[redis] ${l}`));
}, 600_000);

afterAll(async () => {
  await stopAll();
  rmSync(dir, { recursive: true, force: true });
});

describe("startRedis", () => {
  let redis: RedisInstance;

  it("starts a redis-server that answers PING with maxmemory-policy noeviction and no persistence", async () => {
    redis = await startRedis({ port: PORT, dataDir: join(dir, "data"), logFile: join(dir, "redis.log"), log });
    expect(redis.url).toBe(`redis://127.0.0.1:${PORT}`);
    expect(redis.reused).toBe(false);
    expect(await query(redis.url, "PING")).toBe("PONG");
    expect(await query(redis.url, "CONFIG", "GET", "maxmemory-policy")).toEqual(["maxmemory-policy", "noeviction"]);
    expect(await query(redis.url, "CONFIG", "GET", "save")).toEqual(["save", ""]);
    expect(await query(redis.url, "CONFIG", "GET", "appendonly")).toEqual(["appendonly", "no"]);
  }, 30_000);

  it("refuses a port held by another Redis unless reuseExisting", async () => {
    await expect(startRedis({ port: PORT, dataDir: join(dir, "data"), log })).rejects.toThrow(
      /in use by another Redis \(set REDIS_URL to use it\)/,
    );
    const again = await startRedis({ port: PORT, dataDir: join(dir, "data"), reuseExisting: true, log });
    expect(again).toMatchObject({ url: redis.url, reused: true, process: undefined });
    await again.stop(); // no-op: not ours
    expect(await query(redis.url, "PING")).toBe("PONG");
  }, 30_000);

  it("replaces a Redis an earlier run left in its data dir, refuses one in another dir", async () => {
    await query(redis.url, "SET", "cursor", "stale");
    await expect(
      startRedis({ port: PORT, dataDir: join(dir, "elsewhere"), replaceLeftover: true, log }),
    ).rejects.toThrow(/in use by another Redis/);
    expect(await query(redis.url, "GET", "cursor")).toBe("stale");
    const leftPid = redis.process!.pid;
    lines.length = 0;
    redis = await startRedis({ port: PORT, dataDir: join(dir, "data"), replaceLeftover: true, log });
    expect(redis.reused).toBe(false);
    expect(redis.process!.pid).not.toBe(leftPid);
    expect(lines.join("\n")).toMatch(/shutting down the Redis an earlier run left/);
    expect(await query(redis.url, "GET", "cursor")).toBeNull();
  }, 30_000);

  it("refuses a port held by something that is not a Redis", async () => {
    const srv = createServer((s) => s.resume().end("HTTP/1.1 400 Bad Request\r\n\r\n"));
    await new Promise<void>((r) => srv.listen(PORT + 10, "127.0.0.1", () => r()));
    try {
      await expect(
        startRedis({ port: PORT + 10, dataDir: join(dir, "other"), reuseExisting: true, log }),
      ).rejects.toThrow(/already in use/);
    } finally {
      await new Promise<void>((r) => srv.close(() => r()));
    }
  });

  it("stops (port closed) and starts again on the same port and data dir (outage simulation)", async () => {
    await query(redis.url, "SET", "k", "v");
    await redis.stop();
    expect(await isPortOpen("127.0.0.1", PORT)).toBe(false);
    await expect(query(redis.url, "PING")).rejects.toThrow();

    redis = await startRedis({ port: PORT, dataDir: join(dir, "data"), log });
    expect(await query(redis.url, "PING")).toBe("PONG");
    expect(await query(redis.url, "GET", "k")).toBeNull(); // no persistence
    await redis.stop();
    expect(await isPortOpen("127.0.0.1", PORT)).toBe(false);
  }, 30_000);
});

describe("resolveRedis", () => {
  it("rejects a REDIS_URL that is not redis:// or rediss://", async () => {
    await expect(resolveRedis({ REDIS_URL: "http://x" }, { log })).rejects.toThrow(
      /REDIS_URL must be a redis:\/\/ or rediss:\/\/ URL.*http:\/\/x/,
    );
    await expect(resolveRedis({ REDIS_URL: "not a url" }, { log })).rejects.toThrow(/REDIS_URL is not a valid URL/);
  });

  it("reports an unreachable REDIS_URL readably", async () => {
    await expect(resolveRedis({ REDIS_URL: "redis://:secret@127.0.0.1:1" }, { log })).rejects.toThrow(
      /Redis at REDIS_URL redis:\/\/:\*\*\*@127\.0\.0\.1:1 does not answer/,
    );
  });

  it("without REDIS_URL, shares the local Redis another process started; starts one when none runs", async () => {
    const r = await startRedis({ port: PORT, dataDir: join(dir, "data"), log });
    try {
      const shared = await resolveRedis({}, { port: PORT, dataDir: join(dir, "data"), log });
      expect(shared).toMatchObject({ url: r.url, external: false });
      if (!shared.external) await shared.stop(); // leaves the other process's Redis running
      expect(await query(r.url, "PING")).toBe("PONG");
      // the demo's own: refused, not shared
      await expect(
        resolveRedis({}, { port: PORT, dataDir: join(dir, "data"), log, reuseExisting: false }),
      ).rejects.toThrow(/in use by another Redis/);
    } finally {
      await r.stop();
    }
    const own = await resolveRedis({}, { port: PORT, dataDir: join(dir, "data"), log });
    expect(await query(own.url, "PING")).toBe("PONG");
    if (!own.external) await own.stop();
    expect(await isPortOpen("127.0.0.1", PORT)).toBe(false);
  }, 30_000);

  it("uses REDIS_URL when set, warning when its policy is not noeviction", async () => {
    const r = await startRedis({ port: PORT, dataDir: join(dir, "data"), log });
    try {
      lines.length = 0;
      expect(await resolveRedis({ REDIS_URL: r.url }, { log })).toEqual({ url: r.url, external: true });
      expect(lines.filter((l) => l.includes("warning"))).toEqual([]);

      await query(r.url, "CONFIG", "SET", "maxmemory-policy", "allkeys-lru");
      expect(await resolveRedis({ REDIS_URL: r.url }, { log })).toMatchObject({ external: true });
      expect(lines.join("\n")).toMatch(/warning: .* maxmemory-policy "allkeys-lru"; BullMQ needs "noeviction"/);
    } finally {
      await r.stop();
    }
  }, 30_000);

  it("starts its own redis-server without REDIS_URL", async () => {
    const r = await resolveRedis({}, { port: PORT_LOCAL, dataDir: join(dir, "local"), log });
    expect(r).toMatchObject({ url: `redis://127.0.0.1:${PORT_LOCAL}`, external: false });
    try {
      expect(await query(r.url, "PING")).toBe("PONG");
    } finally {
      if (!r.external) await r.stop();
    }
    expect(await isPortOpen("127.0.0.1", PORT_LOCAL)).toBe(false);
  }, 30_000);
});

describe("keepRunning", () => {
  const pid = async (url: string) => Number(/process_id:(\d+)/.exec(String(await query(url, "INFO", "server")))![1]);

  it("starts a killed redis-server again on its port; stop() ends it for good", async () => {
    lines.length = 0;
    const r = await resolveRedis({}, { port: PORT_LOCAL, dataDir: join(dir, "kept"), log, keepRunning: true });
    if (r.external) throw new Error("expected a local Redis");
    try {
      const first = await pid(r.url);
      await query(r.url, "SET", "k", "v");
      process.kill(first, "SIGKILL");
      const started = Date.now();
      while (!lines.some((l) => l.includes("is back")) && Date.now() - started < 15_000) {
        await new Promise((res) => setTimeout(res, 100));
      }
      expect(lines.join("\n")).toMatch(/exited \(signal SIGKILL\); starting it again/);
      expect(lines.join("\n")).toMatch(/is back \(pid \d+; restart 1\)/);
      expect(await pid(r.url)).not.toBe(first);
      // a fresh server: persistence is off, so what the killed one held is gone
      expect(await query(r.url, "GET", "k")).toBeNull();
    } finally {
      await r.stop();
    }
    // stopped on purpose: closed, and nothing comes back
    await new Promise((res) => setTimeout(res, 1500));
    expect(await isPortOpen("127.0.0.1", PORT_LOCAL)).toBe(false);
    expect(lines.filter((l) => l.includes("starting it again"))).toHaveLength(1);
  }, 30_000);

  it("leaves one stopped through its process, as stopAll and a shutdown stop it, stopped", async () => {
    lines.length = 0;
    const opts = { port: PORT_LOCAL, dataDir: join(dir, "kept"), log };
    const r = await startRedis(opts);
    const kept = keepRedisRunning(r, opts);
    await r.process!.stop();
    await new Promise((res) => setTimeout(res, 1500));
    expect(await isPortOpen("127.0.0.1", PORT_LOCAL)).toBe(false);
    expect(kept.restarts()).toBe(0);
    expect(lines.join("\n")).not.toMatch(/starting it again/);
    await kept.stop();
  }, 30_000);

  it("stopped while it waits to start again, it stops at once", async () => {
    lines.length = 0;
    const r = await resolveRedis({}, { port: PORT_LOCAL, dataDir: join(dir, "kept"), log, keepRunning: true });
    if (r.external) throw new Error("expected a local Redis");
    process.kill(await pid(r.url), "SIGKILL");
    while (!lines.some((l) => l.includes("starting it again"))) await new Promise((res) => setTimeout(res, 20));
    const asked = Date.now();
    await r.stop();
    expect(Date.now() - asked).toBeLessThan(500);
    await new Promise((res) => setTimeout(res, 1500));
    expect(await isPortOpen("127.0.0.1", PORT_LOCAL)).toBe(false);
    expect(lines.join("\n")).not.toMatch(/is back/);
  }, 30_000);
});
