/** The API's settings, from the environment, parsed and checked once at start-up. */
import { z } from "zod";
import { decimal, envNum, envPostgresUrl, envRedisUrl, parseEnv } from "../config/env.js";
import { primaryUrls, rpcUrlsFromEnv } from "../config/rpc-urls.js";

/** Points rules of the write routes, as decimal strings (18 decimals at most). */
export interface PointsAwardRules {
  /** awarded to a wallet registering with a referrer */
  signupBonus: string;
  /** a daily streak claim on day n of the streak earns min(base + step × (n − 1), max) */
  streakBase: string;
  streakStep: string;
  streakMax: string;
}
export const DEFAULT_POINTS_AWARDS: PointsAwardRules = {
  signupBonus: "100",
  streakBase: "10",
  streakStep: "1",
  streakMax: "50",
};

const schema = z.object({
  DATABASE_URL: envPostgresUrl("the service's database"),
  REDIS_URL: envRedisUrl,
  PORT: envNum((n) => n.int().min(1).max(65535)).default(8000),
  HOST: z.string().min(1).default("127.0.0.1"),
  INDEXER_SCHEMA: z
    .string()
    .regex(/^[a-z_][a-z0-9_]*$/, "must be a plain schema name")
    .default("indexer"),
  CORS_ORIGINS: z
    .string()
    .default("")
    .transform((s) =>
      s
        .split(",")
        .map((o) => o.trim())
        .filter(Boolean),
    )
    .refine(
      (list) => list.every((o) => /^https?:\/\/[^/\s]+$/.test(o)),
      "must be comma-separated origins like https://app.example.com",
    ),
  // 1: every institutional read needs a key too (by default only the routes the spec marks do)
  API_READS_REQUIRE_KEY: z
    .enum(["0", "1", "true", "false"], { error: "must be 0 or 1" })
    .default("0")
    .transform((v) => v === "1" || v === "true"),
  RATE_LIMIT_PER_MINUTE: envNum((n) => n.int().min(1).max(1_000_000)).default(600),
  // Proxies in front of the API that append the client to X-Forwarded-For (0: none, the TCP peer
  // is the client): the keyless rate limit counts the address that many hops from the right.
  TRUST_PROXY_HOPS: envNum((n) => n.int().min(0).max(10)).default(0),
  RESPONSE_CACHE_MS: envNum((n) => n.int().min(0).max(60_000)).default(1000),
  // How long the points standings (every wallet's total and ranks, computed on read) are reused
  POINTS_STANDINGS_MS: envNum((n) => n.int().min(0).max(3_600_000)).default(10_000),
  // GET /metrics (Prometheus): 0 leaves it out; with a token it wants Authorization: Bearer <token>
  API_METRICS: z.enum(["0", "1"]).default("1"),
  API_METRICS_TOKEN: z.string().min(16, "must be at least 16 characters").optional(),
  LOG_LEVEL: z.enum(["fatal", "error", "warn", "info", "debug", "trace", "silent"]).default("info"),
  // Signing key of the bearer tokens of POST /api/v1/token; unset: a random key generated once and
  // kept in the database (auth.api_secret), so every API process of a deployment shares it.
  TOKEN_SECRET: z.string().min(32, "must be at least 32 characters").optional(),
  TOKEN_TTL_S: envNum((n) => n.int().min(30).max(86_400)).default(900),
  // Points the API awards: a registration's signup bonus and the daily streak claims.
  POINTS_SIGNUP_BONUS: decimal("100"),
  POINTS_STREAK_BASE: decimal("10"),
  POINTS_STREAK_STEP: decimal("1"),
  POINTS_STREAK_MAX: decimal("50"),
});

export interface ApiConfig {
  databaseUrl: string;
  redisUrl: string | undefined;
  port: number;
  host: string;
  indexerSchema: string;
  corsOrigins: string[];
  rateLimitPerMinute: number;
  /** proxies that append to X-Forwarded-For in front of the API (TRUST_PROXY_HOPS) */
  trustProxyHops: number;
  /** every institutional read needs a key (API_READS_REQUIRE_KEY); default: only marked routes */
  readsRequireKey: boolean;
  responseCacheMs: number;
  /** reuse of the points standings (api/lib/standings.ts); 0: read on every request */
  standingsMs: number;
  logLevel: z.infer<typeof schema>["LOG_LEVEL"];
  /** serve GET /metrics (api/middleware/metrics.ts) */
  metrics: boolean;
  /** when set, GET /metrics wants it as a bearer token */
  metricsToken: string | undefined;
  /** chain id -> JSON-RPC URL (first of PONDER_RPC_URL_<id>): the ping's RPC check, ENS names */
  rpcUrls: Map<number, string>;
  /** chain id -> all its URLs, in order: a call to the first fails over to the others */
  rpcUrlLists: Map<number, string[]>;
  /** chain id -> ENS Universal Resolver (ENS_UNIVERSAL_RESOLVER_<id>); chains viem knows need none */
  ensResolvers: Map<number, `0x${string}`>;
  tokenSecret: string | undefined;
  tokenTtlS: number;
  points: PointsAwardRules;
}

export function apiConfig(env: NodeJS.ProcessEnv = process.env): ApiConfig {
  const rpc = rpcUrlsFromEnv(env);
  const ensResolvers = new Map<number, `0x${string}`>();
  const bad: string[] = [...rpc.problems];
  for (const [k, v] of Object.entries(env)) {
    const m = /^ENS_UNIVERSAL_RESOLVER_(\d+)$/.exec(k);
    if (!m || !v) continue;
    if (!/^0x[0-9a-fA-F]{40}$/.test(v.trim())) bad.push(`${k}: must be a 0x-prefixed 20-byte contract address`);
    else ensResolvers.set(Number(m[1]), v.trim() as `0x${string}`);
  }
  const e = parseEnv(schema, env, "API configuration", bad);
  const rpcUrls = primaryUrls(rpc);
  return {
    databaseUrl: e.DATABASE_URL,
    redisUrl: e.REDIS_URL,
    port: e.PORT,
    host: e.HOST,
    indexerSchema: e.INDEXER_SCHEMA,
    corsOrigins: e.CORS_ORIGINS,
    rateLimitPerMinute: e.RATE_LIMIT_PER_MINUTE,
    trustProxyHops: e.TRUST_PROXY_HOPS,
    readsRequireKey: e.API_READS_REQUIRE_KEY,
    responseCacheMs: e.RESPONSE_CACHE_MS,
    standingsMs: e.POINTS_STANDINGS_MS,
    logLevel: e.LOG_LEVEL,
    metrics: e.API_METRICS === "1",
    metricsToken: e.API_METRICS_TOKEN,
    rpcUrls,
    rpcUrlLists: rpc.urls,
    ensResolvers,
    tokenSecret: e.TOKEN_SECRET,
    tokenTtlS: e.TOKEN_TTL_S,
    points: {
      signupBonus: e.POINTS_SIGNUP_BONUS,
      streakBase: e.POINTS_STREAK_BASE,
      streakStep: e.POINTS_STREAK_STEP,
      streakMax: e.POINTS_STREAK_MAX,
    },
  };
}
