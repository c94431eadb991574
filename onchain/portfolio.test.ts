/**
 * portfolioData: a staked Uniswap position lists the staker's rewards beside its tokens, and what
 * the staker holds for the account is an item of its own, each item's value being what it lists.
 */
import type { Address } from "viem";
import { describe, expect, it } from "vitest";
import { portfolioContracts, portfolioData } from "./portfolio.js";
import type { SubaccountPositions, TokenRef } from "./positions.js";

const USDC: TokenRef = { address: "0x00000000000000000000000000000000000000c1", symbol: "USDC", decimals: 6 };
const WETH: TokenRef = { address: "0x00000000000000000000000000000000000000e1", symbol: "WETH", decimals: 18 };
const POOL = "0x00000000000000000000000000000000000000b1" as Address;
const STAKER = "0x00000000000000000000000000000000000000a5";
const reward = (amount: number) => ({ token: USDC, raw: BigInt(amount * 1e6), amount, value: amount });

function positions(): SubaccountPositions {
  const rewards = [{ ...reward(40), incentive: `0x${"11".repeat(32)}` as const }];
  return {
    chainId: 1,
    account: "0x00000000000000000000000000000000000000aa",
    blockNumber: 1n,
    prices: new Map([
      [USDC.address, { ...USDC, price: 1 }],
      [WETH.address, { ...WETH, price: 3000 }],
    ]),
    tokens: [],
    aave: null,
    morpho: [],
    lendingVaults: [],
    uniswap: [
      {
        tokenId: 7n,
        pool: POOL,
        token0: USDC,
        token1: WETH,
        fee: 500,
        tickLower: -10,
        tickUpper: 10,
        liquidity: 1n,
        amount0: 1000,
        amount1: 0.5,
        inRange: true,
        staked: true,
        rewards,
        value: 1000 + 1500 + 40,
      },
    ],
    stakerRewards: [reward(5)],
    totals: {
      tokenValue: 0,
      collateralValue: 0,
      loanValue: 0,
      liquidationCollateral: 0,
      totalValue: 2545,
      netValue: 2545,
    },
    venues: [],
    healthFactor: null,
  };
}

type Token = { id: string; amount: number; price: number | null };
type Item = {
  name: string;
  stats: { asset_usd_value: number };
  detail: { supply_token_list: Token[]; reward_token_list: Token[] };
  pool: { controller: string };
};

describe("portfolioData: the Uniswap v3 staker's rewards", () => {
  it("a staked position lists its rewards; the staker's balance is an item; values add up", () => {
    const data = portfolioData(positions(), "eth", 0, { staker: STAKER });
    const uni = data.positions.find((p) => p.id === "uniswap_v3")!.portfolio_item_list as Item[];
    expect(uni.map((i) => i.name)).toEqual(["Staked", "Rewards"]);
    const [staked, credited] = uni as [Item, Item];
    expect(staked.detail.reward_token_list).toEqual([expect.objectContaining({ id: USDC.address, amount: 40 })]);
    expect(credited.detail.reward_token_list).toEqual([expect.objectContaining({ id: USDC.address, amount: 5 })]);
    expect(credited.pool.controller).toBe(STAKER);
    for (const i of uni) {
      const listed = [...i.detail.supply_token_list, ...i.detail.reward_token_list];
      expect(i.stats.asset_usd_value, i.name).toBeCloseTo(
        listed.reduce((x, t) => x + t.amount * (t.price ?? 0), 0),
        9,
      );
    }
    const total = uni.reduce((x, i) => x + i.stats.asset_usd_value, 0);
    expect(total).toBeCloseTo(positions().totals.totalValue, 9);
    expect(portfolioContracts(positions(), { staker: STAKER })).toContain(STAKER);
  });

  it("without staker rewards: no rewards item, nothing listed", () => {
    const p = { ...positions(), stakerRewards: [] };
    p.uniswap = p.uniswap.map((u) => ({ ...u, rewards: [], value: 2500 }));
    const uni = portfolioData(p, "eth", 0, { staker: STAKER }).positions[0]!.portfolio_item_list as Item[];
    expect(uni.map((i) => i.name)).toEqual(["Staked"]);
    expect(uni[0]!.detail.reward_token_list).toEqual([]);
    expect(portfolioContracts(p, { staker: STAKER })).not.toContain(STAKER);
  });
});
