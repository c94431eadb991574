/**
 * npm run demo: the whole service on embedded defaults. Starts embedded Postgres and two anvil
 * chains, deploys the vaults, simulates months of history, indexes it, and prints one READY line
 * once every chain is indexed to its head. After READY the chains live on in real time: a block every
 * few seconds and a light stream of the simulator's own activity (DEMO_LIVE=0 turns it off).
 * Ctrl-C stops the live activity first, then everything it started.
 */
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { Live } from "../contracts/devnet/index.js";
import { HELP_OPTION, parseCommandLine } from "./lib/cli.js";
import type { ChainProgress } from "./lib/indexer.js";
import { errMessage, exitText, installSignalHandlers, keepProcessRunning, type ManagedProcess } from "./lib/procs.js";

parseCommandLine(
  {
    name: "demo",
    usage: "usage: npm run demo   (settings from the environment; no arguments)",
    help: `
The whole service on embedded defaults with simulated chains (README, "The two commands"); prints
one READY line with every URL, and Ctrl-C stops everything it started. It drops and recreates its
database on every run. Environment: DEMO_SEED (demo), DEMO_DAYS (125, at least 120), DEMO_WALLETS
(60, at least 50), DEMO_PG_PORT (54320), DEMO_DATABASE (vaults), DEMO_INDEX_TIMEOUT_S (600),
INDEXER_PORT (42069), PORT (8000), REDIS_URL (unset: a local redis-server on 127.0.0.1:63790),
DEMO_ANVIL_PORT (8545, and the next port), DEMO_REDIS_PORT (63790), DEMO_RELAYER_DELAY_S (20: the perp
relayer's delay), and after READY DEMO_LIVE (1; 0 stops the world at READY), DEMO_LIVE_EVERY_S (15),
DEMO_LIVE_BLOCK_S (2).`,
  },
  { options: { ...HELP_OPTION } },
);
// loaded after the command line, the rest after the settings: --help and refusals load nothing else
const { demoConfig, ensResolverEnv } = await import("./lib/demo-config.js");
const cfg = (() => {
  try {
    return demoConfig(process.env);
  } catch (err) {
    console.error(errMessage(err));
    process.exit(2);
  }
})();
const [
  { SCOPE_NAMES },
  { createKey },
  { loadRegistry },
  { DEVNET_CHAINS, genesisTimestamp, simulateDevnet, startLive },
  { createDb, createPool, migrateToLatest },
  { loadRegistryData },
  { settle },
  { rpc, startAnvil },
  { httpOk, REPO_ROOT },
  { LiveIndexer },
  { ensureAnalystRole, recreateDatabase, startEmbeddedPostgres },
  { resolveRedis },
  { startApiProcess, startRelayerProcess, startWorkerProcess },
] = await Promise.all([
  import("../api/auth/scopes.js"),
  import("../api/keys.js"),
  import("../config/registry.js"),
  import("../contracts/devnet/index.js"),
  import("../db/client.js"),
  import("../db/registry-load.js"),
  import("../jobs/runtime.js"),
  import("./lib/anvil.js"),
  import("./lib/indexer.js"),
  import("./lib/live-indexer.js"),
  import("./lib/postgres.js"),
  import("./lib/redis.js"),
  import("./lib/workers.js"),
]);
/** what each wallet and trader of the demo holds for gas, in ETH */
const GAS_ETH = 100n;
const dataDir = join(REPO_ROOT, ".data");
const demoDir = join(dataDir, "demo");
const logDir = join(dataDir, "logs");
const t0 = Date.now();
const say = (msg: string) => console.log(`[demo ${((Date.now() - t0) / 1000).toFixed(1).padStart(6)}s] ${msg}`);

let live: Live | undefined;
let stopping = false;

async function main(): Promise<void> {
  // On Ctrl-C the live activity stops before the chains do, so it never talks to a closed node.
  installSignalHandlers({
    beforeStop: async () => {
      stopping = true;
      if (!live) return;
      await live.stop();
      const counts = live
        .stats()
        .map((c) => `chain ${c.chainId} ${c.blocks} blocks, ${c.actions} actions, ${c.failures} failed`);
      say(`live activity stopped (${counts.join("; ")})`);
    },
  });
  rmSync(logDir, { recursive: true, force: true });
  mkdirSync(logDir, { recursive: true });
  mkdirSync(demoDir, { recursive: true });

  say(`starting embedded Postgres on 127.0.0.1:${cfg.pgPort}`);
  const pgi = await startEmbeddedPostgres({
    port: cfg.pgPort,
    database: "postgres",
    logFile: join(logDir, "postgres.log"),
    // a postmaster killed or crashed is started again on its data (the service reconnects)
    keepRunning: true,
    log: (m) => say(`postgres: ${m}`),
  });
  // The demo's chains are new on every run, so everything indexed from older ones is dropped.
  const dbUrl = await recreateDatabase(pgi.adminUrl, cfg.database);

  const endTime = Math.floor(Date.now() / 1000);
  const anvilPort = (i: number) => cfg.anvilPort + i;
  say(`starting anvil chains ${DEVNET_CHAINS.map((c, i) => `${c.chainId}@${anvilPort(i)}`).join(", ")}`);
  const chains = await Promise.all(
    DEVNET_CHAINS.map(async (c, i) => {
      const a = await startAnvil({
        chainId: c.chainId,
        port: anvilPort(i),
        genesisTimestamp: genesisTimestamp(endTime, cfg.days),
        logFile: join(logDir, `anvil-${c.chainId}.log`),
      });
      // a chain's state lives in its node only: one that died cannot be started again as it was
      void a.process.exited.then((e) => {
        if (stopping || a.process.stopRequested()) return;
        say(
          `anvil of chain ${c.chainId} exited (${exitText(e)}): that chain ` +
            "and its history are gone; the rest goes on without it (ping reports it down). Run `npm run demo` again " +
            `for new chains; see .data/logs/anvil-${c.chainId}.log`,
        );
      });
      return { chainId: c.chainId, rpcUrl: a.rpcUrl, blockTime: c.blockTime, snapshotInterval: c.snapshotInterval };
    }),
  );

  say(`deploying vaults and simulating ${cfg.days} days with ${cfg.wallets} wallets (seed "${cfg.seed}")`);
  const registryFile = join(demoDir, "vaults.json");
  const { manifest, actions } = await simulateDevnet({
    seed: cfg.seed,
    days: cfg.days,
    endTime,
    wallets: cfg.wallets,
    chains,
    manifestPath: join(demoDir, "manifest.json"),
    registryPath: registryFile,
    log: (m) => say(m),
  });
  for (const c of manifest.chains) {
    say(`chain ${c.chainId}: ${c.headBlock} blocks, ${c.txCount} transactions, ${c.events.length} vault events`);
  }
  // The simulator sends at gas price 0; a transaction sent by hand (cast send, a wallet) pays for
  // gas, so the manifest's wallets and the subaccounts' traders get ether of their own.
  const wei = `0x${(GAS_ETH * 10n ** 18n).toString(16)}`;
  for (const c of manifest.chains) {
    const payers = new Set([...c.wallets, ...c.world.subaccounts.map((s) => s.trader.toLowerCase())]);
    await Promise.all([...payers].map((who) => rpc(c.rpcUrl, "anvil_setBalance", [who, wei])));
  }
  say(`each chain's wallets and subaccount traders hold ${GAS_ETH} ETH for gas`);

  const analystUrl = await ensureAnalystRole(dbUrl, {
    viewsSchema: "indexer",
    extraSchemas: ["derived", "registry", "ops"],
  });
  say("starting the indexer (Ponder)");
  // It follows the registry file afterwards: `npm run vaults -- add` (VAULT_REGISTRY=.data/demo/vaults.json)
  // is indexed in a new deployment and the views switch to it at the heads (scripts/lib/live-indexer.ts).
  const indexer = new LiveIndexer({
    registryFile,
    databaseUrl: dbUrl,
    ports: [cfg.indexerPort, cfg.indexerPort + 1],
    base: { logFile: join(logDir, "indexer.log") },
    planEnv: { ...process.env, ...Object.fromEntries(chains.map((c) => [`PONDER_RPC_URL_${c.chainId}`, c.rpcUrl])) },
    snapshotIntervals: new Map(chains.map((c) => [c.chainId, c.snapshotInterval])),
    timeoutMs: cfg.indexTimeoutMs,
    log: (m) => say(`indexer: ${m}`),
    onServingExit: (code, signal) => {
      if (!stopping) say(`the indexer exited (${signal ?? `code ${code}`}); see .data/logs/indexer.log`);
    },
    // Ponder resumes its schema from its checkpoint; the views keep showing it meanwhile
    restartServing: true,
    onProgress: (p: ChainProgress[], ready) => {
      const line =
        p.map((c) => `chain ${c.chainId} ${c.indexed}/${c.head ?? "?"}`).join(", ") + (ready ? " (backfill done)" : "");
      if (line !== lastLine) say(`indexing: ${line}`);
      lastLine = line;
    },
  });
  let lastLine = "";
  const indexing = indexer.start();
  say(`indexer deployment schema ${indexer.schema}; log .data/logs/indexer.log`);
  const { archived } = await indexing;
  say(`views schema "indexer" now shows ${indexer.schema}; ${archived} vaults fully backfilled`);

  say(cfg.redisUrl ? "using Redis at REDIS_URL" : `starting Redis on 127.0.0.1:${cfg.redisPort}`);
  const redis = await resolveRedis(process.env, {
    port: cfg.redisPort,
    dataDir: join(dataDir, "redis"),
    logFile: join(logDir, "redis.log"),
    // a Redis left running holds another run's queues: the demo's is its own
    reuseExisting: false,
    // one killed or crashed is started again (its queues empty: the workers declare them anew)
    keepRunning: true,
    log: (m) => say(`redis: ${m}`),
  });
  // Registry data (vault metadata, strategists, subaccounts, operators) and a key, before the
  // workers start: their first portfolio run reads the subaccounts from it (else it finds none
  // and the subaccounts' series wait for the next run, PORTFOLIO_EVERY_S later).
  const admin = createDb(createPool(dbUrl, 1, "vault-demo"));
  await migrateToLatest(admin);
  const loaded = await loadRegistryData(admin, loadRegistry(registryFile));
  // the demo's key may also write (every scope), so the write routes can be tried at once
  const { key } = await createKey(admin, "demo", [...SCOPE_NAMES]);
  await admin.destroy();
  say(
    `registry loaded: ${loaded.vaults} vaults, ${loaded.strategists} strategists, ${loaded.subaccounts} ` +
      `subaccounts; API key created (all scopes: ${SCOPE_NAMES.join(", ")})`,
  );
  // The workers, the relayer and the API are kept running: one that dies is started again (said,
  // with its log's name); the workers dying before the first computation fails the demo.
  const keep = (name: string, start: () => ManagedProcess) =>
    keepProcessRunning(start(), start, {
      what: `the ${name} process`,
      log: (m) => say(`${m} (log .data/logs/${name}.log)`),
    }).current()!;
  say("starting the workers (BullMQ); log .data/logs/workers.log");
  const workers = keep("workers", () =>
    startWorkerProcess({
      databaseUrl: dbUrl,
      redisUrl: redis.url,
      registryFile,
      logFile: join(logDir, "workers.log"),
      // the chains: the portfolio job reads the subaccounts there, the metrics report indexer lag
      env: Object.fromEntries(chains.map((c) => [`PONDER_RPC_URL_${c.chainId}`, c.rpcUrl])),
    }),
  );
  // The perp relayer credits the bridges' deposits on chain 1's core ledger (its lines echo here).
  const manifestFile = join(demoDir, "manifest.json");
  keep("relayer", () =>
    startRelayerProcess({
      redisUrl: redis.url,
      chains,
      manifestFile,
      delaySeconds: cfg.relayerDelayS,
      logFile: join(logDir, "relayer.log"),
      echo: true,
    }),
  );
  say(`starting the perp relayer (delay ${cfg.relayerDelayS} s); log .data/logs/relayer.log`);
  say("computing the derived tables: daily series, APY, PnL, points");
  const settled = settle(redis.url, cfg.indexTimeoutMs, (m) => say(`jobs: ${m}`));
  const died = (async () => {
    const exit = await workers.exited;
    if (workers.stopRequested()) return new Promise<never>(() => {}); // Ctrl-C: the shutdown's
    throw new Error(`the workers exited (${exit.signal ?? `code ${exit.code}`}):\n${workers.recentOutput()}`);
  })();
  await Promise.race([settled, died]);
  died.catch(() => {}); // after the first computation the keeper starts them again
  say("derived tables computed");

  say(`starting the API on 127.0.0.1:${cfg.apiPort}; log .data/logs/api.log`);
  // ENS names on the simulated chains resolve through the resolver the simulator deployed on each
  const api = keep("api", () =>
    startApiProcess({
      databaseUrl: dbUrl,
      redisUrl: redis.url,
      port: cfg.apiPort,
      chains,
      env: ensResolverEnv(manifest.chains),
      logFile: join(logDir, "api.log"),
    }),
  );
  const apiUrl = `http://127.0.0.1:${cfg.apiPort}`;
  for (let i = 0; !(await httpOk(`${apiUrl}/v1/`)); i++) {
    if (api.exitInfo()) throw new Error(`the API exited:\n${api.recentOutput()}`);
    if (i > 600) throw new Error(`the API did not answer on ${apiUrl} within 60 s:\n${api.recentOutput()}`);
    await new Promise((r) => setTimeout(r, 100));
  }

  const pairs = [
    `db=${dbUrl}`,
    `analyst=${analystUrl}`,
    `redis=${redis.url}`,
    `api=${apiUrl}`,
    `key=${key}`,
    ...chains.map((c) => `chain${c.chainId}=${c.rpcUrl}`),
  ];
  console.log(`READY ${pairs.join(" ")}`);
  if (cfg.live) {
    const eventsFile = join(demoDir, "live-events.jsonl");
    rmSync(eventsFile, { force: true });
    const log = (m: string) => say(`live: ${m}`);
    const pace = { blockEveryS: cfg.liveBlockS, actEveryS: cfg.liveEveryS };
    live = startLive(actions, { seed: cfg.seed, ...pace, eventsFile, log });
    say(
      `live: a block every ${cfg.liveBlockS} s on each chain and an action about every ${cfg.liveEveryS} s ` +
        "(DEMO_LIVE=0 turns it off); events in .data/demo/live-events.jsonl",
    );
  }
  say("running; Ctrl-C stops everything");
  await new Promise(() => {});
}

main().catch((err) => {
  // a step cut short by Ctrl-C (its node stopped under it) is no failure: the shutdown ends the process
  if (stopping) return;
  console.error(`demo failed: ${errMessage(err)}`);
  process.exit(1);
});
