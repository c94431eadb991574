/**
 * Runs the Ponder indexer as a managed child process: picks the deployment schema from a hash of
 * everything that defines the build (so changed code gets a new schema and the `indexer` views
 * switch to it when its backfill is done), waits until every chain is indexed to its head, and
 * records which vaults are fully backfilled (ops.vault_backfill).
 */
import { createHash } from "node:crypto";
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative, resolve } from "node:path";
import pg from "pg";
import { getChain } from "../../config/chains.js";
import { indexerPlan, planFingerprint } from "../../config/indexer.js";
import { rpc } from "./anvil.js";
import { groupDeploymentSchema, opsDdlLock, type PublishResult, publishGroup } from "./indexer-groups.js";
import { REPO_ROOT, VIEWS_SCHEMA } from "./paths.js";
import { errMessage, type ManagedProcess, spawnManaged } from "./procs.js";
import { inViewSwitch } from "./view-switch.js";

export { REPO_ROOT, VIEWS_SCHEMA };
/** Lanes to a local node (see rpcLanes in config/indexer.ts). */
export const LOCAL_RPC_LANES = 16;

/** Files whose content defines an indexer build; the registry file is added by the caller. */
function buildFiles(root: string): string[] {
  const out = [join(root, "ponder.config.ts"), join(root, "ponder.schema.ts")];
  const walk = (dir: string) => {
    for (const name of readdirSync(dir).sort()) {
      const p = join(dir, name);
      if (statSync(p).isDirectory()) walk(p);
      else if (p.endsWith(".ts")) out.push(p);
    }
  };
  for (const d of ["src", "abis", "config"]) walk(join(root, d));
  return out;
}

/**
 * `app_<hash>`: the deployment schema for this code and this registry (its path and content;
 * `registryContent` when the caller read it already, so the schema names exactly those bytes).
 */
export function deploymentSchema(registryFile: string, root = REPO_ROOT, registryContent?: Buffer): string {
  const h = buildHash(root);
  h.update(relative(root, resolve(registryFile)));
  h.update(registryContent ?? readFileSync(registryFile));
  return `app_${h.digest("hex").slice(0, 12)}`;
}

/**
 * `app_<hash>` of a group's deployment: this code and what the registry gives the group's chains
 * (`planFingerprint`), so that a registry change elsewhere leaves the group's deployment as it is.
 */
export function groupBuildSchema(fingerprint: string, root = REPO_ROOT): string {
  return `app_${buildHash(root).update(fingerprint).digest("hex").slice(0, 12)}`;
}

/** The group's plan of a registry file: the chains given, planned as the indexer plans them. */
export function groupPlan(registryFile: string, chains: IndexerOptions["chains"]) {
  return indexerPlan({
    VAULT_REGISTRY: resolve(registryFile),
    ...Object.fromEntries(chains.map((c) => [`PONDER_RPC_URL_${c.chainId}`, c.rpcUrl])),
  });
}

function buildHash(root: string) {
  const h = createHash("sha256");
  for (const f of buildFiles(root)) {
    h.update(relative(root, f));
    h.update(readFileSync(f));
  }
  return h;
}

export interface IndexerOptions {
  databaseUrl: string;
  registryFile: string;
  /** `rpcUrl` is the chain's first URL, and Ponder's when `rpcLanes` is not "inherit" */
  chains: { chainId: number; rpcUrl: string; rpcUrls?: string[]; snapshotInterval?: number }[];
  /**
   * Lanes per RPC URL (default LOCAL_RPC_LANES, for local nodes); "inherit" keeps the
   * PONDER_RPC_URL_* and PONDER_RPC_LANES_* of the environment as they are.
   */
  rpcLanes?: number | "inherit";
  port: number;
  /** the address Ponder's HTTP server listens on (default 127.0.0.1, as the API's and the workers') */
  hostname?: string;
  schema?: string;
  logFile: string;
  echo?: boolean;
  root?: string;
  /**
   * Let Ponder itself re-point this views schema when its backfill is done (default: none).
   * Ponder does that before the newest (unfinalized) blocks are indexed, which would show
   * analysts an older state for a while; publishAtHead switches the views at the head instead.
   */
  viewsSchema?: string | null;
  onExit?: (code: number | null, signal: NodeJS.Signals | null) => void;
  /** the prefix of its log lines (default `indexer`) */
  name?: string;
  /**
   * Index only these chains as one group of several processes (scripts/lib/indexer-groups.ts):
   * the deployment schema gets the group's name (`app_<hash>_<group>`), and publishAtHead shows
   * it in the views (default `indexer`) beside the other groups' deployments, not instead of them.
   */
  group?: { name: string; viewsSchema?: string };
}

export interface IndexerHandle {
  schema: string;
  /**
   * Whether Ponder has re-indexed chain `chainId` up to `head` since its crash recovery (true
   * where it did not recover). Resuming its schema, Ponder reverts the data to the last finalized
   * block and re-indexes the rest live, while `_ponder_checkpoint` and `/ready` still say it is at
   * the old head: only its "Indexed block" lines tell when the data is back.
   */
  caughtUp(chainId: number, head: number): boolean;
  /**
   * Where Ponder answers: the port asked for, or the one it took instead. Ponder does not fail
   * on a port in use, it takes the next free one and logs it; the handle follows.
   */
  readonly url: string;
  process: ManagedProcess;
  stop(): Promise<void>;
}

export function indexerEnv(opts: IndexerOptions, schema: string): NodeJS.ProcessEnv {
  const env: NodeJS.ProcessEnv = {
    ...process.env,
    DATABASE_URL: opts.databaseUrl,
    DATABASE_SCHEMA: schema,
    VAULT_REGISTRY: resolve(opts.registryFile),
    PONDER_TELEMETRY_DISABLED: "1",
    PORT: String(opts.port),
  };
  const views = opts.viewsSchema ?? null;
  if (views) env.DATABASE_VIEWS_SCHEMA = views;
  else delete env.DATABASE_VIEWS_SCHEMA;
  for (const c of opts.chains) {
    if (opts.rpcLanes !== "inherit") {
      env[`PONDER_RPC_URL_${c.chainId}`] = c.rpcUrl;
      env[`PONDER_RPC_LANES_${c.chainId}`] = String(opts.rpcLanes ?? LOCAL_RPC_LANES);
    }
    if (c.snapshotInterval) env[`SNAPSHOT_INTERVAL_${c.chainId}`] = String(c.snapshotInterval);
  }
  return env;
}

/** The deployment schema when none is given: the build's, plus the group's name in a group. */
export function defaultSchema(opts: Pick<IndexerOptions, "registryFile" | "chains" | "group">, root = REPO_ROOT) {
  if (!opts.group) return deploymentSchema(opts.registryFile, root);
  const build = groupBuildSchema(planFingerprint(groupPlan(opts.registryFile, opts.chains)), root);
  return groupDeploymentSchema(
    build,
    opts.group.name,
    opts.chains.map((c) => c.chainId),
  );
}

export function startIndexer(opts: IndexerOptions): IndexerHandle {
  const root = opts.root ?? REPO_ROOT;
  const schema = opts.schema ?? defaultSchema(opts, root);
  const bin = join(REPO_ROOT, "node_modules", ".bin", "ponder");
  let port = opts.port;
  const recovery = new RecoveryProgress();
  const hostname = opts.hostname ?? "127.0.0.1";
  const args = ["start", "--root", root, "--log-format", "pretty", "--hostname", hostname];
  const proc = spawnManaged(opts.name ?? "indexer", bin, args, {
    cwd: root,
    env: indexerEnv(opts, schema),
    logFile: opts.logFile,
    echo: opts.echo ?? false,
    // Ponder's build runs a Vite server, whose SIGTERM handler exits the process before Ponder's
    // own shutdown has unlocked the schema: the next start on it then waits out the lock (up to
    // 25 s). Ponder handles SIGINT alone, and unlocks.
    stopSignal: "SIGINT",
    onExit: opts.onExit,
    onLine: (line) => {
      const taken = listeningPort(line);
      if (taken !== undefined) port = taken;
      recovery.read(line);
    },
  });
  return {
    schema,
    caughtUp: (chainId, head) => recovery.caughtUp(getChain(chainId)?.slug ?? String(chainId), head),
    get url() {
      return `http://${reachableHost(hostname)}:${port}`;
    },
    process: proc,
    stop: () => proc.stop(),
  };
}

/**
 * Ponder's crash recovery followed from its log: "Detected crash recovery", then per chain
 * "Started live indexing chain=<name> finalized_block=<n>" and an "Indexed block chain=<name>
 * number=<n>" line per block it indexes live.
 */
export class RecoveryProgress {
  private recovering = false;
  private readonly finalized = new Map<string, number>();
  private readonly indexed = new Map<string, number>();

  read(raw: string): void {
    // biome-ignore lint/suspicious/noControlCharactersInRegex: the pretty log's colour codes
    const line = raw.replace(/\x1b\[[0-9;]*m/g, "");
    if (line.includes("Detected crash recovery")) this.recovering = true;
    if (!this.recovering) return;
    const started = /Started live indexing\s+chain=(\S+)\s+finalized_block=(\d+)/.exec(line);
    if (started) this.finalized.set(started[1]!, Number(started[2]));
    const block = /Indexed block\s+chain=(\S+)\s+number=(\d+)/.exec(line);
    if (block) this.indexed.set(block[1]!, Math.max(this.indexed.get(block[1]!) ?? 0, Number(block[2])));
  }

  /** Whether chain `name` holds its data up to `head` again (always, where Ponder did not recover). */
  caughtUp(name: string, head: number): boolean {
    if (!this.recovering) return true;
    const finalized = this.finalized.get(name);
    if (finalized === undefined) return false; // reverted, not yet indexing live
    return finalized >= head || (this.indexed.get(name) ?? 0) >= head;
  }
}

/** Where to reach a server listening on `hostname` from this host (any address: loopback). */
export function reachableHost(hostname: string): string {
  if (hostname === "0.0.0.0" || hostname === "::" || hostname === "") return "127.0.0.1";
  return hostname.includes(":") ? `[${hostname}]` : hostname;
}

/** The port in Ponder's "Created HTTP server port=N" line (pretty or JSON log format). */
export function listeningPort(line: string): number | undefined {
  if (!line.includes("Created HTTP server")) return undefined;
  const m = /"?port"?[=:](\d{1,5})\b/.exec(line);
  return m ? Number(m[1]) : undefined;
}

export interface ChainProgress {
  chainId: number;
  indexed: number;
  /** the chain's head block; null while none of its RPC URLs answers */
  head: number | null;
}

/** A chain's head block, asked of its URLs in turn (the first that answers); throws if none does. */
async function headBlock(c: { rpcUrl: string; rpcUrls?: string[] }): Promise<number> {
  let failure: unknown;
  for (const url of c.rpcUrls ?? [c.rpcUrl]) {
    try {
      return Number(BigInt(await rpc<string>(url, "eth_blockNumber", [], { timeoutMs: 5000 })));
    } catch (err) {
      failure = err;
    }
  }
  throw failure;
}

/** Indexed block per chain, from the deployment's checkpoint table (null before it exists). */
export async function indexedBlocks(client: pg.Client | pg.Pool, schema: string): Promise<Map<number, number> | null> {
  try {
    const res = await client.query<{ chain_id: string; latest_checkpoint: string }>(
      `SELECT chain_id, latest_checkpoint FROM "${schema}"._ponder_checkpoint`,
    );
    // checkpoint layout: 10 digits timestamp, 16 chain id, 16 block number, ...
    return new Map(res.rows.map((r) => [Number(r.chain_id), Number(r.latest_checkpoint.slice(26, 42))]));
  } catch {
    return null;
  }
}

/** Whether `url` answers 200 within the timeout (network errors count as no). */
export async function httpOk(url: string, timeoutMs = 1000): Promise<boolean> {
  try {
    const res = await fetch(url, { signal: AbortSignal.timeout(timeoutMs) });
    await res.arrayBuffer();
    return res.status === 200;
  } catch {
    return false;
  }
}

export interface WaitOptions {
  timeoutMs: number;
  onProgress?: (p: ChainProgress[], ready: boolean) => void;
  isAlive?: () => boolean;
  /** told when a chain's head cannot be read (none of its URLs answers), and when it can again */
  log?: (m: string) => void;
}

/**
 * Waits until the deployment is ready (backfill done, views switched) and every chain's
 * checkpoint equals its current head. Reports progress through `onProgress`. A chain none of
 * whose RPC URLs answers is waited for, as Ponder waits for it, until `timeoutMs`.
 */
export async function waitForHead(
  handle: { schema: string; url: string; caughtUp?: IndexerHandle["caughtUp"] },
  databaseUrl: string,
  chains: { chainId: number; rpcUrl: string; rpcUrls?: string[] }[],
  opts: WaitOptions,
): Promise<ChainProgress[]> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    let last: ChainProgress[] = [];
    const deadline = Date.now() + opts.timeoutMs;
    const silent = new Set<number>(); // chains whose head could not be read last time
    for (;;) {
      if (opts.isAlive && !opts.isAlive())
        throw new Error("the indexer exited before reaching the chain heads (see its log)");
      const indexed = await indexedBlocks(client, handle.schema);
      const heads = await Promise.all(
        chains.map((c) =>
          headBlock(c).then(
            (head) => {
              if (silent.delete(c.chainId)) opts.log?.(`chain ${c.chainId} answers again (head ${head})`);
              return head;
            },
            (err: unknown) => {
              if (!silent.has(c.chainId)) {
                silent.add(c.chainId);
                const urls = (c.rpcUrls ?? [c.rpcUrl]).join(", ");
                opts.log?.(`chain ${c.chainId}: no RPC URL answers (${urls}: ${errMessage(err)}); waiting for it`);
              }
              return null;
            },
          ),
        ),
      );
      last = chains.map((c, i) => ({ chainId: c.chainId, indexed: indexed?.get(c.chainId) ?? 0, head: heads[i]! }));
      const ready = await httpOk(`${handle.url}/ready`, 2000);
      opts.onProgress?.(last, ready);
      const atHead = (p: ChainProgress) =>
        p.head !== null && p.indexed >= p.head && (handle.caughtUp?.(p.chainId, p.head) ?? true);
      if (ready && last.every(atHead)) break;
      if (Date.now() > deadline) {
        throw new Error(
          `timed out after ${opts.timeoutMs} ms waiting for the indexer to reach every chain head: ` +
            `${JSON.stringify(last)}`,
        );
      }
      await new Promise((r) => setTimeout(r, 1000));
    }
    return last;
  } finally {
    await client.end();
  }
}

/** Records, per vault of the deployment, that its history is backfilled to `block` (idempotent). */
export async function recordBackfill(databaseUrl: string, schema: string, progress: ChainProgress[]): Promise<number> {
  const client = new pg.Client({ connectionString: databaseUrl });
  await client.connect();
  try {
    // indexer groups publish at the same time: IF NOT EXISTS alone races (opsDdlLock)
    await client.query("BEGIN");
    await client.query(opsDdlLock);
    await client.query(`CREATE SCHEMA IF NOT EXISTS ops`);
    await client.query(`CREATE TABLE IF NOT EXISTS ops.vault_backfill (
      chain_id integer NOT NULL,
      vault text NOT NULL,
      start_block bigint NOT NULL,
      backfilled_to_block bigint NOT NULL,
      backfilled_at timestamptz NOT NULL DEFAULT now(),
      deployment_schema text NOT NULL,
      PRIMARY KEY (chain_id, vault)
    )`);
    await client.query("COMMIT");
    let n = 0;
    for (const p of progress) {
      const res = await client.query(
        `INSERT INTO ops.vault_backfill (chain_id, vault, start_block, backfilled_to_block, deployment_schema)
         SELECT chain_id, address, start_block, $2, $3 FROM "${schema}".vault WHERE chain_id = $1
         ON CONFLICT (chain_id, vault) DO UPDATE SET
           backfilled_to_block = GREATEST(ops.vault_backfill.backfilled_to_block, EXCLUDED.backfilled_to_block),
           deployment_schema = EXCLUDED.deployment_schema`,
        [p.chainId, p.indexed, schema],
      );
      n += res.rowCount ?? 0;
    }
    return n;
  } finally {
    await client.end();
  }
}

/**
 * Points the views schema at an existing deployment schema: how a redeploy publishes a new build
 * and how an operator rolls the analysts' names back to, or forward to, a given deployment.
 *
 * The same views `ponder db create-views` makes (every table and view the deployment's app
 * lists, plus `_ponder_meta` and `_ponder_checkpoint`), but switched in ONE transaction: Ponder's
 * command drops and creates each view in its own statement, so a reader between the two got
 * "relation does not exist". Here a reader waits for the commit and then reads the new target.
 * Ponder's live-query notify trigger is not installed: nothing in this service LISTENs on the
 * views schema (the API reads the tables directly). A view another build left that this one has
 * no table for is dropped. The switch waits for its locks in bounded turns (`inViewSwitch`), so
 * a long reader of one view does not hold the readers of the others behind it.
 */
export async function createViews(
  opts: Pick<IndexerOptions, "databaseUrl">,
  schema: string,
  viewsSchema = VIEWS_SCHEMA,
): Promise<void> {
  const client = new pg.Client({ connectionString: opts.databaseUrl });
  await client.connect();
  const q = (name: string) => client.escapeIdentifier(name);
  try {
    const exists = await client.query("SELECT 1 FROM information_schema.schemata WHERE schema_name = $1", [schema]);
    if (exists.rowCount === 0) throw new Error(`create-views: schema ${schema} does not exist`);
    const meta = await client.query<{ value: { table_names?: string[]; view_names?: string[] } }>(
      `SELECT value FROM ${q(schema)}._ponder_meta WHERE key = 'app'`,
    );
    const app = meta.rows[0]?.value;
    if (!app?.table_names)
      throw new Error(`create-views: schema ${schema} holds no Ponder app of a compatible version`);
    const names = [...app.table_names, ...(app.view_names ?? []), "_ponder_meta", "_ponder_checkpoint"];
    await inViewSwitch(client, async () => {
      await client.query(`CREATE SCHEMA IF NOT EXISTS ${q(viewsSchema)}`);
      // a view of an earlier build whose table this one no longer has goes too: left, it would
      // show that build's rows under a name that looks current
      const old = await client.query<{ viewname: string }>("SELECT viewname FROM pg_views WHERE schemaname = $1", [
        viewsSchema,
      ]);
      for (const { viewname } of old.rows)
        if (!names.includes(viewname)) await client.query(`DROP VIEW ${q(viewsSchema)}.${q(viewname)}`);
      for (const name of names) {
        await client.query(`DROP VIEW IF EXISTS ${q(viewsSchema)}.${q(name)}`);
        await client.query(`CREATE VIEW ${q(viewsSchema)}.${q(name)} AS SELECT * FROM ${q(schema)}.${q(name)}`);
      }
    });
  } finally {
    await client.end();
  }
}

/**
 * Waits until the deployment is at every chain's head, then points the `indexer` views at it
 * (one transaction: readers never see a gap or an older state) and records the backfilled
 * vaults. Returns the progress at the switch. In a group (opts.group), the views show the union
 * of every group's deployment instead, or stay as they are for the reasons in `group`.
 */
export async function publishAtHead(
  opts: IndexerOptions,
  handle: IndexerHandle,
  wait: WaitOptions,
): Promise<{ progress: ChainProgress[]; archived: number; group?: PublishResult }> {
  const progress = await waitForHead(handle, opts.databaseUrl, opts.chains, wait);
  const group = await showInViews(opts, handle.schema);
  const archived = await recordBackfill(opts.databaseUrl, handle.schema, progress);
  return { progress, archived, ...(group ? { group } : {}) };
}

/**
 * Shows a deployment that is at its heads in the views: alone (createViews), or in a group beside
 * the other groups' deployments (publishGroup; its result says what the views show).
 */
export async function showInViews(
  opts: Pick<IndexerOptions, "databaseUrl" | "chains" | "group">,
  schema: string,
): Promise<PublishResult | undefined> {
  if (!opts.group) {
    await createViews(opts, schema);
    return undefined;
  }
  return publishGroup(opts.databaseUrl, {
    group: opts.group.name,
    schema,
    chainIds: opts.chains.map((c) => c.chainId),
    viewsSchema: opts.group.viewsSchema ?? VIEWS_SCHEMA,
  });
}
