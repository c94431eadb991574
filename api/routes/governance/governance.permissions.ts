/**
 * The permissions route's answer: what a vault's subaccounts may do through their
 * SubaccountModules, replayed from the indexed module events (`subaccount_event`) of the module
 * each Safe has enabled now (`subaccount.module`), on every chain the Safe is on, grouped by
 * (integration, chain).
 *
 * A module allows calls (a target and its selectors: `CallAllowanceSet`), tokens (for every
 * allowed call alike: `TokenAllowanceSet`) and roles (`subaccount.roles`); any target with an
 * allowed call may be approved a token (the module's `_approve`), so a group's spenders are its
 * allowed targets. The integration of a target comes from its chain's registry `protocols`
 * entry, the registry's loans (`loanbook_loan`) and vaults; any other target is `other`.
 */
import { sql } from "kysely";
import { type Abi, type AbiFunction, parseAbi, toFunctionSelector } from "viem";
import { LoanAbi } from "../../../abis/LoanAbi.js";
import { PerpBridgeAAbi } from "../../../abis/PerpBridgeAAbi.js";
import { PerpBridgeBAbi } from "../../../abis/PerpBridgeBAbi.js";
import type { ChainProtocols } from "../../../config/registry.js";
import type { ReadDb } from "../../lib/db.js";
import { chainProtocols } from "../../lib/protocols.js";
import { indexerRead } from "./governance.lib.js";

/** The integrations a call target can belong to, with the protocol behind each. */
const PROTOCOL = {
  dex_pool: "Uniswap v3 positions and staker",
  swap: "Uniswap v3 and v2 routers",
  lending_market: "Aave v3",
  morpho_market: "Morpho Blue",
  lending_vault: "ERC-4626 lending vault",
  perp_relayer_a: "perp bridge A",
  perp_relayer_b: "perp bridge B",
  loan: "registry loans",
  vault: "registered vaults",
  other: "contracts the registry does not name",
} as const;
type Integration = keyof typeof PROTOCOL;

const MORPHO_MP = "(address,address,address,address,uint256)";
/** The functions a module is expected to allow, by selector (any other is shown as its selector). */
const KNOWN = parseAbi([
  "function exactInputSingle((address,address,uint24,address,uint256,uint256,uint256,uint160))",
  "function exactInput((bytes,address,uint256,uint256,uint256))",
  "function exactOutputSingle((address,address,uint24,address,uint256,uint256,uint256,uint160))",
  "function exactOutput((bytes,address,uint256,uint256,uint256))",
  "function exactInputSingle((address,address,uint24,address,uint256,uint256,uint160))",
  "function exactInput((bytes,address,uint256,uint256))",
  "function exactOutputSingle((address,address,uint24,address,uint256,uint256,uint160))",
  "function exactOutput((bytes,address,uint256,uint256))",
  "function swapExactTokensForTokens(uint256,uint256,address[],address,uint256)",
  "function swapTokensForExactTokens(uint256,uint256,address[],address,uint256)",
  "function addLiquidity(address,address,uint256,uint256,uint256,uint256,address,uint256)",
  "function removeLiquidity(address,address,uint256,uint256,uint256,address,uint256)",
  "function mint((address,address,uint24,int24,int24,uint256,uint256,uint256,uint256,address,uint256))",
  "function increaseLiquidity((uint256,uint256,uint256,uint256,uint256,uint256))",
  "function decreaseLiquidity((uint256,uint128,uint256,uint256,uint256))",
  "function collect((uint256,address,uint128,uint128))",
  "function burn(uint256)",
  "function safeTransferFrom(address,address,uint256,bytes)",
  "function safeTransferFrom(address,address,uint256)",
  "function stakeToken((address,address,uint256,uint256,address),uint256)",
  "function unstakeToken((address,address,uint256,uint256,address),uint256)",
  "function claimReward(address,address,uint256)",
  "function withdrawToken(uint256,address,bytes)",
  "function supply(address,uint256,address,uint16)",
  "function borrow(address,uint256,uint256,uint16,address)",
  "function repay(address,uint256,uint256,address)",
  "function repayWithATokens(address,uint256,uint256)",
  "function withdraw(address,uint256,address)",
  "function setUserUseReserveAsCollateral(address,bool)",
  `function supply(${MORPHO_MP},uint256,uint256,address,bytes)`,
  `function withdraw(${MORPHO_MP},uint256,uint256,address,address)`,
  `function borrow(${MORPHO_MP},uint256,uint256,address,address)`,
  `function repay(${MORPHO_MP},uint256,uint256,address,bytes)`,
  `function supplyCollateral(${MORPHO_MP},uint256,address,bytes)`,
  `function withdrawCollateral(${MORPHO_MP},uint256,address,address)`,
  "function deposit(uint256,address)",
  "function mint(uint256,address)",
  "function withdraw(uint256,address,address)",
  "function redeem(uint256,address,address)",
]);
const NAMES = new Map<string, string>();
for (const abi of [KNOWN, LoanAbi, PerpBridgeAAbi, PerpBridgeBAbi] as Abi[]) {
  for (const item of abi) {
    if (item.type !== "function") continue;
    const f = item as AbiFunction;
    if (f.stateMutability === "view" || f.stateMutability === "pure") continue;
    NAMES.set(toFunctionSelector(f), f.name);
  }
}
const functionName = (selector: string) => NAMES.get(selector.toLowerCase()) ?? selector.toLowerCase();

export interface PermissionRow {
  integration: Integration;
  chain_id: number;
  protocol: string;
  tokens: string[];
  roles: string[];
  spenders: string[];
  contracts: { address: string; functions: string[] }[];
  subaccounts: string[];
}

/** Each address of a chain's protocols entry, by the integration it belongs to. */
function protocolTargets(p: ChainProtocols | undefined): Map<string, Integration> {
  const out = new Map<string, Integration>();
  const put = (a: string | null | undefined, i: Integration) => {
    if (a) out.set(a.toLowerCase(), i);
  };
  put(p?.uniswap?.positionManager, "dex_pool");
  put(p?.uniswap?.staker, "dex_pool");
  put(p?.uniswap?.swapRouter, "swap");
  put(p?.uniswapV2?.router, "swap");
  put(p?.aave?.pool, "lending_market");
  put(p?.morpho?.address, "morpho_market");
  for (const v of p?.morpho?.lendingVaults ?? []) put(v, "lending_vault");
  put(p?.perp?.bridgeA, "perp_relayer_a");
  put(p?.perp?.bridgeB, "perp_relayer_b");
  return out;
}

/** `m`'s value at `k`, made and stored first when absent. */
function entry<K, V>(m: Map<K, V>, k: K, make: () => V): V {
  const v = m.get(k);
  if (v !== undefined) return v;
  const made = make();
  m.set(k, made);
  return made;
}

export type EventRow = { chain_id: number; safe: string; event: string; args: Record<string, unknown> };
export type ModuleRow = { chain_id: number; safe: string; roles: Record<string, string[]> | null };

/**
 * The rows of `modules` (the enabled module of each Safe and chain) from their allowance events
 * in chain order: the last word on each token and each (target, selector) stands.
 */
export function groupPermissions(
  modules: readonly ModuleRow[],
  events: readonly EventRow[],
  integrationOf: (chainId: number, target: string) => Integration,
  symbolOf: (chainId: number, token: string) => string,
): PermissionRow[] {
  const tokens = new Map<string, Map<string, boolean>>();
  const calls = new Map<string, Map<string, boolean>>();
  const at = (m: Map<string, Map<string, boolean>>, k: string) => entry(m, k, () => new Map<string, boolean>());
  for (const e of events) {
    const key = `${e.chain_id}:${e.safe}`;
    const allowed = e.args.allowed === true || e.args.allowed === "true";
    if (e.event === "TokenAllowanceSet") at(tokens, key).set(String(e.args.token).toLowerCase(), allowed);
    else if (e.event === "CallAllowanceSet") {
      const call = `${String(e.args.target).toLowerCase()}:${String(e.args.selector).toLowerCase()}`;
      at(calls, key).set(call, allowed);
    }
  }
  type Group = {
    tokens: Set<string>;
    roles: Set<string>;
    functions: Map<string, Set<string>>;
    subaccounts: Set<string>;
  };
  const groups = new Map<string, Group>();
  for (const m of modules) {
    const key = `${m.chain_id}:${m.safe}`;
    const allowedTokens = [...(tokens.get(key) ?? [])].filter(([, ok]) => ok).map(([t]) => t);
    const roles = Object.entries(m.roles ?? {})
      .filter(([, holders]) => holders.length > 0)
      .map(([name]) => name);
    for (const [call, ok] of calls.get(key) ?? []) {
      if (!ok) continue;
      const [target, selector] = call.split(":") as [string, string];
      const gk = `${m.chain_id}:${integrationOf(m.chain_id, target)}`;
      const g = entry(groups, gk, () => ({
        tokens: new Set<string>(),
        roles: new Set<string>(),
        functions: new Map<string, Set<string>>(),
        subaccounts: new Set<string>(),
      }));
      for (const t of allowedTokens) g.tokens.add(symbolOf(m.chain_id, t));
      for (const r of roles) g.roles.add(r);
      g.subaccounts.add(m.safe);
      entry(g.functions, target, () => new Set<string>()).add(functionName(selector));
    }
  }
  const sorted = (s: Iterable<string>) => [...s].sort();
  return [...groups]
    .map(([gk, g]) => {
      const [chain, integration] = gk.split(":") as [string, Integration];
      const targets = sorted(g.functions.keys());
      return {
        integration,
        chain_id: Number(chain),
        protocol: PROTOCOL[integration],
        tokens: sorted(g.tokens),
        roles: sorted(g.roles),
        spenders: targets,
        contracts: targets.map((address) => ({ address, functions: sorted(g.functions.get(address)!) })),
        subaccounts: sorted(g.subaccounts),
      };
    })
    .sort((a, b) => a.chain_id - b.chain_id || a.integration.localeCompare(b.integration));
}

/** The permissions of the registry subaccounts of vault `vault` (of chain `chainId`). */
export async function vaultPermissions(
  db: ReadDb,
  schema: string,
  chainId: number,
  vault: string,
): Promise<PermissionRow[]> {
  const subs = await db
    .selectFrom("registry.subaccount")
    .select("address")
    .where("chain_id", "=", chainId)
    .where("vault", "=", vault)
    .execute();
  const safes = [...new Set(subs.map((s) => s.address.toLowerCase()))];
  if (safes.length === 0) return [];
  const [modules, events] = await indexerRead(
    () =>
      Promise.all([
        sql<ModuleRow>`
          SELECT chain_id, safe, roles FROM ${sql.id(schema, "subaccount")}
           WHERE safe IN (${sql.join(safes)}) AND module IS NOT NULL`.execute(db),
        sql<EventRow>`
          SELECT e.chain_id, e.safe, e.event, e.args
            FROM ${sql.id(schema, "subaccount")} s
            JOIN ${sql.id(schema, "subaccount_event")} e
              ON e.chain_id = s.chain_id AND e.safe = s.safe AND e.contract = s.module
           WHERE s.safe IN (${sql.join(safes)})
             AND e.event IN ('TokenAllowanceSet', 'CallAllowanceSet')
           ORDER BY e.chain_id, e.block_number, e.log_index`.execute(db),
      ]).then(([m, e]) => [m.rows, e.rows] as const),
    [[], []] as const,
  );
  if (modules.length === 0) return [];
  const chains = [...new Set(modules.map((m) => m.chain_id))];
  const catalogue = await chainProtocols(db);
  const [loans, vaults] = await indexerRead(
    () =>
      Promise.all(
        (["loanbook_loan", "vault"] as const).map((t) =>
          sql<{ chain_id: number; address: string }>`
            SELECT chain_id, address FROM ${sql.id(schema, t)} WHERE chain_id IN (${sql.join(chains)})`
            .execute(db)
            .then((r) => r.rows),
        ),
      ),
    [[], []],
  );
  const targets = new Map<number, Map<string, Integration>>(chains.map((c) => [c, protocolTargets(catalogue.get(c))]));
  for (const v of vaults!) targets.get(v.chain_id)?.set(v.address.toLowerCase(), "vault");
  for (const l of loans!) targets.get(l.chain_id)?.set(l.address.toLowerCase(), "loan");
  return groupPermissions(
    modules,
    events,
    (chain, target) => targets.get(chain)?.get(target) ?? "other",
    (chain, token) => catalogue.get(chain)?.tokens.find((t) => t.address.toLowerCase() === token)?.symbol ?? token,
  );
}
