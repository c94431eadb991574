/**
 * The vault registry: which vaults exist, on which chain, from which block. Read by
 * ponder.config.ts (EVM vaults only) and by the API (all of them). A JSON file, path from
 * VAULT_REGISTRY (default config/vaults.json); the demo writes .data/demo/vaults.json.
 */
import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { z } from "zod";
import { getChain, isEvmChain } from "./chains.js";

const evmAddress = z
  .string()
  .regex(/^0x[0-9a-fA-F]{40}$/, "must be a 0x-prefixed 20-byte hex address")
  .transform((a) => a.toLowerCase() as `0x${string}`);

const token = z.strictObject({
  address: evmAddress,
  symbol: z.string().min(1),
  decimals: z.number().int().min(0).max(36),
});
/**
 * A vault's subaccounts listed once each (a repeated one would count twice in the vault's
 * actual TVL), its settings only for those it lists, and a name that is not blank.
 */
function subaccountProblems(v: EvmVault, i: number): string[] {
  const out: string[] = [];
  const listed = new Set<string>();
  for (const a of v.subaccounts) {
    if (listed.has(a)) out.push(`vaults[${i}].subaccounts: ${a} listed twice`);
    listed.add(a);
  }
  for (const a of Object.keys(v.subaccountSettings)) {
    if (!listed.has(a.toLowerCase())) out.push(`vaults[${i}].subaccountSettings: ${a} is not one of its subaccounts`);
  }
  if (v.name.trim() === "") out.push(`vaults[${i}].name: blank`);
  return out;
}

/** A Chainlink-style USD feed (latestRoundData; `decimals` of its answer). */
const priceFeed = z.strictObject({ address: evmAddress, decimals: z.number().int().min(0).max(36) });

export const evmVaultSchema = z.strictObject({
  chainId: z.number().int().positive(),
  address: evmAddress,
  /**
   * lendingPool and tokenizedVaultV2: the original's contracts; erc4626: any vault that follows
   * ERC-4626 (its Deposit, Withdraw and share Transfer events, totalAssets, totalSupply,
   * convertToAssets), without a redemption queue, timelock or subaccounts of its own.
   */
  family: z.enum(["lendingPool", "tokenizedVaultV2", "erc4626"]),
  kind: z.string().min(1),
  name: z.string().min(1),
  symbol: z.string().min(1),
  publicType: z.string().nullable().optional(),
  status: z.enum(["active", "closed", "migrated"]).default("active"),
  startBlock: z.number().int().min(0),
  startTimestamp: z.number().int().optional(),
  asset: token,
  /**
   * A second asset the vault accepts (tokenizedVaultV2's assetIn) and holds; with its own USD
   * feed, unrealized PnL values what the vault holds of it (docs/metrics.md). Without one it is
   * recorded but left out of actual TVL (older registries).
   */
  altAsset: token.extend({ priceFeed: priceFeed.nullable().optional() }).nullable().optional(),
  receiptToken: evmAddress.nullable().optional(),
  priceFeed: priceFeed.nullable().optional(),
  timelock: evmAddress.nullable().optional(),
  /**
   * The block the timelock was deployed in: its events are indexed from there, so the roles its
   * constructor granted are seen. Absent: from 64 blocks before the chain's first start block.
   */
  timelockStartBlock: z.number().int().min(0).optional(),
  multisig: evmAddress.nullable().optional(),
  operator: evmAddress.nullable().optional(),
  feeCollector: evmAddress.nullable().optional(),
  strategist: z.strictObject({ name: z.string(), address: evmAddress.nullable().optional() }).nullable().optional(),
  subaccounts: z.array(evmAddress).default([]),
  /** per subaccount address (any case): its names, type, the health factor it is kept above, funding */
  subaccountSettings: z
    .record(
      z.string().regex(/^0x[0-9a-fA-F]{40}$/, "must be a subaccount's address"),
      z.strictObject({
        internalName: z.string().min(1).optional(),
        friendlyName: z.string().min(1).optional(),
        type: z.string().min(1).optional(),
        minHealthFactor: z.number().positive().optional(),
        /**
         * the wallets that fund it besides its vault (custody, treasury): every priced token they
         * send it, less what it sends back, counts in its net deposits on every chain
         */
        funding: z.array(evmAddress).max(20).optional(),
        /**
         * its Safe's VERSION(), where it is before 1.4.0: Safe 1.3.0 emits its owner and module
         * events with the address unindexed, and the indexer follows such Safes apart
         * (`isSafeV130`). Absent: 1.4.0 or later. The indexer checks it against the chain.
         */
        safeVersion: z
          .string()
          .regex(/^\d+\.\d+\.\d+$/, "a Safe version such as 1.3.0")
          .refine((v) => compareVersions(v, "1.3.0") >= 0, "Safe versions before 1.3.0 are not supported")
          .optional(),
      }),
    )
    .default({}),
  /** the spec's optional vault fields nothing computes (description, risk, reported_apy, ...) */
  metadata: z.record(z.string(), z.unknown()).default({}),
});

export const nonEvmVaultSchema = z
  .object({
    chainId: z.number().int().max(0),
    address: z.string().min(1),
    family: z.string().min(1),
    name: z.string().min(1),
    symbol: z.string().min(1),
    status: z.enum(["active", "closed", "migrated"]).default("active"),
  })
  .passthrough();

/**
 * What a chain's subaccounts use, for the reads and builders of the institutional routes: the
 * tokens they hold with their USD feeds (one valuation path for every USD figure), and the
 * protocols' entry points. Every part is optional: a chain without Aave reads no Aave positions.
 */
export const protocolsSchema = z.strictObject({
  chainId: z.number().int().positive(),
  /**
   * The block this chain's subaccount Safes and their modules are followed from: at or before
   * their deployment, their setup (owners, threshold, module, its roles and allow-lists) is seen.
   * Absent or later: from the chain's start block, the first vault's.
   */
  subaccountsStartBlock: z.number().int().min(0).optional(),
  tokens: z.array(token.extend({ priceFeed: priceFeed.nullable().optional() })).default([]),
  aave: z.strictObject({ pool: evmAddress, dataProvider: evmAddress.nullable().optional() }).nullable().optional(),
  morpho: z
    .strictObject({
      address: evmAddress,
      markets: z.array(z.string().regex(/^0x[0-9a-fA-F]{64}$/, "must be a 32-byte market id")).default([]),
      lendingVaults: z.array(evmAddress).default([]),
    })
    .nullable()
    .optional(),
  uniswap: z
    .strictObject({
      factory: evmAddress,
      positionManager: evmAddress,
      swapRouter: evmAddress,
      quoterV2: evmAddress,
      staker: evmAddress.nullable().optional(),
      /**
       * The block the indexer reads the staker's incentives from: at or before its deployment,
       * every incentive is indexed. Absent or later: from the chain's start block, the first
       * vault's; the reads take the earlier ones from the chain, once per process.
       */
      stakerStartBlock: z.number().int().min(0).optional(),
    })
    .nullable()
    .optional(),
  /** the swaps builder's second venue: a Uniswap v2 factory and its Router02 */
  uniswapV2: z.strictObject({ factory: evmAddress, router: evmAddress }).nullable().optional(),
  loanRegistry: evmAddress.nullable().optional(),
  /** the perp deposit bridges of this chain and, where the core side is, its ledger (any chain) */
  perp: z
    .strictObject({
      bridgeA: evmAddress,
      bridgeB: evmAddress,
      core: z.strictObject({ chainId: z.number().int().positive(), ledger: evmAddress }).nullable().optional(),
    })
    .nullable()
    .optional(),
});
export type ChainProtocols = z.infer<typeof protocolsSchema>;

/** -1, 0 or 1 as dotted version `a` is before, equal to or after `b` (numerically, part by part) */
export function compareVersions(a: string, b: string): number {
  const pa = a.split(".").map(Number);
  const pb = b.split(".").map(Number);
  for (let i = 0; i < Math.max(pa.length, pb.length); i++) {
    const d = (pa[i] ?? 0) - (pb[i] ?? 0);
    if (d !== 0) return Math.sign(d);
  }
  return 0;
}

/** Whether a Safe of this version emits its owner and module events unindexed (1.3.x). */
export function isSafeV130(version: string | null | undefined): boolean {
  return !!version && compareVersions(version, "1.4.0") < 0;
}

/**
 * Each subaccount's `safeVersion` (lower-case address; one per subaccount: a subaccount is the
 * same Safe on every chain), from every vault's settings; `problems` gets each conflict.
 */
export function subaccountSafeVersions(vaults: EvmVault[], problems: string[] = []): Map<string, string> {
  const out = new Map<string, string>();
  for (const v of vaults) {
    for (const [address, settings] of Object.entries(v.subaccountSettings)) {
      const version = settings.safeVersion;
      if (!version) continue;
      const key = address.toLowerCase();
      const known = out.get(key);
      if (known && known !== version) {
        problems.push(`subaccount ${key}: safeVersion ${known} and ${version} in different vaults' settings`);
      }
      out.set(key, known ?? version);
    }
  }
  return out;
}

export type EvmVault = z.infer<typeof evmVaultSchema>;
export type NonEvmVault = z.infer<typeof nonEvmVaultSchema>;
export type RegistryVault = EvmVault | NonEvmVault;

export interface Registry {
  path: string;
  evm: EvmVault[];
  nonEvm: NonEvmVault[];
  /** per chain id, what its subaccounts use (the file's optional `protocols`) */
  protocols: Map<number, ChainProtocols>;
}

export const DEFAULT_REGISTRY_PATH = "config/vaults.json";

export function registryPath(env: NodeJS.ProcessEnv = process.env): string {
  // set to nothing counts as unset, as for every setting
  return resolve(env.VAULT_REGISTRY?.trim() || DEFAULT_REGISTRY_PATH);
}

/** Loads and checks the registry; throws one readable error listing every problem. */
export function loadRegistry(path = registryPath()): Registry {
  if (!existsSync(path)) {
    throw new Error(`vault registry not found at ${path} (set VAULT_REGISTRY, or run "npm run demo" to create one)`);
  }
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, "utf8"));
  } catch (err) {
    throw new Error(`vault registry ${path} is not valid JSON: ${(err as Error).message}`);
  }
  // a misspelt key would otherwise be dropped unseen (a vault's priceFeed, the file's protocols)
  const top = z
    .strictObject({ version: z.literal(1), vaults: z.array(z.unknown()), protocols: z.array(z.unknown()).default([]) })
    .safeParse(raw);
  if (!top.success) throw new Error(`vault registry ${path}: ${z.prettifyError(top.error)}`);
  const evm: EvmVault[] = [];
  const nonEvm: NonEvmVault[] = [];
  const problems: string[] = [];
  const seen = new Set<string>();
  top.data.vaults.forEach((item, i) => {
    const chainId = (item as { chainId?: unknown })?.chainId;
    if (typeof chainId !== "number" || !getChain(chainId)) {
      problems.push(`vaults[${i}].chainId: ${String(chainId)} is not a chain of the catalogue (config/chains.ts)`);
      return;
    }
    const parsed = isEvmChain(chainId) ? evmVaultSchema.safeParse(item) : nonEvmVaultSchema.safeParse(item);
    if (!parsed.success) {
      problems.push(`vaults[${i}]: ${z.prettifyError(parsed.error).replace(/\n/g, "; ")}`);
      return;
    }
    const key = `${chainId}:${String(parsed.data.address).toLowerCase()}`;
    if (seen.has(key)) problems.push(`vaults[${i}]: duplicate vault ${key}`);
    seen.add(key);
    if (isEvmChain(chainId)) problems.push(...subaccountProblems(parsed.data as EvmVault, i));
    if (isEvmChain(chainId)) evm.push(parsed.data as EvmVault);
    else nonEvm.push(parsed.data as NonEvmVault);
  });
  const protocols = new Map<number, ChainProtocols>();
  top.data.protocols.forEach((item, i) => {
    const parsed = protocolsSchema.safeParse(item);
    if (!parsed.success) {
      problems.push(`protocols[${i}]: ${z.prettifyError(parsed.error).replace(/\n/g, "; ")}`);
      return;
    }
    if (!isEvmChain(parsed.data.chainId)) problems.push(`protocols[${i}].chainId: not an EVM chain of the catalogue`);
    else if (protocols.has(parsed.data.chainId)) problems.push(`protocols[${i}]: chain ${parsed.data.chainId} twice`);
    else protocols.set(parsed.data.chainId, parsed.data);
  });
  problems.push(...unnamedLedgers(top.data.protocols, protocols));
  subaccountSafeVersions(evm, problems);
  if (problems.length > 0) throw new Error(`vault registry ${path} is invalid:\n  ${problems.join("\n  ")}`);
  return { path, evm, nonEvm, protocols };
}

/**
 * A chain whose perp bridges name no core ledger is followed to the registry's one ledger
 * (db/chain-protocols.ts). With two or more, which one its deposits are credited to is the
 * operator's to say: each such chain is a problem, not a chain left unfollowed.
 */
function unnamedLedgers(items: unknown[], protocols: Map<number, ChainProtocols>): string[] {
  const ledgers = new Set<string>();
  for (const p of protocols.values()) {
    if (p.perp?.core) ledgers.add(`chain ${p.perp.core.chainId} ${p.perp.core.ledger}`);
  }
  if (ledgers.size < 2) return [];
  const named = [...ledgers].sort().join(", ");
  return [...protocols.values()]
    .filter((p) => p.perp && !p.perp.core)
    .map((p) => {
      const i = items.findIndex((x) => (x as { chainId?: unknown })?.chainId === p.chainId);
      return (
        `protocols[${i}].perp.core: chain ${p.chainId}'s bridges name no core ledger and the registry names ` +
        `${ledgers.size} (${named}): name the one its deposits are credited to`
      );
    });
}
