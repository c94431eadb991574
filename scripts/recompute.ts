/**
 * npm run recompute -- --vault <address> [--chain <id>] [--from <YYYY-MM-DD>] [--to <YYYY-MM-DD>]
 * npm run recompute -- --all
 *
 * Recomputes a range of days (default: the vault's first day to today) for one vault or all of
 * them, for fixing history after a formula change: vault-days jobs (one per vault and range;
 * ranges of up to 31 days of several vaults share a batch; each writes its vaults' summaries),
 * then the points rollup, through the same queues and flow as the fan-out. Runs its
 * own workers for the duration (so it works whether or not `npm run workers` is running).
 */
import { parseArgs } from "node:util";
import { Job, QueueEvents } from "bullmq";
import { jobsConfig } from "../jobs/config.js";
import { addFlow, buildFlow, extrasHash, type ChangedRange } from "../jobs/fanout.js";
import { dateToDay, dayToDate, today as wallToday } from "../jobs/lib/days.js";
import { PREFIX, QUEUES } from "../jobs/queues.js";
import { loadFirstDays, loadVaults, vaultKey } from "../jobs/repo.js";
import { openQueues, redisConnection, startWorkers } from "../jobs/runtime.js";
import { errMessage, installSignalHandlers, registerCleanup } from "./lib/procs.js";
import { resolveRedis } from "./lib/redis.js";

function fail(msg: string): never {
  console.error(`recompute: ${msg}`);
  console.error("usage: npm run recompute -- --vault <address> [--chain <id>] [--from <YYYY-MM-DD>] [--to <YYYY-MM-DD>] | --all");
  process.exit(2);
}

async function main(): Promise<void> {
  let args;
  try {
    args = parseArgs({
      options: { vault: { type: "string" }, chain: { type: "string" }, from: { type: "string" }, to: { type: "string" }, all: { type: "boolean" } },
      strict: true,
    }).values;
  } catch (err) {
    fail(errMessage(err));
  }
  if (!args.all && !args.vault) fail("give --vault <address> or --all");
  if (args.all && args.vault) fail("--all and --vault exclude each other");
  if (args.vault && !/^0x[0-9a-fA-F]{40}$/.test(args.vault)) fail(`--vault: "${args.vault}" is not a 0x-prefixed 20-byte address`);
  if (args.chain && !/^\d+$/.test(args.chain)) fail(`--chain: "${args.chain}" is not a chain id`);
  let from: number | null = null;
  let to: number | null = null;
  try {
    if (args.from) from = dateToDay(args.from);
    if (args.to) to = dateToDay(args.to);
  } catch (err) {
    fail(errMessage(err));
  }
  if (from != null && to != null && from > to) fail("--from is after --to");
  let cfg;
  try {
    cfg = jobsConfig(process.env);
  } catch (err) {
    fail(errMessage(err));
  }

  installSignalHandlers();
  const redis = await resolveRedis(process.env);
  const workers = await startWorkers({ ...cfg, redisUrl: redis.url }, () => {}, Date.now, { schedule: false });
  registerCleanup("workers", () => workers.close());
  const today = wallToday();
  const end = Math.min(to ?? today, today);

  const vaults = await loadVaults(workers.db, cfg.indexerSchema, cfg.registryPath);
  const firstDays = await loadFirstDays(workers.db, cfg.indexerSchema);
  const chosen = vaults.filter((v) => args.all || (v.address === args.vault!.toLowerCase() && (!args.chain || v.chainId === Number(args.chain))));
  if (chosen.length === 0) fail(`no indexed vault ${args.vault}${args.chain ? ` on chain ${args.chain}` : ""}`);
  const changes: ChangedRange[] = [];
  for (const v of chosen) {
    const first = firstDays.get(vaultKey(v));
    if (first == null) continue;
    const a = Math.max(from ?? first, first);
    if (a > end) continue;
    changes.push({ vault: { chainId: v.chainId, address: v.address }, from: a, to: end, fingerprints: new Map() });
  }
  if (changes.length === 0) fail("nothing to recompute in that range (before the vault's first snapshot or after today)");

  const t0 = Date.now();
  const plan = buildFlow(changes, cfg.attempts, await extrasHash(workers.db), `recompute-${t0}`);
  const q = openQueues(redis.url);
  const events = new QueueEvents(QUEUES.pointsRollup.name, { connection: redisConnection(redis.url), prefix: PREFIX });
  await events.waitUntilReady();
  const id = await addFlow(q.producer, plan);
  for (const c of changes) console.log(`recompute: chain ${c.vault.chainId} ${c.vault.address} ${dayToDate(c.from)}..${dayToDate(c.to)}`);
  const job = await Job.fromId(q.queues.pointsRollup, id);
  await job!.waitUntilFinished(events);
  const failed = await q.queues.vaultDays.getJobs(["failed"]);
  const ours = failed.filter((j) => j.id?.endsWith(plan.runId));
  await events.close();
  await q.close();
  if (ours.length > 0) {
    for (const j of ours) console.error(`recompute: ${j.id} failed: ${j.failedReason}`);
    process.exit(1);
  }
  console.log(`recompute: done, ${plan.days} vault-days in ${((Date.now() - t0) / 1000).toFixed(2)}s`);
  process.exit(0);
}

main().catch((err) => {
  console.error(`recompute failed: ${errMessage(err)}`);
  process.exit(1);
});
