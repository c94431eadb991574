/** The vault registry file, one vault at a time, from what the chain says: `npm run vaults -- --help`. */
// The modules behind the commands are loaded where they are used, after the command line: --help
// and the refusals load nothing else.
import { existsSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import type { Address, PublicClient } from "viem";
import { getChain, isEvmChain } from "../config/chains.js";
import { POSTGRES_SCHEME, POSTGRES_URL_FORM, parsablePostgresUrl } from "../config/postgres-url.js";
import type { EvmVault, Registry } from "../config/registry.js";
import { rpcUrlsFromEnv } from "../config/rpc-urls.js";
import { argumentPath, CLI_DB_TIMEOUTS, type Command, HELP_OPTION, parseCommandLine, refuse } from "./lib/cli.js";
import { errMessage } from "./lib/procs.js";

const CMD: Command = {
  name: "vaults",
  usage:
    "usage: npm run vaults -- add --chain <id> --address <address> [--name <text>] [--kind <text>]\n" +
    "                             [--start-block <n>] [--registry <file>] [--create]\n" +
    "       | list [--registry <file>] | remove --chain <id> --address <address> [--registry <file>]",
  help: `
The vault registry file (what the indexer indexes and the API serves), edited one vault at a time.

  add      probes the contract on its chain (PONDER_RPC_URL_<id>): a LendingPool or a
           TokenizedVaultV2 (recognised by their own views), else any ERC-4626 vault (family
           erc4626); reads its asset, name, symbol and decimals, finds its deployment block
           (binary search on eth_getCode; --start-block skips it, for an RPC without archive
           state), and adds the entry to the file. --name replaces the chain's name, --kind the
           vault kind (default: the family). Refused: a chain outside the catalogue or without an
           RPC, an address that is no contract or no vault, a vault already listed.
  list     every vault of the file (chain, address, family, kind, start block, name) and, with
           DATABASE_URL, whether the running indexer's views hold it yet
  remove   takes the vault out of the file

A registry file that does not exist is refused (a mistyped path would otherwise start a new
registry of one vault, and with DATABASE_URL load it over the tables): add --create starts one.
With DATABASE_URL, the database is checked before the file is changed, and the file is put back
as it was when loading the tables fails.

The file is replaced in one step (a temporary file renamed over it), every other entry kept as it
is. Commands changing one file take turns (<file>.lock; one left by a killed command is taken
over after 10 s): each adds to or removes from the file as the one before it left it.

A running indexer (npm run indexer, the demo's) notices the change, indexes the new registry in
a new deployment beside the old one and switches the views to it once it is at every chain's
head (README, "Index your first real vault"); it needs PONDER_RPC_URL_<id> of a new chain in its
own environment.

Environment: VAULT_REGISTRY (the file, default config/vaults.json, relative to the repository;
--registry overrides it, relative to the directory the command is typed in),
PONDER_RPC_URL_<id> (add: the chain's JSON-RPC URLs, comma-separated; the next when one fails),
DATABASE_URL (optional: add and remove then load the registry tables as "npm run registry --
load" does, migrations first, and list shows what is indexed).`,
};

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

type RawRegistry = ReturnType<typeof import("./lib/registry-file.js").readRegistryFile>;

/** Chain-side and registry-side refusals: the message, exit 1 (usage errors exit 2 through refuse). */
function fail(msg: string): never {
  console.error(`vaults: ${msg}`);
  process.exit(1);
}

async function main(): Promise<void> {
  const parsed = parseCommandLine(CMD, {
    allowPositionals: true,
    options: {
      ...HELP_OPTION,
      chain: { type: "string" },
      address: { type: "string" },
      name: { type: "string" },
      kind: { type: "string" },
      "start-block": { type: "string" },
      registry: { type: "string" },
      create: { type: "boolean" },
    },
  });
  const [cmd, ...rest] = parsed.positionals;
  const a = parsed.values;
  if (rest.length) refuse(CMD, `unexpected arguments: ${rest.join(" ")}`);
  if (cmd !== "add" && cmd !== "list" && cmd !== "remove") {
    refuse(CMD, cmd ? `unknown command "${cmd}"` : "give a command: add, list or remove");
  }
  const options: Record<string, string[]> = {
    add: ["chain", "address", "name", "kind", "start-block", "create"],
    remove: ["chain", "address"],
    list: [],
  };
  const allowed = options[cmd]!;
  for (const [k, v] of Object.entries(a)) {
    if (v !== undefined && k !== "help" && k !== "registry" && !allowed.includes(k))
      refuse(CMD, `${cmd} takes no --${k}`);
  }
  if (cmd === "list") return list(a.registry);

  if (a.chain === undefined) refuse(CMD, `${cmd} needs --chain <id>`);
  if (a.address === undefined) refuse(CMD, `${cmd} needs --address <address>`);
  if (!/^-?\d+$/.test(a.chain)) refuse(CMD, `--chain: "${a.chain}" is not a chain id (an integer)`);
  const chainId = Number(a.chain);
  if (!ADDRESS.test(a.address)) refuse(CMD, `--address: "${a.address}" is not a 0x-prefixed 20-byte hex address`);
  const address = a.address.toLowerCase() as Address;
  if (!getChain(chainId)) {
    refuse(CMD, `--chain: ${a.chain} is not a chain of the catalogue (config/chains.ts, the spec's chain list)`);
  }
  if (!isEvmChain(chainId)) {
    refuse(CMD, `--chain: ${chainId} (${getChain(chainId)!.name}) is not an EVM chain; add its vaults to the file`);
  }
  const [{ registryPath }, { sameVault }, { createPublicClient, fallback, http }] = await Promise.all([
    import("../config/registry.js"),
    import("./lib/registry-file.js"),
    import("viem"),
  ]);
  const file = a.registry === undefined ? registryPath() : argumentPath(a.registry);
  const create = cmd === "add" && a.create === true;
  // a first look, to refuse early; the change itself re-reads the file holding its lock
  const first = (await readForChange(file, create, cmd)).raw;
  // the database, when the tables are to follow the file: checked before the file changes
  const database = await openDatabase();
  const listedIn = (raw: RawRegistry) => raw.vaults.findIndex((v) => sameVault(v, chainId, address));
  const refuseListed = (raw: RawRegistry) => {
    const listed = listedIn(raw);
    if (listed >= 0) {
      const name = raw.vaults[listed]!.name;
      fail(`vault ${address} on chain ${chainId} is already in ${file} (${name}); nothing was changed`);
    }
  };

  if (cmd === "remove") {
    let removed: Record<string, unknown> | undefined;
    await change(file, { create, cmd }, database, (raw) => {
      const listed = listedIn(raw);
      if (listed < 0) fail(`no vault ${address} on chain ${chainId} in ${file}; nothing was changed`);
      [removed] = raw.vaults.splice(listed, 1);
    });
    console.log(`removed ${removed!.name} (${removed!.family}) ${address} on chain ${chainId} from ${file}`);
    return;
  }

  refuseListed(first);
  let startBlock: number | undefined;
  if (a["start-block"] !== undefined) {
    if (!/^\d+$/.test(a["start-block"])) refuse(CMD, `--start-block: "${a["start-block"]}" is not a block number`);
    if (!Number.isSafeInteger(Number(a["start-block"])))
      refuse(CMD, `--start-block: ${a["start-block"]} is beyond any chain's blocks`);
    startBlock = Number(a["start-block"]);
  }
  if (a.name !== undefined && a.name.trim() === "") refuse(CMD, "--name: give a name, or leave it out");
  if (a.kind !== undefined && a.kind.trim() === "") refuse(CMD, "--kind: give a kind, or leave it out");
  const key = `PONDER_RPC_URL_${chainId}`;
  const rpc = rpcUrlsFromEnv({ [key]: process.env[key] });
  if (rpc.problems.length > 0) refuse(CMD, rpc.problems.join("; "));
  const urls = rpc.urls.get(chainId) ?? [];
  if (urls.length === 0) {
    refuse(
      CMD,
      `chain ${chainId} (${getChain(chainId)!.name}) has no RPC here: set PONDER_RPC_URL_${chainId} ` +
        "(the indexer needs it in its environment too)",
    );
  }
  // every URL of the chain, in order: the next one when a node cannot be reached or errs
  const transports = urls.map((u) => http(u, { timeout: 20_000, retryCount: 1 }));
  const client = createPublicClient({ transport: fallback(transports) }) as PublicClient;

  const entry = await probe(client, chainId, address, urls.join(", "), { startBlock, name: a.name, kind: a.kind });
  // added to the file as it is now: another command may have changed it during the probe
  await change(
    file,
    { create, cmd },
    database,
    (raw) => {
      refuseListed(raw);
      raw.vaults.push(entry);
    },
    chainId,
  );
  const found = `${entry.family} "${entry.name}" (${entry.symbol}), asset ${entry.asset.symbol}`;
  console.log(`added ${found} ${address} on chain ${chainId}, from block ${entry.startBlock}, to ${file}`);
}

/**
 * The registry file as it is, refused when it is not there (unless add --create) or invalid.
 * `before`: its text, null when there is none.
 */
async function readForChange(
  file: string,
  create: boolean,
  cmd: string,
): Promise<{ raw: RawRegistry; before: string | null }> {
  const { readRegistryFile } = await import("./lib/registry-file.js");
  if (!existsSync(file)) {
    if (cmd === "remove") fail(`no registry file at ${file}; nothing was changed`);
    if (!create) fail(`no registry file at ${file}: check the path, or add --create to start a new registry there`);
  }
  try {
    const before = existsSync(file) ? readFileSync(file, "utf8") : null;
    return { raw: readRegistryFile(file), before };
  } catch (err) {
    fail(`${errMessage(err)}\n(fix the file first; nothing was changed)`);
  }
}

/**
 * One change of the file, holding its lock: read as it is now, `edit`ed (which may refuse),
 * written, and the tables loaded from it; concurrent commands on one file take turns.
 */
async function change(
  file: string,
  opts: { create: boolean; cmd: string },
  database: Db | null,
  edit: (raw: RawRegistry) => void,
  chainId?: number,
): Promise<void> {
  const { RegistryLocked, withRegistryLock } = await import("./lib/registry-file.js");
  try {
    await withRegistryLock(file, async () => {
      const { raw, before } = await readForChange(file, opts.create, opts.cmd);
      edit(raw);
      const reg = await save(file, raw);
      // said once the tables followed: a failed load puts the file back, and says so
      await loadTables(database, reg, { file, before }, chainId);
    });
  } catch (err) {
    if (!(err instanceof RegistryLocked)) throw err;
    fail(`${err.message}; nothing was changed`);
  }
}

/**
 * The block the vault's timelock was deployed in, so its constructor's role grants are indexed.
 * Without an archive node the search cannot run: the timelock is then followed from near the
 * vault's start block, and the command says what that leaves out.
 */
async function timelockStartBlock(client: PublicClient, timelock: Address, head: bigint) {
  const { deploymentBlock, ProbeRefusal } = await import("./lib/vault-probe.js");
  try {
    return (await deploymentBlock(client, timelock, head)).block;
  } catch (err) {
    if (!(err instanceof ProbeRefusal)) throw err;
    console.error(
      `note: the timelock ${timelock}'s deployment block could not be found (${err.message.split(";")[0]}); ` +
        "its events are followed from 64 blocks before the chain's first start block, so roles it granted " +
        "before that are not seen by the governance routes",
    );
    return undefined;
  }
}

async function probe(
  client: PublicClient,
  chainId: number,
  address: Address,
  url: string,
  opts: { startBlock: number | undefined; name: string | undefined; kind: string | undefined },
): Promise<EvmVault & { startTimestamp: number }> {
  const [{ hasCode }, { deploymentBlock, ProbeRefusal, probeVault, shortError }] = await Promise.all([
    import("../src/module-logs.js"),
    import("./lib/vault-probe.js"),
  ]);
  let head: bigint;
  try {
    const served = await client.getChainId();
    if (served !== chainId) fail(`PONDER_RPC_URL_${chainId} (${url}) serves chain ${served}, not ${chainId}`);
    head = await client.getBlockNumber();
  } catch (err) {
    fail(`the RPC of chain ${chainId} (${url}) does not answer: ${shortError(err)}`);
  }
  try {
    if (!(await hasCode(client, address)))
      fail(`${address} is not a contract on chain ${chainId} (no code at block ${head})`);
    const v = await probeVault(client, address);
    let start: { block: number; timestamp: number };
    if (opts.startBlock !== undefined) {
      if (BigInt(opts.startBlock) > head) fail(`--start-block ${opts.startBlock} is after the chain's head (${head})`);
      const b = await client.getBlock({ blockNumber: BigInt(opts.startBlock) });
      start = { block: opts.startBlock, timestamp: Number(b.timestamp) };
    } else {
      start = await deploymentBlock(client, address, head);
    }
    const timelockStart = v.timelock ? await timelockStartBlock(client, v.timelock, head) : undefined;
    return {
      chainId,
      address,
      family: v.family,
      kind: opts.kind?.trim() ?? v.family,
      name: opts.name?.trim() ?? v.name,
      symbol: v.symbol,
      status: "active",
      startBlock: start.block,
      startTimestamp: start.timestamp,
      asset: v.asset,
      ...(v.receiptToken ? { receiptToken: v.receiptToken } : {}),
      ...(v.altAsset ? { altAsset: v.altAsset } : {}),
      ...(v.timelock ? { timelock: v.timelock } : {}),
      ...(timelockStart !== undefined ? { timelockStartBlock: timelockStart } : {}),
      ...(v.operator ? { operator: v.operator } : {}),
      ...(v.feeCollector ? { feeCollector: v.feeCollector } : {}),
      subaccounts: [],
      subaccountSettings: {},
      metadata: {},
    };
  } catch (err) {
    if (err instanceof ProbeRefusal) fail(`${address} on chain ${chainId}: ${err.message}; nothing was changed`);
    fail(`reading ${address} on chain ${chainId} failed: ${shortError(err)}; nothing was changed`);
  }
}

async function save(file: string, raw: RawRegistry): Promise<Registry> {
  const { writeRegistryFile } = await import("./lib/registry-file.js");
  try {
    return writeRegistryFile(file, raw);
  } catch (err) {
    fail(`the new registry would be invalid, so ${file} was not changed: ${errMessage(err)}`);
  }
}

type Db = ReturnType<typeof import("../db/client.js").createDb>;

/**
 * With DATABASE_URL, the database the registry tables are loaded into, migrated and checked
 * before the file is changed: a bad or unreachable URL stops the command with nothing changed.
 */
async function openDatabase(): Promise<Db | null> {
  const url = process.env.DATABASE_URL?.trim();
  if (!url) return null;
  if (!POSTGRES_SCHEME.test(url)) fail("DATABASE_URL must be a postgres:// URL; nothing was changed");
  if (!parsablePostgresUrl(url)) fail(`DATABASE_URL ${POSTGRES_URL_FORM}; nothing was changed`);
  const { createDb, createPool, migrateToLatest } = await import("../db/client.js");
  const db = createDb(createPool(url, 1, "vault-vaults-cli", CLI_DB_TIMEOUTS));
  try {
    await migrateToLatest(db);
  } catch (err) {
    await db.destroy();
    fail(`the database (DATABASE_URL) is not usable: ${errMessage(err)}; nothing was changed`);
  }
  return db;
}

/**
 * The registry tables follow the file (as `registry load`), and a word on the indexer. Loading
 * them failing puts the file back as it was (`was.before`; null: there was none).
 */
async function loadTables(
  db: Db | null,
  reg: Registry,
  was: { file: string; before: string | null },
  chainId?: number,
): Promise<void> {
  const env = `PONDER_RPC_URL_${chainId}`;
  if (!db) {
    console.log("DATABASE_URL is not set: the registry tables are loaded by the indexer when it picks the file up");
    if (chainId !== undefined)
      console.log(`the running indexer indexes chain ${chainId} only with ${env} in its environment`);
    return;
  }
  const { loadRegistryData } = await import("../db/registry-load.js");
  try {
    let loaded: { vaults: number };
    try {
      loaded = await loadRegistryData(db, reg);
    } catch (err) {
      restore(was);
      fail(`loading the registry tables failed (${errMessage(err)}): ${was.file} was put back as it was`);
    }
    console.log(`registry tables loaded: ${loaded.vaults} vaults`);
    if (chainId === undefined) return;
    const indexed = await indexedChains(process.env.DATABASE_URL!.trim());
    if (indexed && !indexed.has(chainId)) {
      console.warn(
        `note: the running indexer does not index chain ${chainId} yet; it picks this vault up only if it ` +
          `was started with ${env} in its environment (else restart it with that set)`,
      );
    }
  } finally {
    await db.destroy();
  }
}

/** The file as it was before the command (a temporary file renamed over it), or gone if it was not there. */
function restore(was: { file: string; before: string | null }): void {
  if (was.before == null) {
    rmSync(was.file, { force: true });
    return;
  }
  const tmp = `${was.file}.tmp-${process.pid}`;
  writeFileSync(tmp, was.before);
  renameSync(tmp, was.file);
}

/** The chains the indexer views hold (null when there are none yet). */
async function indexedChains(url: string): Promise<Set<number> | null> {
  const [{ sql }, { createDb, createPool }] = await Promise.all([import("kysely"), import("../db/client.js")]);
  const db = createDb(createPool(url, 1, "vault-vaults-cli", CLI_DB_TIMEOUTS));
  try {
    const { rows } = await sql<{ chain_id: string | number }>`SELECT chain_id FROM indexer._ponder_checkpoint`.execute(
      db,
    );
    return new Set(rows.map((r) => Number(r.chain_id)));
  } catch {
    return null;
  } finally {
    await db.destroy();
  }
}

/** `given`: --registry; without it VAULT_REGISTRY, else the default file */
async function list(given: string | undefined): Promise<void> {
  const { loadRegistry, registryPath } = await import("../config/registry.js");
  const file = given === undefined ? registryPath() : argumentPath(given);
  let reg: Registry;
  try {
    reg = loadRegistry(file);
  } catch (err) {
    fail(errMessage(err));
  }
  const url = process.env.DATABASE_URL?.trim();
  if (url && !POSTGRES_SCHEME.test(url)) fail("DATABASE_URL must be a postgres:// URL");
  if (url && !parsablePostgresUrl(url)) fail(`DATABASE_URL ${POSTGRES_URL_FORM}`);
  const indexed = url ? await indexedVaults(url) : null;
  console.log(`chain\taddress\tfamily\tkind\tstart_block\t${indexed ? "indexed\t" : ""}name`);
  const rows = [...reg.evm, ...reg.nonEvm];
  if (rows.length === 0)
    console.log(`(no vaults in ${file} yet: npm run vaults -- add --chain <id> --address <address>)`);
  for (const v of rows) {
    const evm = "startBlock" in v ? (v as EvmVault) : null;
    // non-EVM vaults are served from the registry and never indexed
    const isIndexed = indexed?.has(`${v.chainId}:${String(v.address).toLowerCase()}`);
    const state = indexed ? `${!evm ? "-" : isIndexed ? "yes" : "not yet"}\t` : "";
    const kind = evm?.kind ?? "-";
    console.log(`${v.chainId}\t${v.address}\t${v.family}\t${kind}\t${evm?.startBlock ?? "-"}\t${state}${v.name}`);
  }
}

/** `chain:address` of every vault the indexer views hold (none before the views exist). */
async function indexedVaults(url: string): Promise<Set<string>> {
  const [{ sql }, { createDb, createPool }] = await Promise.all([import("kysely"), import("../db/client.js")]);
  const db = createDb(createPool(url, 1, "vault-vaults-cli", CLI_DB_TIMEOUTS));
  try {
    const { rows } = await sql<{
      chain_id: number;
      address: string;
    }>`SELECT chain_id, address FROM indexer.vault`.execute(db);
    return new Set(rows.map((r) => `${r.chain_id}:${r.address}`));
  } catch (err) {
    // no indexer views yet: nothing indexed (every vault "not yet"); any other error stops
    if ((err as { code?: string }).code === "42P01" || (err as { code?: string }).code === "3F000") return new Set();
    fail(`the database (DATABASE_URL) is not usable: ${errMessage(err)}`);
  } finally {
    await db.destroy();
  }
}

main().catch((err) => {
  console.error(`vaults failed: ${errMessage(err)}`);
  process.exit(1);
});
