/**
 * Each chain's protocols (registry.chain_protocols, loaded from the registry file) and a viem
 * client per chain RPC (PONDER_RPC_URL_<id>), for the routes that read subaccounts, loans and
 * integrations live. The catalogue is held 10 s.
 */
import { type ChainProtocols, protocolsSchema } from "../../config/registry.js";
import { rpcClient } from "../../onchain/client.js";
import type { ReadDb } from "./db.js";

interface Catalogue {
  at: number;
  byChain: Map<number, ChainProtocols>;
}
const TTL_MS = 10_000;
const catalogues = new WeakMap<object, Catalogue>();

/** Every chain's protocols entry. */
export async function chainProtocols(db: ReadDb): Promise<Map<number, ChainProtocols>> {
  const hit = catalogues.get(db);
  if (hit && Date.now() - hit.at < TTL_MS) return hit.byChain;
  const rows = await db.selectFrom("registry.chain_protocols").select(["chain_id", "protocols"]).execute();
  const byChain = new Map<number, ChainProtocols>();
  for (const r of rows) {
    const parsed = protocolsSchema.safeParse(r.protocols);
    if (parsed.success) byChain.set(r.chain_id, parsed.data);
  }
  catalogues.set(db, { at: Date.now(), byChain });
  return byChain;
}

/** A client of `url` (one per URL for the process). */
export const chainClient = rpcClient;

/** Thrown when a chain a request needs has no RPC: the route answers 503. */
export class NoRpc extends Error {
  constructor(readonly chainId: number) {
    super(`No RPC is configured for chain ${chainId} (PONDER_RPC_URL_${chainId})`);
  }
}
