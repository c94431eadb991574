/**
 * closeWorker against a real redis-server: a worker whose Redis connections were just dropped
 * (CLIENT KILL, as a Redis restart or a network blip does) closes within its bound, every time.
 * `Worker.close()` alone hung forever in most of these rounds (BullMQ #4656).
 */
import { mkdtempSync, rmSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { Queue, Worker } from "bullmq";
import { Redis } from "ioredis";
import { afterAll, beforeAll, expect, it } from "vitest";
import { ensureRedisServer, type RedisInstance, startRedis } from "../scripts/lib/redis.js";
import { closeWorker } from "./worker-close.js";

const PORT = 63788 + Number(process.env.TEST_PORT_OFFSET ?? 0);
const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
let dir: string;
let redis: RedisInstance;

beforeAll(async () => {
  await ensureRedisServer(() => {});
  dir = mkdtempSync(join(tmpdir(), "worker-close-"));
  redis = await startRedis({ port: PORT, dataDir: dir, logFile: join(dir, "redis.log") });
}, 600_000);

afterAll(async () => {
  await redis?.stop();
  rmSync(dir, { recursive: true, force: true });
});

it("a worker closes within its bound right after its connections were dropped", async () => {
  const lines: string[] = [];
  for (let round = 0; round < 12; round++) {
    const connection = new Redis(redis.url, { maxRetriesPerRequest: null });
    connection.on("error", () => {});
    const queue = new Queue("close-test", { connection, prefix: "t" });
    queue.on("error", () => {});
    const worker = new Worker("close-test", async () => sleep(20), { connection, prefix: "t", concurrency: 1 });
    worker.on("error", () => {});
    await queue.upsertJobScheduler("s", { every: 200 }, { name: "close-test", data: {} });
    await sleep(300);
    const killer = new Redis(redis.url);
    await killer.call("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes");
    killer.disconnect();
    await sleep(round * 10); // into the reconnect delay, at a different point each round
    const started = Date.now();
    await closeWorker(worker, 4000, (l) => lines.push(`round ${round}: ${l}`));
    expect(Date.now() - started, `round ${round}`).toBeLessThan(3000);
    await queue.close();
    connection.disconnect();
  }
  expect(lines).toEqual([]);
}, 120_000);
