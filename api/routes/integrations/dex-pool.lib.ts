/**
 * What the four dex_pool builders share: the pool (one of the chain's Uniswap v3 factory, else a
 * 404 `unknown_pool`) with its tokens and price, a position of the subaccount (held by the Safe or
 * deposited by it in the v3 staker, else a 404/409), the module's token allow-list checked before
 * any simulation (422 `token_not_allowed`), and a simulation that refuses with its decoded reason.
 */
import { type Abi, type Address, decodeFunctionResult, getAddress, type Hex, parseAbi } from "viem";
import { SubaccountModuleAbi } from "../../../abis/SubaccountModuleAbi.js";
import type { NpmPosition } from "../../../onchain/positions.js";
import { type IncentiveKey, incentiveId, STAKER_ABI, stakerIncentives } from "../../../onchain/staker.js";
import { feeGrowthOf, feeGrowthReads, uncountedFees } from "../../../onchain/uniswap-fees.js";
import type { FeeGrowth } from "../../../onchain/uniswap-math.js";
import { allowedRead, requireAllowed } from "../../lib/build/allowed.js";
import { learn, learnt, remember, type TokenFacts, tokenFacts } from "../../lib/build/facts.js";
import { type Head, readAtHead } from "../../lib/build/head.js";
import type { ModuleTransaction } from "../../lib/build/module-call.js";
import { aggregate, type Read, type ReadResult, readValue } from "../../lib/build/multicall.js";
import { units } from "../../lib/build/payload.js";
import { BuildRefusal } from "../../lib/build/refusal.js";
import { type SimRead, type SimReads, type Simulation, simulate } from "../../lib/build/simulate.js";
import type { BuildSubaccount } from "../../lib/build/subaccount.js";
import { phase } from "../../lib/build/timing.js";

export const POOL_ABI = parseAbi([
  "function factory() view returns (address)",
  "function token0() view returns (address)",
  "function token1() view returns (address)",
  "function fee() view returns (uint24)",
  "function tickSpacing() view returns (int24)",
  "function slot0() view returns (uint160 sqrtPriceX96, int24 tick, uint16, uint16, uint16, uint8, bool)",
]);
const FACTORY_ABI = parseAbi(["function getPool(address, address, uint24) view returns (address)"]);
export const ERC20 = parseAbi([
  "function balanceOf(address) view returns (uint256)",
  "function allowance(address, address) view returns (uint256)",
  "function decimals() view returns (uint8)",
  "function symbol() view returns (string)",
]);
export const NPM_ABI = parseAbi([
  "struct MintParams { address token0; address token1; uint24 fee; int24 tickLower; int24 tickUpper; uint256 amount0Desired; uint256 amount1Desired; uint256 amount0Min; uint256 amount1Min; address recipient; uint256 deadline; }",
  "struct IncreaseParams { uint256 tokenId; uint256 amount0Desired; uint256 amount1Desired; uint256 amount0Min; uint256 amount1Min; uint256 deadline; }",
  "struct DecreaseParams { uint256 tokenId; uint128 liquidity; uint256 amount0Min; uint256 amount1Min; uint256 deadline; }",
  "struct CollectParams { uint256 tokenId; address recipient; uint128 amount0Max; uint128 amount1Max; }",
  "function mint(MintParams params) returns (uint256 tokenId, uint128 liquidity, uint256 amount0, uint256 amount1)",
  "function increaseLiquidity(IncreaseParams params) returns (uint128 liquidity, uint256 amount0, uint256 amount1)",
  "function decreaseLiquidity(DecreaseParams params) returns (uint256 amount0, uint256 amount1)",
  "function collect(CollectParams params) returns (uint256 amount0, uint256 amount1)",
  "function safeTransferFrom(address from, address to, uint256 tokenId, bytes data)",
  "function ownerOf(uint256 tokenId) view returns (address)",
  "function positions(uint256 tokenId) view returns (uint96 nonce, address operator, address token0, address token1, uint24 fee, int24 tickLower, int24 tickUpper, uint128 liquidity, uint256 feeGrowthInside0LastX128, uint256 feeGrowthInside1LastX128, uint128 tokensOwed0, uint128 tokensOwed1)",
]);
export const MAX_UINT128 = (1n << 128n) - 1n;

export type Token = TokenFacts;

export interface Pool {
  address: Address;
  token0: Token;
  token1: Token;
  fee: number;
  tickSpacing: number;
  tick: number;
  sqrtPriceX96: bigint;
}

export interface Uniswap {
  factory: Address;
  positionManager: Address;
  staker: Address | null;
}

/**
 * The state a build starts from, all read at one head (`readAtHead`): the pool's price, the
 * module's allowance of every token the build may move, the Safe's balances of the pool's tokens,
 * and, for a build on a position, the position (`loadPosition` checks it).
 */
export interface DexCtx {
  sub: BuildSubaccount;
  uni: Uniswap;
  pool: Pool;
  head: Head;
  /** tokenAllowed of the pool's tokens and of the pool's incentives' reward tokens, by address */
  allowed: Map<Address, boolean>;
  /** the Safe's balances of token0 and token1 */
  balances: [bigint, bigint];
  /** the position asked for, as read (unchecked) */
  position: PositionRead | null;
  /** what the staker owes the Safe, by reward token of the pool's incentives */
  owed: Map<Address, bigint>;
  /** the pool's fee growth over the position's range, when its range was known before the read */
  fees: RangeFees | null;
}

/** The pool's fee growth of both tokens over one range, at the build's head. */
export interface RangeFees {
  lower: number;
  upper: number;
  growth: [FeeGrowth, FeeGrowth];
}

interface PoolFacts {
  address: Address;
  token0: Token;
  token1: Token;
  fee: number;
  tickSpacing: number;
}

interface PositionRead {
  tokenId: bigint;
  pos: ReadResult;
  owner: ReadResult;
  deposit: ReadResult | null;
  /** the pool's incentives and `stakes(tokenId, id)` of each */
  stakes: { key: IncentiveKey; read: ReadResult }[];
  incentives: IncentiveKey[];
}

const unknownPool = (pool: string, why: string) =>
  new BuildRefusal(404, "unknown_pool", `${pool} is not a Uniswap v3 pool of this chain's factory: ${why}`);

/** What never changes of a pool: made by the chain's factory (else a 404), its tokens and fee. */
async function poolFacts(sub: BuildSubaccount, uni: Uniswap, address: Address): Promise<PoolFacts> {
  const read = async (reads: Read[]) => {
    try {
      return await aggregate(sub.rpcUrl, reads);
    } catch (err) {
      throw BuildRefusal.chain(sub.chainId, err);
    }
  };
  const fns = ["factory", "token0", "token1", "fee", "tickSpacing"] as const;
  const state = await read(fns.map((functionName) => ({ address, abi: POOL_ABI as Abi, functionName })));
  if (state.some((r) => !r.ok)) throw unknownPool(address, "it does not answer as a pool");
  const [factory, t0, t1, fee, spacing] = state.map((r) => readValue(r)) as [Address, Address, Address, number, number];
  if (getAddress(factory) !== uni.factory) throw unknownPool(address, `its factory is ${factory}`);
  const [registered] = await read([
    { address: uni.factory, abi: FACTORY_ABI as Abi, functionName: "getPool", args: [t0, t1, fee] },
  ]);
  const listed = readValue<Address>(registered);
  if (!listed || getAddress(listed) !== address) throw unknownPool(address, "the factory does not list it");
  const [token0, token1] = await tokenFacts(sub, [t0, t1], ["path", "pool_address"]);
  return { address, token0: token0!, token1: token1!, fee, tickSpacing: spacing };
}

/** How long the staker's incentive keys are used without reading new logs (see `loadDexCtx`). */
const INCENTIVES_MAX_AGE_MS = 30_000;

/**
 * The pool (kept once known) and the build's state at the head, in one read stage. The staker's
 * incentive keys are those read from its logs in the last 30 s; a position staked in more
 * incentives than they show (one created since) reads the logs again and the state once more.
 */
export async function loadDexCtx(sub: BuildSubaccount, poolAddress: string, tokenId: bigint | null): Promise<DexCtx> {
  const u = sub.protocols.uniswap;
  if (!u) throw unknownPool(poolAddress, `chain ${sub.chainId} has no Uniswap v3 in its protocols entry`);
  const address = getAddress(poolAddress);
  const uni = {
    factory: getAddress(u.factory),
    positionManager: getAddress(u.positionManager),
    staker: u.staker ? getAddress(u.staker) : null,
  };
  const staker = uni.staker;
  const keysOf = async (maxAgeMs: number) => {
    if (!staker) return [];
    try {
      return (await stakerIncentives(sub.client, staker, maxAgeMs, sub.incentives)).filter((k) => k.pool === address);
    } catch (err) {
      throw BuildRefusal.chain(sub.chainId, err);
    }
  };
  const [facts, keys] = await Promise.all([
    remember(sub, `uniswap-pool:${address}`, () => poolFacts(sub, uni, address)),
    keysOf(INCENTIVES_MAX_AGE_MS),
  ]);
  let ctx = await readDexState(sub, uni, facts, tokenId, keys);
  const deposit = ctx.position?.deposit ? readValue<readonly [Address, number]>(ctx.position.deposit) : undefined;
  const found = ctx.position?.stakes.filter((s) => staked(s.read)).length ?? 0;
  if (deposit && Number(deposit[1]) > found) {
    ctx = await readDexState(sub, uni, facts, tokenId, await keysOf(0));
  }
  return ctx;
}

const staked = (r: ReadResult) => (readValue<readonly [bigint, bigint]>(r)?.[1] ?? 0n) > 0n;

async function readDexState(
  sub: BuildSubaccount,
  uni: Uniswap,
  facts: PoolFacts,
  tokenId: bigint | null,
  keys: readonly IncentiveKey[],
): Promise<DexCtx> {
  const staker = uni.staker;
  const rewardTokens = [...new Set(keys.map((k) => k.rewardToken))];
  const allowList = [facts.token0.address, facts.token1.address, ...rewardTokens].filter(
    (t, i, all) => all.indexOf(t) === i,
  );
  const reads: Read[] = [];
  const at = (r: Read) => reads.push(r) - 1;
  const stakerRead = (functionName: string, args: readonly unknown[]): Read => ({
    address: staker!,
    abi: STAKER_ABI as Abi,
    functionName,
    args,
  });
  const slot0 = at({ address: facts.address, abi: POOL_ABI as Abi, functionName: "slot0" });
  const allowed = allowList.map((t) => at(allowedRead(sub, t)));
  const balances = [facts.token0, facts.token1].map((t) =>
    at({ address: t.address, abi: ERC20 as Abi, functionName: "balanceOf", args: [sub.safe] }),
  );
  const owed = staker ? rewardTokens.map((t) => at(stakerRead("rewards", [t, sub.safe]))) : [];
  const npm = uni.positionManager;
  const range = tokenId == null ? undefined : learnt<Range>(sub, rangeKey(npm, tokenId));
  const fees = range ? feeReads(facts.address, range).map(at) : null;
  const position =
    tokenId == null
      ? null
      : {
          pos: at({ address: npm, abi: NPM_ABI as Abi, functionName: "positions", args: [tokenId] }),
          owner: at({ address: npm, abi: NPM_ABI as Abi, functionName: "ownerOf", args: [tokenId] }),
          deposit: staker ? at(stakerRead("deposits", [tokenId])) : null,
          stakes: keys.map((k) => at(stakerRead("stakes", [tokenId, incentiveId(k)]))),
        };
  const { head, results } = await readAtHead(sub, reads);
  if (position && tokenId != null) {
    const p = readValue<NpmPosition>(results[position.pos]);
    if (p) learn<Range>(sub, rangeKey(npm, tokenId), { lower: p[5], upper: p[6] });
  }
  const s0 = readValue<readonly [bigint, number]>(results[slot0]);
  if (!s0) throw unknownPool(facts.address, "it answers no slot0");
  const big = (i: number | undefined) => (i === undefined ? 0n : (readValue<bigint>(results[i]) ?? 0n));
  return {
    sub,
    uni,
    pool: { ...facts, tick: s0[1], sqrtPriceX96: s0[0] },
    head,
    allowed: new Map(allowList.map((t, i) => [t, readValue<boolean>(results[allowed[i]!]) === true])),
    balances: [big(balances[0]), big(balances[1])],
    owed: new Map(rewardTokens.map((t, i) => [t, big(owed[i])])),
    fees:
      range && fees
        ? rangeFees(
            range,
            fees.map((i) => results[i]!),
          )
        : null,
    position:
      position && tokenId != null
        ? {
            tokenId,
            pos: results[position.pos]!,
            owner: results[position.owner]!,
            deposit: position.deposit == null ? null : results[position.deposit]!,
            stakes: keys.map((key, i) => ({ key, read: results[position.stakes[i]!]! })),
            incentives: [...keys],
          }
        : null,
  };
}

type Range = { lower: number; upper: number };
/** A position's range never changes: it is kept by token id once read (`learn`). */
const rangeKey = (npm: Address, tokenId: bigint) => `uniswap-position-range:${npm}:${tokenId}`;

/** Reads of the pool's fee growth over a range (the valuation's list, `uniswap-fees.ts`). */
const feeReads = (pool: Address, r: Range): Read[] => feeGrowthReads(pool, r.lower, r.upper);

function rangeFees(r: Range, res: readonly ReadResult[]): RangeFees | null {
  const growth = feeGrowthOf(res.map((x) => readValue<unknown>(x)));
  return growth ? { ...r, growth } : null;
}

/**
 * What a position's liquidity has earned in fees since the position manager last counted them
 * (its tokensOwed do not hold these yet): the pool's fee growth inside the range now, less the
 * position's last, times its liquidity, as decreaseLiquidity and collect count them. The fee
 * growth comes with the build's read when the range was known before it, else from one read at
 * the same head.
 */
export async function positionFees(ctx: DexCtx, pos: Position): Promise<[bigint, bigint]> {
  const range = { lower: pos.tickLower, upper: pos.tickUpper };
  let fees = ctx.fees?.lower === range.lower && ctx.fees.upper === range.upper ? ctx.fees : null;
  if (!fees) {
    let res: ReadResult[];
    try {
      res = await phase("read", () => aggregate(ctx.sub.rpcUrl, feeReads(ctx.pool.address, range), ctx.head.number));
    } catch (err) {
      throw BuildRefusal.chain(ctx.sub.chainId, err);
    }
    fees = rangeFees(range, res);
    if (!fees) throw BuildRefusal.chain(ctx.sub.chainId, new Error("the pool answered no fee growth"));
  }
  return uncountedFees({ tick: ctx.pool.tick, ...range }, fees.growth, pos.feeGrowthLast, pos.liquidity);
}

/** 422 unless the subaccount's module allows every token (its own check, made before simulating). */
export function requireTokens(ctx: DexCtx, list: readonly Token[], loc: (string | number)[]): void {
  requireAllowed(
    list,
    list.map((t) => ctx.allowed.get(t.address)),
    loc,
  );
}

export interface Position {
  tokenId: bigint;
  tickLower: number;
  tickUpper: number;
  liquidity: bigint;
  owed0: bigint;
  owed1: bigint;
  /** the pool's fee growth inside the range when the manager last counted the position's fees */
  feeGrowthLast: [bigint, bigint];
  /** the NFT's holder: the Safe, or the staker holding it as the Safe's deposit */
  owner: Address;
  staked: boolean;
  /** incentives of this pool it is staked in */
  stakes: IncentiveKey[];
  /** every incentive of this pool the staker has */
  poolIncentives: IncentiveKey[];
}

/** The build's position, as read: 404 if there is none, 409 if it is not the subaccount's. */
export function loadPosition(ctx: DexCtx): Position {
  const read = ctx.position;
  if (!read) throw new Error("the build read no position");
  const { tokenId } = read;
  const npm = ctx.uni.positionManager;
  const pos = readValue<NpmPosition>(read.pos);
  const ownerOf = readValue<Address>(read.owner);
  if (!pos || !ownerOf) {
    throw new BuildRefusal(404, "unknown_position", `No position ${tokenId} exists on the position manager ${npm}`);
  }
  const [, , t0, t1, fee, tickLower, tickUpper, liquidity, last0, last1, owed0, owed1] = pos;
  const p = ctx.pool;
  if (getAddress(t0) !== p.token0.address || getAddress(t1) !== p.token1.address || fee !== p.fee) {
    throw new BuildRefusal(404, "unknown_position", `Position ${tokenId} is not a position of pool ${p.address}`);
  }
  const holder = getAddress(ownerOf);
  const base = {
    tokenId,
    tickLower,
    tickUpper,
    liquidity,
    owed0,
    owed1,
    feeGrowthLast: [last0, last1] as [bigint, bigint],
    owner: holder,
  };
  const safe = ctx.sub.safe;
  const staker = ctx.uni.staker;
  if (holder === safe) return { ...base, staked: false, stakes: [], poolIncentives: read.incentives };
  if (staker && holder === staker) {
    const depositor = read.deposit ? readValue<readonly [Address, number]>(read.deposit)?.[0] : undefined;
    if (depositor && getAddress(depositor) === safe) {
      const stakes = read.stakes.filter((s) => staked(s.read)).map((s) => s.key);
      return { ...base, staked: true, stakes, poolIncentives: read.incentives };
    }
    throw new BuildRefusal(
      409,
      "position_not_owned",
      `Position ${tokenId} is deposited in the v3 staker by ` +
        `${depositor ? getAddress(depositor) : "an unknown owner"}, not by the subaccount ${safe}`,
    );
  }
  throw new BuildRefusal(
    409,
    "position_not_owned",
    `Position ${tokenId} is held by ${holder}, not by the subaccount ${safe}`,
  );
}

/** Simulates `tx`; a failure is a 409 `simulation_failed` with its decoded reason. */
export async function simulateOrRefuse(
  ctx: DexCtx,
  tx: ModuleTransaction,
  operation: string,
  reads: SimReads = {},
  hint?: (sim: Simulation) => string | null,
): Promise<Simulation> {
  const sim = await simulate(ctx.sub, tx, reads, ctx.head);
  if (sim.success) return sim;
  const r = sim.revert!;
  const extra = hint?.(sim);
  throw new BuildRefusal(
    409,
    "simulation_failed",
    `The ${operation} would fail on-chain: ${r.message}${extra ? `. ${extra}` : ""}`,
    { reasons: [{ candidate: operation, kind: r.kind, name: r.name, message: r.message, data: r.data }] },
  );
}

/** The return data of each inner call of a module transaction, in order. */
export function innerResults(tx: ModuleTransaction, returnData: Hex): Hex[] {
  const abi = SubaccountModuleAbi as Abi;
  if (tx.calls.length === 1) {
    const fn = tx.approvals.length === 0 ? "execute" : "executeWithApprovals";
    return [decodeFunctionResult({ abi, functionName: fn, data: returnData }) as Hex];
  }
  return [...(decodeFunctionResult({ abi, functionName: "executeBatch", data: returnData }) as readonly Hex[])];
}

/** Decodes one position-manager call's return data. */
export function npmResult<T>(
  functionName: "mint" | "increaseLiquidity" | "decreaseLiquidity" | "collect",
  data: Hex,
): T {
  return decodeFunctionResult({ abi: NPM_ABI, functionName, data }) as T;
}

/** A read of `holder`'s balance of `token`, for simulations. */
export const balanceRead = (token: Address, holder: Address): SimRead => ({
  to: token,
  abi: ERC20 as Abi,
  functionName: "balanceOf",
  args: [holder],
});

/** A read of a position, for simulations. */
export const positionRead = (ctx: DexCtx, tokenId: bigint): SimRead => ({
  to: ctx.uni.positionManager,
  abi: NPM_ABI as Abi,
  functionName: "positions",
  args: [tokenId],
});

/** A minimum `bps` below an expected amount. */
export const minOf = (amount: bigint, bps: number) => (amount * BigInt(10_000 - bps)) / 10_000n;

/**
 * What unstaking credits to the Safe in the staker: reads of `rewards(token, safe)` for each
 * reward token of `stakes` (before and after), and the answer's list from a simulation of them
 * placed at `at` among its reads.
 */
export function accrualReads(ctx: DexCtx, stakes: readonly IncentiveKey[]) {
  const list = [...new Set(stakes.map((k) => k.rewardToken))];
  const reads: SimRead[] = list.map((t) => ({
    to: ctx.uni.staker!,
    abi: STAKER_ABI as Abi,
    functionName: "rewards",
    args: [t, ctx.sub.safe],
  }));
  const out = async (sim: Simulation, at: number) => {
    const meta = await tokenFacts(ctx.sub, list);
    const n = (x: unknown) => (x as bigint | null) ?? 0n;
    return meta.map((t, i) => ({
      token: { address: t.address, symbol: t.symbol, decimals: t.decimals },
      amount: units(n(sim.after[at + i]) - n(sim.before[at + i]), t.decimals),
    }));
  };
  return { reads, out };
}
