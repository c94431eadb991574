/**
 * Worker processes and the clients that drive them. `startWorkers` runs every queue's worker,
 * the fan-out schedule (upsertJobScheduler) and a watcher that queues a fan-out when the
 * indexer makes progress; `settle` asks for fan-outs until nothing is left to compute.
 */
import { FlowProducer, Job, type Processor, Queue, QueueEvents, Worker } from "bullmq";
import { Redis } from "ioredis";
import { sql } from "kysely";
import type pg from "pg";
import { indexedVaults } from "../db/batch.js";
import { createDb, createPool, migrateToLatest } from "../db/client.js";
import { dateToDay, today as wallToday } from "../db/days.js";
import { type ChainCheckpoint, fromJson, readCheckpoints, toJson } from "../db/progress.js";
import type { JobsConfig } from "./config.js";
import { addFlow, buildFlow, extrasHash, planChanges } from "./fanout.js";
import { writePointsRules } from "./points/rules-write.js";
import { passError, portfolioPass } from "./portfolio/pass.js";
import { recordProgress } from "./progress-write.js";
import {
  type JobInput,
  jobOptions,
  KEEP_FAILED,
  PREFIX,
  QUEUES,
  type QueueKey,
  RETIRED_QUEUES,
  SCHEDULED_KEEP_COMPLETED,
} from "./queues.js";
import type { Db } from "./repo.js";
import { runVaultDays } from "./vault/job.js";
import { closeWorker } from "./worker-close.js";

export type Log = (line: string) => void;
const defaultLog: Log = (line) => process.stdout.write(`[jobs] ${line}\n`);

export function redisConnection(url: string): Redis {
  return new Redis(url, { maxRetriesPerRequest: null, enableReadyCheck: true });
}

export interface Queues {
  connection: Redis;
  queues: { [K in QueueKey]: Queue };
  producer: FlowProducer;
  close(): Promise<void>;
}

export function openQueues(redisUrl: string): Queues {
  const connection = redisConnection(redisUrl);
  connection.on("error", () => {}); // reconnects by itself; callers see failed commands
  const queues = Object.fromEntries(
    (Object.keys(QUEUES) as QueueKey[]).map((k) => [k, new Queue(QUEUES[k].name, { connection, prefix: PREFIX })]),
  ) as { [K in QueueKey]: Queue };
  for (const q of Object.values(queues)) q.on("error", () => {});
  const producer = new FlowProducer({ connection, prefix: PREFIX });
  producer.on("error", () => {});
  return {
    connection,
    queues,
    producer,
    async close() {
      await producer.close();
      await Promise.all(Object.values(queues).map((q) => q.close()));
      connection.disconnect();
    },
  };
}

export interface WorkerHandle {
  pool: pg.Pool;
  db: Db;
  /** the queues and workers of this process (jobs/metrics.ts reads and observes them) */
  queues: Queues;
  workers: Worker[];
  close(): Promise<void>;
}

const EXTRAS_KEY = `${PREFIX}:rollup-extras`;
const FULL_KEY = `${PREFIX}:fanout-full-at`;
const FULL_WANTED_KEY = `${PREFIX}:fanout-full-wanted`;

export interface WorkerOptions {
  /** declare the fan-out schedule and watch indexer progress (default true); off for one-off runs */
  schedule?: boolean;
}

export async function startWorkers(
  cfg: JobsConfig & { redisUrl: string },
  log: Log = defaultLog,
  now: () => number = Date.now,
  opts: WorkerOptions = {},
): Promise<WorkerHandle> {
  const scheduled = opts.schedule ?? true;
  const pool = createPool(cfg.databaseUrl, cfg.concurrency + 4);
  const db = createDb(pool);
  const applied = await migrateToLatest(db);
  if (applied.length > 0) log(`migrations applied: ${applied.join(", ")}`);
  const q = openQueues(cfg.redisUrl);
  const ctx = {
    db,
    pool,
    indexerSchema: cfg.indexerSchema,
    registryPath: cfg.registryPath,
    rules: cfg.points,
    faultHoldMs: cfg.faultHoldMs,
  };

  function processor<K extends QueueKey>(key: K, run: (data: never, job: Job) => Promise<unknown>): Processor {
    return async (job) => {
      const parsed = QUEUES[key].input.safeParse(job.data);
      if (!parsed.success)
        throw new Error(`bad ${QUEUES[key].name} input: ${parsed.error.issues.map((i) => i.message).join("; ")}`);
      return QUEUES[key].output.parse(await run(parsed.data as never, job));
    };
  }

  const fanout = processor("fanout", async (d: { reason: string }) => {
    const counts = await q.queues.pointsRollup.getJobCounts(
      "waiting",
      "waiting-children",
      "active",
      "delayed",
      "prioritized",
    );
    if (Object.values(counts).some((n) => n > 0)) {
      // a full comparison asked for while a run is in flight is made by the run after it
      if (d.reason === "manual") await q.connection.set(FULL_WANTED_KEY, "1");
      return { runId: null, vaults: 0, days: 0, rollupJobId: null, skipped: true };
    }
    const today = wallToday(now());
    // Schedule and progress runs compare the last days; a full comparison of every day runs on
    // start-up, when asked (settle, recompute, the API after a write; also when asked while a run
    // was in flight), and at most every FANOUT_FULL_EVERY_S.
    const lastFull = Number((await q.connection.get(FULL_KEY)) ?? 0);
    const wanted = (await q.connection.get(FULL_WANTED_KEY)) != null;
    const full = d.reason === "manual" || d.reason === "startup" || wanted || now() - lastFull >= cfg.fullCheckEveryMs;
    // What the indexer had reached before the inputs are read: the derived tables are computed
    // from at least this once the run is done (none before the indexer's views exist).
    const seen: ChainCheckpoint[] = await readCheckpoints(db, cfg.indexerSchema).catch(() => []);
    const changes = await planChanges(
      db,
      cfg.indexerSchema,
      cfg.registryPath,
      cfg.points,
      today,
      full ? undefined : cfg.recentDays,
    );
    if (full) await q.connection.multi().set(FULL_KEY, String(now())).del(FULL_WANTED_KEY).exec();
    const extras = await extrasHash(db);
    if (changes.length === 0 && extras === (await q.connection.get(EXTRAS_KEY))) {
      await recordProgress(db, seen, new Date(now()), null);
      return { runId: null, vaults: 0, days: 0, rollupJobId: null, skipped: false };
    }
    const plan = buildFlow(changes, cfg.attempts, extras);
    plan.flow.data = { ...plan.flow.data, progress: toJson(seen) };
    const rollupJobId = await addFlow(q.producer, plan);
    log(`fan-out ${plan.runId}: ${changes.length} vaults, ${plan.days} vault-days`);
    return { runId: plan.runId, vaults: changes.length, days: plan.days, rollupJobId, skipped: false };
  });
  const vaultDays = processor(
    "vaultDays",
    async (d: { ranges: { chainId: number; vault: string; from: string; to: string }[] }) =>
      runVaultDays(
        ctx,
        d.ranges.map((r) => ({
          vault: { chainId: r.chainId, address: r.vault },
          from: dateToDay(r.from),
          to: dateToDay(r.to),
        })),
      ),
  );
  const rollup = processor("pointsRollup", async (d: JobInput<"pointsRollup">, job) => {
    const out = { rulesChanged: await writePointsRules(db, cfg.points) };
    if (d.extrasHash) await q.connection.set(EXTRAS_KEY, d.extrasHash);
    if (d.progress) {
      // A batch that failed for good left its days behind: the next fan-out computes them, and
      // only then are the derived tables up to these checkpoints.
      const failed = Object.keys(await job.getIgnoredChildrenFailures()).length;
      const runId = (job.id ?? "").replace(/^rollup-/, "");
      if (failed === 0) await recordProgress(db, fromJson(d.progress), new Date(now()), runId);
      else log(`rollup ${job.id}: ${failed} batches failed, progress not recorded`);
    }
    // Changes that arrived while this run was in flight are picked up at once.
    if (scheduled)
      await q.queues.fanout.add(
        QUEUES.fanout.name,
        { reason: "progress" },
        { ...jobOptions(cfg.attempts), jobId: `fanout-after-${job.id}`, removeOnComplete: { age: 3600 } },
      );
    return out;
  });

  // the subaccounts: their portfolio data now, and their valuation series up to today; the
  // lending vaults' days from their last one, and whole at a process's first run and as often as
  // the fan-out's full check (a reindexed history is then caught)
  let lendingFullAt: number | null = null;
  const portfolio = processor("portfolio", async () => {
    const at = now();
    const whole = lendingFullAt == null || at - lendingFullAt >= cfg.fullCheckEveryMs;
    // each step whatever the others do: a chain that does not answer holds back only the steps
    // that read it (portfolio/pass.ts); the job then fails and is retried
    const pass = await portfolioPass(db, cfg, whole);
    if (whole && pass.lendingVaultDays !== null) lendingFullAt = at;
    if (pass.failed.length > 0) throw passError(pass.failed);
    return { ...pass.portfolio!, days: pass.series!.days, lendingVaultDays: pass.lendingVaultDays! };
  });

  const workerOpts = (concurrency: number) => ({
    connection: q.connection,
    prefix: PREFIX,
    concurrency,
    lockDuration: cfg.lockMs,
    stalledInterval: cfg.lockMs,
  });
  const workers = [
    ...RETIRED_QUEUES.map((name) => new Worker(name, async () => ({ retired: true }), workerOpts(1))),
    new Worker(QUEUES.fanout.name, fanout, workerOpts(1)),
    new Worker(QUEUES.vaultDays.name, vaultDays, workerOpts(cfg.concurrency)),
    new Worker(QUEUES.pointsRollup.name, rollup, workerOpts(1)),
    new Worker(QUEUES.portfolio.name, portfolio, workerOpts(1)),
  ];
  for (const w of workers) {
    w.on("failed", (job, err) =>
      log(`${w.name} job ${job?.id ?? "?"} failed (attempt ${job?.attemptsMade ?? "?"}): ${err.message}`),
    );
    w.on("error", (err) => log(`${w.name} worker error: ${err.message}`));
  }

  // The schedule, (re)declared whenever Redis comes (back) up: a Redis that lost its data gets
  // it again, and a fan-out catches up with everything indexed meanwhile.
  const declare = async () => {
    await q.queues.fanout.upsertJobScheduler(
      "fanout-schedule",
      { every: cfg.fanoutEveryMs },
      {
        name: QUEUES.fanout.name,
        data: { reason: "schedule" },
        opts: { removeOnComplete: SCHEDULED_KEEP_COMPLETED, removeOnFail: KEEP_FAILED },
      },
    );
    await q.queues.fanout.add(
      QUEUES.fanout.name,
      { reason: "startup" },
      {
        ...jobOptions(cfg.attempts),
        jobId: `fanout-startup-${Date.now()}`,
        removeOnComplete: SCHEDULED_KEEP_COMPLETED,
      },
    );
    await q.queues.portfolio.upsertJobScheduler(
      "portfolio-schedule",
      { every: cfg.portfolioEveryMs },
      {
        name: QUEUES.portfolio.name,
        data: { reason: "schedule" },
        opts: { removeOnComplete: SCHEDULED_KEEP_COMPLETED, removeOnFail: KEEP_FAILED },
      },
    );
    await q.queues.portfolio.add(
      QUEUES.portfolio.name,
      { reason: "startup" },
      // retried, and a failed one kept a week, not for good (BullMQ's default)
      {
        ...jobOptions(cfg.attempts),
        jobId: `portfolio-startup-${Date.now()}`,
        removeOnComplete: SCHEDULED_KEEP_COMPLETED,
      },
    );
  };
  if (scheduled) await declare();
  let first = true;
  q.connection.on("ready", () => {
    if (first) {
      first = false;
      return;
    }
    if (!scheduled) return;
    log("redis is back: re-declaring the schedule and catching up");
    declare().catch((err: Error) => log(`cannot re-declare the schedule: ${err.message}`));
  });
  first = q.connection.status !== "ready";

  // Indexer progress: a fan-out when the newest indexed block changes.
  let lastProgress = "";
  let polling = false;
  const poll = setInterval(async () => {
    if (polling || !scheduled) return;
    polling = true;
    try {
      // each vault's newest snapshot through the (chain_id, vault, timestamp) index, the vaults
      // found by skipping along it: a max() over the table scanned months of snapshots every tick
      const snap = sql.id(cfg.indexerSchema, "share_ratio_snapshot");
      const { rows } = await sql<{ p: string | null }>`
        WITH RECURSIVE ${indexedVaults("v", snap)}
        SELECT string_agg(chain_id || ':' || b, ',' ORDER BY chain_id) AS p FROM (
          SELECT v.chain_id, max(l.block_number) AS b FROM v CROSS JOIN LATERAL (
            SELECT s.block_number FROM ${snap} s
            WHERE s.chain_id = v.chain_id AND s.vault = v.vault ORDER BY s.timestamp DESC LIMIT 1) l
          GROUP BY v.chain_id) x`.execute(db);
      const p = rows[0]?.p ?? "";
      if (p !== lastProgress) {
        await q.queues.fanout.add(
          QUEUES.fanout.name,
          { reason: "progress" },
          {
            // retried like every job (a database blip must not leave it failed, and the failed
            // count raised, for good)
            ...jobOptions(cfg.attempts),
            jobId: `fanout-progress-${Buffer.from(p).toString("base64url").slice(0, 80)}`,
            removeOnComplete: { age: 3600 },
          },
        );
        lastProgress = p;
      }
    } catch {
      // Postgres or Redis unavailable: the next tick tries again.
    } finally {
      polling = false;
    }
  }, cfg.progressPollMs);

  return {
    pool,
    db,
    queues: q,
    workers,
    async close() {
      clearInterval(poll);
      await Promise.all(workers.map((w) => closeWorker(w, 8000, log)));
      await q.close();
      await db.destroy();
    },
  };
}

/**
 * Asks for fan-outs until one finds nothing to compute, waiting for each run's points rollup:
 * when it returns, every derived table reflects what was indexed when it was called.
 */
export async function settle(redisUrl: string, timeoutMs = 600_000, log: Log = () => {}): Promise<{ runs: number }> {
  const q = openQueues(redisUrl);
  // QueueEvents does not close a connection it was handed: these two are closed below.
  const conns = [redisConnection(redisUrl), redisConnection(redisUrl)];
  for (const c of conns) c.on("error", () => {});
  const events = new QueueEvents(QUEUES.fanout.name, { connection: conns[0]!, prefix: PREFIX });
  const rollupEvents = new QueueEvents(QUEUES.pointsRollup.name, { connection: conns[1]!, prefix: PREFIX });
  const deadline = Date.now() + timeoutMs;
  let runs = 0;
  try {
    await Promise.all([events.waitUntilReady(), rollupEvents.waitUntilReady()]);
    for (;;) {
      if (Date.now() > deadline) throw new Error(`derived tables not settled after ${timeoutMs / 1000}s`);
      const job = await q.queues.fanout.add(
        QUEUES.fanout.name,
        { reason: "manual" },
        {
          jobId: `fanout-manual-${Date.now()}-${Math.random().toString(36).slice(2, 8)}`,
          removeOnComplete: { age: 3600 },
          removeOnFail: KEEP_FAILED,
        },
      );
      const out = QUEUES.fanout.output.parse(
        await job.waitUntilFinished(events, Math.max(1000, deadline - Date.now())),
      );
      if (out.skipped) {
        // A run is in flight: wait for it.
        for (const j of await q.queues.pointsRollup.getJobs([
          "waiting",
          "waiting-children",
          "active",
          "delayed",
          "prioritized",
        ])) {
          await j.waitUntilFinished(rollupEvents, Math.max(1000, deadline - Date.now())).catch(() => {});
        }
        await new Promise((r) => setTimeout(r, 200));
        continue;
      }
      if (!out.rollupJobId) return { runs };
      runs++;
      log(`run ${out.runId}: ${out.vaults} vaults, ${out.days} vault-days`);
      const rollup = await Job.fromId(q.queues.pointsRollup, out.rollupJobId);
      if (rollup) await rollup.waitUntilFinished(rollupEvents, Math.max(1000, deadline - Date.now()));
    }
  } finally {
    await events.close();
    await rollupEvents.close();
    for (const c of conns) c.disconnect();
    await q.close();
  }
}
