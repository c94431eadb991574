/**
 * npm run api: the HTTP API (api/). Reads DATABASE_URL, REDIS_URL (rate limits; without it a
 * local redis-server on 127.0.0.1:63790), PORT (8000), HOST (127.0.0.1), CORS_ORIGINS,
 * RATE_LIMIT_PER_MINUTE, TRUST_PROXY_HOPS, INDEXER_SCHEMA, LOG_LEVEL, PONDER_RPC_URL_<chainId> (ping's RPC check, ENS,
 * contract-wallet signatures), ENS_UNIVERSAL_RESOLVER_<chainId>, TOKEN_SECRET, TOKEN_TTL_S and the
 * POINTS_* rules of the write routes.
 */
import type { Server } from "node:http";
import type { ApiConfig } from "../api/env.js";
import { type Command, HELP_OPTION, parseCommandLine } from "./lib/cli.js";
import { errMessage, installSignalHandlers, registerCleanup } from "./lib/procs.js";

const CMD: Command = {
  name: "api",
  usage: "usage: npm run api   (settings from the environment; no arguments)",
  help: `
The HTTP API: the public surface /v1 and the institutional surface /api/v1, with their OpenAPI
documents and reference pages (/v1/docs, /api/v1/docs). It applies the database migrations on
start-up and runs until stopped (Ctrl-C). Any number of processes may run; rate limits are shared
through Redis.

Environment (every setting with its default: .env.example, and the README's Configuration):
  DATABASE_URL            required
  HOST, PORT              where it listens (default 127.0.0.1:8000)
  REDIS_URL               the rate limits' store; unset: a local redis-server on 127.0.0.1:63790
  CORS_ORIGINS, RATE_LIMIT_PER_MINUTE, TRUST_PROXY_HOPS, RESPONSE_CACHE_MS, POINTS_STANDINGS_MS,
  LOG_LEVEL, INDEXER_SCHEMA, PONDER_RPC_URL_<chainId>, ENS_UNIVERSAL_RESOLVER_<chainId>, TOKEN_SECRET,
  TOKEN_TTL_S, POINTS_SIGNUP_BONUS, POINTS_STREAK_BASE, POINTS_STREAK_STEP, POINTS_STREAK_MAX
A bad value stops the API with a message naming it (exit 2). Keys: npm run keys -- --help.`,
};

async function main(): Promise<void> {
  parseCommandLine(CMD, { options: { ...HELP_OPTION } });
  // loaded after the command line, the service after its settings: --help and refusals load nothing else
  const { apiConfig } = await import("../api/env.js");
  let cfg: ApiConfig;
  try {
    cfg = apiConfig(process.env);
  } catch (err) {
    console.error(errMessage(err));
    process.exit(2);
  }
  const [
    { serve },
    { default: pino },
    { createApp },
    { ensureTokenSecret },
    { API_DB_TIMEOUTS, createReadDb },
    { purgeIdempotency },
    { rateLimitRedis, redisReady },
    { createDb, createPool, migrateToLatest },
    { fanoutRequester },
    { logRpcUrlFailures, useRpcUrlLists },
    { gracefulCloser },
    { resolveRedis },
    { answerClientErrors },
  ] = await Promise.all([
    import("@hono/node-server"),
    import("pino"),
    import("../api/app.js"),
    import("../api/auth/tokens.js"),
    import("../api/lib/db.js"),
    import("../api/lib/writes.js"),
    import("../api/middleware/rate-limit.js"),
    import("../db/client.js"),
    import("../jobs/request.js"),
    import("../onchain/rpc-fetch.js"),
    import("./lib/http-close.js"),
    import("./lib/redis.js"),
    import("../api/lib/client-errors.js"),
  ]);
  useRpcUrlLists(cfg.rpcUrlLists);
  installSignalHandlers();
  const logger = pino({ level: cfg.logLevel });
  logRpcUrlFailures((line) => logger.warn(line));
  // The registry tables the API reads (and the keys) exist before the first request.
  const admin = createDb(createPool(cfg.databaseUrl, 1, "vault-api-migrate"));
  await migrateToLatest(admin);
  const tokenSecret = await ensureTokenSecret(admin, cfg.tokenSecret);
  await admin.destroy();
  const redisInfo = await resolveRedis(process.env, { keepRunning: true });
  const redis = rateLimitRedis(redisInfo.url);
  if (!(await redisReady(redis, 3000))) {
    logger.warn(`Redis (${redisInfo.url}) does not answer: rate limits are counted in this process until it does`);
  }
  const { db, destroy } = createReadDb(cfg.databaseUrl, 20);
  // the write routes' pool: registry tables, audit rows, stored idempotent answers
  const wdb = createDb(createPool(cfg.databaseUrl, 5, "vault-api-write", API_DB_TIMEOUTS));
  const fanout = fanoutRequester(redisInfo.url);
  const requestRecompute = () =>
    fanout
      .request()
      .catch((err) =>
        logger.warn(
          { err: errMessage(err) },
          "could not queue a fan-out after a write (the workers' schedule will pick the change up)",
        ),
      );
  const app = createApp(
    { db, wdb, config: { ...cfg, tokenSecret }, redis, requestRecompute, now: () => new Date() },
    { logger },
  );
  const purge = setInterval(() => {
    purgeIdempotency(wdb).catch((err) => logger.warn({ err: errMessage(err) }, "idempotency purge failed"));
  }, 3600_000);
  purge.unref();
  const server = serve({ fetch: app.fetch, port: cfg.port, hostname: cfg.host }) as Server;
  answerClientErrors(server);
  const closeServer = gracefulCloser(server);
  await new Promise<void>((resolve, reject) => {
    const failed = (err: NodeJS.ErrnoException) => {
      const why =
        err.code === "EADDRINUSE" ? "the port is in use (another API process?); set PORT to a free one" : err.message;
      reject(new Error(`cannot listen on ${cfg.host}:${cfg.port}: ${why}`));
    };
    server.once("error", failed);
    server.once("listening", () => {
      server.off("error", failed); // later server errors are not a failed start
      resolve();
    });
  });
  logger.info(`API listening on http://${cfg.host}:${cfg.port} (docs: /v1/docs, /api/v1/docs)`);
  registerCleanup("api", async () => {
    // the requests in flight are answered (6 s at most), then the pools close
    await closeServer(6000);
    clearInterval(purge);
    redis.disconnect();
    await fanout.close();
    await wdb.destroy();
    await destroy();
  });
}

main().catch((err) => {
  console.error(`api failed: ${errMessage(err)}`);
  process.exit(1);
});
