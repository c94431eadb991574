/**
 * The swaps builder: every route of swaps.lib.ts (Uniswap v3, and v2 where the chain has it) is
 * quoted, built as the module's `executeWithApprovals` (an exact approval of the input to the
 * venue's router, reset after) around an exact-input swap paying the Safe, and simulated from the
 * trader, all simulations at once.
 * The answer is the route whose simulation passes and gives the most out; the others are listed
 * with why they lost. When the registry sets the subaccount a min_health_factor, the chosen route
 * is checked against it (api/lib/build/health-floor.ts). Refusals: a token the module does not
 * allow (422, before any quote or simulation), no pool route (409 `no_route`), no simulation
 * passing (409 `simulation_failed`, each candidate's decoded reason), below the minimum (409
 * `below_min_health_factor`).
 */
import { type Abi, type Address, encodeFunctionData, getAddress, parseAbi } from "viem";
import { tokenDecimals, tokenPrice } from "../../../onchain/valuation.js";
import { requireAllowed } from "../../lib/build/allowed.js";
import type { BuildAnswer } from "../../lib/build/audit.js";
import { knownToken } from "../../lib/build/facts.js";
import { belowMinimum, type Change, healthField, healthFloor } from "../../lib/build/health-floor.js";
import { type ModuleTransaction, moduleTransaction } from "../../lib/build/module-call.js";
import { rawAmount, requireOneAmount, transactionPayload, units, wholeText } from "../../lib/build/payload.js";
import { BuildRefusal, type RefusedReason } from "../../lib/build/refusal.js";
import { type Simulation, simulate } from "../../lib/build/simulate.js";
import { buildSubaccount } from "../../lib/build/subaccount.js";
import type { ChainReads } from "../../lib/chain-reads.js";
import type { DecodedRevert } from "../../lib/revert-decode.js";
import type { AppDeps } from "../../lib/router.js";
import type { SwapPayload, SwapQuoteBody } from "./swaps.js";
import {
  type Discovery,
  discover,
  encodePath,
  type Fair,
  fairValue,
  type Quote,
  quoteAll,
  type SwapRoute,
  type SwapToken,
  spotOuts,
  V2_ROUTER,
} from "./swaps.lib.js";

const ROUTER = parseAbi([
  "function exactInputSingle((address tokenIn, address tokenOut, uint24 fee, address recipient, uint256 deadline, uint256 amountIn, uint256 amountOutMinimum, uint160 sqrtPriceLimitX96) params) payable returns (uint256 amountOut)",
  "function exactInput((bytes path, address recipient, uint256 deadline, uint256 amountIn, uint256 amountOutMinimum) params) payable returns (uint256 amountOut)",
]);
const ERC20 = parseAbi([
  "function balanceOf(address) view returns (uint256)",
  "function allowance(address, address) view returns (uint256)",
]);
const BPS = 10_000n;
/**
 * The price-impact bound of a request that gives none: 15 %, where Uniswap's interface blocks a
 * trade for non-experts (BLOCKED_PRICE_IMPACT_NON_EXPERT). When the best route's quote is more
 * than that below the reference value of the input (`Reference`), the build is refused (409
 * `price_impact_too_high`); the losing routes are still each simulated against their own
 * quote. A request's own bound, measured at the feeds, instead raises every route's minimum out
 * to its floor; measured at the pools (each route against its own), it is held to the best
 * route as the default is.
 */
export const DEFAULT_MAX_PRICE_IMPACT_BPS = 1_500;

interface Candidate {
  route: SwapRoute;
  quote: Quote;
  minimumOut: bigint | null;
  /** what the input is worth at the reference (`Reference`), in token_out raw units */
  fair: Fair | null;
  tx: ModuleTransaction | null;
  sim: Simulation | null;
  /** the Safe's token_out gain and token_in spend in the simulation */
  received: bigint | null;
  spent: bigint | null;
}

/** amount_in valued at the feeds, in token_out raw units; null without both prices. */
export function fairOut(amountIn: bigint, tIn: SwapToken, tOut: SwapToken): Fair | null {
  if (tIn.price === null || tOut.price === null || !tIn.feed || !tOut.feed) return null;
  return {
    num: amountIn * tIn.price * 10n ** BigInt(tOut.decimals! + tOut.feed.decimals),
    den: tOut.price * 10n ** BigInt(tIn.decimals! + tIn.feed.decimals),
  };
}

/**
 * What a swap's price impact is measured against: both tokens' feeds, or, without them, each
 * route's own pools' prices before the trade (`spotOuts`), as Uniswap's interface measures a
 * trade's price impact against its route's mid price.
 */
export type Reference = "feeds" | "pools";
const AGAINST: Record<Reference, string> = { feeds: "the feeds' value", pools: "its pools' price before the trade" };

/** How far below the reference value `out` is, in basis points (negative: above it). */
export function impactBps(out: bigint, fair: Fair | null): number | null {
  if (fair === null || fair.num === 0n) return null;
  return Number(((fair.num - out * fair.den) * 1_000_000n) / fair.num) / 100;
}

function swapCall(route: SwapRoute, safe: Address, deadline: bigint, amountIn: bigint, minOut: bigint) {
  if (route.kind === "swap_exact_tokens_for_tokens") {
    return encodeFunctionData({
      abi: V2_ROUTER,
      functionName: "swapExactTokensForTokens",
      args: [amountIn, minOut, route.tokens, safe, deadline],
    });
  }
  if (route.kind === "exact_input_single") {
    return encodeFunctionData({
      abi: ROUTER,
      functionName: "exactInputSingle",
      args: [
        {
          tokenIn: route.tokens[0]!,
          tokenOut: route.tokens[1]!,
          fee: route.fees[0]!,
          recipient: safe,
          deadline,
          amountIn,
          amountOutMinimum: minOut,
          sqrtPriceLimitX96: 0n,
        },
      ],
    });
  }
  return encodeFunctionData({
    abi: ROUTER,
    functionName: "exactInput",
    args: [
      { path: encodePath(route.tokens, route.fees), recipient: safe, deadline, amountIn, amountOutMinimum: minOut },
    ],
  });
}

const tokenField = (t: SwapToken) => ({
  address: t.address,
  symbol: t.symbol,
  decimals: t.decimals!,
  price_usd: t.price !== null && t.feed ? Number(t.price) / 10 ** t.feed.decimals : null,
});

const VENUE_NAME = { uniswap_v3: "Uniswap v3", uniswap_v2: "Uniswap v2" } as const;

const routeFields = (r: SwapRoute, symbols: (a: Address) => string) => ({
  venue: r.venue,
  route: r.id,
  kind: r.kind,
  path: r.tokens,
  symbols: r.tokens.map(symbols),
  fees: r.fees,
  pools: r.pools,
});

const reasonOf = (e: DecodedRevert) => ({ kind: e.kind, name: e.name, message: e.message, data: e.data });

export async function buildSwap(
  deps: AppDeps,
  chainReads: ChainReads,
  address: string,
  body: SwapQuoteBody,
): Promise<BuildAnswer<SwapPayload>> {
  if (body.token_in.toLowerCase() === body.token_out.toLowerCase()) {
    throw BuildRefusal.field(["body", "token_out"], "token_out must differ from token_in");
  }
  requireOneAmount(body);
  const sub = await buildSubaccount(deps, address, body.chain, body.from);
  // a swap gives up fees and price impact: that lowers what secures the loans it borrows
  const floor = healthFloor(deps, chainReads, sub, true);
  if (!sub.protocols.uniswap && !sub.protocols.uniswapV2) {
    throw new BuildRefusal(409, "no_route", `Chain ${sub.chainId} has no Uniswap v3 or v2 in its protocols entry`);
  }
  // the amount, when token_in's decimals are known before the read, lets the read quote too
  const listed = knownToken(sub, body.token_in);
  let early: bigint | null = null;
  try {
    early = listed ? rawAmount(body, listed.decimals) : null;
  } catch {
    // a bad amount is refused below, in its turn
  }
  let d: Discovery;
  try {
    d = await discover(sub, getAddress(body.token_in), getAddress(body.token_out), early);
  } catch (err) {
    throw err instanceof BuildRefusal ? err : BuildRefusal.chain(sub.chainId, err);
  }
  for (const [field, t, ok] of [
    ["token_in", d.tokenIn, d.allowed.in],
    ["token_out", d.tokenOut, d.allowed.out],
  ] as const) {
    if (t.decimals === null) {
      throw BuildRefusal.field(["body", field], `${t.address} is not an ERC-20 token on chain ${sub.chainId}`);
    }
    requireAllowed([t], [ok], ["body", field]);
  }
  const amountIn = rawAmount(body, d.tokenIn.decimals!);
  // an amount the Safe does not hold fails every route alike (STF): refused before quoting
  if (d.balanceIn !== null && amountIn > d.balanceIn) {
    throw BuildRefusal.field(
      ["body", body.amount_raw != null ? "amount_raw" : "amount"],
      `Above the Safe's balance: it holds ${d.balanceIn} raw units of ${d.tokenIn.symbol}`,
      "insufficient_balance",
    );
  }
  if (amountIn !== early) d.quoted.clear();
  d.keepPools();
  if (d.routes.length === 0) {
    throw new BuildRefusal(
      409,
      "no_route",
      `No Uniswap pool route from ${d.tokenIn.symbol} to ${d.tokenOut.symbol} on chain ${sub.chainId} (direct on ` +
        "either venue at any fee tier, or through WETH or a stablecoin the module allows)" +
        (d.closedHubs.length > 0
          ? `: the routes through ${d.closedHubs.join(", ")} are left out, as the module does not allow that token`
          : ""),
    );
  }
  const fedFair = fairOut(amountIn, d.tokenIn, d.tokenOut);
  const reference: Reference = fedFair === null ? "pools" : "feeds";
  const deadline = d.head.timestamp + BigInt(body.deadline_s);
  let quotes: Quote[];
  try {
    quotes = await quoteAll(sub, d, amountIn, fedFair === null);
  } catch (err) {
    throw BuildRefusal.chain(sub.chainId, err);
  }
  const spots = fedFair === null ? spotOuts(d, amountIn) : null;
  const routers = {
    uniswap_v3: sub.protocols.uniswap ? getAddress(sub.protocols.uniswap.swapRouter) : null,
    uniswap_v2: sub.protocols.uniswapV2 ? getAddress(sub.protocols.uniswapV2.router) : null,
  };
  const balance = (t: Address) => ({ to: t, abi: ERC20 as Abi, functionName: "balanceOf", args: [sub.safe] });
  const readsFor = (router: Address) => ({
    before: [balance(d.tokenIn.address), balance(d.tokenOut.address)],
    after: [
      balance(d.tokenIn.address),
      balance(d.tokenOut.address),
      { to: d.tokenIn.address, abi: ERC20 as Abi, functionName: "allowance", args: [sub.safe, router] },
    ],
  });
  const candidates: Candidate[] = await Promise.all(
    d.routes.map(async (route, i): Promise<Candidate> => {
      const quote = quotes[i]!;
      const fair = fedFair ?? spots?.[i] ?? null;
      const c: Candidate = { route, quote, minimumOut: null, fair, tx: null, sim: null, received: null, spent: null };
      if (!quote.ok || quote.amountOut === 0n) return c;
      let min = (quote.amountOut * (BPS - BigInt(body.max_slippage_bps))) / BPS;
      // one fair value for every route: its floor never prefers a route that gives less
      if (body.max_price_impact_bps != null && fedFair !== null) {
        const floor = (fedFair.num * (BPS - BigInt(body.max_price_impact_bps))) / (fedFair.den * BPS);
        if (floor > min) min = floor;
      }
      c.minimumOut = min;
      // a route's venue is in the protocols entry: discover only reads the venues it names
      const router = routers[route.venue]!;
      c.tx = moduleTransaction(
        sub.module,
        [
          {
            target: router,
            value: 0n,
            data: swapCall(route, sub.safe, deadline, amountIn, min),
            description:
              `Swap ${wholeText(amountIn, d.tokenIn.decimals!)} ${d.tokenIn.symbol} for at least ` +
              `${wholeText(min, d.tokenOut.decimals!)} ${d.tokenOut.symbol} on ${VENUE_NAME[route.venue]} ` +
              `(${route.id}), paid to the Safe`,
          },
        ],
        [{ token: d.tokenIn.address, spender: router, amount: amountIn }],
      );
      c.sim = await simulate(sub, c.tx, readsFor(router), d.head);
      if (c.sim.success) {
        const [inBefore, outBefore] = c.sim.before as (bigint | null)[];
        const [inAfter, outAfter] = c.sim.after as (bigint | null)[];
        if (inBefore != null && inAfter != null) c.spent = inBefore - inAfter;
        if (outBefore != null && outAfter != null) c.received = outAfter - outBefore;
      }
      return c;
    }),
  );
  const symbols = (a: Address) =>
    [d.tokenIn, d.tokenOut].find((t) => t.address === a)?.symbol ??
    sub.protocols.tokens.find((t) => t.address.toLowerCase() === a.toLowerCase())?.symbol ??
    a;
  const passed = candidates
    .filter((c) => c.sim?.success)
    .sort((a, b) => {
      const ra = a.received ?? 0n;
      const rb = b.received ?? 0n;
      if (ra !== rb) return ra > rb ? -1 : 1;
      return Number(a.sim!.gasUsed - b.sim!.gasUsed);
    });
  const best = passed[0];
  if (!best) {
    const reasons: RefusedReason[] = candidates.map((c) => {
      const q = c.quote;
      if (!q.ok) return { candidate: c.route.id, kind: "quote", ...quoteReason(q.error) };
      if (q.amountOut === 0n) {
        return { candidate: c.route.id, kind: "quote", name: "ZeroOut", message: "the route quotes 0 out", data: "0x" };
      }
      const e = c.sim!.revert!;
      const message = `${e.message}${impactNote(c, d)}`;
      return { candidate: c.route.id, kind: e.kind, name: e.name, message, data: e.data };
    });
    throw new BuildRefusal(
      409,
      "simulation_failed",
      `None of the ${candidates.length} route(s) from ${d.tokenIn.symbol} to ${d.tokenOut.symbol} passed its ` +
        `simulation from ${sub.from}: see each candidate's reason`,
      { reasons },
    );
  }
  const q = best.quote as Extract<Quote, { ok: true }>;
  const sim = best.sim!;
  const fair = best.fair;
  const impact = impactBps(q.amountOut, fair);
  // the default bound, and at the pools a request's own too: held to the route that gives the most
  const held = body.max_price_impact_bps == null || reference === "pools";
  const bound = body.max_price_impact_bps ?? DEFAULT_MAX_PRICE_IMPACT_BPS;
  if (held && impact !== null && impact > bound) {
    const u = (raw: bigint) => `${wholeText(raw, d.tokenOut.decimals!)} ${d.tokenOut.symbol}`;
    const which = body.max_price_impact_bps == null ? "the default bound" : "max_price_impact_bps";
    const next =
      body.max_price_impact_bps == null ? "Send max_price_impact_bps to set another" : "A higher bound builds it";
    throw new BuildRefusal(
      409,
      "price_impact_too_high",
      `The best route (${best.route.id}) returns ${u(q.amountOut)} against ${AGAINST[reference]}, ` +
        `${u(fairValue(fair!))}: a price impact of ${(impact / 100).toFixed(2)} %, above ${which} of ` +
        `${bound / 100} %. ${next} (10000 lifts it)`,
    );
  }
  // the best route gives the most out: no other one lowers the health factor less
  const health = await floor.check(
    heldChange(sub.chainId, [d.tokenIn.address, best.spent ?? 0n], [d.tokenOut.address, best.received ?? 0n]),
  );
  if (health?.below && body.allow_below_min_health_factor !== true) throw belowMinimum("The swap", health);
  const u = (raw: bigint, t: SwapToken) => units(raw, t.decimals!);
  const [inBefore, outBefore, inAfter, outAfter] = [...sim.before, ...sim.after] as bigint[];
  const leftover = (sim.after[2] as bigint | null) ?? null;
  return {
    chainId: sub.chainId,
    subaccount: sub.safe,
    body: (buildId) => ({
      ...transactionPayload(buildId, sub, best.tx!, sim),
      token_in: tokenField(d.tokenIn),
      token_out: tokenField(d.tokenOut),
      quote: {
        ...routeFields(best.route, symbols),
        amount_in: u(amountIn, d.tokenIn),
        expected_out: u(q.amountOut, d.tokenOut),
        minimum_out: u(best.minimumOut!, d.tokenOut),
        fair_out: fair === null ? null : u(fairValue(fair), d.tokenOut),
        fair_out_basis: fair === null ? null : reference,
        price_impact_bps: impact,
        max_slippage_bps: body.max_slippage_bps,
        max_price_impact_bps: body.max_price_impact_bps ?? null,
        deadline: Number(deadline),
        quoter_gas_estimate: q.gasEstimate === null ? null : q.gasEstimate.toString(),
      },
      simulation: {
        success: true as const,
        method: sim.method,
        block_number: Number(sim.blockNumber),
        timestamp: Number(sim.timestamp),
        gas_used: sim.gasUsed.toString(),
        amount_in: u(best.spent ?? 0n, d.tokenIn),
        amount_out: u(best.received ?? 0n, d.tokenOut),
        token_in_balance: { before: u(inBefore ?? 0n, d.tokenIn), after: u(inAfter ?? 0n, d.tokenIn) },
        token_out_balance: { before: u(outBefore ?? 0n, d.tokenOut), after: u(outAfter ?? 0n, d.tokenOut) },
        leftover_allowance_raw: leftover === null ? null : leftover.toString(),
      },
      candidates: candidates.filter((c) => c !== best).map((c) => loser(c, best, d, symbols)),
      subaccount_health_factor: healthField(health),
    }),
  };
}

/**
 * A swap's change to what the Safe holds on `chainId`, USD: token_out received less token_in
 * spent, at the prices and decimals the account is valued with (a token without a feed counts 0,
 * as it does in the account's value).
 */
function heldChange(chainId: number, spent: [Address, bigint], received: [Address, bigint]): Change {
  return (states) => {
    const s = states.find((x) => x.chainId === chainId);
    const usd = ([token, raw]: [Address, bigint]) =>
      s ? ((tokenPrice(s, token) ?? 0) * Number(raw)) / 10 ** tokenDecimals(s, token) : 0;
    return { collateral: 0, debt: 0, liquidation: 0, value: usd(received) - usd(spent) };
  };
}

/** Why a route's minimum is above its own quote: the price-impact bound, not the market, set it. */
function impactNote(c: Candidate, d: Discovery): string {
  const q = c.quote;
  if (!q.ok || c.minimumOut === null || c.minimumOut <= q.amountOut) return "";
  const u = (raw: bigint) => `${wholeText(raw, d.tokenOut.decimals!)} ${d.tokenOut.symbol}`;
  return (
    ` (max_price_impact_bps sets the minimum out at ${u(c.minimumOut)}, ` +
    `above the ${u(q.amountOut)} the route quotes)`
  );
}

/**
 * QuoterV2 answers "Unexpected error" when the swap it tried reverted without a reason: its
 * callback's check that the pools took something (a pool without liquidity in range).
 */
const QUOTER_NOTHING = "Unexpected error";

function quoteReason(e: DecodedRevert) {
  const why = e.message === QUOTER_NOTHING ? " (the route's pools give nothing for it: no liquidity in range)" : "";
  return { name: e.name || "QuoteFailed", message: `the quote failed: ${e.message}${why}`, data: e.data };
}

function loser(c: Candidate, best: Candidate, d: Discovery, symbols: (a: Address) => string) {
  const u = (raw: bigint | null) => (raw === null ? null : units(raw, d.tokenOut.decimals!));
  const q = c.quote;
  const expected = q.ok ? q.amountOut : null;
  const base = {
    ...routeFields(c.route, symbols),
    expected_out: u(expected),
    minimum_out: u(c.minimumOut),
    price_impact_bps: expected === null ? null : impactBps(expected, c.fair),
    simulation: c.sim
      ? { success: c.sim.success, gas_used: c.sim.gasUsed.toString(), amount_out: u(c.received) }
      : null,
  };
  if (!q.ok) {
    return { ...base, outcome: "quote_failed" as const, reason: reasonOf(q.error), why: quoteReason(q.error).message };
  }
  if (!c.sim) {
    return { ...base, outcome: "quote_failed" as const, reason: null, why: "the route quotes 0 out" };
  }
  if (!c.sim.success) {
    const e = c.sim.revert!;
    return {
      ...base,
      outcome: "simulation_failed" as const,
      reason: reasonOf(e),
      why: `the simulation reverted: ${e.message}${impactNote(c, d)}`,
    };
  }
  const gap = (best.received ?? 0n) - (c.received ?? 0n);
  return {
    ...base,
    outcome: "lower_out" as const,
    reason: null,
    why:
      gap > 0n
        ? `${wholeText(gap, d.tokenOut.decimals!)} ${d.tokenOut.symbol} less out than ${best.route.id}`
        : `the same out as ${best.route.id}, more gas`,
  };
}
