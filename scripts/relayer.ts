/**
 * npm run relayer: the perp relayer worker (jobs/relayer): credits the bridges' deposits on the
 * core ledger once they are RELAYER_DELAY_S old, rejecting those below a bridge's minimum.
 */
import type { RelayerConfig } from "../jobs/relayer/config.js";
import { type Command, HELP_OPTION, parseCommandLine, refuse } from "./lib/cli.js";
import { errMessage, installSignalHandlers, registerCleanup } from "./lib/procs.js";

const CMD: Command = {
  name: "relayer",
  usage: "usage: npm run relayer   (settings from the environment; no arguments)",
  help: `
The perp relayer: a BullMQ repeatable job (queue perp-relayer) reads the deposits of every bridge
chain since its cursor (kept in Redis), and credits each one at least RELAYER_DELAY_S old on the
core ledger, or rejects it with its reason when below the bridge's minimum, from the relayer key.
A deposit is never credited twice (the ledger refuses it; restarts resume from the cursor). Run
one process: a second never credits twice either, but sends competing transactions from the same
key. Runs until stopped (Ctrl-C).

Environment:
  RELAYER_PRIVATE_KEY   the relayer key (RELAYER on the ledger); unset: the devnet's key from the
                        manifest's seed
  PONDER_RPC_URL_<id>   JSON-RPC of the core chain and of every bridge chain (comma-separated:
                        the next URL when one fails)
  CORE_CHAIN_ID         the chain of the core ledger (default: the manifest's)
  PERP_CORE_LEDGER      the core ledger's address (default: the manifest's)
  PERP_BRIDGES_<id>     comma-separated bridge addresses on chain <id> (default: the manifest's)
  DEVNET_MANIFEST       the devnet manifest giving the defaults (default .data/demo/manifest.json)
  RELAYER_DELAY_S       seconds a deposit waits before it is credited, on the core chain's clock (30)
  RELAYER_POLL_MS       how often a pass runs (2000)
  RELAYER_ATTEMPTS      retries of a failed pass (5)
  RELAYER_METRICS_PORT  where GET /metrics is served (9465; 0: nowhere; a taken port is logged)
  RELAYER_METRICS_HOST  its host (127.0.0.1)
  REDIS_URL             redis:// or rediss://; unset: a local redis-server on 127.0.0.1:63790
A bad value stops the relayer with a message naming it (exit 2).`,
};

async function main(): Promise<void> {
  parseCommandLine(CMD, { options: { ...HELP_OPTION } });
  // loaded after the command line, the relayer after its settings: --help and refusals load nothing else
  const { relayerConfig } = await import("../jobs/relayer/config.js");
  let cfg: RelayerConfig;
  try {
    cfg = relayerConfig(process.env);
  } catch (err) {
    refuse(CMD, errMessage(err));
  }
  const [{ serveMetrics }, { startRelayer }, { logRpcUrlFailures, useRpcUrlLists }, { resolveRedis }] =
    await Promise.all([
      import("../jobs/metrics.js"),
      import("../jobs/relayer/worker.js"),
      import("../onchain/rpc-fetch.js"),
      import("./lib/redis.js"),
    ]);
  useRpcUrlLists(cfg.rpcUrlLists);
  logRpcUrlFailures((line) => console.warn(line));
  installSignalHandlers();
  const redis = await resolveRedis(process.env, { keepRunning: true });
  const handle = await startRelayer({ ...cfg, redisUrl: redis.url }, (line) => console.log(line));
  registerCleanup("relayer", () => handle.close());
  if (cfg.metrics.port !== 0) {
    const log = (line: string) => console.log(line);
    const server = await serveMetrics(handle.metrics, cfg.metrics.port, cfg.metrics.host, log, "the relayer runs");
    if (server) registerCleanup("relayer metrics", () => server.close());
  }
  console.log(`running (addresses from ${cfg.source}; redis ${redis.url.replace(/\/\/[^@]*@/, "//***@")})`);
}

main().catch((err) => {
  console.error(`relayer failed: ${errMessage(err)}`);
  process.exit(1);
});
