/**
 * Swap routes for the swaps builder: which routes the chain offers between two tokens on each
 * venue of its protocols entry (Uniswap v3: each fee tier with a pool; Uniswap v2: the pair;
 * direct, or two hops through WETH or a stablecoin, one venue a route) and what each quotes
 * (v3's QuoterV2, v2's Router02 `getAmountsOut`). The build's read stage (one multicall at the
 * head) reads the tokens, the module's allow-list, the feeds and every pool the routes could use,
 * and quotes the routes whose pools earlier builds found (a pool, once made, is at its address
 * for good; the pools are kept only from builds whose tokens the module allowed). Routes it
 * finds that were not quoted (a first build, a pool made since) are quoted in a second multicall
 * at the same head. Quoting with the reads needs the amount before them: token_in's decimals from
 * the protocols entry, or, for a token it does not list, kept from the first build that read them.
 */
import { type Abi, type Address, encodePacked, getAddress, type Hex, parseAbi, zeroAddress } from "viem";
import { allowedRead } from "../../lib/build/allowed.js";
import { keepToken, knownToken, learn, learnt } from "../../lib/build/facts.js";
import { type Head, readAtHead } from "../../lib/build/head.js";
import { aggregate, type Read, type ReadResult, readValue } from "../../lib/build/multicall.js";
import type { BuildSubaccount } from "../../lib/build/subaccount.js";
import { type DecodedRevert, decodeRevert } from "../../lib/revert-decode.js";

export const FEE_TIERS = [100, 500, 3000, 10000] as const;
/** a v2 pair's fee (0.3 %), in v3's unit (hundredths of a basis point) */
export const V2_FEE = 3000;
/** the hubs of two-hop routes: the wrapped ether, then the stablecoins, by symbol */
const HUBS = ["WETH", "USDC", "USDT", "DAI", "USDBC", "USDC.E"];

const ERC20 = parseAbi([
  "function decimals() view returns (uint8)",
  "function symbol() view returns (string)",
  "function balanceOf(address) view returns (uint256)",
]);
const FEED = parseAbi(["function latestAnswer() view returns (int256)"]);
const V3_POOL = parseAbi([
  "function slot0() view returns (uint160 sqrtPriceX96, int24 tick, uint16 observationIndex, uint16 observationCardinality, uint16 observationCardinalityNext, uint8 feeProtocol, bool unlocked)",
]);
const V2_PAIR = parseAbi(["function getReserves() view returns (uint112 reserve0, uint112 reserve1, uint32 last)"]);
const Q192 = 1n << 192n;
const FACTORY = parseAbi(["function getPool(address, address, uint24) view returns (address)"]);
const V2_FACTORY = parseAbi(["function getPair(address, address) view returns (address)"]);
export const V2_ROUTER = parseAbi([
  "function getAmountsOut(uint256 amountIn, address[] path) view returns (uint256[] amounts)",
  "function swapExactTokensForTokens(uint256 amountIn, uint256 amountOutMin, address[] path, address to, uint256 deadline) returns (uint256[] amounts)",
]);
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

export type Venue = "uniswap_v3" | "uniswap_v2";

export interface SwapRoute {
  venue: Venue;
  /** symbols and fee tiers, e.g. `USDC/500/WETH`; on v2, `USDC/v2/WETH` */
  id: string;
  /** the router function: SwapRouter's on v3, Router02's on v2 */
  kind: "exact_input_single" | "exact_input" | "swap_exact_tokens_for_tokens";
  tokens: Address[];
  fees: number[];
  pools: Address[];
}

export interface Discovery {
  tokenIn: SwapToken;
  tokenOut: SwapToken;
  allowed: { in: boolean; out: boolean };
  /** what the Safe holds of token_in at the head; null when the token did not answer */
  balanceIn: bigint | null;
  /** the routes through hubs the module allows (it checks every token of a path) */
  routes: SwapRoute[];
  /** the hubs with pools for a two-hop route that the module does not allow, by symbol */
  closedHubs: string[];
  /** the head the reads saw */
  head: Head;
  /** the quotes made with the reads, by route key (`routeKey`) */
  quoted: Map<string, Quote>;
  /** the pools' prices read so far, by `priceKey` (null: the pool answered none) */
  prices: Map<string, PoolPrice | null>;
  /** keeps the pools found, for later builds to quote with their reads (once the tokens are allowed) */
  keepPools(): void;
}

type RouteShape = { venue: Venue; tokens: Address[]; fees: number[]; pools: Address[] };

/** A pool's price before any trade, token1 per token0 in raw units: numerator, denominator. */
type PoolPrice = readonly [bigint, bigint];
export const priceKey = (venue: Venue, pool: Address) => `${venue}:${lc(pool)}`;
/** A pool's price as a read: a v3 pool's slot0, a v2 pair's reserves. */
const priceRead = (venue: Venue, pool: Address): Read =>
  venue === "uniswap_v2"
    ? { address: pool, abi: V2_PAIR as Abi, functionName: "getReserves" }
    : { address: pool, abi: V3_POOL as Abi, functionName: "slot0" };
/** The pools of `routes` whose price `read` does not hold yet, each once, by `priceKey`. */
function unreadPools(
  routes: readonly { venue: Venue; pools: readonly Address[] }[],
  read: { has(key: string): boolean },
): Map<string, { venue: Venue; pool: Address }> {
  const out = new Map<string, { venue: Venue; pool: Address }>();
  for (const r of routes) {
    for (const pool of r.pools) {
      const k = priceKey(r.venue, pool);
      if (!read.has(k) && !out.has(k)) out.set(k, { venue: r.venue, pool });
    }
  }
  return out;
}
export function toPrice(venue: Venue, r: ReadResult): PoolPrice | null {
  const v = readValue<readonly bigint[]>(r);
  if (!v) return null;
  const p: PoolPrice = venue === "uniswap_v2" ? [v[1]!, v[0]!] : [v[0]! * v[0]!, Q192];
  return p[0] === 0n || p[1] === 0n ? null : p;
}

/** A route's identity: its venue, tokens and fee tiers. */
export const routeKey = (r: { venue: Venue; tokens: readonly Address[]; fees: readonly number[] }) =>
  `${r.venue}:${r.tokens.map(lc).join(">")}:${r.fees.join(">")}`;

const lc = (a: string) => a.toLowerCase();
const pairKey = (venue: Venue, a: Address, b: Address, fee: number) =>
  `${venue}:${[lc(a), lc(b)].sort().join(":")}:${fee}`;
/** each venue's fee tiers: v2 has one */
const TIERS: Record<Venue, readonly number[]> = { uniswap_v3: FEE_TIERS, uniswap_v2: [V2_FEE] };

/** A venue of the chain's protocols entry: how to find its pools and quote its routes. */
interface VenueReads {
  venue: Venue;
  factory: Address;
  /** the pool (v3) or pair (v2) of two tokens at a fee tier, as a read */
  lookup(a: Address, b: Address, fee: number): Read;
  quote(r: { tokens: readonly Address[]; fees: readonly number[] }, amountIn: bigint): Read;
}

function venuesOf(sub: BuildSubaccount): VenueReads[] {
  const out: VenueReads[] = [];
  const v3 = sub.protocols.uniswap;
  if (v3) {
    const factory = getAddress(v3.factory);
    const quoter = getAddress(v3.quoterV2);
    out.push({
      venue: "uniswap_v3",
      factory,
      lookup: (a, b, fee) => ({ address: factory, abi: FACTORY as Abi, functionName: "getPool", args: [a, b, fee] }),
      quote: (r, amountIn) => quoteRead(quoter, r, amountIn),
    });
  }
  const v2 = sub.protocols.uniswapV2;
  if (v2) {
    const factory = getAddress(v2.factory);
    const router = getAddress(v2.router);
    out.push({
      venue: "uniswap_v2",
      factory,
      lookup: (a, b) => ({ address: factory, abi: V2_FACTORY as Abi, functionName: "getPair", args: [a, b] }),
      quote: (r, amountIn) => ({
        address: router,
        abi: V2_ROUTER as Abi,
        functionName: "getAmountsOut",
        args: [amountIn, r.tokens],
      }),
    });
  }
  return out;
}

/**
 * One multicall at the head: tokens, allow-list, feeds, the pools of every possible route on
 * every venue, and, when the amount is known before the read (`amountIn`), the quotes of the
 * routes whose pools are kept from earlier builds.
 */
export async function discover(
  sub: BuildSubaccount,
  tokenIn: Address,
  tokenOut: Address,
  amountIn: bigint | null,
): Promise<Discovery> {
  type Known = { symbol: string; decimals: number; priceFeed?: { address: string; decimals: number } | null };
  const entry = new Map<string, Known>(sub.protocols.tokens.map((t) => [lc(t.address), t]));
  for (const t of [tokenIn, tokenOut]) {
    const kept = knownToken(sub, t);
    if (kept && !entry.has(lc(t))) entry.set(lc(t), kept);
  }
  const venues = venuesOf(sub);
  const hubs = HUBS.flatMap((sym) =>
    sub.protocols.tokens.filter((t) => t.symbol.toUpperCase() === sym).map((t) => getAddress(t.address)),
  ).filter((a) => lc(a) !== lc(tokenIn) && lc(a) !== lc(tokenOut));

  const reads: Read[] = [];
  const at = (r: Read) => reads.push(r) - 1;
  const allowed = [tokenIn, tokenOut].map((t) => at(allowedRead(sub, t)));
  // the module checks every token of a path: a route through a hub it does not allow only reverts
  const hubAllowed = hubs.map((h) => at(allowedRead(sub, h)));
  const heldIn = at({ address: tokenIn, abi: ERC20 as Abi, functionName: "balanceOf", args: [sub.safe] });
  const meta = [tokenIn, tokenOut].map((t) => {
    const known = entry.get(lc(t));
    const feed = known?.priceFeed ? getAddress(known.priceFeed.address) : null;
    return {
      decimals: known ? null : at({ address: t, abi: ERC20 as Abi, functionName: "decimals" }),
      symbol: known ? null : at({ address: t, abi: ERC20 as Abi, functionName: "symbol" }),
      price: feed ? at({ address: feed, abi: FEED as Abi, functionName: "latestAnswer" }) : null,
    };
  });
  /** pool key -> its read, and the fact name it is kept under */
  const pools = new Map<string, { at: number; fact: string }>();
  for (const v of venues) {
    const pool = (a: Address, b: Address, fee: number) => {
      const k = pairKey(v.venue, a, b, fee);
      if (!pools.has(k)) pools.set(k, { at: at(v.lookup(a, b, fee)), fact: `uniswap-pool:${v.factory}:${k}` });
    };
    for (const fee of TIERS[v.venue]) {
      pool(tokenIn, tokenOut, fee);
      for (const h of hubs) {
        pool(tokenIn, h, fee);
        pool(h, tokenOut, fee);
      }
    }
  }
  const early =
    amountIn === null
      ? []
      : venues.flatMap((v) =>
          candidateRoutes(v.venue, tokenIn, tokenOut, hubs, (a, b, fee) => {
            const p = pools.get(pairKey(v.venue, a, b, fee));
            return (p && learnt<Address>(sub, p.fact)) ?? null;
          }).map((r) => ({ key: routeKey(r), venue: v.venue, pools: r.pools, at: at(v.quote(r, amountIn)) })),
        );
  // without a feed for both tokens the price impact is measured against the pools' prices
  const unpriced = [tokenIn, tokenOut].some((t) => !entry.get(lc(t))?.priceFeed);
  const earlyPrices = [...unreadPools(unpriced ? early : [], new Set())].map(
    ([k, p]) => [k, { venue: p.venue, at: at(priceRead(p.venue, p.pool)) }] as const,
  );

  const { head, results: res } = await readAtHead(sub, reads);
  const token = (t: Address, i: 0 | 1): SwapToken => {
    const known = entry.get(lc(t));
    const m = meta[i]!;
    const answer = m.price === null ? undefined : readValue<bigint>(res[m.price]);
    const decimals = known ? known.decimals : readValue<number>(res[m.decimals!]);
    const symbol = known ? known.symbol : readValue<string>(res[m.symbol!]);
    if (!known && decimals !== undefined && symbol !== undefined) {
      keepToken(sub, { address: getAddress(t), symbol, decimals: Number(decimals) });
    }
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
  const poolRead = (i: number): Address | null => {
    const v = readValue<Address>(res[i]);
    return v && v !== zeroAddress ? getAddress(v) : null;
  };
  const route = (r: RouteShape): SwapRoute => {
    const sym = (t: Address) => symbols.get(lc(t));
    const hop = (fee: number) => (r.venue === "uniswap_v2" ? "v2" : String(fee));
    return {
      ...r,
      id: r.tokens.map((t, i) => (i < r.fees.length ? `${sym(t)}/${hop(r.fees[i]!)}` : sym(t))).join("/"),
      kind:
        r.venue === "uniswap_v2"
          ? "swap_exact_tokens_for_tokens"
          : r.fees.length === 1
            ? "exact_input_single"
            : "exact_input",
      tokens: r.tokens.map((t) => getAddress(t)),
    };
  };
  const bool = (i: number) => readValue<boolean>(res[i]) === true;
  const closed = new Set(hubs.filter((_, i) => !bool(hubAllowed[i]!)).map(lc));
  const through = (r: RouteShape) => (r.tokens.length === 3 ? lc(r.tokens[1]!) : null);
  const found = venues.flatMap((v) =>
    candidateRoutes(v.venue, tokenIn, tokenOut, hubs, (a, b, fee) =>
      poolRead(pools.get(pairKey(v.venue, a, b, fee))!.at),
    ),
  );
  const routes = found.filter((r) => !closed.has(through(r) ?? "")).map(route);
  // the hubs left out that a route would have gone through, for a no_route's reason
  const closedHubs = [...new Set(found.map(through).filter((h) => h != null && closed.has(h)))].map(
    (h) => symbols.get(h!) ?? h!,
  );
  return {
    tokenIn: tIn,
    tokenOut: tOut,
    allowed: { in: bool(allowed[0]!), out: bool(allowed[1]!) },
    balanceIn: readValue<bigint>(res[heldIn]) ?? null,
    routes,
    closedHubs,
    head,
    quoted: new Map(early.map((q) => [q.key, toQuote(q.venue, res[q.at]!)])),
    prices: new Map(earlyPrices.map(([k, p]) => [k, toPrice(p.venue, res[p.at]!)])),
    keepPools: () => {
      for (const p of pools.values()) {
        const v = poolRead(p.at);
        if (v) learn(sub, p.fact, v);
      }
    },
  };
}

/** Every route of `venue` whose pools `poolAt` gives: direct at each fee tier, then through each hub. */
function candidateRoutes(
  venue: Venue,
  tokenIn: Address,
  tokenOut: Address,
  hubs: readonly Address[],
  poolAt: (a: Address, b: Address, fee: number) => Address | null,
): RouteShape[] {
  const out: RouteShape[] = [];
  const tiers = TIERS[venue];
  for (const fee of tiers) {
    const p = poolAt(tokenIn, tokenOut, fee);
    if (p) out.push({ venue, tokens: [tokenIn, tokenOut], fees: [fee], pools: [p] });
  }
  for (const h of hubs) {
    for (const f1 of tiers) {
      const p1 = poolAt(tokenIn, h, f1);
      if (!p1) continue;
      for (const f2 of tiers) {
        const p2 = poolAt(h, tokenOut, f2);
        if (p2) out.push({ venue, tokens: [tokenIn, h, tokenOut], fees: [f1, f2], pools: [p1, p2] });
      }
    }
  }
  return out;
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

/** A route's quote; v2's has no gas estimate. */
export type Quote = { ok: true; amountOut: bigint; gasEstimate: bigint | null } | { ok: false; error: DecodedRevert };

/** QuoterV2's quote of `r` for `amountIn`, as a read. */
function quoteRead(
  quoter: Address,
  r: { tokens: readonly Address[]; fees: readonly number[] },
  amountIn: bigint,
): Read {
  return r.fees.length === 1
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
      };
}

function toQuote(venue: Venue, q: ReadResult): Quote {
  if (!q.ok) return { ok: false, error: decodeRevert(q.data) };
  if (venue === "uniswap_v2") {
    const amounts = q.value as readonly bigint[];
    return { ok: true, amountOut: amounts[amounts.length - 1] ?? 0n, gasEstimate: null };
  }
  const v = q.value as readonly [bigint, unknown, unknown, bigint];
  return { ok: true, amountOut: v[0], gasEstimate: v[3] };
}

/**
 * Each route's quote for `amountIn` at `head`: those the read stage made, and the others in one
 * multicall, with, when `prices` is set, the prices of the routes' pools the read stage did not
 * read (for `spotOuts`).
 */
export async function quoteAll(
  sub: BuildSubaccount,
  d: Discovery,
  amountIn: bigint,
  prices: boolean,
): Promise<Quote[]> {
  const missing = d.routes.filter((r) => !d.quoted.has(routeKey(r)));
  const unread = unreadPools(prices ? d.routes : [], d.prices);
  if (missing.length > 0 || unread.size > 0) {
    const venues = new Map(venuesOf(sub).map((v) => [v.venue, v]));
    const reads = [
      ...missing.map((r) => venues.get(r.venue)!.quote(r, amountIn)),
      ...[...unread.values()].map((p) => priceRead(p.venue, p.pool)),
    ];
    const res = await aggregate(sub.rpcUrl, reads, d.head.number);
    for (const [i, r] of missing.entries()) d.quoted.set(routeKey(r), toQuote(r.venue, res[i]!));
    for (const [j, [k, p]] of [...unread].entries()) d.prices.set(k, toPrice(p.venue, res[missing.length + j]!));
  }
  return d.routes.map((r) => d.quoted.get(routeKey(r))!);
}

/** A swap input's fair value in token_out raw units, exactly: `num / den`. */
export interface Fair {
  num: bigint;
  den: bigint;
}
/** A fair value in whole raw units (rounded down). */
export const fairValue = (f: Fair) => f.num / f.den;

/**
 * What `amountIn` is worth at each route's own pools' prices before the trade (Uniswap's mid
 * price: a v3 pool's slot0, a v2 pair's reserves; no fee, no price impact), in token_out raw
 * units, in the order of `d.routes`: the reference of a swap's price impact where the feeds
 * cannot value both tokens. null for a route with a pool whose price was not read or is none.
 */
export function spotOuts(d: Discovery, amountIn: bigint): (Fair | null)[] {
  return d.routes.map((r) => {
    let [num, den] = [amountIn, 1n];
    for (const [i, pool] of r.pools.entries()) {
      const p = d.prices.get(priceKey(r.venue, pool));
      if (!p) return null;
      // token0 is the lower address: selling it gets token1 at the price, selling token1 the inverse
      const zeroForOne = lc(r.tokens[i]!) < lc(r.tokens[i + 1]!);
      num *= zeroForOne ? p[0] : p[1];
      den *= zeroForOne ? p[1] : p[0];
    }
    return { num, den };
  });
}
