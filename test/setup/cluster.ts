/**
 * Global setup of the solo end-to-end files: one embedded Postgres and a directory, nothing else.
 * Each file starts its own chains and makes its own databases on this cluster, so the files run
 * beside the devnet's (test/setup/devnet.ts) without touching them. Stopped in teardown.
 */
import { mkdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { REPO_ROOT } from "../../scripts/lib/indexer.js";
import { startEmbeddedPostgres } from "../../scripts/lib/postgres.js";
import { killAllSync, stopAll } from "../../scripts/lib/procs.js";
import { freePort } from "../helpers.js";

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

const PORT_OFFSET = Number(process.env.TEST_PORT_OFFSET ?? 0);

export default async function setup(project: TestProject) {
  process.on("exit", killAllSync);
  const dir = join(REPO_ROOT, ".data", PORT_OFFSET ? `solo-${PORT_OFFSET}` : "solo");
  rmSync(dir, { recursive: true, force: true });
  mkdirSync(dir, { recursive: true });
  try {
    const pgi = await startEmbeddedPostgres({
      port: await freePort(),
      dataDir: join(dir, "postgres"),
      database: "vaults",
      logFile: join(dir, "postgres.log"),
    });
    project.provide("cluster", { dbUrl: pgi.url, dir });
  } catch (err) {
    await stopAll();
    throw err;
  }
  return async () => {
    await stopAll();
  };
}
