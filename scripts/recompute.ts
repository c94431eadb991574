/** Recomputes the derived tables over a range of days: `npm run recompute -- --help`. */
import { dateToDay, dayToDate, today as wallToday } from "../db/days.js";
import type { JobsConfig } from "../jobs/config.js";
import type { ChangedRange } from "../jobs/fanout.js";
import { type Command, HELP_OPTION, parseCommandLine, refuse } from "./lib/cli.js";
import { errMessage, installSignalHandlers, registerCleanup, stopAll } from "./lib/procs.js";

/** how often a progress line is printed while the jobs run */
const PROGRESS_EVERY_MS = 5000;

const CMD: Command = {
  name: "recompute",
  usage:
    "usage: npm run recompute -- --vault <address> [--chain <id>] [--from <YYYY-MM-DD>] [--to <YYYY-MM-DD>]\n" +
    "       | --all [--from <YYYY-MM-DD>] [--to <YYYY-MM-DD>]",
  help: `
Recomputes a range of days of the derived tables (default: each vault's first day to today) for
one vault (on every chain it is indexed on, or on --chain) or for all of them, e.g. after a
formula change: vault-days jobs (one per vault and range; ranges of up to 31 days of several
vaults share a batch; each writes its vaults' summaries), then the points rollup, through the same
queues and flow as the workers' fan-out. It runs workers of its own for the duration, so it works
whether or not npm run workers is running. Every ${PROGRESS_EVERY_MS / 1000} s it prints how many jobs are done; at the
end, a summary.

Environment: as npm run workers (README, Configuration): DATABASE_URL (required), REDIS_URL
(unset: a local redis-server on 127.0.0.1:63790, started if needed), INDEXER_SCHEMA, VAULT_REGISTRY,
WORKER_CONCURRENCY, JOB_ATTEMPTS, the POINTS_* rules. Exit 1 if any job failed.`,
};

async function main(): Promise<void> {
  const args = parseCommandLine(CMD, {
    options: {
      ...HELP_OPTION,
      vault: { type: "string" },
      chain: { type: "string" },
      from: { type: "string" },
      to: { type: "string" },
      all: { type: "boolean" },
    },
  }).values;
  if (!args.all && !args.vault) refuse(CMD, "give --vault <address> or --all");
  if (args.all && args.vault) refuse(CMD, "--all and --vault exclude each other");
  if (args.all && args.chain !== undefined) refuse(CMD, "--chain goes with --vault (--all recomputes every chain)");
  if (args.vault && !/^0x[0-9a-fA-F]{40}$/.test(args.vault)) {
    refuse(CMD, `--vault: "${args.vault}" is not a 0x-prefixed 20-byte address`);
  }
  if (args.chain !== undefined && !/^\d+$/.test(args.chain)) refuse(CMD, `--chain: "${args.chain}" is not a chain id`);
  let from: number | null = null;
  let to: number | null = null;
  const day = (flag: "--from" | "--to", text: string) => {
    try {
      return dateToDay(text);
    } catch (err) {
      return refuse(CMD, `${flag}: ${errMessage(err)}`);
    }
  };
  if (args.from) from = day("--from", args.from);
  if (args.to) to = day("--to", args.to);
  if (from != null && to != null && from > to) refuse(CMD, "--from is after --to");
  // loaded after the command line, the jobs' modules after the settings: --help and refusals load nothing else
  const { jobsConfig } = await import("../jobs/config.js");
  let cfg: JobsConfig;
  try {
    cfg = jobsConfig(process.env);
  } catch (err) {
    refuse(CMD, errMessage(err));
  }
  const [
    { Job, QueueEvents },
    { vaultKey },
    { addFlow, buildFlow, extrasHash },
    { PREFIX, QUEUES },
    { loadFirstDays, loadVaultMetas },
    { openQueues, redisConnection, startWorkers },
    { logRpcUrlFailures, useRpcUrlLists },
    { resolveRedis },
  ] = await Promise.all([
    import("bullmq"),
    import("../db/batch.js"),
    import("../jobs/fanout.js"),
    import("../jobs/queues.js"),
    import("../jobs/repo.js"),
    import("../jobs/runtime.js"),
    import("../onchain/rpc-fetch.js"),
    import("./lib/redis.js"),
  ]);
  useRpcUrlLists(cfg.rpcUrlLists);
  logRpcUrlFailures((line) => console.warn(line));

  installSignalHandlers();
  const redis = await resolveRedis(process.env);
  const workers = await startWorkers({ ...cfg, redisUrl: redis.url }, () => {}, Date.now, { schedule: false });
  registerCleanup("workers", () => workers.close());
  // the workers may hold jobs of other runs on these queues: closed (their jobs finished) first
  const exit = async (code: number): Promise<never> => {
    await stopAll();
    process.exit(code);
  };
  const refuseRunning = async (msg: string): Promise<never> => {
    await stopAll();
    return refuse(CMD, msg);
  };
  const today = wallToday();
  const end = Math.min(to ?? today, today);

  const vaults = await loadVaultMetas(workers.db, cfg.indexerSchema, cfg.registryPath);
  const firstDays = await loadFirstDays(workers.db, cfg.indexerSchema);
  const chosen = vaults.filter(
    (v) =>
      args.all ||
      (v.address === args.vault!.toLowerCase() && (args.chain === undefined || v.chainId === Number(args.chain))),
  );
  if (chosen.length === 0)
    await refuseRunning(`no indexed vault ${args.vault}${args.chain ? ` on chain ${args.chain}` : ""}`);
  const changes: ChangedRange[] = [];
  for (const v of chosen) {
    const first = firstDays.get(vaultKey(v));
    if (first == null) continue;
    const a = Math.max(from ?? first, first);
    if (a > end) continue;
    changes.push({ vault: { chainId: v.chainId, address: v.address }, from: a, to: end, fingerprints: new Map() });
  }
  if (changes.length === 0) {
    await refuseRunning("nothing to recompute in that range (before the vault's first snapshot or after today)");
  }

  const t0 = Date.now();
  const plan = buildFlow(changes, cfg.attempts, await extrasHash(workers.db), `recompute-${t0}`);
  const q = openQueues(redis.url);
  const events = new QueueEvents(QUEUES.pointsRollup.name, { connection: redisConnection(redis.url), prefix: PREFIX });
  await events.waitUntilReady();
  const id = await addFlow(q.producer, plan);
  for (const c of changes)
    console.log(`recompute: chain ${c.vault.chainId} ${c.vault.address} ${dayToDate(c.from)}..${dayToDate(c.to)}`);
  const total = plan.flow.children?.length ?? 0;
  console.log(`recompute: ${plan.days} vault-days in ${total} vault-days job(s), then the points rollup`);
  const job = (await Job.fromId(q.queues.pointsRollup, id))!;
  const elapsed = () => `${((Date.now() - t0) / 1000).toFixed(1)}s`;
  const progress = async () => {
    const c = await job.getDependenciesCount({ processed: true, ignored: true, failed: true });
    const failedJobs = (c.ignored ?? 0) + (c.failed ?? 0);
    const done = (c.processed ?? 0) + failedJobs;
    const state = done < total ? "" : (await job.isCompleted()) ? "; points rollup done" : "; points rollup running";
    const failures = failedJobs ? ` (${failedJobs} failed)` : "";
    console.log(`recompute: ${done}/${total} vault-days jobs done${failures}${state} (${elapsed()})`);
  };
  const timer = setInterval(() => progress().catch(() => {}), PROGRESS_EVERY_MS);
  try {
    await job.waitUntilFinished(events);
  } finally {
    clearInterval(timer);
  }
  const failed = await q.queues.vaultDays.getJobs(["failed"]);
  const ours = failed.filter((j) => j.id?.endsWith(plan.runId));
  await events.close();
  await q.close();
  if (ours.length > 0) {
    for (const j of ours) console.error(`recompute: ${j.id} failed: ${j.failedReason}`);
    console.error(`recompute: ${ours.length} of ${total} vault-days job(s) failed after their retries (${elapsed()})`);
    await exit(1);
  }
  console.log(`recompute: done, ${plan.days} vault-days in ${total} job(s) and the points rollup in ${elapsed()}`);
  await exit(0);
}

main().catch(async (err) => {
  console.error(`recompute failed: ${errMessage(err)}`);
  await stopAll();
  process.exit(1);
});
