/**
 * Each chain's protocols entry (registry.chain_protocols, written by db/registry-load.ts from the
 * registry file), as the API's live reads and the portfolio and valuation series jobs read it.
 *
 * A chain whose perp bridges name no core ledger gets the registry's ledger when it names exactly
 * one: the relayer credits every chain's bridge deposits to its one ledger (jobs/relayer), so a
 * deposit from such a chain is followed there like the core chain's own, in transit and then
 * credited. Without this, a deposit on its way from that chain was missing from the account's
 * value until the ledger credited it. A registry that names two ledgers must name each chain's:
 * loadRegistry refuses it otherwise.
 */
import { type QueryExecutorProvider, sql } from "kysely";
import { type ChainProtocols, protocolsSchema } from "../config/registry.js";

/** `byChain` with the sole core ledger filled in where a chain's perp entry names none. */
export function withSoleCore(byChain: ReadonlyMap<number, ChainProtocols>): Map<number, ChainProtocols> {
  type Core = NonNullable<NonNullable<ChainProtocols["perp"]>["core"]>;
  const cores = new Map<string, Core>();
  for (const p of byChain.values()) {
    const c = p.perp?.core;
    if (c) cores.set(`${c.chainId}:${c.ledger}`, c);
  }
  const sole = cores.size === 1 ? [...cores.values()][0]! : null;
  return new Map(
    [...byChain].map(([chainId, p]) => [
      chainId,
      sole && p.perp && !p.perp.core ? { ...p, perp: { ...p.perp, core: { ...sole } } } : p,
    ]),
  );
}

/** Every chain's protocols entry (an entry that no longer parses is left out). */
export async function readChainProtocols(db: QueryExecutorProvider): Promise<Map<number, ChainProtocols>> {
  const { rows } = await sql<{ chain_id: number; protocols: unknown }>`
    SELECT chain_id, protocols FROM registry.chain_protocols ORDER BY chain_id`.execute(db);
  const byChain = new Map<number, ChainProtocols>();
  for (const r of rows) {
    const parsed = protocolsSchema.safeParse(r.protocols);
    if (parsed.success) byChain.set(r.chain_id, parsed.data);
  }
  return withSoleCore(byChain);
}
