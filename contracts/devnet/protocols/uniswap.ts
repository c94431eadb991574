/**
 * Uniswap v3 from the npm artifacts: factory, position manager (no token descriptor), swap router,
 * QuoterV2, pools at the feeds' prices with full-range liquidity, and the v3 staker with one
 * incentive.
 */
import { type Address, getAddress, type Hex, toEventSelector } from "viem";
import { isqrt } from "../../../onchain/uniswap-math.js";
import { uniswap } from "./artifacts.js";
import { type Ctx, deploy, ERC20_ABI, MAX_UINT256, PRICE_FEED_ABI, read, write } from "./tx.js";
import type { TokenInput } from "./types.js";

export const FEE_TICK_SPACING: Record<number, number> = { 100: 1, 500: 10, 3000: 60, 10000: 200 };
const MAX_TICK = 887272;

export interface PoolSpec {
  tokenA: Address;
  tokenB: Address;
  fee: number;
}

export interface UniswapPool {
  address: Address;
  token0: Address;
  token1: Address;
  fee: number;
  tickSpacing: number;
  /** the full-range position the liquidity provider holds */
  positionId: string;
}

export interface StakerIncentive {
  rewardToken: Address;
  pool: Address;
  startTime: number;
  endTime: number;
  refundee: Address;
  reward: string;
}

export interface UniswapDeployment {
  factory: Address;
  positionManager: Address;
  swapRouter: Address;
  quoterV2: Address;
  staker: Address;
  weth: Address;
  pools: UniswapPool[];
  incentive: StakerIncentive;
}

export interface UniswapOptions {
  tokens: TokenInput[];
  /** the chain's wrapped ether (a plain ERC-20 is fine: only the ETH-unwrapping paths need WETH9) */
  weth: Address;
  /** the stablecoin every asset is also paired with */
  stable: Address;
  /** pools to create (default: defaultPools) */
  pools?: PoolSpec[];
  /** USD value of each pool's full-range position (default 10 million) */
  liquidityUsd?: number;
  /** who provides the liquidity (default the deployer); its tokens are minted (MockERC20) */
  liquidityProvider?: Address;
  /** the staker incentive: a reward in `rewardToken` on pool `poolIndex` for `durationDays` */
  incentive?: { rewardToken: Address; reward: bigint; poolIndex?: number; durationDays?: number };
}

/**
 * WETH/stable at 0.05 % and 0.3 %; every other asset against WETH at 0.05 % and 0.3 %, and against
 * the stable at 0.3 %.
 */
export function defaultPools(tokens: TokenInput[], weth: Address, stable: Address): PoolSpec[] {
  const pools: PoolSpec[] = [
    { tokenA: weth, tokenB: stable, fee: 500 },
    { tokenA: weth, tokenB: stable, fee: 3000 },
  ];
  for (const t of tokens) {
    const a = getAddress(t.address);
    if (a === getAddress(weth) || a === getAddress(stable)) continue;
    pools.push({ tokenA: a, tokenB: weth, fee: 500 }, { tokenA: a, tokenB: weth, fee: 3000 });
    pools.push({ tokenA: a, tokenB: stable, fee: 3000 });
  }
  return pools;
}

export function sortTokens(a: Address, b: Address): [Address, Address] {
  return BigInt(a) < BigInt(b) ? [getAddress(a), getAddress(b)] : [getAddress(b), getAddress(a)];
}

/**
 * sqrt(price) in Q64.96, price being token1 raw units per token0 raw unit at the given USD prices
 * (any common fixed-point scale).
 */
export function sqrtPriceX96(usd0: bigint, dec0: number, usd1: bigint, dec1: number): bigint {
  return isqrt((usd0 * 10n ** BigInt(dec1) * 2n ** 192n) / (usd1 * 10n ** BigInt(dec0)));
}

const TRANSFER_TOPIC = toEventSelector("Transfer(address,address,uint256)");

/** The NFT id minted in a position manager receipt. */
export function mintedTokenId(receipt: { logs: { address: Address; topics: Hex[] }[] }, npm: Address): bigint {
  const log = receipt.logs.find(
    (l) => getAddress(l.address) === getAddress(npm) && l.topics[0] === TRANSFER_TOPIC && l.topics.length === 4,
  );
  if (!log?.topics[3]) throw new Error("no position NFT minted");
  return BigInt(log.topics[3]);
}

export async function deployUniswap(ctx: Ctx, opts: UniswapOptions): Promise<UniswapDeployment> {
  const { s } = ctx;
  const lp = opts.liquidityProvider ?? ctx.from;
  const factory = await deploy(ctx, uniswap.factory(), [], "UniswapV3Factory");
  const npmA = uniswap.positionManager();
  const positionManager = await deploy(
    ctx,
    npmA,
    [factory, opts.weth, "0x0000000000000000000000000000000000000000"],
    "NonfungiblePositionManager",
  );
  const swapRouter = await deploy(ctx, uniswap.swapRouter(), [factory, opts.weth], "SwapRouter");
  const quoterV2 = await deploy(ctx, uniswap.quoterV2(), [factory, opts.weth], "QuoterV2");

  const byAddress = new Map(opts.tokens.map((t) => [getAddress(t.address), t]));
  const price = new Map<Address, bigint>();
  for (const t of opts.tokens) {
    price.set(getAddress(t.address), await read<bigint>(ctx, t.feed, PRICE_FEED_ABI, "latestAnswer"));
  }
  const specs = opts.pools ?? defaultPools(opts.tokens, opts.weth, opts.stable);
  const usd = BigInt(Math.round(opts.liquidityUsd ?? 10_000_000));

  // Mint what the positions need to the provider and approve the position manager once per token.
  const need = new Map<Address, bigint>();
  for (const p of specs) {
    for (const a of [p.tokenA, p.tokenB]) {
      const t = byAddress.get(getAddress(a));
      if (!t) throw new Error(`pool token ${a} is not among the tokens given`);
      const units = (usd * 10n ** BigInt(t.decimals) * 10n ** 8n) / (2n * (price.get(getAddress(a)) as bigint));
      need.set(getAddress(a), (need.get(getAddress(a)) ?? 0n) + units + units / 10n);
    }
  }
  for (const [token, amount] of need) {
    await write(ctx, token, ERC20_ABI, "mint", [lp, amount]);
    await write(ctx, token, ERC20_ABI, "approve", [positionManager, MAX_UINT256], lp);
  }

  const pools: UniswapPool[] = [];
  for (const p of specs) {
    const [token0, token1] = sortTokens(p.tokenA, p.tokenB);
    const t0 = byAddress.get(token0) as TokenInput;
    const t1 = byAddress.get(token1) as TokenInput;
    const p0 = price.get(token0) as bigint;
    const p1 = price.get(token1) as bigint;
    const tickSpacing = FEE_TICK_SPACING[p.fee];
    if (!tickSpacing) throw new Error(`fee tier ${p.fee} has no tick spacing`);
    const sqrtP = sqrtPriceX96(p0, t0.decimals, p1, t1.decimals);
    await write(ctx, positionManager, npmA.abi, "createAndInitializePoolIfNecessary", [token0, token1, p.fee, sqrtP]);
    const address = await read<Address>(ctx, factory, uniswap.factory().abi, "getPool", [token0, token1, p.fee]);
    const top = Math.floor(MAX_TICK / tickSpacing) * tickSpacing;
    const receipt = await write(
      ctx,
      positionManager,
      npmA.abi,
      "mint",
      [
        {
          token0,
          token1,
          fee: p.fee,
          tickLower: -top,
          tickUpper: top,
          amount0Desired: (usd * 10n ** BigInt(t0.decimals) * 10n ** 8n) / (2n * p0),
          amount1Desired: (usd * 10n ** BigInt(t1.decimals) * 10n ** 8n) / (2n * p1),
          amount0Min: 0n,
          amount1Min: 0n,
          recipient: lp,
          deadline: BigInt(s.clock + 3600),
        },
      ],
      lp,
    );
    pools.push({
      address: getAddress(address),
      token0,
      token1,
      fee: p.fee,
      tickSpacing,
      positionId: mintedTokenId(receipt, positionManager).toString(),
    });
  }

  const stakerA = uniswap.staker();
  const staker = await deploy(
    ctx,
    stakerA,
    [factory, positionManager, 30n * 86_400n, 2n * 365n * 86_400n],
    "UniswapV3Staker",
  );
  const inc = opts.incentive ?? { rewardToken: opts.stable, reward: 0n };
  const reward =
    inc.reward > 0n ? inc.reward : 100_000n * 10n ** BigInt(byAddress.get(getAddress(inc.rewardToken))?.decimals ?? 18);
  const pool = pools[inc.poolIndex ?? 0];
  if (!pool) throw new Error("incentive pool index out of range");
  await write(ctx, inc.rewardToken, ERC20_ABI, "mint", [ctx.from, reward]);
  await write(ctx, inc.rewardToken, ERC20_ABI, "approve", [staker, reward]);
  const startTime = s.clock + 1; // the next transaction's block: the staker wants start >= now
  const endTime = startTime + (inc.durationDays ?? 365) * 86_400;
  const key = {
    rewardToken: inc.rewardToken,
    pool: pool.address,
    startTime: BigInt(startTime),
    endTime: BigInt(endTime),
    refundee: ctx.from,
  };
  await write(ctx, staker, stakerA.abi, "createIncentive", [key, reward]);

  return {
    factory,
    positionManager,
    swapRouter,
    quoterV2,
    staker,
    weth: getAddress(opts.weth),
    pools,
    incentive: {
      rewardToken: getAddress(inc.rewardToken),
      pool: pool.address,
      startTime,
      endTime,
      refundee: ctx.from,
      reward: reward.toString(),
    },
  };
}
