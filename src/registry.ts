/** Registry lookups for handlers (the same registry ponder.config.ts was built from). */
import { type IndexedChain, indexerPlan } from "../config/indexer";
import type { ChainProtocols, EvmVault } from "../config/registry";

const plan = indexerPlan();

const byAddress = new Map<string, EvmVault>();
const byShareToken = new Map<string, EvmVault>();
const byTimelock = new Map<string, EvmVault[]>();
const byChain = new Map<number, EvmVault[]>();

for (const c of plan.chains) {
  byChain.set(c.id, c.vaults);
  for (const v of c.vaults) {
    byAddress.set(`${v.chainId}:${v.address}`, v);
    byShareToken.set(`${v.chainId}:${v.receiptToken ?? v.address}`, v);
    if (v.timelock) {
      const key = `${v.chainId}:${v.timelock}`;
      byTimelock.set(key, [...(byTimelock.get(key) ?? []), v]);
    }
  }
}

export function vaultAt(chainId: number, address: string): EvmVault {
  const v = byAddress.get(`${chainId}:${address.toLowerCase()}`);
  if (!v) throw new Error(`event from ${address} on chain ${chainId}, which is not a registered vault`);
  return v;
}

export function findVault(chainId: number, address: string): EvmVault | undefined {
  return byAddress.get(`${chainId}:${address.toLowerCase()}`);
}

export function vaultOfShareToken(chainId: number, token: string): EvmVault {
  const v = byShareToken.get(`${chainId}:${token.toLowerCase()}`);
  if (!v) throw new Error(`share transfer of ${token} on chain ${chainId}, which is no registered vault's share token`);
  return v;
}

export function vaultsOfTimelock(chainId: number, timelock: string): EvmVault[] {
  return byTimelock.get(`${chainId}:${timelock.toLowerCase()}`) ?? [];
}

export function vaultsOnChain(chainId: number): EvmVault[] {
  return byChain.get(chainId) ?? [];
}

/** The indexed chain's plan (RPC URL, snapshot interval, flow prefetch window, vaults). */
export function chainOf(chainId: number): IndexedChain {
  const c = plan.chains.find((x) => x.id === chainId);
  if (!c) throw new Error(`chain ${chainId} is not indexed`);
  return c;
}

/** The chain's RPC URL as configured (first of PONDER_RPC_URL_<id>). */
export function rpcUrlOf(chainId: number): string {
  return chainOf(chainId).rpcUrl;
}

// ---- the protocol world (registry `protocols`) ------------------------------------------------

const subaccountSet = new Set<string>(plan.subaccounts);

/** Whether an address is one of the registry's subaccounts (on every chain: same address everywhere). */
export function isSubaccount(address: string): boolean {
  return subaccountSet.has(address.toLowerCase());
}

/** The registry's protocols entry of an indexed chain (null when it has none). */
export function protocolsOf(chainId: number): ChainProtocols | null {
  return chainOf(chainId).protocols;
}
