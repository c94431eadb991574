/**
 * npm run indexer: the indexer on its own, against any Postgres and any chains.
 * Reads DATABASE_URL, VAULT_REGISTRY and PONDER_RPC_URL_<chainId> (see README), starts Ponder on
 * the deployment schema for this build (app_<hash>), publishes the `indexer` views when its
 * backfill is done, and records fully backfilled vaults in ops.vault_backfill.
 */

import { mkdirSync } from "node:fs";
import { join } from "node:path";
import type { IndexerPlan } from "../config/indexer.js";
import { type Command, HELP_OPTION, parseCommandLine } from "./lib/cli.js";
import { errMessage, installSignalHandlers } from "./lib/procs.js";

const CMD: Command = {
  name: "indexer",
  usage: "usage: npm run indexer   (settings from the environment; no arguments)",
  help: `
The indexer on its own, against any Postgres and any EVM chains: Ponder on the deployment schema
of this build (app_<hash>); once every chain is at its head, the indexer views are re-pointed to
it in one transaction and fully backfilled vaults are recorded in ops.vault_backfill. Then it
follows the registry file: when it changes (npm run vaults -- add, or an edit), the new registry is
indexed in a new deployment beside the serving one, and the views switch to it once it is at
every chain's head (a bad file is logged and ignored). Runs until stopped (Ctrl-C); its log is
.data/logs/indexer.log (indexer-<group>.log in a group).

Environment (every setting with its default: .env.example, and the README's Configuration):
  DATABASE_URL                     required: the database to index into
  VAULT_REGISTRY                   the vault registry JSON (default config/vaults.json)
  PONDER_RPC_URL_<chainId>         JSON-RPC endpoint(s), comma-separated; a chain is indexed when
                                   this is set and the registry lists vaults on it
  PONDER_RPC_LANES_<chainId>       1 to 64 (default 1)
  SNAPSHOT_INTERVAL_<chainId>      blocks between share-ratio snapshots
  FLOW_PREFETCH_BLOCKS_<chainId>   0 to 100000 (default 1000; 0 turns it off)
  INDEXER_PORT                     Ponder's HTTP port (default 42069; a new deployment of a
                                   changed registry takes the next port while it catches up;
                                   Ponder takes the port after one in use, and says so)
  INDEXER_HOST                     the address Ponder's HTTP server listens on (default 127.0.0.1;
                                   0.0.0.0 for every interface, e.g. to scrape it from elsewhere)
  INDEXER_SCHEMA                   deployment schema override (the registry is then not followed)
  REGISTRY_POLL_S                  how often the registry file is read for changes (default 2)
  INDEXER_GROUP                    this process indexes one group of chains ([a-z][a-z0-9_]{0,15}):
                                   schema app_<hash>_<group>; the views show the union of every
                                   group (docs/operations.md, section 3); npm run indexer-groups
A bad value stops it with a message naming it (exit 2), as does a subaccount that a chain says is a
Safe 1.3 where the registry does not (subaccountSettings' safeVersion), or the other way round.`,
};

async function main(): Promise<void> {
  parseCommandLine(CMD, { options: { ...HELP_OPTION } });
  // loaded after the command line, the indexer's modules after its settings: --help and refusals load nothing else
  const [{ z }, { envNum, envPostgresUrl, parseEnv }, { indexerPlan }] = await Promise.all([
    import("zod"),
    import("../config/env.js"),
    import("../config/indexer.js"),
  ]);
  const envSchema = z.object({
    DATABASE_URL: envPostgresUrl("the database to index into"),
    INDEXER_PORT: envNum((n) => n.int().min(1).max(65535)).default(42069),
    INDEXER_HOST: z.string().min(1).default("127.0.0.1"),
    INDEXER_SCHEMA: z
      .string()
      .regex(/^[a-z_][a-z0-9_]{0,44}$/)
      .optional(),
    REGISTRY_POLL_S: envNum((n) => n.min(0.2).max(3600)).default(2),
    INDEXER_GROUP: z
      .string()
      .regex(/^[a-z][a-z0-9_]{0,15}$/, "a group name: a lower-case letter, then up to 15 of a-z, 0-9, _")
      .optional(),
  });
  let env: ReturnType<typeof envSchema.parse>;
  try {
    env = parseEnv(envSchema, process.env, "indexer configuration");
  } catch (err) {
    console.error(errMessage(err));
    process.exit(2);
  }
  let plan: IndexerPlan;
  try {
    plan = indexerPlan(process.env); // checked here, so a bad setting stops it before anything starts
  } catch (err) {
    console.error(errMessage(err));
    process.exit(2);
  }
  const [{ checkSafeVersions }, { registryPath }, { REPO_ROOT }, { LiveIndexer }] = await Promise.all([
    import("./lib/safe-versions.js"),
    import("../config/registry.js"),
    import("./lib/indexer.js"),
    import("./lib/live-indexer.js"),
  ]);
  const safes = await checkSafeVersions(plan);
  if (safes.problems.length > 0) {
    console.error(`indexer configuration is invalid:\n  ${safes.problems.join("\n  ")}`);
    process.exit(2);
  }
  for (const u of safes.unreachable) {
    // Ponder waits for the chain as it always does; the check is what is missed
    console.warn(
      `indexer: cannot check the subaccount Safes' versions on ${u}; starting without (a Safe 1.3 ` +
        "the registry does not mark would stop the indexer at its first EnabledModule)",
    );
  }
  installSignalHandlers();
  await loadRegistryTables(env.DATABASE_URL);
  const logDir = join(REPO_ROOT, ".data", "logs");
  mkdirSync(logDir, { recursive: true });
  const port = env.INDEXER_PORT;
  const group = env.INDEXER_GROUP;
  const logName = group ? `indexer-${group}.log` : "indexer.log";
  const live = new LiveIndexer({
    registryFile: registryPath(),
    databaseUrl: env.DATABASE_URL,
    ports: [port, port === 65535 ? port - 1 : port + 1],
    base: {
      rpcLanes: "inherit",
      hostname: env.INDEXER_HOST,
      logFile: join(logDir, logName),
      echo: true,
      ...(group ? { group: { name: group } } : {}),
    },
    planEnv: process.env,
    schema: env.INDEXER_SCHEMA,
    pollMs: env.REGISTRY_POLL_S * 1000,
    timeoutMs: 24 * 3600_000,
    log: (m) => console.log(`indexer: ${m}`),
    onServingExit: (code) => {
      console.error(`indexer exited (${code}); see .data/logs/${logName}`);
      process.exit(code ?? 1);
    },
  });
  const started = live.start(); // the first deployment is started before its first await
  const schema = live.schema;
  console.log(`indexer: deployment schema ${schema}, status ${live.handle?.url}/status`);
  const { archived, group: published } = await started;
  const shown = published
    ? published.shown
      ? `the union of ${published.shown.map((d) => `${d.schema} (group ${d.group})`).join(", ")}`
      : `what they showed (${schema} is recorded, shown once these are solved: ${published.reasons.join("; ")})`
    : schema;
  console.log(
    `indexer: at head on every chain; views "indexer" now show ${shown}; ${archived} vaults fully backfilled; ` +
      `status ${live.handle?.url}/status; following ${registryPath()} for changes`,
  );
  await new Promise(() => {});
}

/**
 * The registry file the indexer indexes is also what the API serves: it is loaded into the
 * registry tables here (migrations first, idempotent), so the two cannot drift apart.
 */
async function loadRegistryTables(databaseUrl: string): Promise<void> {
  const [{ loadRegistry, registryPath }, { createDb, createPool, migrateToLatest }, { loadRegistryData }] =
    await Promise.all([import("../config/registry.js"), import("../db/client.js"), import("../db/registry-load.js")]);
  const db = createDb(createPool(databaseUrl, 1, "vault-indexer-registry"));
  try {
    await migrateToLatest(db);
    const s = await loadRegistryData(db, loadRegistry(registryPath()));
    console.log(`indexer: registry ${registryPath()} loaded (${s.vaults} vaults, ${s.strategists} strategists)`);
  } finally {
    await db.destroy();
  }
}

main().catch((err) => {
  console.error(`indexer failed: ${errMessage(err)}`);
  process.exit(1);
});
