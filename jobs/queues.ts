/**
 * Every queue and job of the derived analytics, declared once: name, input and output schemas
 * (zod), retry policy. Job ids are deterministic (see ./fanout.ts), so adding a job that is
 * already queued does nothing.
 */

import type { JobsOptions } from "bullmq";
import { z } from "zod";
import { vaultKey } from "../db/batch.js";

const date = z.string().regex(/^\d{4}-\d{2}-\d{2}$/, "must be a YYYY-MM-DD date");
const address = z.string().regex(/^0x[0-9a-f]{40}$/, "must be a lower-case 0x address");

const range = z
  .object({ chainId: z.number().int().positive(), vault: address, from: date, to: date })
  .refine((d) => d.from <= d.to, "from must not be after to");

export const QUEUES = {
  fanout: {
    name: "fanout",
    input: z.object({ reason: z.enum(["schedule", "progress", "manual", "startup"]) }),
    output: z.object({
      runId: z.string().nullable(),
      vaults: z.number().int(),
      days: z.number().int(),
      rollupJobId: z.string().nullable(),
      skipped: z.boolean(),
    }),
    concurrency: 1,
  },
  vaultDays: {
    name: "vault-days",
    // a batch: one range of days per vault (see jobs/vault/job.ts); a job queued by an earlier
    // version, one vault's range, is read as a batch of one
    input: z.preprocess(
      (d) => (d != null && typeof d === "object" && !("ranges" in d) && "vault" in d ? { ranges: [d] } : d),
      z.object({
        ranges: z
          .array(range)
          .min(1, "a batch holds at least one range")
          .refine(
            (rs) => new Set(rs.map((r) => vaultKey({ chainId: r.chainId, address: r.vault }))).size === rs.length,
            "one range per vault",
          ),
      }),
    ),
    output: z.object({
      vaults: z.number().int(),
      days: z.number().int(),
      apyRows: z.number().int(),
      pnlRows: z.number().int(),
      indexRows: z.number().int(),
      positionRows: z.number().int(),
    }),
    concurrency: null, // WORKER_CONCURRENCY
  },
  pointsRollup: {
    name: "points-rollup",
    input: z.object({
      extrasHash: z.string().optional(),
      // the indexer checkpoints the run's fan-out read before its inputs (db/progress.ts)
      progress: z.array(z.object({ chainId: z.number().int(), block: z.number().int(), time: z.string() })).optional(),
    }),
    output: z.object({ rulesChanged: z.boolean() }),
    concurrency: 1,
  },
  portfolio: {
    name: "portfolio",
    // the subaccounts' portfolio data (registry.portfolio_cache) read at each chain's head, and
    // their valuation series (derived.subaccount_day)
    input: z.object({ reason: z.enum(["schedule", "startup", "manual"]) }),
    output: z.object({
      subaccounts: z.number().int(),
      chains: z.number().int(),
      skipped: z.array(z.string()),
      /** subaccount days (derived.subaccount_day) written */
      days: z.number().int(),
    }),
    concurrency: 1,
  },
} as const;

/**
 * A queue of an earlier version: its jobs may still sit in Redis after an upgrade, and the flows
 * they belong to wait for them. Their work is done by the vault-days batches now (which write the
 * summaries), so a worker completes them (jobs/runtime.ts).
 */
export const RETIRED_QUEUES = ["vault-summary"] as const;

export type QueueKey = keyof typeof QUEUES;
export type JobInput<K extends QueueKey> = z.infer<(typeof QUEUES)[K]["input"]>;
export type JobOutput<K extends QueueKey> = z.infer<(typeof QUEUES)[K]["output"]>;

/**
 * How long failed jobs stay visible: a week, and at most 5,000 of a queue (a fan-out per new
 * snapshot failing for a week, the database's schema wrong, would otherwise keep a hundred
 * thousand in Redis, which refuses writes when full).
 */
export const KEEP_FAILED = { age: 7 * 24 * 3600, count: 5000 } as const;

/** How long the scheduled runs (and the fan-outs the API asks for) stay visible once done. */
export const SCHEDULED_KEEP_COMPLETED = { age: 3600, count: 100 } as const;

/** Tries of a job before it fails, unless JOB_ATTEMPTS says otherwise (jobs/config.ts). */
export const DEFAULT_ATTEMPTS = 5;

/** Retries with exponential backoff; failed jobs kept as KEEP_FAILED says. */
export function jobOptions(attempts: number): JobsOptions {
  return {
    attempts,
    backoff: { type: "exponential", delay: 1000 },
    removeOnComplete: true,
    removeOnFail: KEEP_FAILED,
  };
}

/** BullMQ key prefix in Redis. */
export const PREFIX = "vaults";
