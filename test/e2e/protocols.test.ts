/**
 * The protocol world on fresh anvils: Uniswap v3, Aave v3, Morpho Blue with our lending vault and
 * Safe deployed from the npm artifacts, a subaccount Safe with SubaccountModule, and the module
 * doing (and refusing) real work. Starts its own two anvils; needs nothing from the shared devnet.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import {
  type Abi,
  type Address,
  concatHex,
  decodeErrorResult,
  decodeFunctionResult,
  encodeAbiParameters,
  encodeFunctionData,
  getAddress,
  type Hex,
  keccak256,
  toHex,
} from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { MorphoLendingVaultAbi } from "../../abis/MorphoLendingVaultAbi.js";
import { SubaccountModuleAbi } from "../../abis/SubaccountModuleAbi.js";
import {
  aave as aaveArt,
  safe as safeArt,
  uniswap as uniArt,
  uniswapV2 as uniV2Art,
} from "../../contracts/devnet/protocols/artifacts.js";
import {
  createSafe,
  createSubaccount,
  defaultSubaccountCalls,
  deployProtocols,
  type ProtocolsManifest,
  type Subaccount,
  type TokenInput,
  v2Rebalance,
} from "../../contracts/devnet/protocols/index.js";
import { ERC20_ABI } from "../../contracts/devnet/protocols/tx.js";
import { mintedTokenId } from "../../contracts/devnet/protocols/uniswap.js";
import { ChainSession } from "../../contracts/devnet/session.js";
import { type AnvilInstance, RpcError, rpc, startAnvil } from "../../scripts/lib/anvil.js";
import { REPO_ROOT } from "../../scripts/lib/indexer.js";
import { PORT_OFFSET } from "../helpers.js";

const CHAINS = [
  { chainId: 1, port: 18_720 + PORT_OFFSET },
  { chainId: 8453, port: 18_721 + PORT_OFFSET },
];
const actor = (name: string): Address => getAddress(`0x${keccak256(toHex(`protocols-test:${name}`)).slice(26)}`);
const DEPLOYER = actor("deployer");
const GOVERNANCE = actor("governance");
const TRADER = actor("trader");
const RELAYER = actor("relayer");
const STRANGER = actor("stranger");

interface World {
  anvil: AnvilInstance;
  s: ChainSession;
  p: ProtocolsManifest;
  sub: Subaccount;
  tokens: Record<"USDC" | "WETH" | "wstETH", Address>;
}

const worlds: World[] = [];
let deployMs = 0;

async function tokensAndFeeds(s: ChainSession): Promise<TokenInput[]> {
  const specs = [
    { name: "USD Coin", symbol: "USDC", decimals: 6, usd: 1 },
    { name: "Wrapped Ether", symbol: "WETH", decimals: 18, usd: 3200 },
    { name: "Wrapped liquid staked Ether", symbol: "wstETH", decimals: 18, usd: 3800 },
  ];
  const out: TokenInput[] = [];
  for (const t of specs) {
    const address = await s.deploy(DEPLOYER, "MockERC20", [t.name, t.symbol, t.decimals]);
    const feed = await s.deploy(DEPLOYER, "PriceFeed", [8, `${t.symbol} / USD`, BigInt(t.usd * 1e8)]);
    out.push({ address, symbol: t.symbol, decimals: t.decimals, feed });
  }
  return out;
}

async function buildWorld(chainId: number, port: number, dir: string): Promise<World> {
  const anvil = await startAnvil({ chainId, port, logFile: join(dir, `anvil-${chainId}.log`) });
  const s = new ChainSession(chainId, anvil.rpcUrl);
  await s.syncClock();
  const tokenInputs = await tokensAndFeeds(s);
  const p = await deployProtocols(s, DEPLOYER, { tokens: tokenInputs, weth: "WETH", stable: "USDC" });
  const tokens = Object.fromEntries(tokenInputs.map((t) => [t.symbol, t.address])) as World["tokens"];
  const sub = await createSubaccount({ s, from: DEPLOYER }, p.safe, {
    label: "vault-1/subaccount-0",
    owner: GOVERNANCE,
    trader: TRADER,
    relayer: RELAYER,
    tokens: [tokens.USDC, tokens.WETH], // wstETH deliberately not allowed
    calls: defaultSubaccountCalls(p),
  });
  return { anvil, s, p, sub, tokens };
}

beforeAll(async () => {
  const dir = join(REPO_ROOT, ".data", `protocols-test-${PORT_OFFSET}`);
  mkdirSync(dir, { recursive: true });
  const t0 = performance.now();
  worlds.push(...(await Promise.all(CHAINS.map((c) => buildWorld(c.chainId, c.port, dir)))));
  deployMs = performance.now() - t0;
  for (const w of worlds) {
    console.log(
      `chain ${w.s.chainId}: protocols deployed in ${(w.p.stats.ms / 1000).toFixed(2)} s with ` +
        `${w.p.stats.transactions} transactions (${w.s.txCount} in all with tokens, feeds and the subaccount)`,
    );
  }
  console.log(`two chains in parallel, from anvil start to a configured subaccount: ${(deployMs / 1000).toFixed(2)} s`);
}, 300_000);

afterAll(async () => {
  await Promise.all(worlds.map((w) => w.anvil.stop()));
});

// ---- helpers ---------------------------------------------------------------------------------

const w0 = () => worlds[0] as World;

function moduleCall(functionName: string, args: readonly unknown[]): Hex {
  return encodeFunctionData({ abi: SubaccountModuleAbi as Abi, functionName, args: args as unknown[] });
}

function call(abi: Abi, functionName: string, args: readonly unknown[]): Hex {
  return encodeFunctionData({ abi, functionName, args: args as unknown[] });
}

/** eth_call expected to revert: its revert data. */
async function revertData(w: World, from: Address, to: Address, data: Hex): Promise<Hex> {
  try {
    await rpc(w.anvil.rpcUrl, "eth_call", [{ from, to, data }, "latest"]);
  } catch (err) {
    if (err instanceof RpcError && typeof err.data === "string") return err.data as Hex;
    throw err;
  }
  throw new Error("the call did not revert");
}

function decode(data: Hex): { errorName: string; args: readonly unknown[] } {
  const abi = [...SubaccountModuleAbi] as Abi;
  const r = decodeErrorResult({ abi, data });
  return { errorName: r.errorName, args: (r.args ?? []) as readonly unknown[] };
}

async function balance(w: World, token: Address, who: Address): Promise<bigint> {
  return BigInt(await w.s.rpc<Hex>("eth_call", [{ to: token, data: call(ERC20_ABI, "balanceOf", [who]) }, "latest"]));
}

async function readAbi<T>(w: World, to: Address, abi: Abi, fn: string, args: readonly unknown[] = []): Promise<T> {
  const ret = await w.s.rpc<Hex>("eth_call", [{ to, data: call(abi, fn, args) }, "latest"]);
  return decodeFunctionResult({ abi, functionName: fn, data: ret }) as T;
}

async function mintTo(w: World, token: Address, to: Address, amount: bigint) {
  await w.s.send(DEPLOYER, token, call(ERC20_ABI, "mint", [to, amount]), "mint");
}

/** The trader's module call, mined; throws with the reason when it reverts. */
async function trade(w: World, data: Hex, from: Address = TRADER) {
  return w.s.send(from, w.sub.module, data, "module call");
}

function swapParams(w: World, tokenIn: Address, tokenOut: Address, amountIn: bigint, min: bigint, recipient?: Address) {
  return {
    tokenIn,
    tokenOut,
    fee: 500,
    recipient: recipient ?? w.sub.safe,
    deadline: BigInt(w.s.clock + 3600),
    amountIn,
    amountOutMinimum: min,
    sqrtPriceLimitX96: 0n,
  };
}

const E18 = 10n ** 18n;
const E6 = 10n ** 6n;

// ---- tests -----------------------------------------------------------------------------------

describe("protocol world", () => {
  it("deploys in a few seconds, Safe and subaccount at the same address on both chains", () => {
    const [a, b] = worlds as [World, World];
    expect(a.p.safe).toEqual(b.p.safe);
    expect(a.sub.safe).toBe(b.sub.safe);
    expect(a.sub.module).toBe(b.sub.module);
    expect(a.p.safe.version).toBe("1.5.0");
    expect(a.p.uniswap.pools.length).toBeGreaterThanOrEqual(5);
    expect(a.p.aave.reserves.map((r) => r.symbol)).toEqual(["USDC", "WETH", "wstETH"]);
    expect(a.p.stats.ms).toBeLessThan(20_000);
  });

  it("a governance Safe (2 of 3) has the same address on both chains and reads back its owners", async () => {
    const owners = [actor("signer-0"), actor("signer-1"), actor("signer-2")];
    const made = await Promise.all(
      worlds.map((w) =>
        createSafe({ s: w.s, from: DEPLOYER }, w.p.safe, { label: "governance", owners, threshold: 2 }),
      ),
    );
    expect(made[1]).toBe(made[0]);
    const w = w0();
    const abi = safeArt.singletonL2().abi;
    expect(await readAbi<Address[]>(w, made[0] as Address, abi, "getOwners")).toEqual(owners);
    expect(await readAbi<bigint>(w, made[0] as Address, abi, "getThreshold")).toBe(2n);
    expect(await readAbi<string>(w, made[0] as Address, abi, "VERSION")).toBe("1.5.0");
  });

  it("the module is the Safe's only module, and the Safe's only owner is governance", async () => {
    const w = w0();
    const abi = safeArt.singletonL2().abi;
    const [modules] = await readAbi<[Address[], Address]>(w, w.sub.safe, abi, "getModulesPaginated", [
      "0x0000000000000000000000000000000000000001",
      10n,
    ]);
    expect(modules).toEqual([w.sub.module]);
    expect(await readAbi<Address[]>(w, w.sub.safe, abi, "getOwners")).toEqual([GOVERNANCE]);
  });

  it("a trader's swap through the module moves the Safe's balances and leaves no approval", async () => {
    const w = w0();
    const { USDC, WETH } = w.tokens;
    await mintTo(w, USDC, w.sub.safe, 100_000n * E6);
    const amountIn = 10_000n * E6;
    const quoterAbi = uniArt.quoterV2().abi;
    const quote = await w.s.rpc<Hex>("eth_call", [
      {
        to: w.p.uniswap.quoterV2,
        data: call(quoterAbi, "quoteExactInputSingle", [
          { tokenIn: USDC, tokenOut: WETH, amountIn, fee: 500, sqrtPriceLimitX96: 0n },
        ]),
      },
      "latest",
    ]);
    const expected = BigInt(quote.slice(0, 66));
    expect(expected).toBeGreaterThan((3n * E18) / 1n / 1n / 2n); // ~3.1 WETH for 10k USDC at 3200
    const [usdc0, weth0] = [await balance(w, USDC, w.sub.safe), await balance(w, WETH, w.sub.safe)];
    const swap = call(uniArt.swapRouter().abi, "exactInputSingle", [
      swapParams(w, USDC, WETH, amountIn, (expected * 99n) / 100n),
    ]);
    await trade(
      w,
      moduleCall("executeWithApprovals", [
        [{ token: USDC, spender: w.p.uniswap.swapRouter, amount: amountIn }],
        w.p.uniswap.swapRouter,
        0n,
        swap,
      ]),
    );
    expect(await balance(w, USDC, w.sub.safe)).toBe(usdc0 - amountIn);
    expect(await balance(w, WETH, w.sub.safe)).toBe(weth0 + expected);
    const allowance = await readAbi<bigint>(w, USDC, ERC20_ABI, "allowance", [w.sub.safe, w.p.uniswap.swapRouter]);
    expect(allowance).toBe(0n);
  });

  it("a two-hop swap through both WETH/USDC fee tiers (a circular path) goes through", async () => {
    const w = w0();
    const { USDC, WETH } = w.tokens;
    const amountIn = 1_000n * E6;
    const path = concatHex([USDC, "0x0001f4", WETH, "0x000bb8", USDC]);
    const before = await balance(w, USDC, w.sub.safe);
    const swap = call(uniArt.swapRouter().abi, "exactInput", [
      { path, recipient: w.sub.safe, deadline: BigInt(w.s.clock + 3600), amountIn, amountOutMinimum: 990n * E6 },
    ]);
    await trade(
      w,
      moduleCall("executeWithApprovals", [
        [{ token: USDC, spender: w.p.uniswap.swapRouter, amount: amountIn }],
        w.p.uniswap.swapRouter,
        0n,
        swap,
      ]),
    );
    const after = await balance(w, USDC, w.sub.safe);
    // two fees (0.05 % and 0.3 %), and the first test's swap moved the 0.05 % pool a little
    expect(before - after).toBeGreaterThan(3n * E6);
    expect(before - after).toBeLessThan(15n * E6);
  });

  it("refuses a non-trader (NotTrader), a token not allowed, an outside recipient, a leftover approval", async () => {
    const w = w0();
    const { USDC, WETH, wstETH } = w.tokens;
    const router = w.p.uniswap.swapRouter;
    const swap = (out: Address, recipient?: Address) =>
      moduleCall("execute", [
        router,
        0n,
        call(uniArt.swapRouter().abi, "exactInputSingle", [swapParams(w, USDC, out, 1n * E6, 0n, recipient)]),
      ]);
    expect(decode(await revertData(w, STRANGER, w.sub.module, swap(WETH)))).toEqual({
      errorName: "NotTrader",
      args: [STRANGER],
    });
    expect(decode(await revertData(w, TRADER, w.sub.module, swap(wstETH)))).toEqual({
      errorName: "TokenNotAllowed",
      args: [wstETH],
    });
    expect(decode(await revertData(w, TRADER, w.sub.module, swap(WETH, TRADER)))).toEqual({
      errorName: "ExternalRecipient",
      args: [TRADER],
    });
    // every token of a multi-hop path is checked: USDC -> WETH -> wstETH
    const path = concatHex([USDC, "0x0001f4", WETH, "0x000bb8", wstETH]);
    const multiHop = call(uniArt.swapRouter().abi, "exactInput", [
      { path, recipient: w.sub.safe, deadline: BigInt(w.s.clock + 3600), amountIn: 1n * E6, amountOutMinimum: 0n },
    ]);
    expect(decode(await revertData(w, TRADER, w.sub.module, moduleCall("execute", [router, 0n, multiHop])))).toEqual({
      errorName: "TokenNotAllowed",
      args: [wstETH],
    });
    // a target not on the list; ERC-20 approvals and transfers never go through execute
    const balanceOf = call(ERC20_ABI, "balanceOf", [TRADER]);
    const approve = call(ERC20_ABI, "approve", [TRADER, 1n]);
    expect(decode(await revertData(w, TRADER, w.sub.module, moduleCall("execute", [USDC, 0n, balanceOf])))).toEqual({
      errorName: "TargetNotAllowed",
      args: [USDC, balanceOf.slice(0, 10)],
    });
    expect(decode(await revertData(w, TRADER, w.sub.module, moduleCall("execute", [USDC, 0n, approve])))).toEqual({
      errorName: "ForbiddenSelector",
      args: ["0x095ea7b3"],
    });
    // the relayer may operate too; an approval while another is unspent is refused
    await trade(w, moduleCall("approve", [USDC, router, 1n]), RELAYER);
    expect(decode(await revertData(w, TRADER, w.sub.module, moduleCall("approve", [USDC, router, 5n])))).toEqual({
      errorName: "LeftoverApproval",
      args: [USDC, router, 1n],
    });
    await trade(w, moduleCall("approve", [USDC, router, 0n]));
  });

  it("a Uniswap v2 pair at the feeds: a v2 swap through the module pays the Safe; refusals", async () => {
    const w = w0();
    const { USDC, WETH, wstETH } = w.tokens;
    const v2 = w.p.uniswapV2;
    const pair = v2.pairs.find((x) => new Set([x.token0, x.token1]).has(USDC)) as (typeof v2.pairs)[number];
    expect(v2.pairs).toHaveLength(2); // WETH/USDC, wstETH/WETH
    const reserves = async () => {
      const [r0, r1] = await readAbi<[bigint, bigint]>(w, pair.address, uniV2Art.pair().abi, "getReserves");
      return pair.token0 === USDC ? { usdc: r0, weth: r1 } : { usdc: r1, weth: r0 };
    };
    const r = await reserves();
    // 3200 USDC per WETH, to 1e-6
    expect(Number((r.usdc * E18 * 1_000_000n) / (r.weth * E6)) / 1e6).toBeCloseTo(3200, 4);
    const amountIn = 1_000n * E6;
    const path = [USDC, WETH];
    const router = uniV2Art.router02().abi;
    const [, expected] = await readAbi<bigint[]>(w, v2.router, router, "getAmountsOut", [amountIn, path]);
    const deadline = BigInt(w.s.clock + 3600);
    const swap = (min: bigint, p: Address[] = path, to: Address = w.sub.safe) =>
      moduleCall("executeWithApprovals", [
        [{ token: p[0], spender: v2.router, amount: amountIn }],
        v2.router,
        0n,
        call(router, "swapExactTokensForTokens", [amountIn, min, p, to, deadline]),
      ]);
    expect(decode(await revertData(w, TRADER, w.sub.module, swap(0n, [USDC, WETH, wstETH])))).toEqual({
      errorName: "TokenNotAllowed",
      args: [wstETH],
    });
    expect(decode(await revertData(w, TRADER, w.sub.module, swap(0n, path, TRADER)))).toEqual({
      errorName: "ExternalRecipient",
      args: [TRADER],
    });
    const tooMuch = decodeErrorResult({ abi: [], data: await revertData(w, TRADER, w.sub.module, swap(E18)) });
    expect(tooMuch.args).toEqual(["UniswapV2Router: INSUFFICIENT_OUTPUT_AMOUNT"]);
    const [usdc0, weth0] = [await balance(w, USDC, w.sub.safe), await balance(w, WETH, w.sub.safe)];
    await mintTo(w, USDC, w.sub.safe, amountIn);
    await trade(w, swap((expected! * 99n) / 100n));
    expect(await balance(w, USDC, w.sub.safe)).toBe(usdc0);
    expect(await balance(w, WETH, w.sub.safe)).toBe(weth0 + expected!);
    expect(await readAbi<bigint>(w, USDC, ERC20_ABI, "allowance", [w.sub.safe, v2.router])).toBe(0n);
    // the arbitrageur's move (the simulator's) brings a skewed pair back to the feeds
    const whale = actor("v2-whale");
    await mintTo(w, WETH, whale, 200n * E18);
    await w.s.send(whale, WETH, call(ERC20_ABI, "approve", [v2.router, 200n * E18]), "approve");
    const sell = (amount: bigint, p: Address[]) =>
      w.s.send(whale, v2.router, call(router, "swapExactTokensForTokens", [amount, 0n, p, whale, deadline]), "v2");
    await sell(200n * E18, [WETH, USDC]);
    const skewed = await reserves();
    expect(Number((skewed.usdc * E18) / skewed.weth) / 1e6).toBeLessThan(3000);
    const [r0, r1] = pair.token0 === USDC ? [skewed.usdc, skewed.weth] : [skewed.weth, skewed.usdc];
    const [d0, d1, p0, p1] =
      pair.token0 === USDC ? [6, 18, 10n ** 8n, 3200n * 10n ** 8n] : [18, 6, 3200n * 10n ** 8n, 10n ** 8n];
    const move = v2Rebalance({ r0, r1 }, p0, d0, p1, d1);
    const tokenIn = move.in0 ? pair.token0 : pair.token1;
    expect(tokenIn).toBe(USDC); // WETH is cheap in the pair: buy it back with USDC
    await mintTo(w, USDC, whale, move.amountIn);
    await w.s.send(whale, USDC, call(ERC20_ABI, "approve", [v2.router, move.amountIn]), "approve");
    await sell(move.amountIn, [USDC, WETH]);
    const back = await reserves();
    expect(Number((back.usdc * E18 * 1_000_000n) / (back.weth * E6)) / 1e6).toBeCloseTo(3200, 2);
  });

  it("a swap with an impossible minimum fails with Uniswap's reason, in estimates and mined", async () => {
    const w = w0();
    const { USDC, WETH } = w.tokens;
    const amountIn = 1_000n * E6;
    const data = moduleCall("executeWithApprovals", [
      [{ token: USDC, spender: w.p.uniswap.swapRouter, amount: amountIn }],
      w.p.uniswap.swapRouter,
      0n,
      call(uniArt.swapRouter().abi, "exactInputSingle", [swapParams(w, USDC, WETH, amountIn, 1_000n * E18)]),
    ]);
    const reason = decodeErrorResult({ abi: [], data: await revertData(w, TRADER, w.sub.module, data) });
    expect(reason).toMatchObject({ errorName: "Error", args: ["Too little received"] });
    await expect(rpc(w.anvil.rpcUrl, "eth_estimateGas", [{ from: TRADER, to: w.sub.module, data }])).rejects.toThrow(
      /Too little received/,
    );
    // mined with explicit gas: the transaction fails, it does not "succeed" having done nothing
    const usdc0 = await balance(w, USDC, w.sub.safe);
    const hash = await rpc<Hex>(w.anvil.rpcUrl, "eth_sendTransaction", [
      { from: TRADER, to: w.sub.module, data, gas: "0x4c4b40", gasPrice: "0x0" },
    ]);
    let receipt: { status: Hex } | null = null;
    for (let i = 0; !receipt && i < 200; i++) {
      receipt = await rpc<{ status: Hex } | null>(w.anvil.rpcUrl, "eth_getTransactionReceipt", [hash]);
      if (!receipt) await new Promise((r) => setTimeout(r, 5));
    }
    expect(receipt?.status).toBe("0x0");
    // the trace names the inner reason too (what /revert_reason will read)
    const trace = await rpc<{ output?: Hex; error?: string }>(w.anvil.rpcUrl, "debug_traceTransaction", [
      hash,
      { tracer: "callTracer" },
    ]);
    expect(decodeErrorResult({ abi: [], data: trace.output as Hex }).args).toEqual(["Too little received"]);
    expect(await balance(w, USDC, w.sub.safe)).toBe(usdc0);
    await w.s.syncClock();
  });

  it("supplies and borrows on Aave through the module; a borrow beyond the collateral fails with '36'", async () => {
    const w = w0();
    const { USDC, WETH } = w.tokens;
    const pool = w.p.aave.pool;
    const poolAbi = aaveArt.pool().abi;
    await mintTo(w, WETH, w.sub.safe, 10n * E18);
    await trade(
      w,
      moduleCall("executeWithApprovals", [
        [{ token: WETH, spender: pool, amount: 10n * E18 }],
        pool,
        0n,
        call(poolAbi, "supply", [WETH, 10n * E18, w.sub.safe, 0]),
      ]),
    );
    const aWeth = w.p.aave.reserves.find((r) => r.symbol === "WETH")?.aToken as Address;
    expect(await balance(w, aWeth, w.sub.safe)).toBe(10n * E18);
    const usdc0 = await balance(w, USDC, w.sub.safe);
    await trade(w, moduleCall("execute", [pool, 0n, call(poolAbi, "borrow", [USDC, 5_000n * E6, 2n, 0, w.sub.safe])]));
    expect(await balance(w, USDC, w.sub.safe)).toBe(usdc0 + 5_000n * E6);
    const debt = w.p.aave.reserves.find((r) => r.symbol === "USDC")?.variableDebtToken as Address;
    expect(await balance(w, debt, w.sub.safe)).toBe(5_000n * E6);
    const account = await readAbi<readonly bigint[]>(w, pool, poolAbi, "getUserAccountData", [w.sub.safe]);
    expect(account[0]).toBe(32_000n * 10n ** 8n); // collateral in USD, 8 decimals
    expect(account[1]).toBe(5_000n * 10n ** 8n);
    expect(account[5]).toBeGreaterThan(E18);
    // 10 WETH at 3200 with 75 % LTV cover 24k USD of debt, 5k of it used
    const tooMuch = moduleCall("execute", [pool, 0n, call(poolAbi, "borrow", [USDC, 20_000n * E6, 2n, 0, w.sub.safe])]);
    const reason = decodeErrorResult({ abi: [], data: await revertData(w, TRADER, w.sub.module, tooMuch) });
    expect(reason).toMatchObject({ errorName: "Error", args: ["36"] });
  });

  it("mints a v3 position owned by the Safe and stakes it in the incentive", async () => {
    const w = w0();
    const { USDC, WETH } = w.tokens;
    const npm = w.p.uniswap.positionManager;
    const npmAbi = uniArt.positionManager().abi;
    const pool = w.p.uniswap.pools.find((p) => p.address === w.p.uniswap.incentive.pool);
    if (!pool) throw new Error("no incentive pool");
    await mintTo(w, USDC, w.sub.safe, 32_000n * E6);
    await mintTo(w, WETH, w.sub.safe, 10n * E18);
    const amounts = pool.token0 === USDC ? [32_000n * E6, 10n * E18] : [10n * E18, 32_000n * E6];
    const top = Math.floor(887272 / pool.tickSpacing) * pool.tickSpacing;
    const receipt = await trade(
      w,
      moduleCall("executeWithApprovals", [
        [
          { token: pool.token0, spender: npm, amount: amounts[0] },
          { token: pool.token1, spender: npm, amount: amounts[1] },
        ],
        npm,
        0n,
        call(npmAbi, "mint", [
          {
            token0: pool.token0,
            token1: pool.token1,
            fee: pool.fee,
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
    const tokenId = mintedTokenId(receipt as never, npm);
    expect(await readAbi<Address>(w, npm, npmAbi, "ownerOf", [tokenId])).toBe(w.sub.safe);
    for (const t of [pool.token0, pool.token1]) {
      expect(await readAbi<bigint>(w, t, ERC20_ABI, "allowance", [w.sub.safe, npm])).toBe(0n);
    }
    // stake: the NFT goes to the staker (an allowed target) with the incentive key
    const inc = w.p.uniswap.incentive;
    const key = encodeAbiParameters(
      [
        {
          type: "tuple",
          components: [
            { name: "rewardToken", type: "address" },
            { name: "pool", type: "address" },
            { name: "startTime", type: "uint256" },
            { name: "endTime", type: "uint256" },
            { name: "refundee", type: "address" },
          ],
        },
      ],
      [{ ...inc, startTime: BigInt(inc.startTime), endTime: BigInt(inc.endTime) }],
    );
    await trade(
      w,
      moduleCall("execute", [
        npm,
        0n,
        call(npmAbi, "safeTransferFrom", [w.sub.safe, w.p.uniswap.staker, tokenId, key]),
      ]),
    );
    const deposit = await readAbi<readonly unknown[]>(w, w.p.uniswap.staker, uniArt.staker().abi, "deposits", [
      tokenId,
    ]);
    expect(deposit[0]).toBe(w.sub.safe);
    expect(deposit[1]).toBe(1); // staked in one incentive
  });

  it("deposits in and withdraws from the Morpho lending vault through the module", async () => {
    const w = w0();
    const { USDC } = w.tokens;
    const vault = w.p.morpho.lendingVault;
    const vaultAbi = MorphoLendingVaultAbi as Abi;
    await mintTo(w, USDC, w.sub.safe, 1_000n * E6);
    const usdc0 = await balance(w, USDC, w.sub.safe);
    await trade(
      w,
      moduleCall("executeWithApprovals", [
        [{ token: USDC, spender: vault, amount: 1_000n * E6 }],
        vault,
        0n,
        call(vaultAbi, "deposit", [1_000n * E6, w.sub.safe]),
      ]),
    );
    const shares = await balance(w, vault, w.sub.safe);
    expect(shares).toBeGreaterThan(0n);
    expect(await balance(w, USDC, w.sub.safe)).toBe(usdc0 - 1_000n * E6);
    // a second later the seed borrower's interest shows in the share price
    const assets = await readAbi<bigint>(w, vault, vaultAbi, "convertToAssets", [shares]);
    expect(assets).toBeGreaterThanOrEqual(1_000n * E6 - 1n);
    await trade(w, moduleCall("execute", [vault, 0n, call(vaultAbi, "withdraw", [500n * E6, w.sub.safe, w.sub.safe])]));
    expect(await balance(w, USDC, w.sub.safe)).toBe(usdc0 - 500n * E6);
    // redeeming to someone else is refused by the module
    const redeemOut = moduleCall("execute", [vault, 0n, call(vaultAbi, "redeem", [1n, TRADER, w.sub.safe])]);
    expect(decode(await revertData(w, TRADER, w.sub.module, redeemOut)).errorName).toBe("ExternalRecipient");
  });
});
