/** The demo's settings, from the environment, checked once at start-up. */
import { z } from "zod";
import { envNum, envRedisUrl, parseEnv } from "../../config/env.js";

const schema = z.object({
  DEMO_SEED: z.string().min(1).default("demo"),
  DEMO_DAYS: envNum((n) => n.int().min(120, "at least 120 days of history").max(730)).default(125),
  DEMO_WALLETS: envNum((n) => n.int().min(50).max(1000)).default(60),
  DEMO_PG_PORT: envNum((n) => n.int().min(1).max(65535)).default(54320),
  DEMO_DATABASE: z
    .string()
    .regex(/^[a-z_][a-z0-9_]*$/)
    .default("vaults"),
  INDEXER_PORT: envNum((n) => n.int().min(1).max(65535)).default(42069),
  DEMO_INDEX_TIMEOUT_S: envNum((n) => n.int().positive()).default(600),
  PORT: envNum((n) => n.int().min(1).max(65535)).default(8000),
  // the first chain's anvil port; the next chains take the ports after it
  DEMO_ANVIL_PORT: envNum((n) => n.int().min(1).max(65000)).default(8545),
  // an external Redis (the workers' rule); unset: a local redis-server on DEMO_REDIS_PORT
  REDIS_URL: envRedisUrl,
  // the local redis-server's port when REDIS_URL is unset
  DEMO_REDIS_PORT: envNum((n) => n.int().min(1).max(65535)).default(63790),
  DEMO_LIVE: z.enum(["0", "1", "true", "false"]).default("1"),
  DEMO_LIVE_EVERY_S: envNum((n) => n.min(1).max(3600)).default(15),
  DEMO_LIVE_BLOCK_S: envNum((n) => n.int().min(1).max(60)).default(2),
  // the perp relayer's delay between a deposit and its credit (npm run relayer's RELAYER_DELAY_S)
  DEMO_RELAYER_DELAY_S: envNum((n) => n.int().min(0).max(86_400)).default(20),
});

/** Throws one readable error listing every bad variable; one set to nothing counts as unset. */
export function demoConfig(env: NodeJS.ProcessEnv) {
  const e = parseEnv(schema, env, "demo configuration");
  return {
    seed: e.DEMO_SEED,
    days: e.DEMO_DAYS,
    wallets: e.DEMO_WALLETS,
    pgPort: e.DEMO_PG_PORT,
    database: e.DEMO_DATABASE,
    indexerPort: e.INDEXER_PORT,
    indexTimeoutMs: e.DEMO_INDEX_TIMEOUT_S * 1000,
    apiPort: e.PORT,
    anvilPort: e.DEMO_ANVIL_PORT,
    /** unset: the demo starts a local redis-server on redisPort */
    redisUrl: e.REDIS_URL,
    redisPort: e.DEMO_REDIS_PORT,
    /** after READY: blocks and simulated activity in real time (live.ts) */
    live: e.DEMO_LIVE === "1" || e.DEMO_LIVE === "true",
    liveEveryS: e.DEMO_LIVE_EVERY_S,
    liveBlockS: e.DEMO_LIVE_BLOCK_S,
    relayerDelayS: e.DEMO_RELAYER_DELAY_S,
  };
}

/**
 * What the demo's API process needs to resolve ENS names on the simulated chains: the
 * TestUniversalResolver the simulator deployed on each (ENS_UNIVERSAL_RESOLVER_<chainId>).
 */
export function ensResolverEnv(
  chains: readonly { chainId: number; ens: { universalResolver: string } }[],
): Record<string, string> {
  return Object.fromEntries(chains.map((c) => [`ENS_UNIVERSAL_RESOLVER_${c.chainId}`, c.ens.universalResolver]));
}
