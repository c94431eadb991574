/**
 * The protocol world (scripts/lib/protocol-world.ts) seen by the API tests: the registry rows that
 * make the API see the world's subaccount and its chain's protocols, written into the shared
 * devnet's database and removed again by `drop`.
 */
import { protocolsEntry, type World } from "../scripts/lib/protocol-world.js";
import type { ApiHarness } from "./api-harness.js";

export {
  actor,
  borrowLoan,
  buildWorld,
  call,
  mineRaw,
  moduleCall,
  openPositions,
  protocolsEntry,
  type World,
} from "../scripts/lib/protocol-world.js";

/**
 * Registers the world's subaccount (under a vault of the devnet on its chain, with the registry's
 * min_health_factor given: null for none) and its chain's protocols.
 */
export async function registerWorld(
  h: ApiHarness,
  w: World,
  minHealthFactor: number | null = 1.2,
): Promise<() => Promise<void>> {
  const chainId = w.s.chainId;
  const [vault] = await h.q<{ address: string }>(
    "SELECT address FROM registry.vault WHERE chain_id = $1 ORDER BY address LIMIT 1",
    [chainId],
  );
  const address = w.sub.safe.toLowerCase();
  const prev = await h.q<{ protocols: unknown }>("SELECT protocols FROM registry.chain_protocols WHERE chain_id = $1", [
    chainId,
  ]);
  await h.q(
    `INSERT INTO registry.subaccount (chain_id, vault, address, internal_name, friendly_name, status, subaccount_type, min_health_factor)
     VALUES ($1, $2, $3, 'world-sub', 'World subaccount', 'active', 'strategy', $4)`,
    [chainId, vault!.address, address, minHealthFactor],
  );
  await h.q(
    `INSERT INTO registry.chain_protocols (chain_id, protocols) VALUES ($1, $2)
     ON CONFLICT (chain_id) DO UPDATE SET protocols = excluded.protocols`,
    [chainId, JSON.stringify(protocolsEntry(w))],
  );
  return async () => {
    await h.q("DELETE FROM registry.subaccount WHERE address = $1", [address]);
    if (prev.length)
      await h.q("UPDATE registry.chain_protocols SET protocols = $2 WHERE chain_id = $1", [
        chainId,
        JSON.stringify(prev[0]!.protocols),
      ]);
    else await h.q("DELETE FROM registry.chain_protocols WHERE chain_id = $1", [chainId]);
  };
}
