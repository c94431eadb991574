/** The workers' settings, from the environment, parsed and checked once at start-up. */
import { z } from "zod";
import { decimal, envNum, envPostgresUrl, envRedisUrl, parseEnv } from "../config/env.js";
import { primaryUrls, rpcUrlsFromEnv } from "../config/rpc-urls.js";
import { parseFixed } from "../db/fixed.js";
import { DEFAULT_READ_LANES } from "./in-turn.js";
import { DEFAULT_ATTEMPTS } from "./queues.js";

const schema = z.object({
  DATABASE_URL: envPostgresUrl("the database holding the indexer views"),
  REDIS_URL: envRedisUrl,
  INDEXER_SCHEMA: z
    .string()
    .regex(/^[a-z_][a-z0-9_]*$/, "must be a plain schema name")
    .default("indexer"),
  VAULT_REGISTRY: z.string().optional(),
  WORKER_CONCURRENCY: envNum((n) => n.int().min(1).max(64)).default(2),
  FANOUT_EVERY_S: envNum((n) => n.int().min(1).max(86_400)).default(60),
  PROGRESS_POLL_S: envNum((n) => n.min(0.2).max(3600)).default(5),
  FANOUT_RECENT_DAYS: envNum((n) => n.int().min(1).max(3650)).default(7),
  FANOUT_FULL_EVERY_S: envNum((n) =>
    n
      .int()
      .min(0)
      .max(7 * 86_400),
  ).default(3600),
  JOB_ATTEMPTS: envNum((n) => n.int().min(1).max(100)).default(DEFAULT_ATTEMPTS),
  // how often the subaccounts' portfolio data is read from the chains (registry.portfolio_cache)
  PORTFOLIO_EVERY_S: envNum((n) => n.int().min(5).max(86_400)).default(300),
  // the portfolio queue's reads at once per chain (subaccounts, or one subaccount's days)
  PORTFOLIO_READ_LANES: envNum((n) => n.int().min(1).max(64)).default(DEFAULT_READ_LANES),
  WORKER_LOCK_MS: envNum((n) => n.int().min(1000).max(600_000)).default(30_000),
  JOBS_FAULT_HOLD_MS: envNum((n) => n.int().min(0).max(600_000)).default(0),
  POINTS_PER_USD_PER_DAY: decimal("1"),
  POINTS_REFERRAL_SHARE: decimal("0.1").refine((v) => Number(v) <= 1, "must be at most 1"),
  // Prometheus metrics of `npm run workers` (jobs/metrics.ts); port 0 turns them off
  METRICS_PORT: envNum((n) => n.int().min(0).max(65535)).default(9464),
  METRICS_HOST: z.string().min(1).default("127.0.0.1"),
});

export interface JobsConfig {
  databaseUrl: string;
  redisUrl: string | undefined;
  indexerSchema: string;
  registryPath: string | undefined;
  concurrency: number;
  fanoutEveryMs: number;
  progressPollMs: number;
  /** scheduled fan-outs compare only the last days... */
  recentDays: number;
  /** ...and every day of every vault at most this often (also on start-up and when asked) */
  fullCheckEveryMs: number;
  attempts: number;
  /** the portfolio job's period (PORTFOLIO_EVERY_S) */
  portfolioEveryMs: number;
  /** the portfolio queue's reads at once per chain (PORTFOLIO_READ_LANES) */
  readLanes: number;
  /** a job whose worker stops renewing its lock for this long is retried by another worker */
  lockMs: number;
  /** fault injection for tests: hold each vault-days write transaction open this long */
  faultHoldMs: number;
  points: { pointsPerUsdPerDay: bigint; referralShare: bigint };
  /** where `npm run workers` serves its Prometheus metrics; port 0: nowhere */
  metrics: { port: number; host: string };
  /** chain id -> JSON-RPC URL (first of PONDER_RPC_URL_<id>): the indexer-lag metrics; optional */
  rpcUrls: Map<number, string>;
  /** chain id -> all its URLs, in order: a call to the first fails over to the others */
  rpcUrlLists: Map<number, string[]>;
}

/** Throws one readable error listing every bad variable. */
export function jobsConfig(env: NodeJS.ProcessEnv = process.env): JobsConfig {
  const rpc = rpcUrlsFromEnv(env);
  const e = parseEnv(schema, env, "worker configuration", rpc.problems);
  const rpcUrls = primaryUrls(rpc);
  return {
    databaseUrl: e.DATABASE_URL,
    redisUrl: e.REDIS_URL,
    indexerSchema: e.INDEXER_SCHEMA,
    registryPath: e.VAULT_REGISTRY,
    concurrency: e.WORKER_CONCURRENCY,
    fanoutEveryMs: e.FANOUT_EVERY_S * 1000,
    progressPollMs: e.PROGRESS_POLL_S * 1000,
    recentDays: e.FANOUT_RECENT_DAYS,
    fullCheckEveryMs: e.FANOUT_FULL_EVERY_S * 1000,
    attempts: e.JOB_ATTEMPTS,
    portfolioEveryMs: e.PORTFOLIO_EVERY_S * 1000,
    readLanes: e.PORTFOLIO_READ_LANES,
    lockMs: e.WORKER_LOCK_MS,
    faultHoldMs: e.JOBS_FAULT_HOLD_MS,
    points: {
      pointsPerUsdPerDay: parseFixed(e.POINTS_PER_USD_PER_DAY),
      referralShare: parseFixed(e.POINTS_REFERRAL_SHARE),
    },
    metrics: { port: e.METRICS_PORT, host: e.METRICS_HOST },
    rpcUrls,
    rpcUrlLists: rpc.urls,
  };
}
