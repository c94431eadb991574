/**
 * A subaccount's positions on one chain (positions.ts) in the spec's portfolio-data shape (the
 * third-party portfolio tracker's: `positions` per protocol with their portfolio items, `tokens`
 * held in the wallet). A token's `price_24h_change` is its feed's price now over its price at the
 * chain's last block a day before (a fraction: 0.01 is +1 %), when the caller read those prices.
 * A token's and a pool's `time_at` is when its contract was deployed (the pool's `controller`:
 * the Aave pool, the Morpho contract, the lending vault, the Uniswap pool), when the caller found
 * it. Figures the chain cannot give (logos, a token's credit score) are null.
 */
import type { SubaccountPositions, TokenRef } from "./positions.js";

const PROTOCOLS = {
  aave_v3: { name: "Aave V3", site_url: "https://aave.com" },
  morpho_blue: { name: "Morpho", site_url: "https://morpho.org" },
  lending_vault: { name: "Lending vault (ERC-4626 over Morpho)", site_url: "" },
  uniswap_v3: { name: "Uniswap V3", site_url: "https://uniswap.org" },
} as const;
type ProtocolId = keyof typeof PROTOCOLS;

const tokenItem = (chain: string, t: TokenRef, amount: number, price: number | null) => ({
  id: t.address,
  chain,
  name: t.symbol,
  symbol: t.symbol,
  display_symbol: null,
  optimized_symbol: t.symbol,
  decimals: t.decimals,
  logo_url: null,
  protocol_id: "",
  price,
  amount,
});

/** What the chain's catalogue and searches add to the positions read. */
export interface PortfolioContext {
  /** each catalogue token's USD price a day before, by address (readPrices), if read */
  dayAgo?: ReadonlyMap<string, number | null>;
  /** contracts' deployment times (unix seconds), by lower-case address (deploymentTimes) */
  createdAt?: ReadonlyMap<string, number | null>;
  /** the chain's Aave pool and Morpho contract (the registry's protocols entry) */
  aavePool?: string | null;
  morpho?: string | null;
  /** the chain's Uniswap v3 staker, if its entry names one */
  staker?: string | null;
}

/** The contracts whose deployment times a chain's portfolio shows: its tokens' and pools'. */
export function portfolioContracts(p: SubaccountPositions, ctx: PortfolioContext): string[] {
  return [
    ...p.tokens.map((h) => h.token.address),
    ...(p.aave && p.aave.reserves.length > 0 && ctx.aavePool ? [ctx.aavePool] : []),
    ...(p.morpho.length > 0 && ctx.morpho ? [ctx.morpho] : []),
    ...p.lendingVaults.map((v) => v.vault),
    ...p.uniswap.map((u) => u.pool),
    ...(p.stakerRewards.length > 0 && ctx.staker ? [ctx.staker] : []),
  ].map((a) => a.toLowerCase());
}

export function portfolioData(p: SubaccountPositions, chain: string, updateAt: number, ctx: PortfolioContext = {}) {
  const { dayAgo } = ctx;
  const created = (address: string) => ctx.createdAt?.get(address.toLowerCase()) ?? null;
  const change = (t: TokenRef, now: number | null) => {
    const then = dayAgo?.get(t.address) ?? null;
    return now != null && then != null && then > 0 ? now / then - 1 : null;
  };
  const price = (t: TokenRef) => p.prices.get(t.address)?.price ?? null;
  const whole = (raw: bigint, t: TokenRef) => Number(raw) / 10 ** t.decimals;
  const items = new Map<ProtocolId, unknown[]>();
  const add = (id: ProtocolId, item: unknown) => items.set(id, [...(items.get(id) ?? []), item]);
  const item = (o: {
    name: string;
    type: string;
    asset: number;
    debt: number;
    supply: ReturnType<typeof tokenItem>[];
    borrow?: ReturnType<typeof tokenItem>[];
    /** rewards owed to it, counted in `asset` (the Uniswap v3 staker's) */
    reward?: ReturnType<typeof tokenItem>[];
    health?: number | null;
    index: string;
    controller: string;
    /** the pool's id: its controller where that is one contract per pool */
    poolId?: string;
    id: ProtocolId;
  }) => ({
    stats: { asset_usd_value: o.asset, debt_usd_value: o.debt, net_usd_value: o.asset - o.debt },
    update_at: updateAt,
    name: o.name,
    detail_types: [o.type],
    detail: {
      supply_token_list: o.supply,
      reward_token_list: o.reward ?? [],
      borrow_token_list: o.borrow ?? [],
      health_rate: o.health ?? null,
    },
    proxy_detail: {},
    position_index: o.index,
    pool: {
      controller: o.controller,
      id: o.poolId ?? o.controller,
      chain,
      project_id: o.id,
      adapter_id: o.id,
      time_at: created(o.controller),
    },
  });
  if (p.aave && p.aave.reserves.length > 0) {
    const supply = p.aave.reserves
      .filter((r) => r.supplied > 0n)
      .map((r) => tokenItem(chain, r.token, whole(r.supplied, r.token), r.price));
    const borrow = p.aave.reserves
      .filter((r) => r.borrowed > 0n)
      .map((r) => tokenItem(chain, r.token, whole(r.borrowed, r.token), r.price));
    const asset = p.aave.reserves.reduce((s, r) => s + (r.suppliedValue ?? 0), 0);
    const debt = p.aave.reserves.reduce((s, r) => s + (r.borrowedValue ?? 0), 0);
    add(
      "aave_v3",
      item({
        name: "Lending",
        type: "lending",
        asset,
        debt,
        supply,
        borrow,
        health: p.aave.healthFactor,
        index: "aave",
        controller: ctx.aavePool ?? "aave",
        id: "aave_v3",
      }),
    );
  }
  for (const m of p.morpho) {
    const supply = [
      ...(m.supplied > 0n ? [tokenItem(chain, m.loanToken, whole(m.supplied, m.loanToken), price(m.loanToken))] : []),
      ...(m.collateral > 0n
        ? [tokenItem(chain, m.collateralToken, whole(m.collateral, m.collateralToken), price(m.collateralToken))]
        : []),
    ];
    const borrow =
      m.borrowed > 0n ? [tokenItem(chain, m.loanToken, whole(m.borrowed, m.loanToken), price(m.loanToken))] : [];
    const asset = (m.suppliedValue ?? 0) + (m.collateralValue ?? 0);
    const debt = m.borrowedValue ?? 0;
    const health = debt > 0 && m.collateralValue != null ? (m.collateralValue * m.lltv) / debt : null;
    add(
      "morpho_blue",
      item({
        name: "Lending",
        type: "lending",
        asset,
        debt,
        supply,
        borrow,
        health,
        index: m.marketId,
        controller: ctx.morpho ?? m.marketId,
        poolId: m.marketId,
        id: "morpho_blue",
      }),
    );
  }
  for (const v of p.lendingVaults)
    add(
      "lending_vault",
      item({
        name: "Deposit",
        type: "common",
        asset: v.value ?? 0,
        debt: 0,
        supply: [tokenItem(chain, v.asset, whole(v.assets, v.asset), price(v.asset))],
        index: v.vault,
        controller: v.vault,
        id: "lending_vault",
      }),
    );
  for (const u of p.uniswap)
    add(
      "uniswap_v3",
      item({
        name: u.staked ? "Staked" : "Liquidity Pool",
        type: "common",
        asset: u.value ?? 0,
        debt: 0,
        supply: [
          tokenItem(chain, u.token0, u.amount0, price(u.token0)),
          tokenItem(chain, u.token1, u.amount1, price(u.token1)),
        ],
        reward: u.rewards.map((r) => tokenItem(chain, r.token, r.amount, price(r.token))),
        index: u.tokenId.toString(),
        controller: u.pool,
        id: "uniswap_v3",
      }),
    );
  // what the staker holds for the account, credited by unstakes: claimable, counted in its value
  if (p.stakerRewards.length > 0)
    add(
      "uniswap_v3",
      item({
        name: "Rewards",
        type: "reward",
        asset: p.stakerRewards.reduce((x, r) => x + (r.value ?? 0), 0),
        debt: 0,
        supply: [],
        reward: p.stakerRewards.map((r) => tokenItem(chain, r.token, r.amount, price(r.token))),
        index: "staker",
        controller: ctx.staker ?? p.account,
        id: "uniswap_v3",
      }),
    );
  return {
    positions: [...items].map(([id, list]) => ({
      id,
      chain,
      name: PROTOCOLS[id].name,
      logo_url: null,
      site_url: PROTOCOLS[id].site_url,
      has_supported_portfolio: true,
      portfolio_item_list: list,
    })),
    app_positions: [],
    tokens: p.tokens.map((h) => ({
      ...tokenItem(chain, h.token, h.balance, h.price),
      is_core: true,
      is_verified: true,
      is_scam: false,
      is_suspicious: false,
      is_wallet: true,
      time_at: created(h.token.address),
      price_24h_change: change(h.token, h.price),
      credit_score: null,
      raw_amount: Number(h.raw),
      raw_amount_str: h.raw.toString(),
    })),
  };
}
