/**
 * What the four dex_pool builders share: the pool (one of the chain's Uniswap v3 factory, else a
 * 404 `unknown_pool`) with its tokens and price, a position of the subaccount (held by the Safe or
 * deposited by it in the v3 staker, else a 404/409), the module's token allow-list checked before
 * any simulation (422 `token_not_allowed`), and a simulation that refuses with its decoded reason.
 */
import { type Abi, type Address, decodeFunctionResult, getAddress, type Hex, parseAbi } from "viem";
import { SubaccountModuleAbi } from "../../../abis/SubaccountModuleAbi.js";
import { MULTICALL3 } from "../../../onchain/positions.js";
import type { ModuleTransaction } from "../../lib/build/module-call.js";
import { units } from "../../lib/build/payload.js";
import { BuildRefusal } from "../../lib/build/refusal.js";
import { type SimRead, type Simulation, simulate } from "../../lib/build/simulate.js";
import type { BuildSubaccount } from "../../lib/build/subaccount.js";
import { type IncentiveKey, STAKER_ABI, stakesOf } from "./dex-pool.staker.js";

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
const MODULE_ABI = parseAbi(["function tokenAllowed(address) view returns (bool)"]);
export const MAX_UINT128 = (1n << 128n) - 1n;

export interface Token {
  address: Address;
  symbol: string;
  decimals: number;
}

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

/** The state a build starts from: the subaccount, the chain's Uniswap, the pool, the head block. */
export interface DexCtx {
  sub: BuildSubaccount;
  uni: Uniswap;
  pool: Pool;
  head: { number: bigint; timestamp: bigint };
}

const unknownPool = (pool: string, why: string) =>
  new BuildRefusal(404, "unknown_pool", `${pool} is not a Uniswap v3 pool of this chain's factory: ${why}`);

/** Reads the pool and its tokens; a 404 `unknown_pool` unless the chain's factory made it. */
export async function loadDexCtx(sub: BuildSubaccount, poolAddress: string): Promise<DexCtx> {
  const u = sub.protocols.uniswap;
  if (!u) throw unknownPool(poolAddress, `chain ${sub.chainId} has no Uniswap v3 in its protocols entry`);
  const address = getAddress(poolAddress);
  const uni = {
    factory: getAddress(u.factory),
    positionManager: getAddress(u.positionManager),
    staker: u.staker ? getAddress(u.staker) : null,
  };
  const c = sub.client;
  const fns = ["factory", "token0", "token1", "fee", "tickSpacing", "slot0"] as const;
  const [state, block] = await Promise.all([
    c.multicall({
      multicallAddress: MULTICALL3,
      contracts: fns.map((functionName) => ({ address, abi: POOL_ABI, functionName })),
    }),
    c.getBlock(),
  ]);
  if (state.some((r) => r.status !== "success")) throw unknownPool(address, "it does not answer as a pool");
  const [factory, t0, t1, fee, spacing, slot0] = state.map((r) => r.result) as [
    Address,
    Address,
    Address,
    number,
    number,
    readonly [bigint, number],
  ];
  if (getAddress(factory) !== uni.factory) throw unknownPool(address, `its factory is ${factory}`);
  const registered = await c.readContract({
    address: uni.factory,
    abi: FACTORY_ABI,
    functionName: "getPool",
    args: [t0, t1, fee],
  });
  if (getAddress(registered) !== address) throw unknownPool(address, "the factory does not list it");
  const [token0, token1] = await tokens(sub, [t0, t1]);
  return {
    sub,
    uni,
    pool: {
      address,
      token0: token0!,
      token1: token1!,
      fee,
      tickSpacing: spacing,
      tick: slot0[1],
      sqrtPriceX96: slot0[0],
    },
    head: { number: block.number!, timestamp: block.timestamp },
  };
}

/** Symbol and decimals of tokens (the protocols entry's, else read). */
export async function tokens(sub: BuildSubaccount, addresses: readonly Address[]): Promise<Token[]> {
  const listed = new Map((sub.protocols.tokens ?? []).map((t) => [t.address.toLowerCase(), t]));
  const missing = addresses.filter((a) => !listed.has(a.toLowerCase()));
  const read = missing.length
    ? await sub.client.multicall({
        multicallAddress: MULTICALL3,
        allowFailure: false,
        contracts: missing.flatMap((address) => [
          { address, abi: ERC20, functionName: "symbol" } as const,
          { address, abi: ERC20, functionName: "decimals" } as const,
        ]),
      })
    : [];
  return addresses.map((a) => {
    const t = listed.get(a.toLowerCase());
    if (t) return { address: getAddress(a), symbol: t.symbol, decimals: t.decimals };
    const i = missing.indexOf(a);
    return { address: getAddress(a), symbol: String(read[2 * i]), decimals: Number(read[2 * i + 1]) };
  });
}

/** 422 unless the subaccount's module allows every token (its own check, made before simulating). */
export async function requireAllowed(ctx: DexCtx, list: readonly Token[], loc: (string | number)[]): Promise<void> {
  const allowed = await ctx.sub.client.multicall({
    multicallAddress: MULTICALL3,
    allowFailure: false,
    contracts: list.map((t) => ({
      address: ctx.sub.module,
      abi: MODULE_ABI,
      functionName: "tokenAllowed",
      args: [t.address],
    })),
  });
  const refused = list.filter((_, i) => !allowed[i]);
  if (refused.length) {
    const names = refused.map((t) => `${t.symbol} (${t.address})`).join(", ");
    throw new BuildRefusal(
      422,
      "token_not_allowed",
      `The subaccount's module does not allow ${names}: its governance must allow the token first`,
      { loc, type: "token_not_allowed" },
    );
  }
}

export interface Position {
  tokenId: bigint;
  tickLower: number;
  tickUpper: number;
  liquidity: bigint;
  owed0: bigint;
  owed1: bigint;
  /** the NFT's holder: the Safe, or the staker holding it as the Safe's deposit */
  owner: Address;
  staked: boolean;
  /** incentives of this pool it is staked in */
  stakes: IncentiveKey[];
  /** every incentive of this pool the staker has */
  poolIncentives: IncentiveKey[];
}

/** The subaccount's position `tokenId` of the pool: 404 if there is none, 409 if not the Safe's. */
export async function loadPosition(ctx: DexCtx, tokenId: bigint): Promise<Position> {
  const c = ctx.sub.client;
  const npm = ctx.uni.positionManager;
  const [pos, owner] = await c.multicall({
    multicallAddress: MULTICALL3,
    contracts: [
      { address: npm, abi: NPM_ABI, functionName: "positions", args: [tokenId] },
      { address: npm, abi: NPM_ABI, functionName: "ownerOf", args: [tokenId] },
    ],
  });
  if (pos.status !== "success" || owner.status !== "success") {
    throw new BuildRefusal(404, "unknown_position", `No position ${tokenId} exists on the position manager ${npm}`);
  }
  const [, , t0, t1, fee, tickLower, tickUpper, liquidity, , , owed0, owed1] = pos.result;
  const p = ctx.pool;
  if (getAddress(t0) !== p.token0.address || getAddress(t1) !== p.token1.address || fee !== p.fee) {
    throw new BuildRefusal(404, "unknown_position", `Position ${tokenId} is not a position of pool ${p.address}`);
  }
  const holder = getAddress(owner.result);
  const base = { tokenId, tickLower, tickUpper, liquidity, owed0, owed1, owner: holder };
  const safe = ctx.sub.safe;
  const staker = ctx.uni.staker;
  const incentives = staker
    ? await stakesOf(c, staker, p.address, tokenId)
    : { pool: [] as IncentiveKey[], staked: [] as IncentiveKey[] };
  if (holder === safe) return { ...base, staked: false, stakes: [], poolIncentives: incentives.pool };
  if (staker && holder === staker) {
    const [depositor] = await c.readContract({
      address: staker,
      abi: STAKER_ABI,
      functionName: "deposits",
      args: [tokenId],
    });
    if (getAddress(depositor) === safe) {
      return { ...base, staked: true, stakes: incentives.staked, poolIncentives: incentives.pool };
    }
    throw new BuildRefusal(
      409,
      "position_not_owned",
      `Position ${tokenId} is deposited in the v3 staker by ${getAddress(depositor)}, not by the subaccount ${safe}`,
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
  reads: { before?: readonly SimRead[]; after?: readonly SimRead[] } = {},
  hint?: (sim: Simulation) => string | null,
): Promise<Simulation> {
  const sim = await simulate(ctx.sub, tx, reads);
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
    const meta = await tokens(ctx.sub, list);
    const n = (x: unknown) => (x as bigint | null) ?? 0n;
    return meta.map((t, i) => ({
      token: { address: t.address, symbol: t.symbol, decimals: t.decimals },
      amount: units(n(sim.after[at + i]) - n(sim.before[at + i]), t.decimals),
    }));
  };
  return { reads, out };
}
