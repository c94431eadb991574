/**
 * npm run workers: the BullMQ workers of the derived analytics. Reads DATABASE_URL, REDIS_URL
 * (without it a local redis-server is started on 127.0.0.1:63790), INDEXER_SCHEMA, the
 * POINTS_* rules, METRICS_PORT/METRICS_HOST and PONDER_RPC_URL_<chainId> (README). Applies the
 * derived/registry migrations, serves Prometheus metrics, then runs until stopped.
 */
import type { JobsConfig } from "../jobs/config.js";
import { type Command, HELP_OPTION, parseCommandLine } from "./lib/cli.js";
import { errMessage, installSignalHandlers, registerCleanup } from "./lib/procs.js";

const CMD: Command = {
  name: "workers",
  usage: "usage: npm run workers   (settings from the environment; no arguments)",
  help: `
The BullMQ workers of the derived analytics: they apply the derived/registry migrations, declare
the fan-out schedule and compute the derived tables from the indexer's views until stopped
(Ctrl-C). Any number of processes may run; they share the queues.

Environment (every setting with its default: .env.example, and the README's Configuration):
  DATABASE_URL         required: the database holding the indexer views
  REDIS_URL            redis:// or rediss://; unset: a local redis-server on 127.0.0.1:63790
                       (started, and installed with apt-get, if missing)
  INDEXER_SCHEMA       the views schema the jobs read (default indexer)
  WORKER_CONCURRENCY, FANOUT_EVERY_S, PROGRESS_POLL_S, FANOUT_RECENT_DAYS, FANOUT_FULL_EVERY_S,
  JOB_ATTEMPTS, WORKER_LOCK_MS, VAULT_REGISTRY, POINTS_PER_USD_PER_DAY, POINTS_REFERRAL_SHARE
  METRICS_PORT, METRICS_HOST  Prometheus metrics at /metrics (default 127.0.0.1:9464; port 0: off)
  PONDER_RPC_URL_<chainId>    optional: the metrics then report the indexer's lag behind the head
A bad value stops the workers with a message naming it (exit 2).`,
};

async function main(): Promise<void> {
  parseCommandLine(CMD, { options: { ...HELP_OPTION } });
  // loaded after the command line, the workers after their settings: --help and refusals load nothing else
  const { jobsConfig } = await import("../jobs/config.js");
  let cfg: JobsConfig;
  try {
    cfg = jobsConfig(process.env);
  } catch (err) {
    console.error(errMessage(err));
    process.exit(2);
  }
  const [{ jobsMetrics, serveMetrics }, { startWorkers }, { logRpcUrlFailures, useRpcUrlLists }, { resolveRedis }] =
    await Promise.all([
      import("../jobs/metrics.js"),
      import("../jobs/runtime.js"),
      import("../onchain/rpc-fetch.js"),
      import("./lib/redis.js"),
    ]);
  useRpcUrlLists(cfg.rpcUrlLists);
  logRpcUrlFailures((line) => console.warn(`[jobs] ${line}`));
  installSignalHandlers();
  const redis = await resolveRedis(process.env, { keepRunning: true });
  const handle = await startWorkers({ ...cfg, redisUrl: redis.url });
  registerCleanup("workers", () => handle.close());
  if (cfg.metrics.port !== 0) {
    const registry = jobsMetrics(handle, { indexerSchema: cfg.indexerSchema, rpcUrls: cfg.rpcUrls });
    const log = (line: string) => console.log(`[jobs] ${line}`);
    const server = await serveMetrics(registry, cfg.metrics.port, cfg.metrics.host, log);
    if (server) registerCleanup("workers metrics", () => server.close());
  }
  console.log(
    `[jobs] workers running (redis ${redis.url.replace(/\/\/[^@]*@/, "//***@")}, concurrency ${cfg.concurrency})`,
  );
}

main().catch((err) => {
  console.error(`workers failed: ${errMessage(err)}`);
  process.exit(1);
});
