/**
 * Global setup of the solo end-to-end files: one embedded Postgres and a directory, nothing else.
 * Each file starts its own chains and makes its own databases on this cluster, so the files run
 * beside the devnet's (test/setup/devnet.ts) without touching them. Stopped in teardown.
 * `freshCluster` is the start both setups share.
 */
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { REPO_ROOT } from "../../scripts/lib/paths.js";
import { type PostgresInstance, startEmbeddedPostgres } from "../../scripts/lib/postgres.js";
import { killAllSync, stopAll } from "../../scripts/lib/procs.js";
import { freePort, PORT_OFFSET } from "../helpers.js";

export interface ClusterInfo {
  /** the cluster's `vaults` database, as the superuser; files make databases of their own beside it */
  dbUrl: string;
  /** a directory of the run's own for logs and data */
  dir: string;
}

declare module "vitest" {
  export interface ProvidedContext {
    cluster: ClusterInfo;
  }
}

/**
 * An empty `.data/<name>[-<offset>]` directory and an embedded Postgres in it (database `vaults`,
 * a port the kernel picks), its processes killed if the runner exits. The caller stops them with
 * `stopAll`, also when a later step of its setup fails.
 */
export async function freshCluster(name: string): Promise<{ dir: string; pgi: PostgresInstance }> {
  // first: vitest's own exit listener (a Ctrl-C ends in it) exits at once, cutting off later ones
  process.prependListener("exit", killAllSync);
  const dir = join(REPO_ROOT, ".data", PORT_OFFSET ? `${name}-${PORT_OFFSET}` : name);
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  const pgi = await startEmbeddedPostgres({
    port: await freePort(),
    dataDir: join(dir, "postgres"),
    database: "vaults",
    logFile: join(dir, "postgres.log"),
  });
  return { dir, pgi };
}

export default async function setup(project: TestProject) {
  try {
    const { dir, pgi } = await freshCluster("solo");
    project.provide("cluster", { dbUrl: pgi.url, dir });
  } catch (err) {
    await stopAll();
    throw err;
  }
  return async () => {
    await stopAll();
  };
}
