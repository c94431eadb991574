/**
 * Global setup for the tests: real embedded Postgres, two anvil chains with a simulated history,
 * and the indexer run to the chain heads. What the tests need is handed over with `provide`.
 * Everything started here is stopped in teardown (and killed if the runner exits).
 */
import { join } from "node:path";
import type { TestProject } from "vitest/node";
import { DEVNET_CHAINS, genesisTimestamp, runDevnet } from "../../contracts/devnet/index.js";
import { startAnvil } from "../../scripts/lib/anvil.js";
import { type IndexerOptions, publishAtHead, startIndexer } from "../../scripts/lib/indexer.js";
import { ensureAnalystRole } from "../../scripts/lib/postgres.js";
import { stopAll } from "../../scripts/lib/procs.js";
import { freePort, PORT_OFFSET } from "../helpers.js";
import { freshCluster } from "./cluster.js";

export interface DevnetInfo {
  dbUrl: string;
  analystUrl: string;
  registryFile: string;
  manifestFile: string;
  schema: string;
  indexerUrl: string;
  chains: {
    chainId: number;
    rpcUrl: string;
    snapshotInterval: number;
    /** the chain's ENS Universal Resolver (a TestUniversalResolver) */
    ensUniversalResolver: `0x${string}`;
    /** ENS names registered on this chain: name -> address (lower case); see EnsResult */
    ensNames: Record<string, `0x${string}`>;
  }[];
  dir: string;
}

declare module "vitest" {
  export interface ProvidedContext {
    devnet: DevnetInfo;
  }
}

export const TEST_DAYS = 30;

export default async function setup(project: TestProject) {
  const log = (m: string) => process.stdout.write(`[devnet] ${m}\n`);
  try {
    const { dir, pgi } = await freshCluster("test");
    const endTime = Math.floor(Date.now() / 1000);
    const chains = await Promise.all(
      DEVNET_CHAINS.map(async (c) => {
        const a = await startAnvil({
          chainId: c.chainId,
          port: c.port + 10_000 + PORT_OFFSET,
          genesisTimestamp: genesisTimestamp(endTime, TEST_DAYS),
          logFile: join(dir, `anvil-${c.chainId}.log`),
        });
        return { chainId: c.chainId, rpcUrl: a.rpcUrl, blockTime: c.blockTime, snapshotInterval: c.snapshotInterval };
      }),
    );
    const registryFile = join(dir, "vaults.json");
    const manifestFile = join(dir, "manifest.json");
    log(`simulating ${TEST_DAYS} days`);
    const manifest = await runDevnet({
      seed: "test",
      days: TEST_DAYS,
      endTime,
      wallets: 50,
      chains,
      manifestPath: manifestFile,
      registryPath: registryFile,
    });
    const analystUrl = await ensureAnalystRole(pgi.url, {
      viewsSchema: "indexer",
      extraSchemas: ["derived", "registry", "ops"],
    });
    log("indexing");
    let exited = false;
    const options: IndexerOptions = {
      databaseUrl: pgi.url,
      registryFile,
      chains,
      port: await freePort(),
      logFile: join(dir, "indexer.log"),
      onExit: () => (exited = true),
    };
    const indexer = startIndexer(options);
    const { progress } = await publishAtHead(options, indexer, { timeoutMs: 480_000, isAlive: () => !exited });
    log(`indexed to the heads: ${JSON.stringify(progress)}`);
    project.provide("devnet", {
      dbUrl: pgi.url,
      analystUrl,
      registryFile,
      manifestFile,
      schema: indexer.schema,
      indexerUrl: indexer.url,
      chains: chains.map(({ chainId, rpcUrl, snapshotInterval }) => {
        const { ens } = manifest.chains.find((m) => m.chainId === chainId)!;
        return { chainId, rpcUrl, snapshotInterval, ensUniversalResolver: ens.universalResolver, ensNames: ens.names };
      }),
      dir,
    });
  } catch (err) {
    await stopAll();
    throw err;
  }
  return async () => {
    await stopAll();
  };
}
