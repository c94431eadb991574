/**
 * What the indexer indexes, from the environment and the vault registry: a chain is indexed when
 * PONDER_RPC_URL_<chainId> is set and the registry lists EVM vaults on it. Parsed and checked
 * once, when ponder.config.ts loads.
 */
import { createHash } from "node:crypto";
import type { z } from "zod";
import { getChain } from "./chains.js";
import { envNum } from "./env.js";
import {
  type ChainProtocols,
  type EvmVault,
  isSafeV130,
  loadRegistry,
  type Registry,
  registryPath,
  subaccountSafeVersions,
} from "./registry.js";
import { rpcUrlsFromEnv } from "./rpc-urls.js";

/** Snapshot spacing in blocks when SNAPSHOT_INTERVAL_<chainId> is not set: about hourly. */
const DEFAULT_SNAPSHOT_INTERVAL: Record<number, number> = {
  1: 300,
  11155111: 300,
  8453: 1800,
  10: 1800,
  42161: 14400,
  137: 1800,
  56: 1200,
  43114: 1800,
};

/** Blocks the flow snapshots' prefetch scans ahead with one eth_getLogs (FLOW_PREFETCH_BLOCKS_<chainId>). */
const DEFAULT_FLOW_PREFETCH_BLOCKS = 1000;

export interface IndexedChain {
  id: number;
  name: string; // ponder chain name (the catalogue slug)
  /** the chain's RPC URLs, each repeated once per lane (see rpcLanes) */
  rpc: string[];
  /** the first RPC URL as given */
  rpcUrl: string;
  /** every RPC URL as given, in order */
  rpcUrls: string[];
  snapshotInterval: number;
  /** blocks scanned ahead for the flow snapshots' prefetch (src/prefetch.ts); 0: off */
  flowPrefetchBlocks: number;
  startBlock: number; // earliest vault start block on the chain
  vaults: EvmVault[];
  /** the registry's protocols entry of the chain (what its subaccounts use), if any */
  protocols: ChainProtocols | null;
}

/**
 * The block a chain's subaccount Safes and their modules are followed from: the registry's
 * `subaccountsStartBlock` where it is before the chain's start block, else the start block.
 */
/**
 * The block the staker's incentives are indexed from: the registry's `stakerStartBlock` where it
 * is before the chain's start block, else the start block.
 */
export function stakerIncentivesStart(c: Pick<IndexedChain, "startBlock" | "protocols">): number {
  return Math.min(c.startBlock, c.protocols?.uniswap?.stakerStartBlock ?? c.startBlock);
}

export function subaccountsStart(c: Pick<IndexedChain, "startBlock" | "protocols">): number {
  return Math.min(c.startBlock, c.protocols?.subaccountsStartBlock ?? c.startBlock);
}

export interface IndexerPlan {
  registry: Registry;
  chains: IndexedChain[];
  /**
   * Every registry subaccount, of the vaults of every chain (lower case, sorted): a subaccount has
   * the same address on every chain, so each indexed chain follows all of them.
   */
  subaccounts: `0x${string}`[];
  /**
   * The subaccounts the registry says are Safe 1.3.x (`safeVersion`): their owner and module
   * events carry the address unindexed, so they are followed by sources of their own.
   */
  safesV130: `0x${string}`[];
  /** the perp core ledgers the registry names (`protocols[].perp.core`), each once */
  coreLedgers: { chainId: number; ledger: `0x${string}` }[];
  /** EVM vaults listed in the registry on chains without an RPC URL (not indexed). */
  skipped: EvmVault[];
}

type NumberRules = (n: z.ZodNumber) => z.ZodType<number, number>;

/**
 * A per-chain number setting, read as every other setting is (`envNum`): decimal text only, and
 * set to nothing counts as unset. A bad value is added to `problems`; the default stands in.
 */
function chainSetting(
  env: NodeJS.ProcessEnv,
  name: string,
  rules: NumberRules,
  what: string,
  def: number,
  problems: string[],
): number {
  const raw = env[name];
  if (raw === undefined || raw.trim() === "") return def;
  const parsed = envNum(rules).safeParse(raw);
  if (parsed.success) return parsed.data;
  problems.push(`${name}: "${raw}" is not ${what}`);
  return def;
}

export function indexerPlan(env: NodeJS.ProcessEnv = process.env): IndexerPlan {
  const registry = loadRegistry(registryPath(env));
  const byChain = new Map<number, EvmVault[]>();
  for (const v of registry.evm) byChain.set(v.chainId, [...(byChain.get(v.chainId) ?? []), v]);
  const rpc = rpcUrlsFromEnv(env);
  const problems: string[] = [...rpc.problems];
  const chains: IndexedChain[] = [];
  const skipped: EvmVault[] = [];
  for (const [id, vaults] of [...byChain.entries()].sort((a, b) => a[0] - b[0])) {
    const urls = rpc.urls.get(id);
    if (!urls) {
      // unset, or refused above (then the plan throws with the problem)
      if (!env[`PONDER_RPC_URL_${id}`]?.trim()) skipped.push(...vaults);
      continue;
    }
    const setting = (name: string, rules: NumberRules, what: string, def: number) =>
      chainSetting(env, `${name}_${id}`, rules, what, def, problems);
    const lanes = setting("PONDER_RPC_LANES", (n) => n.int().min(1).max(64), "an integer from 1 to 64", 1);
    const snapshotInterval = setting(
      "SNAPSHOT_INTERVAL",
      (n) => n.int().positive(),
      "a positive integer",
      DEFAULT_SNAPSHOT_INTERVAL[id] ?? 1800,
    );
    const flowPrefetchBlocks = setting(
      "FLOW_PREFETCH_BLOCKS",
      (n) => n.int().min(0).max(100_000),
      "an integer from 0 to 100000",
      DEFAULT_FLOW_PREFETCH_BLOCKS,
    );
    chains.push({
      id,
      name: getChain(id)!.slug,
      rpc: urls.flatMap((u) => rpcLanes(u, lanes)),
      rpcUrl: urls[0]!,
      rpcUrls: urls,
      snapshotInterval,
      flowPrefetchBlocks,
      startBlock: Math.min(...vaults.map((v) => v.startBlock)),
      vaults,
      protocols: registry.protocols.get(id) ?? null,
    });
  }
  if (problems.length > 0) throw new Error(`indexer configuration is invalid:\n  ${problems.join("\n  ")}`);
  if (chains.length === 0) {
    throw new Error(`nothing to index: no chain has both a PONDER_RPC_URL_<chainId> and vaults in ${registry.path}`);
  }
  const subaccounts = [...new Set(registry.evm.flatMap((v) => v.subaccounts))].sort();
  const versions = subaccountSafeVersions(registry.evm);
  const safesV130 = subaccounts.filter((a) => isSafeV130(versions.get(a)));
  const coreLedgers = new Map<string, { chainId: number; ledger: `0x${string}` }>();
  for (const p of registry.protocols.values()) {
    const core = p.perp?.core;
    if (core) coreLedgers.set(`${core.chainId}:${core.ledger}`, { chainId: core.chainId, ledger: core.ledger });
  }
  return { registry, chains, skipped, subaccounts, safesV130, coreLedgers: [...coreLedgers.values()] };
}

/**
 * What a deployment of the plan takes from the registry, as a sha-256: its chains' vaults and
 * protocols, every subaccount (each chain follows all of them) and its chains' core ledgers. Not
 * the environment's URLs, lanes or spacing, nor the registry's entries of other chains: an
 * indexer group whose fingerprint stays the same after a registry change need not redeploy.
 */
export function planFingerprint(plan: IndexerPlan): string {
  const ids = new Set(plan.chains.map((c) => c.id));
  const body = JSON.stringify({
    chains: plan.chains.map((c) => ({ id: c.id, startBlock: c.startBlock, vaults: c.vaults, protocols: c.protocols })),
    subaccounts: plan.subaccounts,
    safesV130: plan.safesV130,
    coreLedgers: plan.coreLedgers.filter((l) => ids.has(l.chainId)),
  });
  return createHash("sha256").update(body).digest("hex");
}

/**
 * Ponder paces each RPC URL on its own, starting at 20 requests per second and rising slowly:
 * right for a metered provider, far below what a local or dedicated node serves. N lanes give
 * Ponder the same endpoint N times, told apart by a query parameter the node ignores.
 */
export function rpcLanes(url: string, lanes: number): string[] {
  if (lanes <= 1) return [url];
  const sep = url.includes("?") ? "&" : "?";
  return Array.from({ length: lanes }, (_, i) => `${url}${sep}lane=${i}`);
}
