/**
 * A protocol world on an anvil of its own (chain 8453 by default): tokens with feeds, every
 * protocol of contracts/devnet/protocols, and one subaccount Safe with its module; its registry
 * `protocols` entry; and a subaccount with a position in every venue and loans both ways. Used by
 * the tests (test/protocol-world.ts adds the registry rows of the shared devnet) and bench:api.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import {
  type Abi,
  type Address,
  encodeFunctionData,
  getAddress,
  type Hex,
  keccak256,
  parseAbi,
  toFunctionSelector,
  toHex,
} from "viem";
import { LoanAbi } from "../../abis/LoanAbi.js";
import { SubaccountModuleAbi } from "../../abis/SubaccountModuleAbi.js";
import { MULTICALL3 } from "../../config/multicall3.js";
import type { ChainProtocols } from "../../config/registry.js";
import { aave as aaveArt, uniswap as uniArt } from "../../contracts/devnet/protocols/artifacts.js";
import {
  createSubaccount,
  defaultSubaccountCalls,
  deployProtocols,
  type ProtocolsManifest,
  type Subaccount,
  type TokenInput,
} from "../../contracts/devnet/protocols/index.js";
import { createLoan, loanSubaccountCalls } from "../../contracts/devnet/protocols/loans.js";
import { ERC20_ABI } from "../../contracts/devnet/protocols/tx.js";
import { ChainSession } from "../../contracts/devnet/session.js";
import { type AnvilInstance, rpc, startAnvil } from "./anvil.js";
import { REPO_ROOT } from "./indexer.js";

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

/**
 * Starts an anvil on `port` and deploys the world on it (logs in `.data/<name>/`). The chain
 * starts at `genesisTimestamp` (default now).
 */
export async function buildWorld(
  name: string,
  port: number,
  chainId = 8453,
  opts: { genesisTimestamp?: number } = {},
): Promise<World> {
  const dir = join(REPO_ROOT, ".data", name);
  mkdirSync(dir, { recursive: true });
  const anvil = await startAnvil({
    chainId,
    port,
    logFile: join(dir, "anvil.log"),
    genesisTimestamp: opts.genesisTimestamp,
  });
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
    uniswapV2: { factory: lc(w.p.uniswapV2.factory), router: lc(w.p.uniswapV2.router) },
    loanRegistry: lc(w.p.loans.registry),
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

const E18 = 10n ** 18n;
const E6 = 10n ** 6n;

/** The loans `openPositions` made: one the subaccount lends, one it borrows. */
export interface WorldLoans {
  lent: Address;
  borrowed: Address;
}

/**
 * Gives the world's subaccount a position in every venue, through its module as its trader: 10
 * WETH supplied and 8,000 USDC borrowed on Aave, 5,000 USDC in the Morpho lending vault, a
 * full-range WETH/USDC position in the 0.3 % Uniswap v3 pool, a 10,000 USDC loan it lends to
 * `borrower` (12 %, drawn) and a 4,000 USDC loan it borrows from `lender` (8 %, drawn).
 */
export async function openPositions(w: World, parties: { lender: Address; borrower: Address }): Promise<WorldLoans> {
  const [usdc, weth] = [w.token("USDC"), w.token("WETH")];
  const trade = (data: Hex) => w.s.send(w.trader, w.sub.module, data, "module call");
  const mint = (t: Address, to: Address, amount: bigint) =>
    w.s.send(w.deployer, t, call(ERC20_ABI, "mint", [to, amount]), "mint");
  await mint(usdc, w.sub.safe, 50_000n * E6);
  await mint(weth, w.sub.safe, 20n * E18);
  // Aave: 10 WETH supplied, 8,000 USDC borrowed
  const pool = w.p.aave.pool;
  const poolAbi = aaveArt.pool().abi;
  await trade(
    moduleCall("executeWithApprovals", [
      [{ token: weth, spender: pool, amount: 10n * E18 }],
      pool,
      0n,
      call(poolAbi, "supply", [weth, 10n * E18, w.sub.safe, 0]),
    ]),
  );
  await trade(moduleCall("execute", [pool, 0n, call(poolAbi, "borrow", [usdc, 8_000n * E6, 2n, 0, w.sub.safe])]));
  // the Morpho lending vault: 5,000 USDC
  const lv = w.p.morpho.lendingVault;
  await trade(
    moduleCall("executeWithApprovals", [
      [{ token: usdc, spender: lv, amount: 5_000n * E6 }],
      lv,
      0n,
      call(parseAbi(["function deposit(uint256,address) returns (uint256)"]), "deposit", [5_000n * E6, w.sub.safe]),
    ]),
  );
  // a Uniswap v3 position in the WETH/USDC 0.3 % pool, full range
  const npm = w.p.uniswap.positionManager;
  const pl = w.p.uniswap.pools.find((x) => x.fee === 3000 && [x.token0, x.token1].includes(usdc));
  if (!pl) throw new Error("no WETH/USDC 0.3 % pool");
  const amounts = pl.token0 === usdc ? [3_200n * E6, 1n * E18] : [1n * E18, 3_200n * E6];
  const top = Math.floor(887272 / pl.tickSpacing) * pl.tickSpacing;
  await trade(
    moduleCall("executeWithApprovals", [
      [
        { token: pl.token0, spender: npm, amount: amounts[0] },
        { token: pl.token1, spender: npm, amount: amounts[1] },
      ],
      npm,
      0n,
      call(uniArt.positionManager().abi, "mint", [
        {
          token0: pl.token0,
          token1: pl.token1,
          fee: 3000,
          tickLower: -top,
          tickUpper: top,
          amount0Desired: amounts[0],
          amount1Desired: amounts[1],
          amount0Min: 0n,
          amount1Min: 0n,
          recipient: w.sub.safe,
          deadline: BigInt(w.s.clock + 3600),
        },
      ]),
    ]),
  );
  // a loan the subaccount lends (funded and drawn) and one it borrows (drawn)
  const ctx = { s: w.s, from: w.deployer };
  const { lender, borrower } = parties;
  const lent = await createLoan(ctx, w.p.loans.registry, {
    lender: w.sub.safe,
    borrower,
    principalToken: usdc,
    principal: 10_000n * E6,
    aprWithTwoDecimals: 1_200n,
    termDays: 90n,
  });
  await allowLoanCalls(w, lent, "lender");
  await trade(
    moduleCall("executeWithApprovals", [
      [{ token: usdc, spender: lent, amount: 10_000n * E6 }],
      lent,
      0n,
      call(LoanAbi as Abi, "fund"),
    ]),
  );
  await w.s.send(borrower, lent, call(LoanAbi as Abi, "borrowerCommitment"), "commit");
  await w.s.send(borrower, lent, call(LoanAbi as Abi, "borrowerWithdraw", [10_000n * E6]), "draw");
  const borrowed = await borrowLoan(w, lender, 4_000n * E6, { aprWithTwoDecimals: 800n, termDays: 60n });
  return { lent, borrowed };
}

/** The governance lets the subaccount's module make the calls of `role` on `loan`. */
async function allowLoanCalls(w: World, loan: Address, role: "lender" | "borrower") {
  const selectors = loanSubaccountCalls(loan, role).signatures.map((sig) => toFunctionSelector(sig));
  await w.s.send(w.governance, w.sub.module, moduleCall("setCalls", [loan, selectors, true]), "setCalls");
}

/**
 * A USDC loan the world's subaccount borrows from `lender`, through its module as its trader:
 * created, committed to, funded by the lender (minted to it) and drawn whole into the Safe.
 */
export async function borrowLoan(
  w: World,
  lender: Address,
  principal: bigint,
  terms: { aprWithTwoDecimals: bigint; termDays: bigint },
): Promise<Address> {
  const usdc = w.token("USDC");
  const trade = (data: Hex) => w.s.send(w.trader, w.sub.module, data, "module call");
  const loan = await createLoan({ s: w.s, from: w.deployer }, w.p.loans.registry, {
    lender,
    borrower: w.sub.safe,
    principalToken: usdc,
    principal,
    ...terms,
  });
  await allowLoanCalls(w, loan, "borrower");
  await trade(moduleCall("execute", [loan, 0n, call(LoanAbi as Abi, "borrowerCommitment")]));
  await w.s.send(w.deployer, usdc, call(ERC20_ABI, "mint", [lender, principal]), "mint");
  await w.s.send(lender, usdc, call(ERC20_ABI, "approve", [loan, principal]), "approve");
  await w.s.send(lender, loan, call(LoanAbi as Abi, "fund"), "fund");
  await trade(moduleCall("execute", [loan, 0n, call(LoanAbi as Abi, "borrowerWithdraw", [principal])]));
  return loan;
}
