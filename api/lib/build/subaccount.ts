/**
 * What every transaction builder starts from: the subaccount on the chain the request names, its
 * SubaccountModule (read live from the Safe, held 15 s), the trader who will send the
 * transaction, the chain's protocols and a client of its RPC.
 *
 * Refusals: a subaccount the registry does not list is a 404; a chain without a protocols entry,
 * or no `from` where no trader is indexed, a 422; a chain without an RPC a 503; a Safe whose
 * SubaccountModule is no longer enabled a 409 `stale_subaccount`.
 */
import { sql } from "kysely";
import { type Address, getAddress, type PublicClient, parseAbi } from "viem";
import type { ChainProtocols } from "../../../config/registry.js";
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
}

const SENTINEL = "0x0000000000000000000000000000000000000001";
const SAFE = parseAbi([
  "function getModulesPaginated(address start, uint256 pageSize) view returns (address[] array, address next)",
]);
const MODULE = parseAbi(["function safe() view returns (address)"]);
const MODULE_TTL_MS = 15_000;
const modules = new Map<string, { at: number; module: Address | null }>();

/** The Safe's enabled SubaccountModule (the one whose `safe()` is this Safe), or null. */
async function moduleOf(client: PublicClient, chainId: number, safe: Address): Promise<Address | null> {
  const key = `${chainId}:${safe.toLowerCase()}`;
  const hit = modules.get(key);
  if (hit && Date.now() - hit.at < MODULE_TTL_MS) return hit.module;
  const [enabled] = await client.readContract({
    address: safe,
    abi: SAFE,
    functionName: "getModulesPaginated",
    args: [SENTINEL, 10n],
  });
  let module: Address | null = null;
  for (const m of enabled) {
    const owner = await client.readContract({ address: m, abi: MODULE, functionName: "safe" }).catch(() => null);
    if (owner && owner.toLowerCase() === safe.toLowerCase()) {
      module = getAddress(m);
      break;
    }
  }
  modules.set(key, { at: Date.now(), module });
  return module;
}

/** The first TRADER the indexer saw granted on the subaccount's module, if any. */
async function indexedTrader(deps: AppDeps, chainId: number, safe: string): Promise<Address | null> {
  const s = deps.config.indexerSchema;
  const { rows } = await sql<{ roles: Record<string, string[]> | null }>`
    SELECT roles FROM ${sql.id(s, "subaccount")}
     WHERE chain_id = ${chainId} AND safe = ${safe.toLowerCase()}`.execute(deps.db);
  const trader = rows[0]?.roles?.TRADER?.[0];
  return trader ? getAddress(trader) : null;
}

/** Resolves `address` on `chainId` for a builder; throws a BuildRefusal when it cannot. */
export async function buildSubaccount(
  deps: AppDeps,
  address: string,
  chainId: number,
  from: string | undefined,
): Promise<BuildSubaccount> {
  const registered = await deps.db
    .selectFrom("registry.subaccount")
    .select("address")
    .where("address", "=", address.toLowerCase())
    .limit(1)
    .execute();
  if (registered.length === 0) {
    throw new BuildRefusal(404, "unknown_subaccount", `${address} is not a registered subaccount`);
  }
  const protocols = (await chainProtocols(deps.db)).get(chainId);
  if (!protocols) {
    throw BuildRefusal.field(["body", "chain"], `Chain ${chainId} has no protocols entry in the registry`);
  }
  const url = deps.config.rpcUrls.get(chainId);
  if (!url) {
    throw new BuildRefusal(503, "no_rpc", `No RPC is configured for chain ${chainId} (PONDER_RPC_URL_${chainId})`);
  }
  const client = chainClient(url);
  const safe = getAddress(address);
  let module: Address | null;
  try {
    module = await moduleOf(client, chainId, safe);
  } catch (err) {
    throw BuildRefusal.chain(chainId, err);
  }
  if (!module) {
    throw new BuildRefusal(
      409,
      "stale_subaccount",
      `${safe} has no SubaccountModule enabled on chain ${chainId}: it cannot act through the module`,
    );
  }
  const sender = from ? getAddress(from) : await indexedTrader(deps, chainId, safe);
  if (!sender) {
    throw BuildRefusal.field(
      ["body", "from"],
      "Field required: no trader of this subaccount's module is indexed on this chain; name the sender",
      "missing",
    );
  }
  return { chainId, safe, module, from: sender, protocols, client };
}
