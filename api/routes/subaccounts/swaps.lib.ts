/**
 * Swap routes on Uniswap v3 for the swaps builder: which routes the chain offers between two
 * tokens (each fee tier with a pool; two hops through WETH or a stablecoin of the chain's
 * protocols entry) and what each quotes (QuoterV2). Two multicalls in all: one (the build's read
 * stage, at the head) reads the tokens, the module's allow-list, the feeds and every pool the
 * routes could use; the other quotes every route that exists, at the same head.
 */
import { type Abi, type Address, encodePacked, getAddress, type Hex, parseAbi, zeroAddress } from "viem";
import { allowedRead } from "../../lib/build/allowed.js";
import { type Head, readAtHead } from "../../lib/build/head.js";
import { aggregate, type Read, readValue } from "../../lib/build/multicall.js";
import type { BuildSubaccount } from "../../lib/build/subaccount.js";
import { type DecodedRevert, decodeRevert } from "../../lib/revert-decode.js";

export const FEE_TIERS = [100, 500, 3000, 10000] as const;
/** the hubs of two-hop routes: the wrapped ether, then the stablecoins, by symbol */
const HUBS = ["WETH", "USDC", "USDT", "DAI", "USDBC", "USDC.E"];

const ERC20 = parseAbi(["function decimals() view returns (uint8)", "function symbol() view returns (string)"]);
const FEED = parseAbi(["function latestAnswer() view returns (int256)"]);
const FACTORY = parseAbi(["function getPool(address, address, uint24) view returns (address)"]);
export const QUOTER = parseAbi([
  "function quoteExactInputSingle((address tokenIn, address tokenOut, uint256 amountIn, uint24 fee, uint160 sqrtPriceLimitX96) params) returns (uint256 amountOut, uint160 sqrtPriceX96After, uint32 initializedTicksCrossed, uint256 gasEstimate)",
  "function quoteExactInput(bytes path, uint256 amountIn) returns (uint256 amountOut, uint160[] sqrtPriceX96AfterList, uint32[] initializedTicksCrossedList, uint256 gasEstimate)",
]);

export interface SwapToken {
  address: Address;
  symbol: string;
  /** null: the token answered no decimals() (not an ERC-20) */
  decimals: number | null;
  feed: { address: Address; decimals: number } | null;
  /** the feed's latestAnswer, in feed units; null without a feed or an answer */
  price: bigint | null;
}

export interface SwapRoute {
  /** symbols and fee tiers, e.g. `USDC/500/WETH` */
  id: string;
  kind: "exact_input_single" | "exact_input";
  tokens: Address[];
  fees: number[];
  pools: Address[];
}

export interface Discovery {
  tokenIn: SwapToken;
  tokenOut: SwapToken;
  allowed: { in: boolean; out: boolean };
  routes: SwapRoute[];
  /** the head the reads saw */
  head: Head;
}

const lc = (a: string) => a.toLowerCase();
const pairKey = (a: Address, b: Address, fee: number) => `${[lc(a), lc(b)].sort().join(":")}:${fee}`;

/** One multicall at the head: tokens, allow-list, feeds and the pools of every possible route. */
export async function discover(sub: BuildSubaccount, tokenIn: Address, tokenOut: Address): Promise<Discovery> {
  const entry = new Map(sub.protocols.tokens.map((t) => [lc(t.address), t]));
  const factory = getAddress(sub.protocols.uniswap!.factory);
  const hubs = HUBS.flatMap((sym) =>
    sub.protocols.tokens.filter((t) => t.symbol.toUpperCase() === sym).map((t) => getAddress(t.address)),
  ).filter((a) => lc(a) !== lc(tokenIn) && lc(a) !== lc(tokenOut));

  const reads: Read[] = [];
  const at = (r: Read) => reads.push(r) - 1;
  const allowed = [tokenIn, tokenOut].map((t) => at(allowedRead(sub, t)));
  const meta = [tokenIn, tokenOut].map((t) => {
    const known = entry.get(lc(t));
    const feed = known?.priceFeed ? getAddress(known.priceFeed.address) : null;
    return {
      decimals: known ? null : at({ address: t, abi: ERC20 as Abi, functionName: "decimals" }),
      symbol: known ? null : at({ address: t, abi: ERC20 as Abi, functionName: "symbol" }),
      price: feed ? at({ address: feed, abi: FEED as Abi, functionName: "latestAnswer" }) : null,
    };
  });
  const pools = new Map<string, number>();
  const pool = (a: Address, b: Address, fee: number) => {
    const k = pairKey(a, b, fee);
    if (!pools.has(k))
      pools.set(k, at({ address: factory, abi: FACTORY as Abi, functionName: "getPool", args: [a, b, fee] }));
  };
  for (const fee of FEE_TIERS) {
    pool(tokenIn, tokenOut, fee);
    for (const h of hubs) {
      pool(tokenIn, h, fee);
      pool(h, tokenOut, fee);
    }
  }

  const { head, results: res } = await readAtHead(sub, reads);
  const token = (t: Address, i: 0 | 1): SwapToken => {
    const known = entry.get(lc(t));
    const m = meta[i]!;
    const answer = m.price === null ? undefined : readValue<bigint>(res[m.price]);
    const decimals = known ? known.decimals : readValue<number>(res[m.decimals!]);
    const symbol = known ? known.symbol : readValue<string>(res[m.symbol!]);
    return {
      address: getAddress(t),
      symbol: symbol ?? `${t.slice(0, 8)}…`,
      decimals: decimals ?? null,
      feed: known?.priceFeed
        ? { address: getAddress(known.priceFeed.address), decimals: known.priceFeed.decimals }
        : null,
      price: answer !== undefined && answer > 0n ? answer : null,
    };
  };
  const symbols = new Map<string, string>(sub.protocols.tokens.map((t) => [lc(t.address), t.symbol]));
  const tIn = token(tokenIn, 0);
  const tOut = token(tokenOut, 1);
  symbols.set(lc(tokenIn), tIn.symbol);
  symbols.set(lc(tokenOut), tOut.symbol);
  const poolAt = (a: Address, b: Address, fee: number): Address | null => {
    const v = readValue<Address>(res[pools.get(pairKey(a, b, fee))!]);
    return v && v !== zeroAddress ? getAddress(v) : null;
  };
  const route = (tokens: Address[], fees: number[], ps: Address[]): SwapRoute => ({
    id: tokens.map((t, i) => (i < fees.length ? `${symbols.get(lc(t))}/${fees[i]}` : symbols.get(lc(t)))).join("/"),
    kind: fees.length === 1 ? "exact_input_single" : "exact_input",
    tokens: tokens.map((t) => getAddress(t)),
    fees,
    pools: ps,
  });
  const routes: SwapRoute[] = [];
  for (const fee of FEE_TIERS) {
    const p = poolAt(tokenIn, tokenOut, fee);
    if (p) routes.push(route([tokenIn, tokenOut], [fee], [p]));
  }
  for (const h of hubs) {
    for (const f1 of FEE_TIERS) {
      const p1 = poolAt(tokenIn, h, f1);
      if (!p1) continue;
      for (const f2 of FEE_TIERS) {
        const p2 = poolAt(h, tokenOut, f2);
        if (p2) routes.push(route([tokenIn, h, tokenOut], [f1, f2], [p1, p2]));
      }
    }
  }
  const bool = (i: number) => readValue<boolean>(res[i]) === true;
  return {
    tokenIn: tIn,
    tokenOut: tOut,
    allowed: { in: bool(allowed[0]!), out: bool(allowed[1]!) },
    routes,
    head,
  };
}

/** The packed v3 path: token, fee, token, fee, …, token. */
export function encodePath(tokens: readonly Address[], fees: readonly number[]): Hex {
  const types: ("address" | "uint24")[] = [];
  const values: (Address | number)[] = [];
  tokens.forEach((t, i) => {
    types.push("address");
    values.push(t);
    if (i < fees.length) {
      types.push("uint24");
      values.push(fees[i]!);
    }
  });
  return encodePacked(types, values);
}

export type Quote = { ok: true; amountOut: bigint; gasEstimate: bigint } | { ok: false; error: DecodedRevert };

/** One multicall at `head`: QuoterV2's quote of every route for `amountIn`. */
export async function quoteAll(
  sub: BuildSubaccount,
  routes: readonly SwapRoute[],
  amountIn: bigint,
  head: Head,
): Promise<Quote[]> {
  const quoter = getAddress(sub.protocols.uniswap!.quoterV2);
  const reads = routes.map(
    (r): Read =>
      r.kind === "exact_input_single"
        ? {
            address: quoter,
            abi: QUOTER as Abi,
            functionName: "quoteExactInputSingle",
            args: [{ tokenIn: r.tokens[0], tokenOut: r.tokens[1], amountIn, fee: r.fees[0], sqrtPriceLimitX96: 0n }],
          }
        : {
            address: quoter,
            abi: QUOTER as Abi,
            functionName: "quoteExactInput",
            args: [encodePath(r.tokens, r.fees), amountIn],
          },
  );
  const res = await aggregate(sub.rpcUrl, reads, head.number);
  return res.map((q): Quote => {
    if (!q.ok) return { ok: false, error: decodeRevert(q.data) };
    const v = q.value as readonly [bigint, unknown, unknown, bigint];
    return { ok: true, amountOut: v[0], gasEstimate: v[3] };
  });
}
