/**
 * Uniswap v2 from the npm Waffle builds, the swaps builder's second venue: the factory, Router02
 * and pairs at the feeds' prices. A pair is made by the factory, its tokens minted straight into
 * it (MockERC20) and its liquidity minted to the deployer.
 */
import { type Address, getAddress } from "viem";
import { isqrt } from "../../../onchain/uniswap-math.js";
import { uniswapV2 } from "./artifacts.js";
import { type Ctx, deploy, ERC20_ABI, PRICE_FEED_ABI, read, write } from "./tx.js";
import type { TokenInput } from "./types.js";
import { sortTokens } from "./uniswap.js";

export interface UniswapV2Pair {
  address: Address;
  token0: Address;
  token1: Address;
}

export interface UniswapV2Deployment {
  factory: Address;
  router: Address;
  pairs: UniswapV2Pair[];
}

export interface UniswapV2Options {
  tokens: TokenInput[];
  /** Router02's WETH (only its ether paths use it) */
  weth: Address;
  stable: Address;
  /** USD value of each pair's reserves (default 5 million) */
  liquidityUsd?: number;
}

/** WETH/stable, and every other asset against WETH: v2's usual shape, beside v3's pools. */
export function defaultPairs(tokens: TokenInput[], weth: Address, stable: Address): [Address, Address][] {
  const pairs: [Address, Address][] = [[getAddress(weth), getAddress(stable)]];
  for (const t of tokens) {
    const a = getAddress(t.address);
    if (a !== getAddress(weth) && a !== getAddress(stable)) pairs.push([a, getAddress(weth)]);
  }
  return pairs;
}

/**
 * The swap that prices token0 at the feeds (token1 raw units per token0 raw unit): `in0` sells
 * token0 into the pair. With the pair's 0.3 % fee, the amount `a` of reserve `r` in makes
 * (r + a)(r + 0.997a) = t², t being the reserve in at the feeds' price with the same product.
 */
export function v2Rebalance(
  reserves: { r0: bigint; r1: bigint },
  usd0: bigint,
  dec0: number,
  usd1: bigint,
  dec1: number,
): { in0: boolean; amountIn: bigint } {
  const k = reserves.r0 * reserves.r1;
  const target0 = isqrt((k * usd1 * 10n ** BigInt(dec0)) / (usd0 * 10n ** BigInt(dec1)));
  const in0 = target0 > reserves.r0;
  const [r, t] = in0 ? [reserves.r0, target0] : [reserves.r1, target0 === 0n ? 0n : k / target0];
  if (t <= r) return { in0, amountIn: 0n };
  // 997a² + 1997ra − 1000(t² − r²) = 0
  const root = isqrt(1997n * 1997n * r * r + 4n * 997n * 1000n * (t * t - r * r));
  return { in0, amountIn: (root - 1997n * r) / (2n * 997n) };
}

export async function deployUniswapV2(ctx: Ctx, opts: UniswapV2Options): Promise<UniswapV2Deployment> {
  const factoryA = uniswapV2.factory();
  const factory = await deploy(ctx, factoryA, [ctx.from], "UniswapV2Factory");
  const router = await deploy(ctx, uniswapV2.router02(), [factory, opts.weth], "UniswapV2Router02");
  const byAddress = new Map(opts.tokens.map((t) => [getAddress(t.address), t]));
  const usd = BigInt(Math.round(opts.liquidityUsd ?? 5_000_000));
  const pairs: UniswapV2Pair[] = [];
  for (const [a, b] of defaultPairs(opts.tokens, opts.weth, opts.stable)) {
    const [token0, token1] = sortTokens(a, b);
    await write(ctx, factory, factoryA.abi, "createPair", [token0, token1]);
    const address = getAddress(await read<Address>(ctx, factory, factoryA.abi, "getPair", [token0, token1]));
    for (const t of [token0, token1]) {
      const token = byAddress.get(t);
      if (!token) throw new Error(`pair token ${t} is not among the tokens given`);
      const price = await read<bigint>(ctx, token.feed, PRICE_FEED_ABI, "latestAnswer");
      // half the pair's value in each token, at 8-decimal feed prices
      const units = (usd * 10n ** BigInt(token.decimals) * 10n ** 8n) / (2n * price);
      await write(ctx, t, ERC20_ABI, "mint", [address, units]);
    }
    await write(ctx, address, uniswapV2.pair().abi, "mint", [ctx.from]);
    pairs.push({ address, token0, token1 });
  }
  return { factory, router, pairs };
}
