/**
 * POST /api/v1/subaccounts/{address}/swaps on a protocol world of its own, with more tokens and
 * pools (test/swap-world.ts): WETH/USDC at every fee tier (a thin 0.01 % pool), WBTC deep against
 * WETH with a thin direct USDC pool priced above the feeds, LINK only against USDC (LINK to WETH
 * is two hops), a token the module does not allow and one without pools; on Uniswap v2, the
 * world's WETH/USDC pair (and, in one test, a WBTC/USDC pair). Every payload is sent
 * by the trader and checked on-chain; the chosen route is held to a brute force of every route
 * on the same state (evm_snapshot, each route's module call from the trader, evm_revert).
 */
import { type Abi, type Address, formatUnits, type Hex, parseAbi, toHex } from "viem";
import { afterAll, beforeAll, beforeEach, describe, expect, it } from "vitest";
import { createKey } from "../../api/keys.js";
import { ERC20_ABI } from "../../contracts/devnet/protocols/tx.js";
import { type ApiHarness, readAnswer, setupApi } from "../api-harness.js";
import { PORT_OFFSET } from "../helpers.js";
import { actor, borrowLoan, buildWorld, call, moduleCall, registerWorld, type World } from "../protocol-world.js";
import {
  addPair,
  addPool,
  addToken,
  allRoutes,
  enableFeeTier100,
  type RpcProxy,
  routeCall,
  routerOf,
  rpcProxy,
} from "../swap-world.js";

const PORT = 18_740 + PORT_OFFSET + 180;
const E18 = 10n ** 18n;
const E8 = 10n ** 8n;
const E6 = 10n ** 6n;
const PRICES = { USDC: 1, WETH: 3200, WBTC: 60_000, LINK: 15, NOPE: 1, BAD: 1 };
const ERC20 = parseAbi([
  "function balanceOf(address) view returns (uint256)",
  "function allowance(address, address) view returns (uint256)",
]);
// quoteExactInputSingle, quoteExactInput, and v2 Router02's getAmountsOut
const QUOTER_SELECTORS = ["c6a5026a", "cdca1753", "d06ca61f"];

let h: ApiHarness;
let w: World;
let drop: () => Promise<void>;
let proxy: RpcProxy;
let app: ReturnType<ApiHarness["appWith"]>;
let rpcUrls: Map<number, string>;
let key: string;
let noScopeKey: string;
let usdc: Address;
let weth: Address;
let wbtc: Address;
let link: Address;
let nope: Address;
let bad: Address;

interface Units {
  raw: string;
  amount: number;
}
interface Candidate {
  route: string;
  kind: string;
  outcome: string;
  why: string;
  path: string[];
  pools: string[];
  expected_out: Units | null;
  minimum_out: Units | null;
  price_impact_bps: number | null;
  simulation: { success: boolean; gas_used: string; amount_out: Units | null } | null;
  reason: { kind: string; name: string; message: string } | null;
}
interface Payload {
  build_id: string;
  chain_id: number;
  subaccount: string;
  module: string;
  from: Address;
  target: Address;
  data: Hex;
  value: string;
  gas_limit: string;
  calls: { target: string; value: string; data: string; description: string }[];
  approvals: { token: string; spender: string; amount_raw: string }[];
  token_in: { address: string; symbol: string; decimals: number; price_usd: number | null };
  token_out: { address: string; symbol: string; decimals: number; price_usd: number | null };
  quote: {
    venue: string;
    route: string;
    kind: string;
    path: string[];
    fees: number[];
    pools: string[];
    quoter_gas_estimate: string | null;
    amount_in: Units;
    expected_out: Units;
    minimum_out: Units;
    fair_out: Units | null;
    fair_out_basis: "feeds" | "pools" | null;
    price_impact_bps: number | null;
    max_slippage_bps: number;
    max_price_impact_bps: number | null;
    deadline: number;
  };
  simulation: {
    success: boolean;
    block_number: number;
    gas_used: string;
    amount_in: Units;
    amount_out: Units;
    leftover_allowance_raw: string | null;
  };
  candidates: Candidate[];
  subaccount_health_factor: { minimum: number; before: number | null; after: number | null } | null;
}
interface Refusal {
  detail: string | { loc: (string | number)[]; msg: string; type: string }[];
  code?: string;
  reasons?: { candidate: string; kind: string; name: string; message: string; data: string }[];
}

const mint = (t: Address, to: Address, amount: bigint) =>
  w.s.send(w.deployer, t, call(ERC20_ABI, "mint", [to, amount]), "mint");

async function read(to: Address, fn: string, args: readonly unknown[]): Promise<bigint> {
  const out = await w.s.rpc<Hex>("eth_call", [{ to, data: call(ERC20 as Abi, fn, args) }, "latest"]);
  return BigInt(out);
}
const balance = (t: Address) => read(t, "balanceOf", [w.sub.safe]);

beforeAll(async () => {
  h = await setupApi();
  w = await buildWorld(`swaps-test-${PORT_OFFSET}`, PORT);
  [usdc, weth] = [w.token("USDC"), w.token("WETH")];
  wbtc = await addToken(w, "WBTC", 8, PRICES.WBTC);
  link = await addToken(w, "LINK", 18, PRICES.LINK);
  nope = await addToken(w, "NOPE", 18, PRICES.NOPE);
  bad = await addToken(w, "BAD", 18, PRICES.BAD, false);
  await enableFeeTier100(w);
  // WETH/USDC at every tier: the world's deep 0.05 % and 0.3 % pools, a thin 0.01 %, a 1 %
  await addPool(w, weth, usdc, 100, PRICES, 100_000);
  await addPool(w, weth, usdc, 10000, PRICES, 2_000_000);
  // WBTC: deep against WETH; a thin direct USDC pool where WBTC is worth 3 % more
  await addPool(w, wbtc, weth, 500, PRICES, 10_000_000);
  await addPool(w, wbtc, weth, 3000, PRICES, 10_000_000);
  await addPool(w, wbtc, usdc, 10000, PRICES, 2_000_000, 1.03);
  // LINK only against USDC: LINK to WETH is two hops
  await addPool(w, link, usdc, 3000, PRICES, 5_000_000);
  // BAD has a pool: only the module's allow-list refuses it
  await addPool(w, bad, usdc, 3000, PRICES, 1_000_000);
  await mint(usdc, w.sub.safe, 2_500_000n * E6);
  await mint(weth, w.sub.safe, 100n * E18);
  await mint(wbtc, w.sub.safe, 20n * E8);
  await mint(link, w.sub.safe, 10_000n * E18);
  await mint(bad, w.sub.safe, 1_000n * E18);
  await mint(nope, w.sub.safe, 1_000n * E18);
  proxy = await rpcProxy(w.anvil.rpcUrl);
  // no min_health_factor: the last describe sets one
  drop = await registerWorld(h, w, null);
  rpcUrls = new Map([...h.devnet.chains.map((c) => [c.chainId, c.rpcUrl] as const), [w.s.chainId, proxy.url]]);
  app = h.appWith({ rpcUrls });
  key = (await createKey(h.db, "swaps-test", ["transactions:build"])).key;
  noScopeKey = (await createKey(h.db, "swaps-test-no-scope", ["rewards:write"])).key;
}, 900_000);

afterAll(async () => {
  await drop?.();
  await proxy?.close();
  await w?.anvil.stop();
  await h?.close();
});

async function swap<T = Payload>(
  body: unknown,
  opts: { key?: string | null; address?: string; via?: typeof app } = {},
) {
  const headers: Record<string, string> = { "content-type": "application/json" };
  const k = opts.key === undefined ? key : opts.key;
  if (k) headers["x-api-key"] = k;
  const res = await (opts.via ?? app).request(`/api/v1/subaccounts/${opts.address ?? w.sub.safe}/swaps`, {
    method: "POST",
    headers,
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return readAnswer<T>(res);
}
const base = () => ({ chain: w.s.chainId, from: w.trader });

/**
 * Each route's out on the current state: its module call sent by the trader, then reverted. A
 * route whose transaction reverts has none (null); any other failure (the node's connection on a
 * loaded machine) is tried again from the same state, then fails the test naming itself.
 */
async function bruteForce(a: Address, b: Address, amountIn: bigint): Promise<Map<string, bigint | null>> {
  const out = new Map<string, bigint | null>();
  for (const r of await allRoutes(w, a, b, [weth, usdc])) {
    for (let attempt = 1; !out.has(r.id); attempt++) {
      const snap = await w.s.rpc<string>("evm_snapshot");
      try {
        const before = await balance(b);
        await w.s.send(w.trader, w.sub.module, routeCall(w, r, amountIn), `brute ${r.id}`);
        out.set(r.id, (await balance(b)) - before);
      } catch (err) {
        if (/ reverted \(/.test((err as Error).message)) out.set(r.id, null);
        else if (attempt >= 3) throw err;
      } finally {
        await w.s.rpc("evm_revert", [snap]);
        await w.s.syncClock();
      }
    }
  }
  return out;
}

/** Builds the swap and holds it to the brute force: every route a candidate, the chosen the max. */
async function expectBest(a: Address, b: Address, amountIn: bigint, extra: Record<string, unknown> = {}) {
  const r = await swap({ ...base(), token_in: a, token_out: b, amount_raw: amountIn.toString(), ...extra });
  expect(r.status, JSON.stringify(r.body).slice(0, 600)).toBe(200);
  const p = r.body;
  const brute = await bruteForce(a, b, amountIn);
  expect([p.quote.route, ...p.candidates.map((c) => c.route)].sort()).toEqual([...brute.keys()].sort());
  const outs = [...brute.values()].filter((v): v is bigint => v !== null);
  let max = 0n;
  for (const v of outs) if (v > max) max = v;
  expect(max).toBeGreaterThan(0n);
  expect(BigInt(p.simulation.amount_out.raw)).toBe(max);
  expect(brute.get(p.quote.route)).toBe(max);
  for (const c of p.candidates) {
    // every loser simulated the out the brute force measured, and no more than the chosen
    expect(c.outcome, c.route).toBe("lower_out");
    expect(BigInt(c.simulation!.amount_out!.raw), c.route).toBe(brute.get(c.route));
    expect(BigInt(c.expected_out!.raw), c.route).toBe(brute.get(c.route));
  }
  return p;
}

/** Sends the payload from its sender and checks it did what the answer said. */
async function sendAndCheck(p: Payload) {
  const [a, b] = [p.token_in.address as Address, p.token_out.address as Address];
  const [inBefore, outBefore] = [await balance(a), await balance(b)];
  const hash = await w.s.rpc<Hex>("eth_sendTransaction", [
    {
      from: p.from,
      to: p.target,
      data: p.data,
      value: toHex(BigInt(p.value)),
      gas: toHex(BigInt(p.gas_limit)),
      gasPrice: "0x0",
    },
  ]);
  let receipt: { status: Hex; gasUsed: Hex } | null = null;
  for (let i = 0; !receipt && i < 400; i++) {
    receipt = await w.s.rpc("eth_getTransactionReceipt", [hash]);
    if (!receipt) await new Promise((r) => setTimeout(r, 5));
  }
  await w.s.syncClock();
  expect(receipt?.status).toBe("0x1");
  const received = (await balance(b)) - outBefore;
  expect(received).toBe(BigInt(p.simulation.amount_out.raw));
  expect(received).toBe(BigInt(p.quote.expected_out.raw));
  expect(received).toBeGreaterThanOrEqual(BigInt(p.quote.minimum_out.raw));
  expect(inBefore - (await balance(a))).toBe(BigInt(p.quote.amount_in.raw));
  expect(await read(a, "allowance", [w.sub.safe, routerOf(w, p.quote.venue)])).toBe(0n);
  return received;
}

describe("POST /api/v1/subaccounts/{address}/swaps: the best route, sent by the trader", () => {
  // each test starts from the world as built (the trades of one do not move the next one's pools)
  let snapshot = "";
  beforeAll(async () => {
    snapshot = await w.s.rpc<string>("evm_snapshot");
  });
  beforeEach(async () => {
    await w.s.rpc("evm_revert", [snapshot]);
    snapshot = await w.s.rpc<string>("evm_snapshot");
    await w.s.syncClock();
  });

  it("answers the quote against the feeds, the module call, amounts raw and decimal, and an audit row", async () => {
    const r = await swap({ ...base(), token_in: usdc, token_out: weth, amount: "1000.5", max_slippage_bps: 30 });
    expect(r.status).toBe(200);
    const p = r.body;
    expect(p).toMatchObject({
      chain_id: w.s.chainId,
      subaccount: w.sub.safe,
      module: w.sub.module,
      from: w.trader,
      target: w.sub.module,
      value: "0",
      token_in: { address: usdc, symbol: "USDC", decimals: 6, price_usd: 1 },
      token_out: { address: weth, symbol: "WETH", decimals: 18, price_usd: 3200 },
      approvals: [{ token: usdc, spender: w.p.uniswap.swapRouter, amount_raw: "1000500000" }],
      simulation: { success: true, amount_in: { raw: "1000500000", amount: 1000.5 }, leftover_allowance_raw: "0" },
    });
    expect(p.quote).toMatchObject({ venue: "uniswap_v3", amount_in: { raw: "1000500000", amount: 1000.5 } });
    expect(p.calls).toHaveLength(1);
    expect(p.calls[0]!.target).toBe(w.p.uniswap.swapRouter);
    const expected = BigInt(p.quote.expected_out.raw);
    expect(BigInt(p.quote.minimum_out.raw)).toBe((expected * 9_970n) / 10_000n);
    expect(p.quote.expected_out.amount).toBeCloseTo(Number(expected) / 1e18, 12);
    // the feeds value 1000.5 USDC at 1000.5 / 3200 WETH; the 0.05 % pool's fee and a little impact
    expect(BigInt(p.quote.fair_out!.raw)).toBe((1_000_500_000n * 10n ** 12n) / 3200n);
    expect(p.quote.fair_out_basis).toBe("feeds");
    expect(p.quote.price_impact_bps).toBeGreaterThan(5);
    expect(p.quote.price_impact_bps).toBeLessThan(8);
    expect(p.quote.deadline).toBeGreaterThan(w.s.clock);
    expect(Number(p.gas_limit)).toBeGreaterThan(Number(p.simulation.gas_used));
    expect(p.subaccount_health_factor).toBeNull(); // no min_health_factor in the registry
    const [row] = await h.q<{ action: string; status: number; outcome: string; subaccount: string; chain_id: number }>(
      "SELECT action, status, outcome, subaccount, chain_id FROM registry.build_audit WHERE id = $1",
      [p.build_id],
    );
    expect(row).toEqual({
      action: "swap",
      status: 200,
      outcome: "built",
      subaccount: w.sub.safe.toLowerCase(),
      chain_id: w.s.chainId,
    });
    await sendAndCheck(p);
  });

  it("max_slippage_bps 0: the minimum is the quote itself, and the swap still meets it", async () => {
    const r = await swap({ ...base(), token_in: weth, token_out: usdc, amount: "2", max_slippage_bps: 0 });
    expect(r.status).toBe(200);
    expect(r.body.quote.minimum_out).toEqual(r.body.quote.expected_out);
    await sendAndCheck(r.body);
  });

  it("keeps RPC round trips few: reads and quotes in one multicall, one simulation per route", async () => {
    // the simulations are pinned on the head the first multicall read (api/lib/build/head.ts)
    await swap({ ...base(), token_in: usdc, token_out: weth, amount: "1" }); // warms the module lookup
    /** a LINK to WBTC quote's calls: its multicalls, and that nothing else was called */
    const linkToWbtc = async () => {
      const from = proxy.methods.length;
      const r = await swap({ ...base(), token_in: link, token_out: wbtc, amount: "10" });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      const methods = proxy.methods.slice(from);
      const routes = [r.body.quote.route, ...r.body.candidates.map((c) => c.route)];
      expect(methods.filter((m) => m === "eth_simulateV1")).toHaveLength(routes.length);
      const multicalls = methods.filter((m) => m === "eth_call").length;
      expect(methods.length).toBe(routes.length + multicalls);
      return { routes, multicalls };
    };
    // the pair's first build finds its pools with the reads and quotes them in a second multicall
    const first = await linkToWbtc();
    expect(first.routes).toEqual(["LINK/3000/USDC/10000/WBTC"]);
    expect(first.multicalls).toBe(2);
    // the next quotes them with the reads
    expect(await linkToWbtc()).toEqual({ ...first, multicalls: 1 });
    // a pool made since: found by the reads, quoted in a second multicall; then with the reads
    await addPool(w, link, wbtc, 3000, PRICES, 1_000_000);
    const grown = await linkToWbtc();
    expect(grown.routes.sort()).toEqual(["LINK/3000/USDC/10000/WBTC", "LINK/3000/WBTC"]);
    expect(grown.multicalls).toBe(2);
    expect((await linkToWbtc()).multicalls).toBe(1);
  });

  it("a token its protocols entry does not list: read once with the pools, then quoted with the reads", async () => {
    const unl = await addToken(w, "UNL", 9, 2); // after the registry was loaded: not in the entry
    await addPool(w, unl, usdc, 3000, { ...PRICES, UNL: 2 }, 1_000_000);
    await mint(unl, w.sub.safe, 1_000n * 10n ** 9n);
    const multicalls = async () => {
      const from = proxy.methods.length;
      const r = await swap({ ...base(), token_in: unl, token_out: usdc, amount: "5" });
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body.token_in).toMatchObject({ symbol: "UNL", decimals: 9, price_usd: null });
      expect(r.body.quote.amount_in.raw).toBe((5n * 10n ** 9n).toString());
      return proxy.methods.slice(from).filter((m) => m === "eth_call").length;
    };
    expect(await multicalls()).toBe(2); // its symbol and decimals with the pools, then the quotes
    expect(await multicalls()).toBe(1);
  });

  it("USDC to WETH: a small trade takes the thin 0.01 % pool, a larger one the deep 0.05 % pool", async () => {
    const small = await expectBest(usdc, weth, 10n * E6);
    expect(small.quote.route).toBe("USDC/100/WETH");
    // 500, 3000, 10000 and the v2 pair: no hub between USDC and WETH
    expect(small.candidates.map((c) => c.route).sort()).toEqual([
      "USDC/10000/WETH",
      "USDC/3000/WETH",
      "USDC/500/WETH",
      "USDC/v2/WETH",
    ]);
    await sendAndCheck(small);
    const large = await expectBest(usdc, weth, 5_000n * E6);
    expect(large.quote.route).toBe("USDC/500/WETH");
    await sendAndCheck(large);
  });

  it("WBTC to USDC: the rich direct pool for a small trade, two hops through WETH for a large one", async () => {
    const small = await expectBest(wbtc, usdc, E8 / 10n);
    expect(small.quote).toMatchObject({ route: "WBTC/10000/USDC", kind: "exact_input_single" });
    expect(small.candidates.some((c) => c.kind === "exact_input")).toBe(true);
    await sendAndCheck(small);
    const large = await expectBest(wbtc, usdc, 5n * E8);
    expect(large.quote.kind).toBe("exact_input");
    expect(large.quote.path).toEqual([wbtc, weth, usdc]);
    expect(large.quote.pools).toHaveLength(2);
    await sendAndCheck(large);
  });

  it("leaves out the routes through a hub the module does not allow (it checks every token of a path)", async () => {
    const setTokens = (t: Address, allowed: boolean) =>
      w.s.send(w.governance, w.sub.module, moduleCall("setTokens", [[t], allowed]), "setTokens");
    await setTokens(weth, false);
    try {
      // a large WBTC trade goes through WETH when it may (above); without WETH, the direct pool
      const r = await swap({ ...base(), token_in: wbtc, token_out: usdc, amount: "5", max_price_impact_bps: 10_000 });
      expect(r.status, JSON.stringify(r.body).slice(0, 400)).toBe(200);
      expect(r.body.quote.route).toBe("WBTC/10000/USDC");
      for (const c of r.body.candidates) expect(c.path).not.toContain(weth);
    } finally {
      await setTokens(weth, true);
    }
    // LINK meets WETH only through USDC: without USDC allowed, no route, and the answer says why
    await setTokens(usdc, false);
    try {
      const seen = proxy.methods.length;
      const r = await swap<Refusal>({ ...base(), token_in: link, token_out: weth, amount: "10" });
      expect(r.status, JSON.stringify(r.body).slice(0, 400)).toBe(409);
      expect(r.body.code).toBe("no_route");
      expect(r.body.detail).toMatch(/the routes through USDC are left out, as the module does not allow that token/);
      expect(proxy.methods.slice(seen)).not.toContain("eth_simulateV1");
    } finally {
      await setTokens(usdc, true);
    }
  });

  it("routes failing their simulation lose with the decoded reason; the one that passes is chosen", async () => {
    // at most the feeds' value: only the direct pool, where WBTC is worth 3 % more, pays that much
    const r = await swap({ ...base(), token_in: wbtc, token_out: usdc, amount: "0.1", max_price_impact_bps: 0 });
    expect(r.status, JSON.stringify(r.body).slice(0, 400)).toBe(200);
    const p = r.body;
    expect(p.quote.route).toBe("WBTC/10000/USDC");
    expect(BigInt(p.quote.minimum_out.raw)).toBeGreaterThanOrEqual(BigInt(p.quote.fair_out!.raw));
    expect(p.candidates.length).toBeGreaterThan(0);
    for (const c of p.candidates) {
      expect(c).toMatchObject({
        kind: "exact_input",
        outcome: "simulation_failed",
        simulation: { success: false, amount_out: null },
        reason: { kind: "uniswap", name: "Too little received" },
      });
      expect(BigInt(c.minimum_out!.raw)).toBeGreaterThan(BigInt(c.expected_out!.raw));
    }
    await sendAndCheck(p);
  });

  it("a node without eth_simulateV1: every route simulated through eth_call, the same answer and reasons", async () => {
    const noSim = await rpcProxy(w.anvil.rpcUrl);
    noSim.refuse.add("eth_simulateV1");
    const via = h.appWith({ rpcUrls: new Map([...rpcUrls, [w.s.chainId, noSim.url]]) });
    try {
      // the case above: the routes but one fail their simulation, each with its decoded reason
      const body = { ...base(), token_in: wbtc, token_out: usdc, amount: "0.1", max_price_impact_bps: 0 };
      const [a, b] = [await swap(body), await swap(body, { via })];
      expect(b.status, JSON.stringify(b.body).slice(0, 400)).toBe(200);
      expect(b.body.simulation).toMatchObject({ method: "eth_call" });
      expect(b.body.candidates.some((c) => c.outcome === "simulation_failed")).toBe(true);
      // all but what the method changes: its name, the gas (measured before refunds), the build's
      // id; and the quoter's gas estimate, which depends on what its multicall read first (a new
      // app reads the pools in the same multicall, a warm one knows them)
      const unlike = new Set(["method", "gas_used", "gas_limit", "build_id", "quoter_gas_estimate"]);
      const same = (v: unknown): unknown =>
        Array.isArray(v)
          ? v.map(same)
          : v && typeof v === "object"
            ? Object.fromEntries(Object.entries(v).map(([k, x]) => [k, unlike.has(k) ? null : same(x)]))
            : v;
      expect(same(b.body)).toEqual(same(a.body));
      // the routes simulated at once waited for the first one's answer, which is kept: asked once
      const asked = () => noSim.methods.filter((m) => m === "eth_simulateV1").length;
      expect(b.body.candidates.length).toBeGreaterThan(1);
      expect(asked()).toBe(1);
      expect((await swap(body, { via })).body.simulation).toMatchObject({ method: "eth_call" });
      expect(asked()).toBe(1);
    } finally {
      await noSim.close();
    }
  });

  it("a v2 pair the market prices better wins over every v3 route; sent, it does what it quoted", async () => {
    // WBTC/USDC on v2 where WBTC is worth 4 % more: above the v3 direct pool's 3 %, less its 1 % fee
    await addPair(w, wbtc, usdc, PRICES, 4_000_000, 1.04);
    // and a v2 route of two hops, through the world's WETH/USDC pair
    await addPair(w, wbtc, weth, PRICES, 4_000_000);
    const p = await expectBest(wbtc, usdc, E8 / 10n);
    expect(p.quote).toMatchObject({
      venue: "uniswap_v2",
      route: "WBTC/v2/USDC",
      kind: "swap_exact_tokens_for_tokens",
      path: [wbtc, usdc],
      fees: [3000],
      quoter_gas_estimate: null,
    });
    expect(p.quote.price_impact_bps).toBeLessThan(-300); // above the feeds
    expect(p.approvals).toEqual([{ token: wbtc, spender: w.p.uniswapV2.router, amount_raw: (E8 / 10n).toString() }]);
    expect(p.calls[0]).toMatchObject({ target: w.p.uniswapV2.router });
    expect(p.calls[0]!.description).toContain("on Uniswap v2 (WBTC/v2/USDC)");
    expect(p.candidates.find((c) => c.route === "WBTC/v2/WETH/v2/USDC")).toMatchObject({
      kind: "swap_exact_tokens_for_tokens",
      outcome: "lower_out",
    });
    // the v3 routes lost to it, each simulated
    const v3 = p.candidates.filter((c) => !c.route.includes("/v2/"));
    expect(v3.length).toBeGreaterThanOrEqual(3);
    expect(v3.every((c) => c.outcome === "lower_out")).toBe(true);
    await sendAndCheck(p);
    // a pair made but never funded: its quote fails with the library's reason, decoded
    const factory = parseAbi(["function createPair(address, address) returns (address)"]);
    await w.s.send(w.deployer, w.p.uniswapV2.factory, call(factory, "createPair", [link, weth]), "createPair");
    const empty = await swap({ ...base(), token_in: link, token_out: weth, amount: "100" });
    expect(empty.status).toBe(200);
    expect(empty.body.quote.venue).toBe("uniswap_v3");
    expect(empty.body.candidates.find((c) => c.route === "LINK/v2/WETH")).toMatchObject({
      outcome: "quote_failed",
      simulation: null,
      reason: { kind: "uniswap", name: "UniswapV2Library: INSUFFICIENT_LIQUIDITY" },
      why: "the quote failed: Uniswap v2: a pair of the path has no liquidity",
    });
  });

  it("LINK to WETH routes only through USDC: every candidate is two hops", async () => {
    const p = await expectBest(link, weth, 1_000n * E18);
    expect(p.quote.kind).toBe("exact_input");
    expect(p.quote.path).toEqual([link, usdc, weth]);
    expect(p.candidates.every((c) => c.kind === "exact_input")).toBe(true);
    expect(p.candidates).toHaveLength(3); // USDC/WETH at the three other tiers
    await sendAndCheck(p);
  });

  it("a token without a feed: each route's price impact against its own pools' price, bounds held to the best", async () => {
    // each test starts from the same state: one transaction first, so that FLAT is not deployed at
    // the address UNL had in its test (which the API keeps as UNL's, 9 decimals)
    await mint(usdc, w.deployer, 1n);
    // after the registry was loaded: the entry lists no feed for it
    const flat = await addToken(w, "FLAT", 18, 2);
    const prices = { ...PRICES, FLAT: 2 };
    await addPool(w, flat, usdc, 3000, prices, 1_000_000); // 250,000 FLAT against 500,000 USDC
    await addPool(w, flat, weth, 3000, prices, 400_000);
    await mint(flat, w.sub.safe, 300_000n * E18);
    // a route's value at its pools' prices, read here from each pool's slot0 (Q96 square roots)
    const spot = async (c: { path: string[]; pools: string[] }, amountIn: bigint) => {
      let [num, den] = [amountIn, 1n];
      for (const [i, pool] of c.pools.entries()) {
        const slot0 = await w.s.rpc<Hex>("eth_call", [{ to: pool, data: "0x3850c7bd" }, "latest"]);
        const sqrt = BigInt(slot0.slice(0, 66));
        const zeroForOne = BigInt(c.path[i]!) < BigInt(c.path[i + 1]!);
        num *= zeroForOne ? sqrt * sqrt : 1n << 192n;
        den *= zeroForOne ? 1n << 192n : sqrt * sqrt;
      }
      return num / den;
    };
    const bps = (out: bigint, fair: bigint) => Math.round(Number(((fair - out) * 1_000_000n) / fair)) / 100;

    const small = await expectBest(flat, usdc, 100n * E18);
    expect(small.token_in.price_usd).toBeNull();
    expect(small.quote).toMatchObject({ route: "FLAT/3000/USDC", fair_out_basis: "pools" });
    const fair = await spot(small.quote, 100n * E18);
    expect(BigInt(small.quote.fair_out!.raw)).toBe(fair);
    expect(fair).toBeGreaterThan(199n * E6); // 100 FLAT at about 2 USDC
    expect(fair).toBeLessThan(201n * E6);
    // the pool's 0.3 % fee, and a little impact
    expect(small.quote.price_impact_bps).toBe(bps(BigInt(small.quote.expected_out.raw), fair));
    expect(small.quote.price_impact_bps).toBeGreaterThanOrEqual(30);
    expect(small.quote.price_impact_bps).toBeLessThan(36); // 100 of 250,000 FLAT: about 4 more
    // the two-hop routes through WETH, each against its own two pools
    expect(small.candidates.length).toBeGreaterThan(0);
    for (const c of small.candidates) {
      expect(c.path, c.route).toEqual([flat, weth, usdc]);
      expect(c.price_impact_bps, c.route).toBe(bps(BigInt(c.expected_out!.raw), await spot(c, 100n * E18)));
    }

    // 200,000 FLAT into the 250,000 of the deep pool: the default bound refuses it
    // 200,000 FLAT into the 250,000 of the deep pool: the default bound refuses it, as 15 % given does
    const big = { ...base(), token_in: flat, token_out: usdc, amount: "200000" };
    const refused = await swap<Refusal>(big);
    expect(refused.status).toBe(409);
    expect(refused.body.code).toBe("price_impact_too_high");
    expect(refused.body.detail).toMatch(/FLAT\/3000\/USDC\) returns [\d.]+ USDC against its pools' price before/);
    expect(refused.body.detail).toContain("above the default bound of 15 %");
    const given = await swap<Refusal>({ ...big, max_price_impact_bps: 1_500 });
    expect(given.status).toBe(409);
    expect(given.body.code).toBe("price_impact_too_high");
    expect(given.body.detail).toContain("above max_price_impact_bps of 15 %");
    const lifted = await swap({ ...big, max_price_impact_bps: 10_000 });
    expect(lifted.status).toBe(200);
    expect(lifted.body.quote.fair_out_basis).toBe("pools");
    expect(lifted.body.quote.price_impact_bps).toBeGreaterThan(1_500);
    expect(BigInt(lifted.body.quote.fair_out!.raw)).toBe(await spot(lifted.body.quote, 200_000n * E18));
    // at the pools a request's bound is held to the best route: refused, no route's minimum raised
    const bound = await swap<Refusal>({ ...big, amount: "20000", max_price_impact_bps: 100 });
    expect(bound.status).toBe(409);
    expect(bound.body.code).toBe("price_impact_too_high");
    expect(bound.body.detail).toContain("above max_price_impact_bps of 1 %");

    // a thin pool where FLAT is worth 10 % more: a small trade gets the most out there, moving
    // that pool's price more than the deep one's
    await addPool(w, flat, usdc, 10000, prices, 20_000, 1.1);
    const thin = { ...base(), token_in: flat, token_out: usdc, amount: "100" };
    const within = await expectBest(flat, usdc, 100n * E18, { max_price_impact_bps: 500 });
    expect(within.quote.route).toBe("FLAT/10000/USDC");
    const impact = within.quote.price_impact_bps!;
    expect(impact).toBeGreaterThan(200);
    expect(impact).toBeLessThan(500);
    // the minimum is the slippage bound's, the route's own pools' value not raising it
    const expected = BigInt(within.quote.expected_out.raw);
    expect(BigInt(within.quote.minimum_out.raw)).toBe((expected * 9_950n) / 10_000n);
    const deep = within.candidates.find((c) => c.route === "FLAT/3000/USDC")!;
    expect(deep.price_impact_bps!).toBeLessThan(200);
    // a bound the best route exceeds is refused, not met by a route that gives less out
    const over = await swap<Refusal>({ ...thin, max_price_impact_bps: 200 });
    expect(over.status).toBe(409);
    expect(over.body.code).toBe("price_impact_too_high");
    expect(over.body.detail).toContain("The best route (FLAT/10000/USDC)");
    expect(over.body.detail).toContain(`a price impact of ${(impact / 100).toFixed(2)} %`);
    await sendAndCheck(within);
  });
});

describe("refusals: recorded, nothing simulated where it says so, nothing sent", () => {
  const tokens = () => [usdc, weth, wbtc, link, bad, nope];
  let balances: bigint[] = [];
  let head = "";
  const audit = async (subaccount: string) =>
    (
      await h.q<{ id: string; status: number; outcome: string; code: string | null; request: unknown }>(
        "SELECT id, status, outcome, code, request FROM registry.build_audit WHERE subaccount = $1 ORDER BY at DESC LIMIT 1",
        [subaccount.toLowerCase()],
      )
    )[0];
  const calls = () => {
    const from = proxy.methods.length;
    return () => proxy.methods.slice(from);
  };
  /** the request's refusal is the newest audit row of the subaccount, with its status and code */
  async function expectAudited(r: { status: number; body: Refusal }, code: string, subaccount: string = w.sub.safe) {
    const row = await audit(subaccount);
    expect(row).toMatchObject({ status: r.status, outcome: "refused", code });
    return row;
  }

  beforeAll(async () => {
    balances = await Promise.all(tokens().map(balance));
    head = await w.s.rpc<string>("eth_blockNumber");
  });

  it("a token the module does not allow: 422 on the field, before any quote or simulation", async () => {
    for (const [field, body] of [
      ["token_in", { token_in: bad, token_out: usdc }],
      ["token_out", { token_in: usdc, token_out: bad }],
    ] as const) {
      const seen = calls();
      const r = await swap<Refusal>({ ...base(), ...body, amount: "10" });
      expect(r.status).toBe(422);
      expect(r.body.detail).toEqual([
        { loc: ["body", field], msg: expect.stringMatching(/TokenNotAllowed/), type: "token_not_allowed" },
      ]);
      const made = seen();
      expect(made).not.toContain("eth_simulateV1");
      expect(made.filter((m) => m === "eth_call").length).toBeLessThanOrEqual(3); // module lookup, one multicall
      await expectAudited(r, "token_not_allowed");
    }
  });

  it("no quote was made for a refused token (the quoter is never called)", async () => {
    const from = proxy.bodies.length;
    const r = await swap<Refusal>({ ...base(), token_in: bad, token_out: weth, amount: "1" });
    expect(r.status).toBe(422);
    const sent = proxy.bodies.slice(from).join("").toLowerCase();
    expect(sent.length).toBeGreaterThan(0);
    for (const sel of QUOTER_SELECTORS) expect(sent).not.toContain(sel);
    expect(sent).not.toContain(w.p.uniswap.quoterV2.slice(2).toLowerCase());
  });

  it("the same token in and out: 422 before asking the chain", async () => {
    const seen = calls();
    const r = await swap<Refusal>({ ...base(), token_in: usdc, token_out: usdc.toLowerCase(), amount: "1" });
    expect(r.status).toBe(422);
    expect(r.body.detail).toMatchObject([{ loc: ["body", "token_out"] }]);
    expect(seen()).toEqual([]);
    await expectAudited(r, "value_error");
  });

  it("no pool route: 409 no_route, nothing quoted or simulated", async () => {
    const seen = calls();
    const r = await swap<Refusal>({ ...base(), token_in: nope, token_out: usdc, amount: "1" });
    expect(r.status).toBe(409);
    expect(r.body.code).toBe("no_route");
    expect(seen()).not.toContain("eth_simulateV1");
    await expectAudited(r, "no_route");
  });

  it("a sender that is not a trader: 409 simulation_failed, NotTrader decoded for every route", async () => {
    const stranger = actor("swaps-test:stranger");
    const r = await swap<Refusal>({ ...base(), from: stranger, token_in: wbtc, token_out: usdc, amount: "0.1" });
    expect(r.status).toBe(409);
    expect(r.body.code).toBe("simulation_failed");
    const routes = await allRoutes(w, wbtc, usdc, [weth, usdc]);
    expect(r.body.reasons!.map((x) => x.candidate).sort()).toEqual(routes.map((x) => x.id).sort());
    for (const x of r.body.reasons!) {
      expect(x).toMatchObject({ kind: "subaccount", name: "NotTrader" });
      expect(x.message.toLowerCase()).toContain(stranger.slice(2).toLowerCase());
    }
    await expectAudited(r, "simulation_failed");
  });

  it("an amount above the Safe's balance: 422 insufficient_balance on the field, nothing simulated", async () => {
    const have = await balance(weth);
    for (const [field, amount] of [
      ["amount_raw", { amount_raw: (have + 1n).toString() }],
      ["amount", { amount: formatUnits(have + 10n ** 12n, 18) }],
    ] as const) {
      const seen = calls();
      const r = await swap<Refusal>({ ...base(), token_in: weth, token_out: usdc, ...amount });
      expect(r.status).toBe(422);
      expect(r.body.detail).toEqual([
        {
          loc: ["body", field],
          msg: `Above the Safe's balance: it holds ${have} raw units of WETH`,
          type: "insufficient_balance",
        },
      ]);
      expect(seen()).not.toContain("eth_simulateV1");
      await expectAudited(r, "insufficient_balance");
    }
    // the whole balance is not above it
    const all = await swap<Refusal>({ ...base(), token_in: weth, token_out: usdc, amount_raw: have.toString() });
    expect(all.body.detail).not.toEqual([expect.objectContaining({ type: "insufficient_balance" })]);
  });

  it("a bound no route can meet (a huge trade, at most 1 % under the feeds): 409, Too little received", async () => {
    const r = await swap<Refusal>({
      ...base(),
      token_in: usdc,
      token_out: weth,
      amount: "2000000",
      max_price_impact_bps: 100,
    });
    expect(r.status).toBe(409);
    expect(r.body.code).toBe("simulation_failed");
    expect(r.body.reasons!.length).toBe(5);
    for (const x of r.body.reasons!) {
      const name = x.candidate.includes("/v2/") ? "UniswapV2Router: INSUFFICIENT_OUTPUT_AMOUNT" : "Too little received";
      expect(x).toMatchObject({ kind: "uniswap", name });
      // the bound, not the market, set a minimum above the route's own quote: the message says so
      expect(x.message).toMatch(
        /max_price_impact_bps sets the minimum out at [\d.]+ WETH, above the [\d.]+ WETH the route quotes/,
      );
    }
    await expectAudited(r, "simulation_failed");
    // the same trade with the bound lifted builds: only the bound refused it
    const lifted = await swap({
      ...base(),
      token_in: usdc,
      token_out: weth,
      amount: "2000000",
      max_price_impact_bps: 10_000,
    });
    expect(lifted.status).toBe(200);
    const impact = lifted.body.quote.price_impact_bps!;
    expect(impact).toBeGreaterThan(1_500);
    // and without a bound, the default refuses a quote 15 % below the feeds, naming the impact
    const seen = calls();
    const dflt = await swap<Refusal>({ ...base(), token_in: usdc, token_out: weth, amount: "2000000" });
    expect(dflt.status).toBe(409);
    expect(dflt.body.code).toBe("price_impact_too_high");
    expect(dflt.body.detail).toContain(`a price impact of ${(impact / 100).toFixed(2)} %`);
    expect(dflt.body.detail).toContain(lifted.body.quote.route);
    expect(seen()).not.toContain("eth_sendRawTransaction");
    await expectAudited(dflt, "price_impact_too_high");
    // a trade within 15 % builds without a bound
    const small = await swap({ ...base(), token_in: usdc, token_out: weth, amount: "1000" });
    expect(small.status).toBe(200);
    expect(small.body.quote.max_price_impact_bps).toBeNull();
  });

  it("no sender where no trader is indexed: 422 on from", async () => {
    const r = await swap<Refusal>({ chain: w.s.chainId, token_in: usdc, token_out: weth, amount: "1" });
    expect(r.status).toBe(422);
    expect(r.body.detail).toMatchObject([{ loc: ["body", "from"], type: "missing" }]);
    await expectAudited(r, "missing");
  });

  it("an unknown subaccount: 404", async () => {
    const other = actor("swaps-test:not-a-subaccount");
    const r = await swap<Refusal>({ ...base(), token_in: usdc, token_out: weth, amount: "1" }, { address: other });
    expect(r.status).toBe(404);
    expect(r.body.code).toBe("unknown_subaccount");
    await expectAudited(r, "unknown_subaccount", other);
  });

  it("credentials: 401 without a key, 403 with a key lacking transactions:build", async () => {
    const body = { ...base(), token_in: usdc, token_out: weth, amount: "1" };
    const before = await audit(w.sub.safe);
    const none = await swap<Refusal>(body, { key: null });
    expect(none.status).toBe(401);
    const scoped = await swap<Refusal>(body, { key: noScopeKey });
    expect(scoped.status).toBe(403);
    expect(scoped.body.code).toBe("insufficient_scope");
    // neither reached the builder
    expect((await audit(w.sub.safe))?.id).toBe(before?.id);
  });

  it("malformed bodies: 422 FastAPI-style, each recorded", async () => {
    const cases: [unknown, (string | number)[]][] = [
      [{ ...base(), token_in: usdc, token_out: weth, amount: "1", slippage: 5 }, ["body", "slippage"]],
      [{ ...base(), token_in: usdc, amount: "1" }, ["body", "token_out"]],
      [{ ...base(), token_in: "0x12", token_out: weth, amount: "1" }, ["body", "token_in"]],
      [{ ...base(), token_in: usdc, token_out: weth, amount: "1", max_slippage_bps: -1 }, ["body", "max_slippage_bps"]],
      [{ ...base(), chain: 424242, token_in: usdc, token_out: weth, amount: "1" }, ["body", "chain"]],
    ];
    for (const [body, loc] of cases) {
      const r = await swap<Refusal>(body);
      expect(r.status, JSON.stringify(body)).toBe(422);
      expect((r.body.detail as { loc: unknown }[]).map((d) => d.loc)).toContainEqual(loc);
      const row = await expectAudited(r, "validation_error");
      expect(row!.request).toMatchObject({ address: w.sub.safe, json: body as object });
    }
    // checked by the builder (amount in the token's decimals): also 422, also recorded, on the
    // field that was sent
    for (const [body, field] of [
      [{ ...base(), token_in: usdc, token_out: weth, amount: "1", amount_raw: "1000000" }, "amount"],
      [{ ...base(), token_in: usdc, token_out: weth, amount: "1.0000001" }, "amount"],
      [{ ...base(), token_in: usdc, token_out: weth, amount_raw: "0" }, "amount_raw"],
    ] as const) {
      const r = await swap<Refusal>(body);
      expect(r.status, JSON.stringify(body)).toBe(422);
      expect(r.body.detail).toMatchObject([{ loc: ["body", field] }]);
      expect((await audit(w.sub.safe))?.status).toBe(422);
    }
    const notJson = await swap<Refusal>("{not json");
    expect([400, 422]).toContain(notJson.status);
  });

  it("nothing was sent: no block mined, the Safe's balances unchanged, no transaction method called", async () => {
    expect(await w.s.rpc<string>("eth_blockNumber")).toBe(head);
    expect(await Promise.all(tokens().map(balance))).toEqual(balances);
    expect(proxy.methods.filter((m) => m.startsWith("eth_send"))).toEqual([]);
  });
});

describe("a subaccount's min_health_factor: what a swap gives up lowers what secures its loans", () => {
  const LENDER = actor("swaps-test:lender");
  let snapshot = "";
  let apart: typeof app;
  let minimum = 0;
  interface Health {
    health_factor: number;
    total_account_value: number;
    total_loan_value: number;
    min_health_factor: number | null;
  }
  const health = async () => {
    const res = await apart.request(`/api/v1/subaccounts/health_factor?address=${w.sub.safe}`, {
      headers: { "x-api-key": h.key },
    });
    const r = await readAnswer<Health>(res);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    return r.body;
  };
  const usd = (u: Units, price: number) => u.amount * price;

  beforeAll(async () => {
    snapshot = await w.s.rpc<string>("evm_snapshot");
    // 3,000,000 USDC borrowed and drawn: the loans' factor is what the Safe holds over it
    await borrowLoan(w, LENDER, 3_000_000n * E6, { aprWithTwoDecimals: 800n, termDays: 60n });
    await w.s.syncClock();
    // an API process of its own: it reads the registry's minimum fresh, not the others' kept list
    apart = h.appApart({ rpcUrls });
    const before = await health();
    expect(before.min_health_factor).toBeNull();
    expect(before.health_factor).toBeCloseTo(before.total_account_value / before.total_loan_value, 9);
    // the operator's floor at the health factor now: the loan's interest only lowers it from here
    minimum = before.health_factor;
    await h.q("UPDATE registry.subaccount SET min_health_factor = $2 WHERE address = $1", [
      w.sub.safe.toLowerCase(),
      minimum,
    ]);
    expect((await health()).min_health_factor).toBe(minimum);
  });

  afterAll(async () => {
    await h.q("UPDATE registry.subaccount SET min_health_factor = NULL WHERE address = $1", [w.sub.safe.toLowerCase()]);
    await w.s.rpc("evm_revert", [snapshot]);
    await w.s.syncClock();
  });

  const sell = () => ({ ...base(), token_in: usdc, token_out: weth, amount: "200000", max_slippage_bps: 100 });

  it("a swap that would take it below: 409 below_min_health_factor, recorded, nothing sent", async () => {
    const head = await w.s.rpc<string>("eth_blockNumber");
    const r = await swap<Refusal & { code: string }>(sell(), { via: apart });
    expect(r.status, JSON.stringify(r.body)).toBe(409);
    expect(r.body.code).toBe("below_min_health_factor");
    expect(r.body.detail).toMatch(
      /^The swap would take the subaccount's health factor from \d+\.\d{4} to \d+\.\d{4}, below its min_health_factor /,
    );
    const [row] = await h.q<{ outcome: string; code: string; action: string }>(
      "SELECT outcome, code, action FROM registry.build_audit WHERE subaccount = $1 ORDER BY at DESC LIMIT 1",
      [w.sub.safe.toLowerCase()],
    );
    expect(row).toEqual({ outcome: "refused", code: "below_min_health_factor", action: "swap" });
    expect(await w.s.rpc<string>("eth_blockNumber")).toBe(head);
  });

  it("allowed: built, the drop is what it gives up at the feeds; sent, the route reads its after", async () => {
    const r = await swap({ ...sell(), allow_below_min_health_factor: true }, { via: apart });
    expect(r.status, JSON.stringify(r.body).slice(0, 600)).toBe(200);
    const p = r.body;
    const f = p.subaccount_health_factor!;
    expect(f.minimum).toBe(minimum);
    expect(f.before!).toBeLessThanOrEqual(minimum);
    expect(f.after!).toBeLessThan(f.before!);
    // what the swap gives up: the USDC spent less the WETH received, at the feeds
    const given = usd(p.simulation.amount_in, PRICES.USDC) - usd(p.simulation.amount_out, PRICES.WETH);
    expect(given).toBeGreaterThan(100); // at least the 0.05 % pool's fee
    const now = await health();
    expect(f.before! - f.after!).toBeCloseTo(given / now.total_loan_value, 9);
    await sendAndCheck(p);
    const sent = await health();
    expect(sent.health_factor).toBeCloseTo(f.after!, 6);
    expect(sent.health_factor).toBeLessThan(minimum);
  });

  it("a swap the feeds value above its input raises it: built without being allowed", async () => {
    // WBTC sells richer in the thin direct USDC pool than at the feeds
    const r = await swap({ ...base(), token_in: wbtc, token_out: usdc, amount: "0.1" }, { via: apart });
    expect(r.status, JSON.stringify(r.body).slice(0, 600)).toBe(200);
    const p = r.body;
    expect(usd(p.simulation.amount_out, PRICES.USDC)).toBeGreaterThan(usd(p.simulation.amount_in, PRICES.WBTC));
    const f = p.subaccount_health_factor!;
    expect(f.minimum).toBe(minimum);
    expect(f.after!).toBeGreaterThan(f.before!);
    await sendAndCheck(p);
    expect((await health()).health_factor).toBeCloseTo(f.after!, 6);
  });
});
