/**
 * npm run workers: the BullMQ workers of the derived analytics. Reads DATABASE_URL, REDIS_URL
 * (without it a local redis-server is started on 127.0.0.1:63790), INDEXER_SCHEMA, the
 * POINTS_* rules, METRICS_PORT/METRICS_HOST and PONDER_RPC_URL_<chainId> (README). Applies the
 * derived/registry migrations, serves Prometheus metrics, then runs until stopped.
 */
import { jobsConfig } from "../jobs/config.js";
import { jobsMetrics, serveMetrics } from "../jobs/metrics.js";
import { startWorkers } from "../jobs/runtime.js";
import { errMessage, installSignalHandlers, registerCleanup } from "./lib/procs.js";
import { resolveRedis } from "./lib/redis.js";

async function main(): Promise<void> {
  let cfg;
  try {
    cfg = jobsConfig(process.env);
  } catch (err) {
    console.error(errMessage(err));
    process.exit(2);
  }
  installSignalHandlers();
  const redis = await resolveRedis(process.env);
  const handle = await startWorkers({ ...cfg, redisUrl: redis.url });
  registerCleanup("workers", () => handle.close());
  if (cfg.metrics.port !== 0) {
    const registry = jobsMetrics(handle, { indexerSchema: cfg.indexerSchema, rpcUrls: cfg.rpcUrls });
    const log = (line: string) => console.log(`[jobs] ${line}`);
    const server = await serveMetrics(registry, cfg.metrics.port, cfg.metrics.host, log);
    if (server) registerCleanup("workers metrics", () => server.close());
  }
  console.log(`[jobs] workers running (redis ${redis.url.replace(/\/\/[^@]*@/, "//***@")}, concurrency ${cfg.concurrency})`);
}

main().catch((err) => {
  console.error(`workers failed: ${errMessage(err)}`);
  process.exit(1);
});
