/**
 * ENS names -> addresses for the API (the points leaderboard's `ens_name`), through viem's
 * getEnsAddress against the ENS Universal Resolver of the requested chain:
 *  - the chain's JSON-RPC endpoint is config.rpcUrls (the first PONDER_RPC_URL_<chainId>);
 *  - its Universal Resolver is config.ensResolvers (ENS_UNIVERSAL_RESOLVER_<chainId>), else the
 *    one viem knows for that chain (viem/chains `contracts.ensUniversalResolver`, e.g. mainnet).
 * Every way a name can fail to give an address gives null, never an exception: a name that is
 * not registered, a name ENSIP-15 normalisation rejects, a chain without an RPC endpoint or a
 * resolver, an RPC that is down or slow (2 s, no retry). Answers are cached in-process, keyed by
 * (RPC endpoint, resolver, normalised name): found and not-found for ENS_CACHE_TTL_MS, failures
 * (the RPC did not answer) for a shorter while, so an outage does not cost every request 2 s.
 * Nothing is logged: an RPC URL may carry a provider's key.
 */
import { type Address, type Chain, createPublicClient, http, type PublicClient } from "viem";
import { getEnsAddress, normalize } from "viem/ens";
import { rpcFetch } from "../onchain/rpc-fetch.js";
import type { AppDeps } from "./lib/router.js";

export type EnsConfig = Pick<AppDeps["config"], "rpcUrls" | "ensResolvers">;

/** One resolution against a resolver; null: the name has no address. Throws when the RPC fails. */
export type EnsLookup = (rpcUrl: string, universalResolver: Address, normalizedName: string) => Promise<Address | null>;

export const ENS_CACHE_TTL_MS = 60_000;
export const ENS_ERROR_TTL_MS = 5_000;
export const ENS_CACHE_MAX = 5_000;
export const ENS_RPC_TIMEOUT_MS = 2_000;

export interface EnsResolverOptions {
  ttlMs?: number;
  errorTtlMs?: number;
  maxEntries?: number;
  lookup?: EnsLookup;
  now?: () => number;
}

export type ResolveEnsName = (config: EnsConfig, chainId: number, name: string) => Promise<Address | null>;

// ---- viem ----------------------------------------------------------------------------------

const clients = new Map<string, PublicClient>();

function clientFor(rpcUrl: string): PublicClient {
  let client = clients.get(rpcUrl);
  if (!client) {
    const transport = http(rpcUrl, { timeout: ENS_RPC_TIMEOUT_MS, retryCount: 0, fetchFn: rpcFetch as never });
    client = createPublicClient({ transport });
    if (clients.size >= 64) clients.delete(clients.keys().next().value!);
    clients.set(rpcUrl, client);
  }
  return client;
}

const viemLookup: EnsLookup = async (rpcUrl, universalResolver, normalizedName) => {
  const address = await getEnsAddress(clientFor(rpcUrl), {
    name: normalizedName,
    universalResolverAddress: universalResolver,
  });
  return address ? (address.toLowerCase() as Address) : null;
};

// ---- cache ---------------------------------------------------------------------------------

/** A resolver with its own cache (tests make their own; the API uses resolveEnsName). */
export function createEnsResolver(opts: EnsResolverOptions = {}): ResolveEnsName & { clear(): void } {
  const ttlMs = opts.ttlMs ?? ENS_CACHE_TTL_MS;
  const errorTtlMs = opts.errorTtlMs ?? ENS_ERROR_TTL_MS;
  const maxEntries = opts.maxEntries ?? ENS_CACHE_MAX;
  const lookup = opts.lookup ?? viemLookup;
  const now = opts.now ?? Date.now;
  // insertion order = age: the oldest entry is evicted first
  const entries = new Map<string, { until: number; value: Address | null }>();
  const inflight = new Map<string, Promise<Address | null>>();

  const store = (key: string, value: Address | null, ttl: number) => {
    entries.delete(key);
    while (entries.size >= maxEntries) entries.delete(entries.keys().next().value!);
    entries.set(key, { until: now() + ttl, value });
  };

  const resolve = async (config: EnsConfig, chainId: number, name: string): Promise<Address | null> => {
    let normalized: string;
    try {
      normalized = normalize(name.trim());
    } catch {
      return null; // not a valid ENS name (ENSIP-15)
    }
    if (normalized === "" || normalized.startsWith(".") || normalized.endsWith(".") || normalized.includes(".."))
      return null;
    const rpcUrl = config.rpcUrls.get(chainId);
    if (!rpcUrl) return null;
    const resolver = config.ensResolvers?.get(chainId) ?? (await knownUniversalResolver(chainId));
    if (!resolver) return null;

    const key = `${rpcUrl}\u0000${resolver.toLowerCase()}\u0000${normalized}`;
    const hit = entries.get(key);
    if (hit && hit.until > now()) return hit.value;
    const pending = inflight.get(key);
    if (pending) return pending;
    const p = (async () => {
      try {
        const value = await lookup(rpcUrl, resolver, normalized);
        store(key, value, ttlMs);
        return value;
      } catch {
        store(key, null, errorTtlMs);
        return null;
      } finally {
        inflight.delete(key);
      }
    })();
    inflight.set(key, p);
    return p;
  };
  return Object.assign(resolve, {
    clear() {
      entries.clear();
    },
  });
}

/** The API's resolver: one in-process cache shared by every request. */
export const resolveEnsName = createEnsResolver();

let known: Promise<Map<number, Address>> | undefined;

/** The Universal Resolver viem's chain definitions give for a chain id (mainnet, sepolia, ...). */
export function knownUniversalResolver(chainId: number): Promise<Address | undefined> {
  // loaded on first use: the API only needs it for a chain without ENS_UNIVERSAL_RESOLVER_<id>
  known ??= import("viem/chains").then((mod) => {
    const map = new Map<number, Address>();
    for (const c of Object.values(mod) as Chain[]) {
      const address = c?.contracts?.ensUniversalResolver?.address;
      if (typeof c?.id === "number" && address && !map.has(c.id)) map.set(c.id, address);
    }
    return map;
  });
  return known.then((m) => m.get(chainId));
}
