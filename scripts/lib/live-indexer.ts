/**
 * The indexer as a service that follows its registry file: `npm run indexer` and the demo run
 * Ponder through this. It starts the deployment of the file as it is and publishes it at the
 * chain heads; then it reads the file every `pollMs`. When the file has changed (and stayed the
 * same for one more read, so a file written in pieces is not taken half-way), it checks it (a
 * bad file is logged and ignored: the serving deployment runs on), starts the new registry's
 * deployment beside the serving one (its own schema `app_<hash>`, the other of two ports), waits
 * until it is at every chain's head, re-points the `indexer` views to it in one transaction
 * (showInViews: readers never see a gap; in an INDEXER_GROUP, beside the other groups'), records
 * its backfilled vaults, loads the registry tables from it, and stops the old deployment (which
 * goes even when the recording or the loading fails: the views show the new one). A change while
 * a new deployment catches up replaces that deployment with the newer file's. In a group, a
 * change that leaves the group's part of the registry as it was (`planFingerprint`) starts
 * nothing: the serving deployment serves on.
 *
 * Each deployment reads a copy of the file taken when it started (.data/indexer/), so a later
 * edit cannot reach a deployment named after an earlier content.
 */
import { createHash } from "node:crypto";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { indexerPlan, planFingerprint } from "../../config/indexer.js";
import { loadRegistry } from "../../config/registry.js";
import { createDb, createPool } from "../../db/client.js";
import { loadRegistryData } from "../../db/registry-load.js";
import {
  type ChainProgress,
  deploymentSchema,
  groupBuildSchema,
  type IndexerHandle,
  type IndexerOptions,
  publishAtHead,
  REPO_ROOT,
  recordBackfill,
  showInViews,
  startIndexer,
  waitForHead,
} from "./indexer.js";
import { groupDeploymentSchema, type PublishResult } from "./indexer-groups.js";
import { errMessage, isShuttingDown, restartDelayMs } from "./procs.js";
import { checkSafeVersions } from "./safe-versions.js";

export interface LiveIndexerOptions {
  /** the registry file operators edit (VAULT_REGISTRY) */
  registryFile: string;
  databaseUrl: string;
  /** the two Ponder HTTP ports deployments take in turn (the serving one and the next) */
  ports: readonly [number, number];
  /** what every deployment shares: RPC lanes, log file, echo, project root, listening address */
  base: Pick<IndexerOptions, "rpcLanes" | "logFile" | "echo" | "root" | "group" | "hostname">;
  /** the environment a registry is planned with (its PONDER_RPC_URL_* decide the chains) */
  planEnv: NodeJS.ProcessEnv;
  /** snapshot intervals of chains whose interval the caller sets (the demo's, the tests') */
  snapshotIntervals?: ReadonlyMap<number, number>;
  /** a fixed deployment schema (INDEXER_SCHEMA): the file is then not followed */
  schema?: string | undefined;
  /** how often the file is read (default 2000 ms) */
  pollMs?: number;
  /** how long a deployment may take to reach the heads */
  timeoutMs: number;
  log: (msg: string) => void;
  onProgress?: (p: ChainProgress[], ready: boolean) => void;
  /** the serving deployment exited by itself (not stopped by a switch) */
  onServingExit: (code: number | null, signal: NodeJS.Signals | null) => void;
  /**
   * Start the serving deployment's Ponder again when it exits by itself (after `restartDelayMs`,
   * never while shutting down): it resumes its schema from its checkpoint (crash recovery), which
   * the views keep showing. Default false: `npm run indexer` exits instead, for its supervisor.
   */
  restartServing?: boolean;
}

interface Deployment {
  schema: string;
  /** sha-256 of the registry bytes it indexes */
  hash: string;
  /** in a group: what the registry gives the group's chains (`planFingerprint`) */
  fingerprint: string | null;
  snapshot: string;
  options: IndexerOptions;
  handle: IndexerHandle;
  stopping: boolean;
  exited: boolean;
  /** its Ponder's exits within a minute of their start, in a row (for the restart's wait) */
  quickExits: number;
  startedAt: number;
}

const sha256 = (b: Buffer) => createHash("sha256").update(b).digest("hex");
const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

export class LiveIndexer {
  private serving: Deployment | null = null;
  private candidate: Deployment | null = null;
  private lastRead: string | null = null;
  /** registry contents that were refused or whose deployment failed: retried once the file changes */
  private readonly refused = new Set<string>();
  /** the last content whose subaccount Safes could not be checked (said once, asked each read) */
  private unchecked: string | null = null;
  private stopped = false;
  /** a switch of the views is under way: the file is looked at again once it is done */
  private switching = false;
  private loop: Promise<void> | null = null;
  private readonly snapshotDir = join(REPO_ROOT, ".data", "indexer");

  constructor(private readonly opts: LiveIndexerOptions) {}

  /** The deployment readers see. */
  get schema(): string | undefined {
    return this.serving?.schema;
  }

  get handle(): IndexerHandle | undefined {
    return this.serving?.handle;
  }

  /**
   * Starts the deployment of the file as it is now, publishes it at the heads, then follows the
   * file. Throws when that first deployment cannot start or exits before the heads.
   */
  async start(): Promise<{ schema: string; progress: ChainProgress[]; archived: number; group?: PublishResult }> {
    const bytes = readFileSync(this.opts.registryFile);
    const dep = this.launch(bytes, this.opts.ports[0]);
    this.serving = dep;
    this.lastRead = dep.hash;
    const { progress, archived, group } = await publishAtHead(dep.options, dep.handle, {
      timeoutMs: this.opts.timeoutMs,
      isAlive: () => !dep.exited,
      log: this.opts.log,
      ...(this.opts.onProgress ? { onProgress: this.opts.onProgress } : {}),
    });
    if (this.opts.schema) this.opts.log(`INDEXER_SCHEMA is set: changes of ${this.opts.registryFile} are not followed`);
    else this.loop = this.follow();
    return { schema: dep.schema, progress, archived, ...(group ? { group } : {}) };
  }

  /** Stops following the file and stops both deployments. */
  async stop(): Promise<void> {
    this.stopped = true;
    await Promise.all([this.serving, this.candidate].map((d) => (d ? this.retire(d) : undefined)));
    await this.loop;
  }

  /** Starts the deployment of `bytes` on `port`; throws (starting nothing) when the registry is unusable. */
  private launch(bytes: Buffer, port: number): Deployment {
    const root = this.opts.base.root ?? REPO_ROOT;
    const build = deploymentSchema(this.opts.registryFile, root, bytes);
    mkdirSync(this.snapshotDir, { recursive: true });
    const snapshot = join(this.snapshotDir, `registry-${build}.json`);
    writeFileSync(snapshot, bytes);
    let chains: IndexerOptions["chains"];
    let fingerprint: string;
    try {
      const plan = indexerPlan({ ...this.opts.planEnv, VAULT_REGISTRY: snapshot });
      fingerprint = planFingerprint(plan);
      chains = plan.chains.map((c) => {
        const interval = this.opts.snapshotIntervals?.get(c.id);
        return {
          chainId: c.id,
          rpcUrl: c.rpcUrl,
          rpcUrls: c.rpcUrls,
          ...(interval ? { snapshotInterval: interval } : {}),
        };
      });
      for (const v of plan.skipped) {
        this.opts.log(
          `not indexed (no PONDER_RPC_URL_${v.chainId} in the indexer's environment): ${v.name} ${v.address}`,
        );
      }
    } catch (err) {
      rmSync(snapshot, { force: true });
      // the message names the file operators edit, not this deployment's copy of it
      throw new Error(errMessage(err).replaceAll(snapshot, this.opts.registryFile));
    }
    const group = this.opts.base.group;
    const schema =
      this.opts.schema ??
      (group
        ? groupDeploymentSchema(
            groupBuildSchema(fingerprint, root),
            group.name,
            chains.map((c) => c.chainId),
          )
        : build);
    const dep: Deployment = {
      schema,
      hash: sha256(bytes),
      fingerprint: group ? fingerprint : null,
      snapshot,
      stopping: false,
      exited: false,
      quickExits: 0,
      startedAt: Date.now(),
      options: undefined as unknown as IndexerOptions,
      handle: undefined as unknown as IndexerHandle,
    };
    dep.options = {
      ...this.opts.base,
      databaseUrl: this.opts.databaseUrl,
      registryFile: snapshot,
      chains,
      port,
      schema,
      name: this.serving ? `indexer ${schema}` : "indexer",
      onExit: (code, signal) => {
        dep.exited = true;
        if (dep !== this.serving || dep.stopping || this.stopped || dep.handle.process.stopRequested()) return;
        this.opts.onServingExit(code, signal);
        if (this.opts.restartServing) void this.restart(dep);
      },
    };
    dep.handle = startIndexer(dep.options);
    return dep;
  }

  /** Starts the serving deployment's Ponder again on its schema, once it has waited its turn. */
  private async restart(dep: Deployment): Promise<void> {
    dep.quickExits = Date.now() - dep.startedAt < 60_000 ? dep.quickExits + 1 : 1;
    const wait = restartDelayMs(dep.quickExits);
    this.opts.log(`starting ${dep.schema} again in ${wait / 1000} s (Ponder resumes it from its checkpoint)`);
    await sleep(wait);
    if (dep !== this.serving || dep.stopping || this.stopped || isShuttingDown()) return;
    dep.exited = false;
    dep.startedAt = Date.now();
    dep.handle = startIndexer(dep.options);
    this.opts.log(`${dep.schema} started again (pid ${dep.handle.process.pid})`);
  }

  private async retire(dep: Deployment): Promise<void> {
    dep.stopping = true;
    await dep.handle.stop();
    if (dep !== this.serving) rmSync(dep.snapshot, { force: true });
  }

  private async follow(): Promise<void> {
    const pollMs = this.opts.pollMs ?? 2000;
    while (!this.stopped) {
      await sleep(pollMs);
      if (this.stopped) return;
      try {
        await this.check();
      } catch (err) {
        this.opts.log(`registry watch: ${errMessage(err)}`);
      }
    }
  }

  private async check(): Promise<void> {
    if (this.switching) return;
    const serving = this.serving!;
    let bytes: Buffer;
    try {
      bytes = readFileSync(this.opts.registryFile);
    } catch (err) {
      if (this.lastRead !== "missing")
        this.opts.log(
          `registry ${this.opts.registryFile} unreadable (${errMessage(err)}); still serving ${serving.schema}`,
        );
      this.lastRead = "missing";
      return;
    }
    const hash = sha256(bytes);
    if (hash !== this.lastRead) {
      this.lastRead = hash; // acted on at the next read if it is still the same
      return;
    }
    if (hash === serving.hash) {
      if (this.candidate) {
        this.opts.log(`registry is back to what ${serving.schema} indexes: ${this.candidate.schema} stopped`);
        const c = this.candidate;
        this.candidate = null;
        await this.retire(c);
      }
      return;
    }
    if (this.candidate?.hash === hash || this.refused.has(hash)) return;
    if (serving.fingerprint && (await this.unchangedForGroup(bytes, hash, serving))) return;
    if (!(await this.safesMatch(bytes, hash, serving))) return;
    if (this.candidate) {
      const c = this.candidate;
      this.candidate = null;
      this.opts.log(`registry changed again: ${c.schema} replaced before it was published`);
      await this.retire(c);
    }
    const port = serving.options.port === this.opts.ports[0] ? this.opts.ports[1] : this.opts.ports[0];
    let dep: Deployment;
    try {
      dep = this.launch(bytes, port);
    } catch (err) {
      this.refused.add(hash);
      this.opts.log(
        `registry ${this.opts.registryFile} changed but is not usable; still serving ${serving.schema}: ` +
          `${errMessage(err)}`,
      );
      return;
    }
    this.candidate = dep;
    const chains = dep.options.chains.map((c) => c.chainId).join(", ");
    this.opts.log(
      `registry changed: deployment ${dep.schema} started (chains ${chains}, port ${port}); ${serving.schema} ` +
        `serves until it is at the heads`,
    );
    void this.publish(dep);
  }

  /**
   * In a group, a registry change that leaves what the group's chains index as it is (another
   * chain's vault, say) needs no deployment: the serving one takes the file as its own, a
   * candidate of an earlier change is stopped, and the registry tables are loaded from the file.
   * False when the group's part changed, or when the file is not usable (`launch` says why).
   */
  private async unchangedForGroup(bytes: Buffer, hash: string, serving: Deployment): Promise<boolean> {
    return this.withCopy(bytes, hash, "check", async (file) => {
      let fingerprint: string;
      try {
        fingerprint = planFingerprint(indexerPlan({ ...this.opts.planEnv, VAULT_REGISTRY: file }));
      } catch {
        return false;
      }
      if (fingerprint !== serving.fingerprint) return false;
      serving.hash = hash;
      if (this.candidate) {
        const c = this.candidate;
        this.candidate = null;
        await this.retire(c);
        this.opts.log(`registry is back to what ${serving.schema} indexes on this group's chains: ${c.schema} stopped`);
      }
      const loaded = await loadTables(this.opts.databaseUrl, file).then(
        (n) => `${n} vaults in the registry tables`,
        (err: unknown) => `loading the registry tables failed (the next change retries): ${errMessage(err)}`,
      );
      const chains = serving.options.chains.map((c) => c.chainId).join(", ");
      this.opts.log(
        `registry changed outside this group's chains (${chains}): ${serving.schema} serves on (${loaded})`,
      );
      return true;
    });
  }

  /** `fn` given a copy of `bytes` (a registry content) in a file of its own, removed after. */
  private async withCopy<T>(bytes: Buffer, hash: string, tag: string, fn: (file: string) => Promise<T>): Promise<T> {
    mkdirSync(this.snapshotDir, { recursive: true });
    const file = join(this.snapshotDir, `registry-${tag}-${hash.slice(0, 12)}.json`);
    writeFileSync(file, bytes);
    try {
      return await fn(file);
    } finally {
      rmSync(file, { force: true });
    }
  }

  /**
   * The file's subaccount Safes checked against the chains (scripts/lib/safe-versions.ts): a
   * `safeVersion` a chain contradicts refuses the file; a chain that cannot be asked is asked again
   * at the next read. True when nothing stands against it (a file that cannot be planned is
   * `launch`'s to refuse).
   */
  private async safesMatch(bytes: Buffer, hash: string, serving: Deployment): Promise<boolean> {
    const check = await this.withCopy(bytes, hash, "safes", async (file) => {
      try {
        const found = await checkSafeVersions(indexerPlan({ ...this.opts.planEnv, VAULT_REGISTRY: file }));
        // the messages name the file operators edit, not this copy of it
        return { ...found, problems: found.problems.map((m) => m.replaceAll(file, this.opts.registryFile)) };
      } catch {
        return null;
      }
    });
    if (!check) return true;
    if (check.problems.length > 0) {
      this.refused.add(hash);
      this.opts.log(
        `registry ${this.opts.registryFile} changed but is not usable; still serving ${serving.schema}: ` +
          check.problems.join("; "),
      );
      return false;
    }
    if (check.unreachable.length > 0) {
      if (this.unchecked !== hash) {
        this.opts.log(
          `registry changed; its subaccount Safes cannot be checked yet, asked again at each read ` +
            `(${check.unreachable.join("; ")}); still serving ${serving.schema}`,
        );
      }
      this.unchecked = hash;
      return false;
    }
    return true;
  }

  /** Waits until `dep` is at every head, then makes it the serving deployment. */
  private async publish(dep: Deployment): Promise<void> {
    let progress: ChainProgress[];
    try {
      progress = await waitForHead(dep.handle, this.opts.databaseUrl, dep.options.chains, {
        timeoutMs: this.opts.timeoutMs,
        isAlive: () => !dep.exited && !dep.stopping,
        log: (m) => this.opts.log(`deployment ${dep.schema}: ${m}`),
      });
      if (dep !== this.candidate || this.stopped) return;
      this.switching = true;
      try {
        await showInViews(dep.options, dep.schema);
      } finally {
        this.switching = false;
      }
    } catch (err) {
      if (dep.stopping || this.stopped) return;
      this.refused.add(dep.hash);
      if (this.candidate === dep) this.candidate = null;
      this.opts.log(
        `deployment ${dep.schema} failed (${errMessage(err)}); still serving ${this.serving?.schema}; ` +
          "save the registry again (changed) to retry",
      );
      await this.retire(dep);
      return;
    }
    // The views show `dep` now: it serves whatever follows, and the old deployment goes.
    const old = this.serving!;
    this.serving = dep;
    this.candidate = null;
    const done: string[] = [];
    await recordBackfill(this.opts.databaseUrl, dep.schema, progress).then(
      (n) => done.push(`${n} vaults backfilled`),
      (err: unknown) => done.push(`recording its backfilled vaults failed: ${errMessage(err)}`),
    );
    await loadTables(this.opts.databaseUrl, dep.snapshot).then(
      (n) => done.push(`${n} in the registry tables`),
      (err: unknown) => done.push(`loading the registry tables failed (the next change retries): ${errMessage(err)}`),
    );
    this.opts.log(
      `registry change published: views "indexer" now show ${dep.schema} (${done.join(", ")}); stopping ${old.schema}`,
    );
    await this.retire(old);
  }
}

/** The registry tables from the registry a deployment indexes (as `npm run registry -- load`). */
async function loadTables(databaseUrl: string, file: string): Promise<number> {
  const db = createDb(createPool(databaseUrl, 1, "vault-indexer-registry"));
  try {
    return (await loadRegistryData(db, loadRegistry(file))).vaults;
  } finally {
    await db.destroy();
  }
}
