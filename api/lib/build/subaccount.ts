/**
 * What every transaction builder starts from: the subaccount on the chain the request names, its
 * SubaccountModule (found among the Safe's modules and kept: every build checks in its read stage
 * that the Safe still has it enabled, `readAtHead`), the trader who will send the transaction, the
 * chain's protocols and a client of its RPC. The trader and the module are looked up at once,
 * after the registry; the registry's subaccounts and the indexed traders are kept 10 s, as the
 * vault set is (`kept`: refreshed in the background, so no build waits on the reload).
 *
 * Refusals: a subaccount the registry does not list is a 404; a chain without a protocols entry,
 * or no `from` where no trader is indexed, a 422; a chain without an RPC a 503; a Safe whose
 * SubaccountModule is no longer enabled, or an address with no Safe on the chain named, a 409
 * `stale_subaccount`.
 */
import { sql } from "kysely";
import { type Address, getAddress, type PublicClient, parseAbi } from "viem";
import type { ChainProtocols } from "../../../config/registry.js";
import { isTransportError } from "../../../config/rpc-errors.js";
import { incentiveSeed } from "../../../db/staker-incentives.js";
import type { IncentiveSeed } from "../../../onchain/staker.js";
import { kept, recent } from "../kept.js";
import { chainClient, chainProtocols } from "../protocols.js";
import type { AppDeps } from "../router.js";
import { BuildRefusal } from "./refusal.js";

export interface BuildSubaccount {
  chainId: number;
  /** the Safe: holds the assets and positions, the recipient of everything */
  safe: Address;
  /** its SubaccountModule: the transaction's `target` */
  module: Address;
  /** who must send the transaction (a TRADER of the module) */
  from: Address;
  protocols: ChainProtocols;
  client: PublicClient;
  /** the RPC's URL (what the kept facts of `facts.ts` are keyed by, with the chain) */
  rpcUrl: string;
  /** the registry's min_health_factor of the subaccount (its first row's, as GET /subaccounts shows it) */
  minHealthFactor: number | null;
  /** the chain's staker's incentives as indexed, for a first scan of its logs (onchain/staker.ts) */
  incentives?: IncentiveSeed;
}

const SENTINEL: Address = "0x0000000000000000000000000000000000000001";
const SAFE = parseAbi([
  "function getModulesPaginated(address start, uint256 pageSize) view returns (address[] array, address next)",
]);
const MODULE = parseAbi(["function safe() view returns (address)"]);
/**
 * How long a Safe's module is kept; each build checks it is still enabled (`readAtHead`), and a
 * module kept past half this age is looked up again in the background (`recent`), so no build
 * waits on the lookup's two round trips once the Safe is known. A Safe without one is looked up
 * again on every build, so one that enables it builds at once.
 */
const MODULE_TTL_MS = 600_000;
const modules = recent<{ module: Address | null; noSafe?: true }>(MODULE_TTL_MS);
const moduleKey = (chainId: number, safe: string) => `${chainId}:${safe.toLowerCase()}`;

/** Drops the kept module of a Safe (it was found disabled): the next build looks again. */
export function forgetModule(chainId: number, safe: string): void {
  modules.forget(moduleKey(chainId, safe));
}

/** The Safe's enabled SubaccountModule (the one whose `safe()` is this Safe), or null. */
async function moduleOf(client: PublicClient, chainId: number, safe: Address) {
  const key = moduleKey(chainId, safe);
  const found = await modules.get(key, () => lookupModule(client, safe));
  if (!found.module) modules.forget(key);
  return found;
}

/** A Safe's modules are read this many at a time (`getModulesPaginated`), every page in turn. */
const MODULE_PAGE = 10n;

/**
 * The first of the Safe's enabled modules whose `safe()` is this Safe. A module without `safe()`
 * (it reverts, or answers nothing) is another kind, skipped. An address whose module list does
 * not answer (no contract there on this chain: the subaccount's Safe was not deployed on it, or a
 * contract that is no Safe) has none, `noSafe`. A node that fails to answer throws, so a flaky
 * node is the chain's 503, not a 409 `stale_subaccount`. Exported for its test.
 */
export async function lookupModule(
  client: PublicClient,
  safe: Address,
): Promise<{ module: Address | null; noSafe?: true }> {
  for (let start: Address = SENTINEL, page = 0; page < 100; page++) {
    let list: readonly Address[];
    let next: Address;
    try {
      [list, next] = await client.readContract({
        address: safe,
        abi: SAFE,
        functionName: "getModulesPaginated",
        args: [start, MODULE_PAGE],
      });
    } catch (err) {
      if (isTransportError(err)) throw err;
      return { module: null, noSafe: true };
    }
    for (const m of list) {
      const owner = await client.readContract({ address: m, abi: MODULE, functionName: "safe" }).catch((err) => {
        if (isTransportError(err)) throw err;
        return null;
      });
      if (owner && owner.toLowerCase() === safe.toLowerCase()) return { module: getAddress(m) };
    }
    // the last page ends at the sentinel (or, in Safes before 1.4, at the zero address)
    if (list.length === 0 || next.toLowerCase() === SENTINEL || BigInt(next) === 0n) break;
    start = next;
  }
  return { module: null };
}

/** How long the registry's subaccounts and the indexed traders are kept (as the vault set is). */
const LOOKUP_TTL_MS = 10_000;
/** the registry's subaccounts: each one's min_health_factor (null: none) */
const registries = kept<Map<string, number | null>>(LOOKUP_TTL_MS, 1);
const traders = kept<{ trader: Address | null }>(LOOKUP_TTL_MS);

/**
 * The registry's entry of `address`, its min_health_factor, or undefined when the registry does
 * not list it as a subaccount (the list kept 10 s). An address missing from it is looked up
 * again first when the list is over a second old, so a subaccount just registered is not refused
 * for long.
 */
async function registered(deps: AppDeps, address: string): Promise<{ minHealthFactor: number | null } | undefined> {
  const load = async () => {
    const rows = await deps.db
      .selectFrom("registry.subaccount")
      .select(["address", "min_health_factor"])
      .orderBy("address")
      .orderBy("chain_id")
      .orderBy("vault")
      .execute();
    const out = new Map<string, number | null>();
    for (const r of rows) {
      const a = r.address.toLowerCase();
      if (!out.has(a)) out.set(a, r.min_health_factor == null ? null : Number(r.min_health_factor));
    }
    return out;
  };
  const a = address.toLowerCase();
  const list = await registries.get(deps.db, "subaccounts", load);
  const found = list.has(a) ? list : await registries.fresh(deps.db, "subaccounts", load, 1000);
  return found.has(a) ? { minHealthFactor: found.get(a)! } : undefined;
}

/** The first TRADER the indexer saw granted on the subaccount's module, if any (kept 10 s). */
async function indexedTrader(deps: AppDeps, chainId: number, safe: string): Promise<Address | null> {
  const s = deps.config.indexerSchema;
  const { trader } = await traders.get(deps.db, `${s}:${moduleKey(chainId, safe)}`, async () => {
    const { rows } = await sql<{ roles: Record<string, string[]> | null }>`
      SELECT roles FROM ${sql.id(s, "subaccount")}
       WHERE chain_id = ${chainId} AND safe = ${safe.toLowerCase()}`.execute(deps.db);
    const first = rows[0]?.roles?.TRADER?.[0];
    return { trader: first ? getAddress(first) : null };
  });
  return trader;
}

/** Resolves `address` on `chainId` for a builder; throws a BuildRefusal when it cannot. */
export async function buildSubaccount(
  deps: AppDeps,
  address: string,
  chainId: number,
  from: string | undefined,
): Promise<BuildSubaccount> {
  const safe = getAddress(address);
  const url = deps.config.rpcUrls.get(chainId);
  const client = url ? chainClient(url) : null;
  // first the registry (kept in memory): an unknown address costs no chain read
  const entry = await registered(deps, address);
  if (!entry) {
    throw new BuildRefusal(404, "unknown_subaccount", `${address} is not a registered subaccount`);
  }
  // then the catalogue, the trader and the module at once; refused in this order
  const [catalogue, trader, module] = await Promise.all([
    chainProtocols(deps.db),
    from ? getAddress(from) : indexedTrader(deps, chainId, safe),
    client ? moduleOf(client, chainId, safe).catch((err: unknown) => err as Error) : null,
  ]);
  const protocols = catalogue.get(chainId);
  if (!protocols) {
    throw BuildRefusal.field(["body", "chain"], `Chain ${chainId} has no protocols entry in the registry`);
  }
  if (!url || !client || !module) {
    throw new BuildRefusal(503, "no_rpc", `No RPC is configured for chain ${chainId} (PONDER_RPC_URL_${chainId})`);
  }
  if (module instanceof Error) throw BuildRefusal.chain(chainId, module);
  if (!module.module) {
    const why = module.noSafe
      ? `${safe} is no Safe on chain ${chainId} (its module list does not answer: not deployed there?)`
      : `${safe} has no SubaccountModule enabled on chain ${chainId}`;
    throw new BuildRefusal(409, "stale_subaccount", `${why}: it cannot act through the module`);
  }
  if (!trader) {
    throw BuildRefusal.field(
      ["body", "from"],
      "Field required: no trader of this subaccount's module is indexed on this chain; name the sender",
      "missing",
    );
  }
  const incentives = incentiveSeed(deps.db, deps.config.indexerSchema, chainId, protocols.uniswap?.staker);
  return { chainId, safe, module: module.module, from: trader, protocols, client, rpcUrl: url, incentives, ...entry };
}
