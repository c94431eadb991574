/**
 * For processes that change the inputs of the derived tables (the API's write routes): ask the
 * workers for a fan-out. Requests within the same two seconds share one job (its id), queued
 * half a second late so a burst of writes is seen by one run; the run compares every day. A job
 * is shared only while it has not started: one that is running or done may have read the inputs
 * before the write, so a request then queues a job of its own.
 */
import { randomUUID } from "node:crypto";
import { Queue } from "bullmq";
import { Redis } from "ioredis";
import { DEFAULT_ATTEMPTS, jobOptions, PREFIX, QUEUES, SCHEDULED_KEEP_COMPLETED } from "./queues.js";

const NOT_STARTED = new Set(["delayed", "waiting", "prioritized"]);

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
      // BullMQ ignores an add with the id of a job it still holds, in whatever state: the first id
      // of the bucket whose job has not started (or is gone) is the one to share
      const bucket = `fanout-write-${Math.floor(Date.now() / 2000)}`;
      let jobId = `${bucket}-${randomUUID()}`;
      for (let n = 0; n < 20; n++) {
        const id = n === 0 ? bucket : `${bucket}-${n}`;
        const job = await queue.getJob(id);
        if (!job || NOT_STARTED.has(await job.getState())) {
          jobId = id;
          break;
        }
      }
      // retried as the workers' own jobs are, and kept as the schedule's runs are: BullMQ trims a
      // queue's lists by the options of the job that just ended, so other ones would cut theirs
      await queue.add(QUEUES.fanout.name, input, {
        ...jobOptions(DEFAULT_ATTEMPTS),
        jobId,
        delay: 500,
        removeOnComplete: SCHEDULED_KEEP_COMPLETED,
      });
    },
    async close() {
      await queue.close();
      connection.disconnect();
    },
  };
}
