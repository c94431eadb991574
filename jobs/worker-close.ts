/**
 * Closing a BullMQ worker without hanging. `Worker.close()` waits for its blocking Redis client
 * to end, and a client closed while it waits to reconnect (after a dropped connection) never
 * ends: ioredis clears the retry, has no socket to close and emits no `end` (BullMQ issue
 * #4656). So a worker whose blocking client is reconnecting is given up to half of `ms` to be
 * connected again before it is closed. A close still waiting at `ms` (a job still running, or
 * Redis away) is given up and said so: the process's own stop ends the rest, and a job cut short
 * is run again by the next worker once its lock expires.
 */
import { once } from "node:events";
import type { Worker } from "bullmq";
import type { Redis } from "ioredis";

const sleep = (ms: number) => new Promise<"late">((resolve) => setTimeout(() => resolve("late"), ms).unref());

/** The worker's blocking client, where this BullMQ version keeps it (undefined elsewhere). */
async function blockingClient(worker: Worker): Promise<Redis | undefined> {
  const internal = worker as unknown as { backend?: { blockingConnection?: { client?: Promise<Redis> } } };
  const client = internal.backend?.blockingConnection?.client;
  if (!client) return undefined;
  const c = await Promise.race([client, sleep(100)]);
  return c === "late" ? undefined : c;
}

/** Closes `worker`, waiting at most about `ms` in all. */
export async function closeWorker(worker: Worker, ms: number, log: (line: string) => void): Promise<void> {
  const start = Date.now();
  const blocking = await blockingClient(worker);
  if (blocking && (blocking.status === "reconnecting" || blocking.status === "connecting")) {
    await Promise.race([once(blocking, "ready"), sleep(ms / 2)]).catch(() => {});
  }
  const closed = worker.close().then(
    () => "closed" as const,
    (err: Error) => {
      log(`worker ${worker.name}: close failed: ${err.message}`);
      return "closed" as const;
    },
  );
  if ((await Promise.race([closed, sleep(Math.max(ms - (Date.now() - start), ms / 4))])) === "late") {
    log(`worker ${worker.name} did not close within ${ms} ms (a job still running, or Redis away): left`);
  }
}
