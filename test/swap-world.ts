/**
 * What the swaps builder's tests add to a protocol world: more tokens with feeds, more Uniswap v3
 * pools on the world's factory (any fee tier, any liquidity, a price off the feeds) and v2 pairs,
 * every swap route between two tokens found independently of the service (for a brute-force
 * comparison), and a counting proxy in front of the world's RPC (which methods a build called).
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { type Abi, type Address, encodePacked, getAddress, type Hex, zeroAddress } from "viem";
import { uniswap as uniArt, uniswapV2 as uniV2Art } from "../contracts/devnet/protocols/artifacts.js";
import { ERC20_ABI } from "../contracts/devnet/protocols/tx.js";
import { sortTokens, sqrtPriceX96 } from "../contracts/devnet/protocols/uniswap.js";
import { call, moduleCall, type World } from "./protocol-world.js";

export const FEES = [100, 500, 3000, 10000] as const;
const SPACING: Record<number, number> = { 100: 1, 500: 10, 3000: 60, 10000: 200 };
const USD = 10n ** 8n;

/** A MockERC20 with a PriceFeed at `usd`, added to the world's tokens (and so its protocols entry). */
export async function addToken(w: World, symbol: string, decimals: number, usd: number, allow = true) {
  const address = await w.s.deploy(w.deployer, "MockERC20", [symbol, symbol, decimals]);
  const feed = await w.s.deploy(w.deployer, "PriceFeed", [8, `${symbol} / USD`, BigInt(Math.round(usd * 1e8))]);
  w.tokens.push({ address, symbol, decimals, feed });
  if (allow) await w.s.send(w.governance, w.sub.module, moduleCall("setTokens", [[address], true]), "setTokens");
  return address;
}

/** The 0.01 % tier, which v3-core 1.0.1's factory leaves to its owner (as mainnet's governance enabled it). */
export async function enableFeeTier100(w: World) {
  const data = call(uniArt.factory().abi as Abi, "enableFeeAmount", [100, 1]);
  await w.s.send(w.deployer, w.p.uniswap.factory, data, "enableFeeAmount");
}

const usdOf = (w: World, t: Address) => {
  const tok = w.tokens.find((x) => getAddress(x.address) === getAddress(t))!;
  return tok;
};

/**
 * A full-range pool of (a, b) at `fee` holding about `liquidityUsd`, priced at the feeds' usd
 * values given with `a` worth `skew` times its price in b (1: at the feeds).
 */
export async function addPool(
  w: World,
  a: Address,
  b: Address,
  fee: number,
  prices: Record<string, number>,
  liquidityUsd: number,
  skew = 1,
): Promise<Address> {
  const npm = w.p.uniswap.positionManager;
  const npmAbi = uniArt.positionManager().abi as Abi;
  const [t0, t1] = sortTokens(a, b);
  const [k0, k1] = [usdOf(w, t0), usdOf(w, t1)];
  const usd = (t: Address) => {
    const base = prices[usdOf(w, t).symbol]!;
    return BigInt(Math.round((getAddress(t) === getAddress(a) ? base * skew : base) * 1e8));
  };
  const [p0, p1] = [usd(t0), usd(t1)];
  await w.s.send(
    w.deployer,
    npm,
    call(npmAbi, "createAndInitializePoolIfNecessary", [t0, t1, fee, sqrtPriceX96(p0, k0.decimals, p1, k1.decimals)]),
    "create pool",
  );
  const half = BigInt(Math.round(liquidityUsd / 2)) * USD;
  const amount0 = (half * 10n ** BigInt(k0.decimals)) / p0;
  const amount1 = (half * 10n ** BigInt(k1.decimals)) / p1;
  for (const [t, amt] of [
    [t0, amount0],
    [t1, amount1],
  ] as const) {
    await w.s.send(w.deployer, t, call(ERC20_ABI, "mint", [w.deployer, amt]), "mint");
    await w.s.send(w.deployer, t, call(ERC20_ABI, "approve", [npm, amt]), "approve");
  }
  const top = Math.floor(887272 / SPACING[fee]!) * SPACING[fee]!;
  await w.s.send(
    w.deployer,
    npm,
    call(npmAbi, "mint", [
      {
        token0: t0,
        token1: t1,
        fee,
        tickLower: -top,
        tickUpper: top,
        amount0Desired: amount0,
        amount1Desired: amount1,
        amount0Min: 0n,
        amount1Min: 0n,
        recipient: w.deployer,
        deadline: BigInt(w.s.clock + 3600),
      },
    ]),
    "mint position",
  );
  return poolOf(w, a, b, fee);
}

export async function poolOf(w: World, a: Address, b: Address, fee: number): Promise<Address> {
  const data = call(uniArt.factory().abi as Abi, "getPool", [a, b, fee]);
  const out = await w.s.rpc<Hex>("eth_call", [{ to: w.p.uniswap.factory, data }, "latest"]);
  return getAddress(`0x${out.slice(26)}`);
}

/**
 * A Uniswap v2 pair of (a, b) on the world's v2 factory holding about `liquidityUsd`, `a` worth
 * `skew` times its feed price: made by the factory, its tokens minted into it.
 */
export async function addPair(
  w: World,
  a: Address,
  b: Address,
  prices: Record<string, number>,
  liquidityUsd: number,
  skew = 1,
): Promise<Address> {
  const factory = uniV2Art.factory().abi as Abi;
  await w.s.send(w.deployer, w.p.uniswapV2.factory, call(factory, "createPair", [a, b]), "createPair");
  const pair = await pairOf(w, a, b);
  for (const [t, k] of [
    [a, skew],
    [b, 1],
  ] as const) {
    const tok = usdOf(w, t);
    const usd = BigInt(Math.round(prices[tok.symbol]! * k * 1e8));
    const amount = (BigInt(Math.round(liquidityUsd / 2)) * USD * 10n ** BigInt(tok.decimals)) / usd;
    await w.s.send(w.deployer, t, call(ERC20_ABI, "mint", [pair, amount]), "mint");
  }
  await w.s.send(w.deployer, pair, call(uniV2Art.pair().abi as Abi, "mint", [w.deployer]), "pair mint");
  return pair;
}

export async function pairOf(w: World, a: Address, b: Address): Promise<Address> {
  const data = call(uniV2Art.factory().abi as Abi, "getPair", [a, b]);
  const out = await w.s.rpc<Hex>("eth_call", [{ to: w.p.uniswapV2.factory, data }, "latest"]);
  return getAddress(`0x${out.slice(26)}`);
}

export interface BruteRoute {
  id: string;
  venue: "uniswap_v3" | "uniswap_v2";
  tokens: Address[];
  fees: number[];
}

/**
 * Every route the chain offers from `a` to `b`: on v3 direct at each fee tier and two hops
 * through each hub; on v2 the same with its one fee (3000).
 */
export async function allRoutes(w: World, a: Address, b: Address, hubs: Address[]): Promise<BruteRoute[]> {
  const sym = (t: Address) => usdOf(w, t).symbol;
  const out: BruteRoute[] = [];
  const venues = [
    { venue: "uniswap_v3", fees: FEES, hop: String, pool: (x: Address, y: Address, f: number) => poolOf(w, x, y, f) },
    { venue: "uniswap_v2", fees: [3000], hop: () => "v2", pool: (x: Address, y: Address) => pairOf(w, x, y) },
  ] as const;
  for (const v of venues) {
    const has = async (x: Address, y: Address, fee: number) => (await v.pool(x, y, fee)) !== zeroAddress;
    const id = (ts: Address[], fs: number[]) =>
      ts.map((t, i) => (i < fs.length ? `${sym(t)}/${v.hop(fs[i]!)}` : sym(t))).join("/");
    for (const fee of v.fees)
      if (await has(a, b, fee)) out.push({ id: id([a, b], [fee]), venue: v.venue, tokens: [a, b], fees: [fee] });
    for (const h of hubs) {
      if (getAddress(h) === getAddress(a) || getAddress(h) === getAddress(b)) continue;
      for (const f1 of v.fees) {
        if (!(await has(a, h, f1))) continue;
        for (const f2 of v.fees) {
          if (await has(h, b, f2))
            out.push({ id: id([a, h, b], [f1, f2]), venue: v.venue, tokens: [a, h, b], fees: [f1, f2] });
        }
      }
    }
  }
  return out;
}

/** The router a venue's swaps are approved to and sent through. */
export const routerOf = (w: World, venue: string) =>
  venue === "uniswap_v2" ? w.p.uniswapV2.router : w.p.uniswap.swapRouter;

/** The module call of `route` for `amountIn`, with no minimum (the brute force measures the out). */
export function routeCall(w: World, route: BruteRoute, amountIn: bigint): Hex {
  const router = routerOf(w, route.venue);
  const abi = uniArt.swapRouter().abi as Abi;
  const deadline = BigInt(w.s.clock + 3600);
  const swap =
    route.venue === "uniswap_v2"
      ? call(uniV2Art.router02().abi as Abi, "swapExactTokensForTokens", [
          amountIn,
          0n,
          route.tokens,
          w.sub.safe,
          deadline,
        ])
      : route.fees.length === 1
        ? call(abi, "exactInputSingle", [
            {
              tokenIn: route.tokens[0],
              tokenOut: route.tokens[1],
              fee: route.fees[0],
              recipient: w.sub.safe,
              deadline,
              amountIn,
              amountOutMinimum: 0n,
              sqrtPriceLimitX96: 0n,
            },
          ])
        : call(abi, "exactInput", [
            {
              path: encodePacked(
                ["address", "uint24", "address", "uint24", "address"],
                [route.tokens[0]!, route.fees[0]!, route.tokens[1]!, route.fees[1]!, route.tokens[2]!],
              ),
              recipient: w.sub.safe,
              deadline,
              amountIn,
              amountOutMinimum: 0n,
            },
          ]);
  return moduleCall("executeWithApprovals", [
    [{ token: route.tokens[0], spender: router, amount: amountIn }],
    router,
    0n,
    swap,
  ]);
}

export interface RpcProxy {
  url: string;
  /** every JSON-RPC method called through it, in order (batches flattened) */
  methods: string[];
  /** HTTP requests made through it */
  requests: number;
  /** each request's body, in order */
  bodies: string[];
  /** methods answered with JSON-RPC's "method not found", as a node without them answers */
  refuse: Set<string>;
  /**
   * methods refused with more parameters than this, as geth answers a parameter it does not know
   * ("too many arguments"): eth_call → 2 is a node without state overrides, → 3 without block overrides
   */
  maxParams: Map<string, number>;
  /** methods forwarded with only this many parameters, as a node ignoring the others answers */
  dropParams: Map<string, number>;
  /**
   * addresses (lowercase) whose code the node behind seems not to have, as on a chain where they
   * were never deployed: eth_getCode answers "0x", and eth_call runs with their code overridden to
   * none, unless the call's own state override puts code there
   */
  hideCode: Set<string>;
  close(): Promise<void>;
}

/** A proxy in front of `target` counting the JSON-RPC calls made through it. */
export async function rpcProxy(target: string): Promise<RpcProxy> {
  const p = { methods: [] as string[], requests: 0, bodies: [] as string[] };
  const refuse = new Set<string>();
  const maxParams = new Map<string, number>();
  const dropParams = new Map<string, number>();
  const hideCode = new Set<string>();
  type Call = { id: unknown; method: string; params?: unknown[] };
  /** the call as the node without `hideCode`'s contracts would run it, or its answer */
  const hiding = (c: Call): { call: Call } | { result: unknown } => {
    const p = c.params ?? [];
    if (c.method === "eth_getCode" && hideCode.has(String(p[0]).toLowerCase())) return { result: "0x" };
    if (c.method !== "eth_call") return { call: c };
    const own = (p[2] ?? {}) as Record<string, unknown>;
    const mine = new Set(Object.keys(own).map((a) => a.toLowerCase()));
    const hidden = Object.fromEntries([...hideCode].filter((a) => !mine.has(a)).map((a) => [a, { code: "0x" }]));
    return { call: { ...c, params: [p[0], p[1] ?? "latest", { ...own, ...hidden }, ...p.slice(3)] } };
  };
  const server = createServer(async (req, res) => {
    const chunks: Buffer[] = [];
    for await (const c of req) chunks.push(c as Buffer);
    const body = Buffer.concat(chunks).toString();
    p.requests++;
    p.bodies.push(body);
    let calls: { id: unknown; method: string; params?: unknown[] }[] = [];
    try {
      calls = [JSON.parse(body)].flat() as typeof calls;
      for (const m of calls) p.methods.push(m.method);
    } catch {
      p.methods.push("<unparsable>");
    }
    const [single] = calls;
    const refusal = (c: (typeof calls)[number]) => {
      if (refuse.has(c.method))
        return { code: -32601, message: `the method ${c.method} does not exist/is not available` };
      const max = maxParams.get(c.method);
      if (max !== undefined && (c.params?.length ?? 0) > max) {
        return { code: -32602, message: `too many arguments, want at most ${max}` };
      }
      return null;
    };
    const error = calls.length === 1 && single ? refusal(single) : null;
    if (error) {
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify({ jsonrpc: "2.0", id: single!.id, error }));
      return;
    }
    if (hideCode.size > 0 && calls.length > 0) {
      const answers = await Promise.all(
        calls.map(async (c) => {
          const h = hiding(c);
          if ("result" in h) return { jsonrpc: "2.0", id: c.id, result: h.result };
          const r = await fetch(target, {
            method: "POST",
            headers: { "content-type": "application/json" },
            body: JSON.stringify(h.call),
          });
          return (await r.json()) as unknown;
        }),
      );
      res.writeHead(200, { "content-type": "application/json" });
      res.end(JSON.stringify(Array.isArray(JSON.parse(body)) ? answers : answers[0]));
      return;
    }
    const keep = calls.length === 1 && single ? dropParams.get(single.method) : undefined;
    const forward = keep === undefined ? body : JSON.stringify({ ...single, params: single!.params?.slice(0, keep) });
    const r = await fetch(target, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: forward,
    });
    res.writeHead(r.status, { "content-type": "application/json" });
    res.end(await r.text());
  });
  await new Promise<void>((resolve) => server.listen(0, "127.0.0.1", resolve));
  const { port } = server.address() as AddressInfo;
  return {
    url: `http://127.0.0.1:${port}`,
    get methods() {
      return p.methods;
    },
    get requests() {
      return p.requests;
    },
    get bodies() {
      return p.bodies;
    },
    refuse,
    maxParams,
    dropParams,
    hideCode,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}
