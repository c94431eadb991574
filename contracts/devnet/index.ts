/** Runs the simulation on every devnet chain and writes the manifest and the vault registry. */
import { mkdirSync, renameSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import type { z } from "zod";
import type { protocolsSchema } from "../../config/registry.js";
import { PERP_RELAY_DELAY_S, PerpNetwork } from "./perp-sim.js";
import type { VaultSpec } from "./scenario.js";
import { type ChainActions, type ChainResult, DAY, type RegistryVault, simulateChainWithActions } from "./simulate.js";

export { type Live, type LiveOptions, startLive } from "./live.js";
export { PERP_RELAY_DELAY_S, type PerpDepositRecord, type PerpOutcome, type WorldPerp } from "./perp-sim.js";
export { DEVNET_CHAINS, VAULT_SPECS, type VaultSpec } from "./scenario.js";
export { ENS_HOLDER_NAMES, type EnsResult } from "./simulate.js";
export { relayerKey, type WorldLoan } from "./world.js";
export { type ChainActions, type ChainResult, DAY, type RegistryVault };

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
  /** the vaults to deploy on it (default: the VAULT_SPECS of its chain id) */
  vaultSpecs?: readonly VaultSpec[];
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
  /** seconds between a perp deposit and its credit on the core chain (default PERP_RELAY_DELAY_S) */
  perpDelayS?: number;
}

/** A vault registry file, as read by ponder.config.ts and the API (config/registry.ts). */
export interface RegistryFile {
  version: 1;
  vaults: ((RegistryVault | NonEvmRegistryVault) & {
    metadata?: Record<string, unknown>;
    subaccountSettings?: Record<string, { minHealthFactor?: number; funding?: string[] }>;
  })[];
  /** each chain's protocols: what its subaccounts use (config/registry.ts) */
  protocols: ChainProtocolsEntry[];
}

type ChainProtocolsEntry = z.input<typeof protocolsSchema>;

/** The registry's protocols entry of a simulated chain: its world's tokens, feeds and protocols. */
function protocolsOf(r: ChainResult): ChainProtocolsEntry {
  const p = r.world.protocols;
  const lc = (a: string) => a.toLowerCase();
  return {
    chainId: r.chainId,
    tokens: p.tokens.map((t) => ({
      address: lc(t.address),
      symbol: t.symbol,
      decimals: t.decimals,
      priceFeed: { address: lc(t.feed), decimals: 8 },
    })),
    aave: { pool: lc(p.aave.pool), dataProvider: lc(p.aave.dataProvider) },
    morpho: { address: lc(p.morpho.morpho), markets: [p.morpho.marketId], lendingVaults: [lc(p.morpho.lendingVault)] },
    uniswap: {
      factory: lc(p.uniswap.factory),
      positionManager: lc(p.uniswap.positionManager),
      swapRouter: lc(p.uniswap.swapRouter),
      quoterV2: lc(p.uniswap.quoterV2),
      staker: lc(p.uniswap.staker),
    },
    uniswapV2: { factory: lc(p.uniswapV2.factory), router: lc(p.uniswapV2.router) },
    loanRegistry: lc(p.loans.registry),
    perp: {
      bridgeA: lc(p.perp.bridgeA),
      bridgeB: lc(p.perp.bridgeB),
      ...(p.core ? { core: { chainId: p.core.chainId, ledger: lc(p.core.ledger) } } : {}),
    },
  };
}

/**
 * Per vault, its subaccounts' settings: the minimum health factor of those the simulator keeps
 * above one, and the custody wallet that funds them (one per seed, the same on every chain). A
 * Safe has one address on every chain and is in each chain's world, with its role on one: the
 * minimum is the one any chain's world gives it.
 */
function subaccountSettings(results: ChainResult[], v: RegistryVault) {
  const out: Record<string, { minHealthFactor?: number; funding: string[] }> = {};
  const funding = [...new Set(results.map((r) => r.world.custody.toLowerCase()))].sort();
  for (const r of results)
    for (const x of r.world.subaccounts) {
      const safe = x.safe.toLowerCase() as `0x${string}`;
      if (!v.subaccounts.includes(safe)) continue;
      const minHealthFactor = x.minHealthFactor ?? out[safe]?.minHealthFactor;
      out[safe] = { ...(minHealthFactor != null ? { minHealthFactor } : {}), funding };
    }
  return out;
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
  return (await simulateDevnet(opts)).manifest;
}

/**
 * runDevnet, also handing back each chain's simulator actions (in the order of `opts.chains`),
 * for activity after the history (live.ts).
 */
export async function simulateDevnet(opts: RunDevnetOptions): Promise<{ manifest: Manifest; actions: ChainActions[] }> {
  // The core ledger lives on chain 1 when it is simulated (else on the lowest chain id).
  const ids = opts.chains.map((c) => c.chainId);
  const coreChainId = ids.includes(1) ? 1 : Math.min(...ids);
  const perp = new PerpNetwork(
    coreChainId,
    opts.perpDelayS ?? PERP_RELAY_DELAY_S,
    opts.chains.map((c) => ({ chainId: c.chainId, rpcUrl: c.rpcUrl })),
  );
  const simulated = await Promise.all(
    opts.chains.map((c) =>
      simulateChainWithActions({
        perp,
        chainId: c.chainId,
        rpcUrl: c.rpcUrl,
        blockTime: c.blockTime,
        snapshotInterval: c.snapshotInterval,
        ...(c.vaultSpecs ? { vaultSpecs: c.vaultSpecs } : {}),
        seed: opts.seed,
        days: opts.days,
        endTime: opts.endTime,
        wallets: opts.wallets,
        ...(opts.log ? { log: opts.log } : {}),
      }),
    ),
  );
  const results = simulated.map((r) => r.result);
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
      ...results
        .flatMap((r) => r.vaults)
        .map((v) => ({
          ...v,
          metadata: demoMetadata(v.kind, v.name),
          subaccountSettings: subaccountSettings(results, v),
        })),
      // A non-EVM vault: served by the API from the registry, never handed to the indexer.
      {
        chainId: -1,
        address: "7VaultSo1anaExamp1eAddre55xxxxxxxxxxxxxxxxxx",
        family: "solanaVault",
        name: "Solana Stablecoin Strategy",
        symbol: "sUSDC",
        status: "active",
        metadata: {
          description: "A USDC strategy on Solana (served from the registry; not indexed).",
          solana_vault_metadata: {
            vault_state_pda: "9StatePdaExamp1eAddre55xxxxxxxxxxxxxxxxxxxx",
            share_mint: "5ShareMintExamp1eAddre55xxxxxxxxxxxxxxxxxxx",
            deposit_mint: "EPjFWdd5AufqSSqeM2qN1xzybapC8G4wEGGkZwyTDt1v",
            deposit_token_symbol: "USDC",
            deposit_token_decimals: 6,
            program_id: "VauLtProgramExamp1eAddre55xxxxxxxxxxxxxxxxx",
          },
        },
      },
    ],
    protocols: results.map(protocolsOf),
  };
  writeAtomic(opts.manifestPath, JSON.stringify(manifest));
  writeAtomic(opts.registryPath, JSON.stringify(registry, null, 2));
  return { manifest, actions: simulated.map((r) => r.actions) };
}

function writeAtomic(path: string, text: string): void {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, text);
  renameSync(tmp, path);
}

/** Registry metadata of the demo's vaults: the spec's descriptive fields the chain cannot give. */
function demoMetadata(kind: string, name: string): Record<string, unknown> {
  const stable = kind === "stablecoin";
  return {
    description: `${name}: a simulated ${stable ? "stablecoin lending" : "ETH yield"} strategy on the local devnet.`,
    public_type: stable ? "Stablecoin" : "ETH",
    risk: stable ? "low" : "medium",
    is_featured: stable,
    default_apy_horizon: 7,
    reserve_target: 0.05,
    reserve_tolerance: 0.01,
    weekly_performance_fee_bps: 10,
    vault_logo_url: `https://example.invalid/logos/${kind}.svg`,
    reported_apy: {
      apy: stable ? 0.085 : 0.045,
      underlying_apy: stable ? 0.08 : 0.035,
      liquid_apy: stable ? 0.082 : 0.04,
      rewards_compounded: 0,
      rewards_claimable: 0,
      points_apy: null,
      explainer: "Operator-reported target APY.",
    },
  };
}
