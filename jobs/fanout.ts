/**
 * Fan-out: finds per vault the days whose inputs changed since they were computed (chained
 * fingerprints, see repo.ts) and queues vault-days batches (the changed range of each vault; each
 * also writes its vaults' summaries) and a points-rollup once every batch is done (one BullMQ
 * flow). A range that changed on day X is recomputed from X to today: every later
 * day's figures (APY windows, inception, balances) depend on it.
 */
import { createHash } from "node:crypto";
import type { FlowJob, FlowProducer } from "bullmq";
import { sql } from "kysely";
import { type VaultRef, vaultKey } from "../db/batch.js";
import { dayToDate } from "../db/days.js";
import type { PointsRules } from "./points/compute.js";
import { jobOptions, QUEUES, SCHEDULED_KEEP_COMPLETED } from "./queues.js";
import {
  chainFingerprints,
  type Db,
  loadBlocksOn,
  loadDayHashes,
  loadFirstDays,
  loadRewards,
  loadStoredFingerprints,
  loadVaultMetas,
} from "./repo.js";
import { rulesKey } from "./vault/job.js";

export interface ChangedRange {
  vault: VaultRef;
  from: number;
  to: number;
  fingerprints: Map<number, string>;
}

/**
 * Vaults with days to (re)compute, and from which day. A full check hashes every day of every
 * vault; a windowed one (`recentDays`) hashes only the last days and continues each vault's
 * chain from its stored fingerprint of the day before the window, which is what changes between
 * two scheduled runs (new blocks, reorgs of recent blocks). Vaults without that stored day
 * (new ones) get a full check of their own.
 */
export async function planChanges(
  db: Db,
  indexerSchema: string,
  registryPath: string | undefined,
  rules: PointsRules,
  today: number,
  recentDays?: number,
): Promise<ChangedRange[]> {
  const windowStart = recentDays != null ? today - recentDays + 1 : undefined;
  // A windowed check hashes each vault's rows from the window's first day, reading its transfers
  // from the block of its last stored snapshot before the window (an index bound; 0 without one).
  const scope: Parameters<typeof loadDayHashes>[2] =
    windowStart != null
      ? {
          vaults: (await loadBlocksOn(db, windowStart - 1)).map(({ v, block }) => ({
            v,
            fromDay: windowStart,
            fromBlock: block,
          })),
        }
      : {};
  const [vaults, firstDays, hashes, rewards, stored] = await Promise.all([
    loadVaultMetas(db, indexerSchema, registryPath),
    loadFirstDays(db, indexerSchema),
    loadDayHashes(db, indexerSchema, scope),
    loadRewards(db),
    loadStoredFingerprints(db, undefined, windowStart != null ? windowStart - 1 : undefined),
  ]);
  const out: ChangedRange[] = [];
  for (const meta of vaults) {
    const key = vaultKey(meta);
    const firstDay = firstDays.get(key);
    if (firstDay == null || firstDay > today) continue;
    const have = stored.get(key) ?? new Map<number, string>();
    let dayHashes = hashes.get(key) ?? new Map<number, string>();
    let seed: { day: number; fingerprint: string } | undefined;
    if (windowStart != null && windowStart - 1 >= firstDay) {
      const fp = have.get(windowStart - 1);
      if (fp) seed = { day: windowStart - 1, fingerprint: fp };
      else
        dayHashes =
          (await loadDayHashes(db, indexerSchema, { vaults: [{ v: meta, fromDay: 0 }] })).get(key) ?? new Map();
    } else if (windowStart != null) {
      dayHashes = (await loadDayHashes(db, indexerSchema, { vaults: [{ v: meta, fromDay: 0 }] })).get(key) ?? new Map();
    }
    const fps = chainFingerprints(
      { meta, firstDay, dayHashes, rewards: rewards.get(key), rulesKey: rulesKey(rules) },
      today,
      seed,
    );
    // without a seed in a windowed check, compare against every stored day of this vault
    const compare =
      seed || windowStart == null
        ? have
        : ((await loadStoredFingerprints(db, meta)).get(key) ?? new Map<number, string>());
    let from: number | null = null;
    for (let d = seed ? seed.day + 1 : firstDay; d <= today; d++) {
      if (compare.get(d) !== fps.get(d)) {
        from = d;
        break;
      }
    }
    if (from != null)
      out.push({ vault: { chainId: meta.chainId, address: meta.address }, from, to: today, fingerprints: fps });
  }
  return out;
}

/** A hash of the registry inputs of the rollup that no vault day depends on. */
export async function extrasHash(db: Db): Promise<string> {
  const { rows } = await sql<{ h: string }>`
    SELECT md5(
      coalesce((SELECT string_agg(address || ':' || day || ':' || points, ',' ORDER BY address, day)
        FROM registry.streak_claim), '') || '|' ||
      coalesce((SELECT string_agg(id || ':' || points || ':' || wallet, ',' ORDER BY id) FROM registry.manual_points),
        '') || '|' ||
      coalesce((SELECT string_agg(address || ':' || signup_bonus, ',' ORDER BY address) FROM registry.points_user), '')
    ) AS h`.execute(db);
  return rows[0]!.h;
}

export interface FlowPlan {
  runId: string;
  flow: FlowJob;
  days: number;
}

/** A range of at most this many days is batched with other vaults' (an ordinary day's work). */
export const SHORT_RANGE_DAYS = 31;
/** Vaults per batch of short ranges: two batches of an ordinary day run side by side at concurrency 2. */
export const BATCH_VAULTS = 50;

/**
 * The flow for a set of changed ranges: vault-days batches (which write their vaults' summaries
 * too) -> one points rollup. A vault's days are computed together (its position rows depend on each other),
 * in one range; short ranges of many vaults share a batch (one read per kind of input and one
 * COPY per table for all of them), a long one (a first run, a recompute) has a batch of its own.
 */
export function buildFlow(
  changes: readonly ChangedRange[],
  attempts: number,
  extras: string,
  salt = "",
  batchVaults = BATCH_VAULTS,
): FlowPlan {
  const runId = createHash("md5")
    .update(
      JSON.stringify(changes.map((c) => [vaultKey(c.vault), c.from, c.to, c.fingerprints.get(c.to)])) + extras + salt,
    )
    .digest("hex")
    .slice(0, 16);
  const opts = jobOptions(attempts);
  const child = { ...opts, ignoreDependencyOnFailure: true };
  const isShort = (c: ChangedRange) => c.to - c.from + 1 <= SHORT_RANGE_DAYS;
  const short = changes.filter(isShort);
  const batches: ChangedRange[][] = [];
  for (let k = 0; k < short.length; k += batchVaults) batches.push(short.slice(k, k + batchVaults));
  for (const c of changes) if (!isShort(c)) batches.push([c]);
  const days = changes.reduce((n, c) => n + c.to - c.from + 1, 0);
  const flow: FlowJob = {
    name: QUEUES.pointsRollup.name,
    queueName: QUEUES.pointsRollup.name,
    data: { extrasHash: extras },
    opts: { ...opts, jobId: `rollup-${runId}`, removeOnComplete: SCHEDULED_KEEP_COMPLETED },
    children: batches.map((batch) => {
      // the batch's id names its content: the same ranges over the same inputs are the same job
      const id = createHash("md5")
        .update(JSON.stringify(batch.map((c) => [vaultKey(c.vault), c.from, c.to, c.fingerprints.get(c.to) ?? ""])))
        .digest("hex")
        .slice(0, 16);
      const first = batch[0]!;
      const label =
        batch.length === 1
          ? `${first.vault.chainId}-${first.vault.address}-${dayToDate(first.from)}-${dayToDate(first.to)}`
          : `${batch.length}-vaults`;
      return {
        name: QUEUES.vaultDays.name,
        queueName: QUEUES.vaultDays.name,
        data: {
          ranges: batch.map((c) => ({
            chainId: c.vault.chainId,
            vault: c.vault.address,
            from: dayToDate(c.from),
            to: dayToDate(c.to),
          })),
        },
        opts: { ...child, jobId: `days-${label}-${id}-${runId}` },
      };
    }),
  };
  return { runId, flow, days };
}

export async function addFlow(producer: FlowProducer, plan: FlowPlan): Promise<string> {
  const node = await producer.add(plan.flow);
  return node.job.id!;
}
