/**
 * npm run queues-dashboard: the queues dashboard (jobs/dashboard.ts) of a running service, on
 * http://127.0.0.1:8090/queues. Reads REDIS_URL (without it, the local Redis the service's own
 * commands start on 127.0.0.1:63790, which must be running), QUEUES_DASHBOARD_HOST (127.0.0.1;
 * any other host needs a password), QUEUES_DASHBOARD_PORT (8090), QUEUES_DASHBOARD_PASSWORD
 * (basic auth, user `operator`) and QUEUES_DASHBOARD_READ_ONLY (0).
 */
import type { Server } from "node:http";
import type { DashboardConfig } from "../jobs/dashboard.js";
import { type Command, HELP_OPTION, parseCommandLine, refuse } from "./lib/cli.js";
import { errMessage, installSignalHandlers, registerCleanup } from "./lib/procs.js";

const LOCAL_REDIS = "redis://127.0.0.1:63790";

const CMD: Command = {
  name: "queues-dashboard",
  usage: "usage: npm run queues-dashboard   (settings from the environment; no arguments)",
  help: `
The queues dashboard (bull-board) of a running service: every queue with its jobs, each failed one
with its reason, and buttons to retry them, on http://127.0.0.1:8090/queues by default. It never
starts a Redis of its own.

Environment:
  REDIS_URL                    the service's Redis (unset: the local one on 127.0.0.1:63790,
                               which must be running)
  QUEUES_DASHBOARD_HOST        default 127.0.0.1; any other host needs a password
  QUEUES_DASHBOARD_PORT        default 8090
  QUEUES_DASHBOARD_PASSWORD    HTTP basic auth, user operator, at least 12 characters (default none)
  QUEUES_DASHBOARD_READ_ONLY   1 hides the retry, promote, clean and remove buttons (default 0)
A bad value stops it with a message naming it (exit 2).`,
};

async function main(): Promise<void> {
  parseCommandLine(CMD, { options: { ...HELP_OPTION } });
  // loaded after the command line: --help and refusals load nothing else (the settings' check lives
  // in jobs/dashboard.ts, beside bull-board, so a bad setting is refused once it is loaded)
  const [
    { serve },
    { dashboardConfig, queuesDashboard },
    { gracefulCloser },
    { checkRedis, parseRedisUrl, probeRedis },
  ] = await Promise.all([
    import("@hono/node-server"),
    import("../jobs/dashboard.js"),
    import("./lib/http-close.js"),
    import("./lib/redis.js"),
  ]);
  let cfg: DashboardConfig;
  try {
    cfg = dashboardConfig(process.env);
  } catch (err) {
    refuse(CMD, errMessage(err));
  }
  let redisUrl: string;
  if (cfg.redisUrl) {
    redisUrl = parseRedisUrl(cfg.redisUrl).toString();
    await checkRedis(redisUrl);
  } else {
    // the dashboard shows the queues of a running service: it never starts a Redis of its own
    if ((await probeRedis("127.0.0.1", 63790)) !== "pong") {
      console.error(
        `queues-dashboard: no Redis answers at ${LOCAL_REDIS}; start the service (npm run demo, or npm run ` +
          `workers) or set REDIS_URL`,
      );
      process.exit(1);
    }
    redisUrl = LOCAL_REDIS;
  }
  installSignalHandlers();
  const board = queuesDashboard(redisUrl, { password: cfg.password, readOnly: cfg.readOnly });
  const server = serve({ fetch: board.app.fetch, hostname: cfg.host, port: cfg.port }) as Server;
  const closeServer = gracefulCloser(server);
  await new Promise<void>((resolve, reject) => {
    server.once("listening", resolve);
    server.once("error", reject);
  });
  registerCleanup("queues dashboard", async () => {
    await closeServer(6000);
    await board.close();
  });
  console.log(`queues dashboard on http://${cfg.host}:${cfg.port}/queues${cfg.readOnly ? " (read-only)" : ""}`);
}

main().catch((err) => {
  console.error(`queues-dashboard failed: ${errMessage(err)}`);
  process.exit(1);
});
