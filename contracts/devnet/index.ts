/** Runs the simulation on every devnet chain and writes the manifest and the vault registry. */
import { mkdirSync, writeFileSync, renameSync } from "node:fs";
import { dirname } from "node:path";
import { simulateChain, DAY, type ChainResult, type RegistryVault } from "./simulate.js";

export { DAY, type ChainResult, type RegistryVault };
export { DEVNET_CHAINS, VAULT_SPECS } from "./scenario.js";

export interface Manifest {
  version: 1;
  seed: string;
  days: number;
  endTime: number;
  generatedAt: string;
  chains: ChainResult[];
}

export interface DevnetChain {
  chainId: number;
  rpcUrl: string;
  blockTime: number;
  snapshotInterval: number;
}

export interface RunDevnetOptions {
  seed: string;
  days: number;
  endTime: number;
  wallets: number;
  chains: DevnetChain[];
  manifestPath: string;
  registryPath: string;
  log?: (msg: string) => void;
}

/** A vault registry file, as read by ponder.config.ts and the API (config/registry.ts). */
export interface RegistryFile {
  version: 1;
  vaults: (RegistryVault | NonEvmRegistryVault)[];
}

export interface NonEvmRegistryVault {
  chainId: number;
  address: string;
  family: string;
  name: string;
  symbol: string;
  status: "active" | "closed" | "migrated";
}

/** Genesis time for a devnet whose history ends at endTime: a day before the first simulated day. */
export function genesisTimestamp(endTime: number, days: number): number {
  return (Math.floor(endTime / DAY) - days) * DAY;
}

export async function runDevnet(opts: RunDevnetOptions): Promise<Manifest> {
  const results = await Promise.all(
    opts.chains.map((c) =>
      simulateChain({
        chainId: c.chainId,
        rpcUrl: c.rpcUrl,
        blockTime: c.blockTime,
        snapshotInterval: c.snapshotInterval,
        seed: opts.seed,
        days: opts.days,
        endTime: opts.endTime,
        wallets: opts.wallets,
        ...(opts.log ? { log: opts.log } : {}),
      }),
    ),
  );
  const manifest: Manifest = {
    version: 1,
    seed: opts.seed,
    days: opts.days,
    endTime: opts.endTime,
    generatedAt: new Date().toISOString(),
    chains: results,
  };
  const registry: RegistryFile = {
    version: 1,
    vaults: [
      ...results.flatMap((r) => r.vaults),
      // A non-EVM vault: served by the API from the registry, never handed to the indexer.
      {
        chainId: -1,
        address: "7VaultSo1anaExamp1eAddre55xxxxxxxxxxxxxxxxxx",
        family: "solanaVault",
        name: "Solana Stablecoin Strategy",
        symbol: "sUSDC",
        status: "active",
      },
    ],
  };
  writeAtomic(opts.manifestPath, JSON.stringify(manifest));
  writeAtomic(opts.registryPath, JSON.stringify(registry, null, 2));
  return manifest;
}

function writeAtomic(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, text);
  renameSync(tmp, path);
}
