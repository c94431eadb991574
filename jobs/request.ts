/**
 * For processes that change the inputs of the derived tables (the API's write routes): ask the
 * workers for a fan-out. Requests within the same two seconds share one job (its id), queued
 * half a second late so a burst of writes is seen by one run; the run compares every day.
 */
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { PREFIX, QUEUES } from "./queues.js";

export interface FanoutRequester {
  request(): Promise<void>;
  close(): Promise<void>;
}

export function fanoutRequester(redisUrl: string): FanoutRequester {
  const connection = new Redis(redisUrl, { maxRetriesPerRequest: 1, enableOfflineQueue: false });
  connection.on("error", () => {}); // reconnects by itself; a failed request is retried by the schedule
  const queue = new Queue(QUEUES.fanout.name, { connection, prefix: PREFIX });
  queue.on("error", () => {});
  return {
    async request() {
      const input = QUEUES.fanout.input.parse({ reason: "manual" });
      await queue.add(QUEUES.fanout.name, input, {
        jobId: `fanout-write-${Math.floor(Date.now() / 2000)}`,
        delay: 500,
        removeOnComplete: { age: 3600 },
        removeOnFail: { age: 24 * 3600 },
      });
    },
    async close() {
      await queue.close();
      connection.disconnect();
    },
  };
}
