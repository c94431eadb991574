/**
 * Fan-out: finds per vault the days whose inputs changed since they were computed (chained
 * fingerprints, see repo.ts) and queues one vault-days job per changed day, a vault-summary
 * job per changed vault once its days are done, and a points-rollup once every vault is done
 * (one BullMQ flow). A range that changed on day X is recomputed from X to today: every later
 * day's figures (APY windows, inception, balances) depend on it.
 */
import { createHash } from "node:crypto";
import { FlowProducer, type FlowJob } from "bullmq";
import { sql } from "kysely";
import type { PointsRules } from "./points/compute.js";
import { QUEUES, jobOptions } from "./queues.js";
import {
  chainFingerprints,
  loadDayHashes,
  loadFirstDays,
  loadRewards,
  loadStoredFingerprints,
  loadVaults,
  vaultKey,
  type Db,
  type VaultRef,
} from "./repo.js";
import { dayToDate } from "./lib/days.js";
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
  const [vaults, firstDays, hashes, rewards, stored] = await Promise.all([
    loadVaults(db, indexerSchema, registryPath),
    loadFirstDays(db, indexerSchema),
    loadDayHashes(db, indexerSchema, undefined, windowStart),
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
      else dayHashes = (await loadDayHashes(db, indexerSchema, meta)).get(key) ?? new Map();
    } else if (windowStart != null) {
      dayHashes = (await loadDayHashes(db, indexerSchema, meta)).get(key) ?? new Map();
    }
    const fps = chainFingerprints(
      { meta, firstDay, dayHashes, rewards: rewards.get(key), rulesKey: rulesKey(rules) },
      today,
      seed,
    );
    // without a seed in a windowed check, compare against every stored day of this vault
    const compare = seed || windowStart == null ? have : ((await loadStoredFingerprints(db, meta)).get(key) ?? new Map<number, string>());
    let from: number | null = null;
    for (let d = seed ? seed.day + 1 : firstDay; d <= today; d++) {
      if (compare.get(d) !== fps.get(d)) {
        from = d;
        break;
      }
    }
    if (from != null) out.push({ vault: { chainId: meta.chainId, address: meta.address }, from, to: today, fingerprints: fps });
  }
  return out;
}

/** A hash of the registry inputs of the rollup that no vault day depends on. */
export async function extrasHash(db: Db): Promise<string> {
  const { rows } = await sql<{ h: string }>`
    SELECT md5(
      coalesce((SELECT string_agg(address || ':' || day || ':' || points, ',' ORDER BY address, day) FROM registry.streak_claim), '') || '|' ||
      coalesce((SELECT string_agg(id || ':' || points || ':' || wallet, ',' ORDER BY id) FROM registry.manual_points), '') || '|' ||
      coalesce((SELECT string_agg(address || ':' || signup_bonus, ',' ORDER BY address) FROM registry.points_user), '')
    ) AS h`.execute(db);
  return rows[0]!.h;
}

export interface FlowPlan {
  runId: string;
  flow: FlowJob;
  days: number;
}

/**
 * The flow for a set of changed ranges: vault-days jobs -> vault summaries -> one points rollup.
 * One vault-days job per vault and changed range: a vault's position rows depend on each other,
 * so its days are computed together.
 */
export function buildFlow(changes: readonly ChangedRange[], attempts: number, extras: string, salt = ""): FlowPlan {
  const runId = createHash("md5")
    .update(JSON.stringify(changes.map((c) => [vaultKey(c.vault), c.from, c.to, c.fingerprints.get(c.to)])) + extras + salt)
    .digest("hex")
    .slice(0, 16);
  const opts = jobOptions(attempts);
  let days = 0;
  const child = { ...opts, ignoreDependencyOnFailure: true };
  const flow: FlowJob = {
    name: QUEUES.pointsRollup.name,
    queueName: QUEUES.pointsRollup.name,
    data: { extrasHash: extras },
    opts: { ...opts, jobId: `rollup-${runId}`, removeOnComplete: { age: 3600, count: 100 } },
    children: changes.map((c) => {
      const { chainId, address } = c.vault;
      days += c.to - c.from + 1;
      return {
        name: QUEUES.vaultSummary.name,
        queueName: QUEUES.vaultSummary.name,
        data: { chainId, vault: address },
        opts: { ...child, jobId: `summary-${chainId}-${address}-${runId}` },
        children: [
          {
            name: QUEUES.vaultDays.name,
            queueName: QUEUES.vaultDays.name,
            data: { chainId, vault: address, from: dayToDate(c.from), to: dayToDate(c.to) },
            opts: { ...child, jobId: `days-${chainId}-${address}-${dayToDate(c.from)}-${dayToDate(c.to)}-${(c.fingerprints.get(c.to) ?? "").slice(0, 12)}-${runId}` },
          },
        ],
      };
    }),
  };
  return { runId, flow, days };
}

export async function addFlow(producer: FlowProducer, plan: FlowPlan): Promise<string> {
  const node = await producer.add(plan.flow);
  return node.job.id!;
}
