/**
 * Chain catalogue of the vault service.
 *
 * Every chain id the service knows about, with a human name, a kind and a
 * `slug`. The slug is a stable, lowercase identifier (`[a-z][a-z0-9_]*`) that
 * is safe to use as a ponder chain name, a table/column fragment or a URL path
 * segment.
 *
 * EVM chains use their EIP-155 chain id and their public network name.
 *
 * Non-EVM chains (id 0 and the negative ids) have no EIP-155 id; the numbers
 * and the names attached to them below are the service's OWN labels. They are
 * not an external standard, so do not compare them with ids from other
 * systems. Nothing EVM-specific (RPC, anvil, ponder) is ever started for them.
 */

export type ChainKind = "evm" | "non-evm";

export interface ChainInfo {
  readonly id: number;
  readonly name: string;
  readonly kind: ChainKind;
  readonly slug: string;
}

export const CHAINS = [
  // --- EVM ------------------------------------------------------------------
  { id: 1, name: "Ethereum", kind: "evm", slug: "ethereum" },
  { id: 42161, name: "Arbitrum One", kind: "evm", slug: "arbitrum" },
  { id: 43114, name: "Avalanche C-Chain", kind: "evm", slug: "avalanche" },
  { id: 8453, name: "Base", kind: "evm", slug: "base" },
  { id: 56, name: "BNB Smart Chain", kind: "evm", slug: "bsc" },
  { id: 534352, name: "Scroll", kind: "evm", slug: "scroll" },
  { id: 59144, name: "Linea", kind: "evm", slug: "linea" },
  { id: 10, name: "OP Mainnet", kind: "evm", slug: "optimism" },
  { id: 137, name: "Polygon PoS", kind: "evm", slug: "polygon" },
  { id: 2222, name: "Kava EVM", kind: "evm", slug: "kava" },
  { id: 1101, name: "Polygon zkEVM", kind: "evm", slug: "polygon_zkevm" },
  { id: 48900, name: "Zircuit", kind: "evm", slug: "zircuit" },
  { id: 1923, name: "Swellchain", kind: "evm", slug: "swellchain" },
  { id: 43111, name: "Hemi", kind: "evm", slug: "hemi" },
  { id: 80094, name: "Berachain", kind: "evm", slug: "berachain" },
  { id: 146, name: "Sonic", kind: "evm", slug: "sonic" },
  { id: 999, name: "HyperEVM", kind: "evm", slug: "hyperevm" },
  { id: 130, name: "Unichain", kind: "evm", slug: "unichain" },
  { id: 239, name: "TAC", kind: "evm", slug: "tac" },
  { id: 31612, name: "Mezo", kind: "evm", slug: "mezo" },
  { id: 1868, name: "Soneium", kind: "evm", slug: "soneium" },
  { id: 9745, name: "Plasma", kind: "evm", slug: "plasma" },
  { id: 143, name: "Monad", kind: "evm", slug: "monad" },
  { id: 57073, name: "Ink", kind: "evm", slug: "ink" },
  { id: 14, name: "Flare", kind: "evm", slug: "flare" },
  { id: 4114, name: "Citrea", kind: "evm", slug: "citrea" },
  { id: 25363, name: "Fluent", kind: "evm", slug: "fluent" },
  { id: 4217, name: "Tempo", kind: "evm", slug: "tempo" },
  { id: 196, name: "X Layer", kind: "evm", slug: "xlayer" },
  { id: 11155111, name: "Sepolia", kind: "evm", slug: "sepolia" },

  // --- non-EVM (service-defined ids and labels, see header) -----------------
  { id: 0, name: "Bitcoin", kind: "non-evm", slug: "bitcoin" },
  { id: -1, name: "Solana", kind: "non-evm", slug: "solana" },
  { id: -2, name: "Stellar", kind: "non-evm", slug: "stellar" },
  { id: -3, name: "Sui", kind: "non-evm", slug: "sui" },
  { id: -4, name: "Aptos", kind: "non-evm", slug: "aptos" },
] as const satisfies readonly ChainInfo[];

/** Union of every known chain id, e.g. `1 | 8453 | -1 | ...`. */
export type ChainId = (typeof CHAINS)[number]["id"];

/** Union of every known slug, e.g. `'ethereum' | 'base' | ...`. */
export type ChainSlug = (typeof CHAINS)[number]["slug"];

/** All known chain ids, in catalogue order. */
export const CHAIN_IDS: readonly ChainId[] = CHAINS.map((c) => c.id);

/** Ids of the EVM chains only, in catalogue order. */
export const EVM_CHAIN_IDS: readonly ChainId[] = CHAINS.filter((c) => c.kind === "evm").map((c) => c.id);

const BY_ID: ReadonlyMap<number, ChainInfo> = new Map(CHAINS.map((c) => [c.id, c]));
const BY_SLUG: ReadonlyMap<string, ChainInfo> = new Map(CHAINS.map((c) => [c.slug, c]));

/** Type guard: is `id` a chain id of the catalogue? */
export function isChainId(id: unknown): id is ChainId {
  return typeof id === "number" && BY_ID.has(id);
}

/** Catalogue entry for `id`, or `undefined` if the id is unknown. */
export function getChain(id: ChainId): ChainInfo;
export function getChain(id: number): ChainInfo | undefined;
export function getChain(id: number): ChainInfo | undefined {
  return BY_ID.get(id);
}

/** Catalogue entry for `id`; throws a readable error if the id is unknown. */
export function requireChain(id: number): ChainInfo {
  const chain = BY_ID.get(id);
  if (!chain) {
    throw new Error(`Unknown chain id ${id}; known ids: ${CHAIN_IDS.join(", ")}`);
  }
  return chain;
}

/** Catalogue entry for a slug, or `undefined`. */
export function getChainBySlug(slug: string): ChainInfo | undefined {
  return BY_SLUG.get(slug);
}

/** True only for known chains of kind 'evm' (unknown ids are false). */
export function isEvmChain(id: number): boolean {
  return BY_ID.get(id)?.kind === "evm";
}

/** Human name for any id; unknown ids render as `Chain <id>`. */
export function chainName(id: number): string {
  return BY_ID.get(id)?.name ?? `Chain ${id}`;
}

// Module-load sanity checks: ids and slugs are unique, slugs are identifier-safe.
{
  const slugRe = /^[a-z][a-z0-9_]*$/;
  if (BY_ID.size !== CHAINS.length) throw new Error("config/chains.ts: duplicate chain id");
  if (BY_SLUG.size !== CHAINS.length) throw new Error("config/chains.ts: duplicate chain slug");
  for (const c of CHAINS) {
    if (!slugRe.test(c.slug)) throw new Error(`config/chains.ts: bad slug ${c.slug}`);
  }
}
