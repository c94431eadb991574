/**
 * A protocol world on an anvil of a test's own (chain 8453 by default): tokens with feeds, every
 * protocol of contracts/devnet/protocols, and one subaccount Safe with its module; plus the
 * registry rows that make the API see that subaccount and that chain's protocols, written into
 * the shared devnet's database and removed again by `drop`.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import { type Abi, type Address, encodeFunctionData, getAddress, type Hex, keccak256, toHex } from "viem";
import { SubaccountModuleAbi } from "../abis/SubaccountModuleAbi.js";
import type { ChainProtocols } from "../config/registry.js";
import {
  createSubaccount,
  defaultSubaccountCalls,
  deployProtocols,
  type ProtocolsManifest,
  type Subaccount,
  type TokenInput,
} from "../contracts/devnet/protocols/index.js";
import { ChainSession } from "../contracts/devnet/session.js";
import { MULTICALL3 } from "../onchain/positions.js";
import { type AnvilInstance, rpc, startAnvil } from "../scripts/lib/anvil.js";
import { REPO_ROOT } from "../scripts/lib/indexer.js";
import type { ApiHarness } from "./api-harness.js";

export const actor = (name: string): Address => getAddress(`0x${keccak256(toHex(`protocol-world:${name}`)).slice(26)}`);

export interface World {
  anvil: AnvilInstance;
  s: ChainSession;
  p: ProtocolsManifest;
  sub: Subaccount;
  tokens: TokenInput[];
  token: (symbol: string) => Address;
  deployer: Address;
  governance: Address;
  trader: Address;
}

export const call = (abi: Abi, functionName: string, args: readonly unknown[] = []): Hex =>
  encodeFunctionData({ abi, functionName, args: args as unknown[] });
export const moduleCall = (fn: string, args: readonly unknown[]) => call(SubaccountModuleAbi as Abi, fn, args);

/** Starts an anvil on `port` and deploys the world on it. */
export async function buildWorld(name: string, port: number, chainId = 8453): Promise<World> {
  const dir = join(REPO_ROOT, ".data", name);
  mkdirSync(dir, { recursive: true });
  const anvil = await startAnvil({ chainId, port, logFile: join(dir, "anvil.log") });
  try {
    return await deployWorld(name, anvil, chainId);
  } catch (err) {
    await anvil.stop(); // a failed deployment leaves no anvil behind
    throw err;
  }
}

async function deployWorld(name: string, anvil: AnvilInstance, chainId: number): Promise<World> {
  const s = new ChainSession(chainId, anvil.rpcUrl);
  await s.syncClock();
  const deployer0 = actor(`${name}:deployer`);
  // Multicall3 at its canonical address, as on every real chain (the reads batch through it)
  const mc = await s.deploy(deployer0, "Multicall3", []);
  await s.rpc("anvil_setCode", [MULTICALL3, await s.rpc<Hex>("eth_getCode", [mc, "latest"])]);
  const deployer = actor(`${name}:deployer`);
  const governance = actor(`${name}:governance`);
  const trader = actor(`${name}:trader`);
  const tokens: TokenInput[] = [];
  for (const t of [
    { name: "USD Coin", symbol: "USDC", decimals: 6, usd: 1 },
    { name: "Wrapped Ether", symbol: "WETH", decimals: 18, usd: 3200 },
  ]) {
    const address = await s.deploy(deployer, "MockERC20", [t.name, t.symbol, t.decimals]);
    const feed = await s.deploy(deployer, "PriceFeed", [8, `${t.symbol} / USD`, BigInt(t.usd * 1e8)]);
    tokens.push({ address, symbol: t.symbol, decimals: t.decimals, feed });
  }
  const token = (symbol: string) => tokens.find((t) => t.symbol === symbol)!.address;
  const p = await deployProtocols(s, deployer, { tokens, weth: "WETH", stable: "USDC" });
  const sub = await createSubaccount({ s, from: deployer }, p.safe, {
    label: `${name}/subaccount`,
    owner: governance,
    trader,
    relayer: actor(`${name}:relayer`),
    tokens: tokens.map((t) => t.address),
    calls: defaultSubaccountCalls(p),
  });
  return { anvil, s, p, sub, tokens, token, deployer, governance, trader };
}

/** The registry's `protocols` entry of the world's chain. */
export function protocolsEntry(w: World): ChainProtocols {
  const lc = (a: string) => a.toLowerCase() as `0x${string}`;
  return {
    chainId: w.s.chainId,
    tokens: w.tokens.map((t) => ({
      address: lc(t.address),
      symbol: t.symbol,
      decimals: t.decimals,
      priceFeed: { address: lc(t.feed), decimals: 8 },
    })),
    aave: { pool: lc(w.p.aave.pool), dataProvider: lc(w.p.aave.dataProvider) },
    morpho: {
      address: lc(w.p.morpho.morpho),
      markets: [w.p.morpho.marketId],
      lendingVaults: [lc(w.p.morpho.lendingVault)],
    },
    uniswap: {
      factory: lc(w.p.uniswap.factory),
      positionManager: lc(w.p.uniswap.positionManager),
      swapRouter: lc(w.p.uniswap.swapRouter),
      quoterV2: lc(w.p.uniswap.quoterV2),
      staker: lc(w.p.uniswap.staker),
    },
    loanRegistry: lc(w.p.loans.registry),
  };
}

/** Registers the world's subaccount (under a vault of the devnet on its chain) and its chain's protocols. */
export async function registerWorld(h: ApiHarness, w: World, minHealthFactor = 1.2): Promise<() => Promise<void>> {
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

/** Mines `data` from `from` with explicit gas (no estimate refuses it); its hash, mined. */
export async function mineRaw(w: World, from: Address, to: Address, data: Hex): Promise<Hex> {
  const hash = await rpc<Hex>(w.anvil.rpcUrl, "eth_sendTransaction", [
    { from, to, data, gas: "0x4c4b40", gasPrice: "0x0" },
  ]);
  for (let i = 0; i < 200; i++) {
    const r = await rpc<{ status: Hex } | null>(w.anvil.rpcUrl, "eth_getTransactionReceipt", [hash]);
    if (r) {
      await w.s.syncClock();
      return hash;
    }
    await new Promise((res) => setTimeout(res, 5));
  }
  throw new Error(`no receipt for ${hash}`);
}
