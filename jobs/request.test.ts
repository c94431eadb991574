/**
 * fanoutRequester: requests within two seconds share one fan-out job, but only while it has not
 * started (a running or finished run may have read the inputs before the write). BullMQ and
 * Redis are replaced by a queue that keeps its jobs' states and, like BullMQ, ignores an add
 * with the id of a job it holds.
 */
import { afterEach, beforeEach, describe, expect, it, vi } from "vitest";

const jobs = new Map<string, { state: string }>();
const added: string[] = [];

vi.mock("ioredis", () => ({
  Redis: class {
    on() {
      return this;
    }
    disconnect() {}
  },
}));

vi.mock("bullmq", () => ({
  Queue: class {
    on() {
      return this;
    }
    async getJob(id: string) {
      const j = jobs.get(id);
      return j ? { id, getState: async () => j.state } : undefined;
    }
    async add(_name: string, _data: unknown, opts: { jobId: string }) {
      added.push(opts.jobId);
      if (!jobs.has(opts.jobId)) jobs.set(opts.jobId, { state: "delayed" });
    }
    async close() {}
  },
}));

const { fanoutRequester } = await import("./request.js");

const T = 1_800_000_000_000;
const bucket = `fanout-write-${Math.floor(T / 2000)}`;

beforeEach(() => {
  jobs.clear();
  added.length = 0;
  vi.spyOn(Date, "now").mockReturnValue(T);
});
afterEach(() => vi.restoreAllMocks());

describe("fanoutRequester", () => {
  it("requests within one two-second bucket share the job while it has not started", async () => {
    const r = fanoutRequester("redis://127.0.0.1:1");
    await r.request();
    await r.request();
    jobs.get(bucket)!.state = "waiting";
    await r.request();
    expect(added).toEqual([bucket, bucket, bucket]);
    expect([...jobs.keys()]).toEqual([bucket]);
    await r.close();
  });

  it("a request after the bucket's job started or finished queues another job, shared in turn", async () => {
    const r = fanoutRequester("redis://127.0.0.1:1");
    await r.request();
    jobs.get(bucket)!.state = "active";
    await r.request();
    await r.request();
    expect([...jobs.keys()]).toEqual([bucket, `${bucket}-1`]);
    jobs.get(bucket)!.state = "completed";
    jobs.get(`${bucket}-1`)!.state = "failed";
    await r.request();
    expect([...jobs.keys()]).toEqual([bucket, `${bucket}-1`, `${bucket}-2`]);
    expect(jobs.get(`${bucket}-2`)!.state).toBe("delayed");
    await r.close();
  });

  it("the next bucket starts afresh", async () => {
    const r = fanoutRequester("redis://127.0.0.1:1");
    await r.request();
    jobs.get(bucket)!.state = "completed";
    vi.spyOn(Date, "now").mockReturnValue(T + 2000);
    await r.request();
    expect(added).toEqual([bucket, `fanout-write-${Math.floor(T / 2000) + 1}`]);
    await r.close();
  });
});
