/**
 * Each chain's protocols (registry.chain_protocols, loaded from the registry file, as
 * db/chain-protocols.ts reads it) and a viem client per chain RPC (PONDER_RPC_URL_<id>), for the
 * routes that read subaccounts, loans and integrations live. The catalogue is kept 10 s (`kept`).
 */
import type { ChainProtocols } from "../../config/registry.js";
import { readChainProtocols } from "../../db/chain-protocols.js";
import { rpcClient } from "../../onchain/client.js";
import type { ReadDb } from "./db.js";
import { kept } from "./kept.js";

const catalogues = kept<Map<number, ChainProtocols>>(10_000, 1);

/** Every chain's protocols entry. */
export function chainProtocols(db: ReadDb): Promise<Map<number, ChainProtocols>> {
  return catalogues.get(db, "catalogue", () => readChainProtocols(db));
}

/** A client of `url` (one per URL for the process). */
export const chainClient = rpcClient;

/** Thrown when a chain a request needs has no RPC: the route answers 503. */
export class NoRpc extends Error {
  constructor(readonly chainId: number) {
    super(`No RPC is configured for chain ${chainId} (PONDER_RPC_URL_${chainId})`);
  }
}
