/**
 * A subaccount's positions on one chain at one block, read live and valued in USD through the
 * registry's price feeds (the one valuation path of every USD figure): token balances, Aave v3
 * supplies and debts, Morpho Blue market positions, ERC-4626 lending-vault shares and Uniswap v3
 * positions (held or staked). Shared by the API (reads at the head) and the jobs (reads at past
 * blocks); every read of one kind is one multicall.
 *
 * Health: each venue's collateral counts at its liquidation threshold (Aave's account-wide
 * threshold, a Morpho market's LLTV); the health factor is the lowest venue's, null without debt.
 *
 * Amounts are what the protocols would settle at the block: Morpho's supply and debt with the
 * interest accrued since the market's last update (as Aave's balances already are), a Uniswap
 * position's fees with what it earned since the position manager last counted them.
 */
import { type Address, type PublicClient, parseAbi } from "viem";
import { multicallEach } from "../config/multicall3.js";
import type { ChainProtocols } from "../config/registry.js";
import { type IncentiveSeed, incentiveId, incentivesThrough, STAKER_ABI } from "./staker.js";
import { feeGrowthOf, feeGrowthReads, uncountedFees } from "./uniswap-fees.js";
import { amountsFor, sqrtAtTick } from "./uniswap-math.js";

const ERC20 = parseAbi([
  "function balanceOf(address) view returns (uint256)",
  "function decimals() view returns (uint8)",
  "function symbol() view returns (string)",
]);
const FEED = parseAbi(["function latestAnswer() view returns (int256)"]);
const AAVE_POOL = parseAbi([
  "function getUserAccountData(address) view returns (uint256 totalCollateralBase, uint256 totalDebtBase, uint256 availableBorrowsBase, uint256 currentLiquidationThreshold, uint256 ltv, uint256 healthFactor)",
  "function getReservesList() view returns (address[])",
  "function getReserveData(address) view returns ((uint256 data) configuration, uint128 liquidityIndex, uint128 currentLiquidityRate, uint128 variableBorrowIndex, uint128 currentVariableBorrowRate, uint128 currentStableBorrowRate, uint40 lastUpdateTimestamp, uint16 id, address aTokenAddress, address stableDebtTokenAddress, address variableDebtTokenAddress, address interestRateStrategyAddress, uint128 accruedToTreasury, uint128 unbacked, uint128 isolationModeTotalDebt)",
]);
const MORPHO = parseAbi([
  "function position(bytes32 id, address user) view returns (uint256 supplyShares, uint128 borrowShares, uint128 collateral)",
  "function market(bytes32 id) view returns (uint128 totalSupplyAssets, uint128 totalSupplyShares, uint128 totalBorrowAssets, uint128 totalBorrowShares, uint128 lastUpdate, uint128 fee)",
  "function idToMarketParams(bytes32 id) view returns (address loanToken, address collateralToken, address oracle, address irm, uint256 lltv)",
  "function accrueInterest((address loanToken, address collateralToken, address oracle, address irm, uint256 lltv) marketParams)",
]);
const ERC4626 = parseAbi([
  "function balanceOf(address) view returns (uint256)",
  "function convertToAssets(uint256) view returns (uint256)",
  "function asset() view returns (address)",
]);
const NPM = parseAbi([
  "function balanceOf(address) view returns (uint256)",
  "function tokenOfOwnerByIndex(address owner, uint256 index) view returns (uint256)",
  "function positions(uint256 tokenId) view returns (uint96 nonce, address operator, address token0, address token1, uint24 fee, int24 tickLower, int24 tickUpper, uint128 liquidity, uint256 feeGrowthInside0LastX128, uint256 feeGrowthInside1LastX128, uint128 tokensOwed0, uint128 tokensOwed1)",
]);
const FACTORY = parseAbi(["function getPool(address, address, uint24) view returns (address)"]);
const POOL = parseAbi([
  "function slot0() view returns (uint160 sqrtPriceX96, int24 tick, uint16 observationIndex, uint16 observationCardinality, uint16 observationCardinalityNext, uint8 feeProtocol, bool unlocked)",
]);

/**
 * What the position manager's `positions(tokenId)` answers: nonce, operator, token0, token1, fee,
 * tickLower, tickUpper, liquidity, feeGrowthInside0/1LastX128, tokensOwed0/1.
 */
export type NpmPosition = readonly [
  bigint,
  Address,
  Address,
  Address,
  number,
  number,
  number,
  bigint,
  bigint,
  bigint,
  bigint,
  bigint,
];

export interface TokenRef {
  address: Address;
  symbol: string;
  decimals: number;
}

export interface TokenHolding {
  token: TokenRef;
  raw: bigint;
  balance: number;
  /** USD per whole token; null without a feed */
  price: number | null;
  value: number | null;
}

export interface AaveReservePosition {
  token: TokenRef;
  supplied: bigint;
  borrowed: bigint;
  price: number | null;
  suppliedValue: number | null;
  borrowedValue: number | null;
}

export interface AavePosition {
  collateralValue: number;
  debtValue: number;
  /** the account's liquidation threshold, a fraction */
  liquidationThreshold: number;
  /** Aave's own health factor; null without debt */
  healthFactor: number | null;
  reserves: AaveReservePosition[];
}

export interface MorphoPosition {
  marketId: `0x${string}`;
  loanToken: TokenRef;
  collateralToken: TokenRef;
  lltv: number;
  supplied: bigint;
  borrowed: bigint;
  collateral: bigint;
  suppliedValue: number | null;
  borrowedValue: number | null;
  collateralValue: number | null;
}

export interface LendingVaultPosition {
  vault: Address;
  asset: TokenRef;
  shares: bigint;
  assets: bigint;
  value: number | null;
}

export interface UniswapPosition {
  tokenId: bigint;
  pool: Address;
  token0: TokenRef;
  token1: TokenRef;
  fee: number;
  tickLower: number;
  tickUpper: number;
  liquidity: bigint;
  /** the position's amounts at the pool's current price, whole tokens (fees owed included) */
  amount0: number;
  amount1: number;
  inRange: boolean;
  staked: boolean;
  /** a staked position's rewards in each incentive it is staked in (the staker's getRewardInfo) */
  rewards: (StakerReward & { incentive: `0x${string}` })[];
  /** the amounts' value and the rewards' (null when a pool token has no price) */
  value: number | null;
}

/** A reward the Uniswap v3 staker owes the account, in its reward token. */
export interface StakerReward {
  token: TokenRef;
  raw: bigint;
  amount: number;
  value: number | null;
}

/**
 * One lending venue's part of the account, USD: Aave's account on the chain (its reserves cross
 * collateralised) or one Morpho market (isolated: its collateral secures its own debt alone).
 * Collateral held at one venue cannot be seized for another's debt, so each is compared alone.
 */
export interface VenueFigures {
  /** "aave", or "morpho:<market id>" */
  venue: string;
  debt: number;
  /** its collateral at its liquidation threshold (Aave's account threshold, the market's LLTV) */
  liquidation: number;
}

/**
 * The lowest health factor of the venues with debt (each its collateral at its threshold over its debt); null without.
 */
export function venuesHealthFactor(venues: readonly VenueFigures[]): number | null {
  const factors = venues.filter((v) => v.debt > 0).map((v) => v.liquidation / v.debt);
  return factors.length > 0 ? Math.min(...factors) : null;
}

/**
 * A chain's venues' health factor: `venuesHealthFactor`, or null (unknown) while a Morpho borrow
 * there has no price, rather than computed as if that debt were not there.
 */
export function chainVenuesFactor(morpho: readonly MorphoPosition[], venues: readonly VenueFigures[]) {
  return morpho.some(unpricedBorrow) ? null : venuesHealthFactor(venues);
}

/** A Morpho position owing what no price values (its loan token has no feed, or it did not answer). */
export const unpricedBorrow = (m: MorphoPosition) => m.borrowed > 0n && m.borrowedValue == null;

export interface SubaccountPositions {
  chainId: number;
  account: Address;
  blockNumber: bigint;
  /** the chain's catalogue tokens with their USD prices at the block (null without a feed) */
  prices: Map<string, TokenRef & { price: number | null }>;
  tokens: TokenHolding[];
  aave: AavePosition | null;
  morpho: MorphoPosition[];
  lendingVaults: LendingVaultPosition[];
  uniswap: UniswapPosition[];
  /** rewards the staker holds for the account, credited by unstakes and not yet claimed */
  stakerRewards: StakerReward[];
  /** USD: what the account holds (tokens, supplies, collateral, LP, staker rewards) less what it owes */
  totals: {
    tokenValue: number;
    collateralValue: number;
    loanValue: number;
    /** collateral counted at each venue's liquidation threshold */
    liquidationCollateral: number;
    totalValue: number;
    netValue: number;
  };
  /** the chain's lending venues the account has collateral or debt at */
  venues: VenueFigures[];
  /** the lowest of its venues' health factors; null without venue debt */
  healthFactor: number | null;
}

const whole = (raw: bigint, decimals: number) => Number(raw) / 10 ** decimals;

/** The token catalogue of a chain: registry tokens, by lower-case address. */
function catalogue(p: ChainProtocols): Map<string, TokenRef & { feed: Address | null; feedDecimals: number }> {
  return new Map(
    p.tokens.map((t) => [
      t.address,
      {
        address: t.address,
        symbol: t.symbol,
        decimals: t.decimals,
        feed: t.priceFeed?.address ?? null,
        feedDecimals: t.priceFeed?.decimals ?? 8,
      },
    ]),
  );
}

type Call = { address: Address; abi: readonly unknown[]; functionName: string; args?: readonly unknown[] };

/**
 * The USD price (per whole token) of each catalogue token of `protocols` at `block`, from its
 * feed's latestAnswer, by address; null without a feed or without a positive answer.
 */
export async function readPrices(
  client: PublicClient,
  protocols: ChainProtocols,
  block: bigint,
): Promise<Map<string, number | null>> {
  const list = [...catalogue(protocols).values()];
  const priced = list.filter((t) => t.feed != null);
  const res =
    priced.length === 0
      ? []
      : await multicallEach(client, {
          blockNumber: block,
          contracts: priced.map((t) => ({ address: t.feed!, abi: FEED, functionName: "latestAnswer" })),
        });
  const out = new Map<string, number | null>(list.map((t) => [t.address, null]));
  priced.forEach((t, i) => {
    const p = res[i]?.status === "success" ? (res[i]!.result as bigint) : undefined;
    out.set(t.address, p != null && p > 0n ? whole(p, t.feedDecimals) : null);
  });
  return out;
}

/** What the account's indexed history tells the reads (db/uniswap-positions.ts). */
export interface PositionHints {
  /** every Uniswap v3 position id the account has held or staked on the chain, as indexed */
  uniswapIds?: readonly bigint[];
  /**
   * The staker's holdings listed one by one up to this many (default 256); past it, its staked
   * positions are looked for among `uniswapIds` (each checked on the chain: its deposit's owner).
   */
  stakerListUpTo?: number;
  /** the staker's incentives as indexed, for a first scan of its logs (db/staker-incentives.ts) */
  incentives?: IncentiveSeed;
}

/** Above this many NFTs in the staker, its staked positions come from the indexed ids. */
export const STAKER_LIST_UP_TO = 256;

/** Reads one subaccount's positions on one chain at `blockNumber` (default: the head). */
export async function readPositions(
  client: PublicClient,
  protocols: ChainProtocols,
  account: Address,
  blockNumber?: bigint,
  hints: PositionHints = {},
): Promise<SubaccountPositions> {
  const block = blockNumber ?? (await client.getBlockNumber());
  // a call that reverts (no such position, a contract not there yet) answers undefined; the
  // node's failure throws (multicallEach)
  const many = async <T>(calls: Call[]): Promise<(T | undefined)[]> => {
    if (calls.length === 0) return [];
    const res = await multicallEach(client, { blockNumber: block, contracts: calls as never });
    return res.map((r) => (r.status === "success" ? (r.result as T) : undefined));
  };
  const tokens = catalogue(protocols);
  const lc = (a: string) => a.toLowerCase() as Address;
  const unknownToken = (a: Address): TokenRef => ({ address: lc(a), symbol: "?", decimals: 18 });
  const tokenOf = (a: Address): TokenRef => {
    const t = tokens.get(lc(a));
    return t ? { address: t.address, symbol: t.symbol, decimals: t.decimals } : unknownToken(a);
  };

  // prices of every catalogue token, and its balance
  const list = [...tokens.values()];
  const [priceOf, balances] = await Promise.all([
    readPrices(client, protocols, block),
    many<bigint>(list.map((t) => ({ address: t.address, abi: ERC20, functionName: "balanceOf", args: [account] }))),
  ]);
  const price = (a: Address) => priceOf.get(lc(a)) ?? null;
  const usd = (a: Address, amount: number) => {
    const p = price(a);
    return p == null ? null : amount * p;
  };
  const holdings: TokenHolding[] = list.flatMap((t, i) => {
    const raw = balances[i] ?? 0n;
    if (raw === 0n) return [];
    const balance = whole(raw, t.decimals);
    return [{ token: tokenOf(t.address), raw, balance, price: price(t.address), value: usd(t.address, balance) }];
  });

  // a staker reward in its token, valued through its feed
  const reward = (token: Address, raw: bigint): StakerReward => {
    const t = tokenOf(token);
    const amount = whole(raw, t.decimals);
    return { token: t, raw, amount, value: usd(token, amount) };
  };

  const [aave, morpho, lendingVaults, { positions: uniswap, credited: stakerRewards }] = await Promise.all([
    readAave(),
    readMorpho(),
    readLendingVaults(),
    readUniswap(),
  ]);

  async function readAave(): Promise<AavePosition | null> {
    const pool = protocols.aave?.pool;
    if (!pool) return null;
    const [acct, reservesList] = await many<unknown>([
      { address: pool, abi: AAVE_POOL, functionName: "getUserAccountData", args: [account] },
      { address: pool, abi: AAVE_POOL, functionName: "getReservesList" },
    ]);
    if (!acct) return null;
    const [collateralBase, debtBase, , threshold, , hf] = acct as readonly bigint[];
    const assets = (reservesList as Address[] | undefined) ?? [];
    // the reserve data's outputs in order: aTokenAddress is the 9th, variableDebtTokenAddress the 11th
    const data = await many<readonly unknown[]>(
      assets.map((a) => ({ address: pool, abi: AAVE_POOL, functionName: "getReserveData", args: [a] })),
    );
    const held = await many<bigint>(
      assets.flatMap((_, i) => [
        { address: (data[i]?.[8] as Address) ?? pool, abi: ERC20, functionName: "balanceOf", args: [account] },
        { address: (data[i]?.[10] as Address) ?? pool, abi: ERC20, functionName: "balanceOf", args: [account] },
      ]),
    );
    const reserves = assets.flatMap((a, i): AaveReservePosition[] => {
      const supplied = held[2 * i] ?? 0n;
      const borrowed = held[2 * i + 1] ?? 0n;
      if (supplied === 0n && borrowed === 0n) return [];
      const token = tokenOf(a);
      return [
        {
          token,
          supplied,
          borrowed,
          price: price(a),
          suppliedValue: usd(a, whole(supplied, token.decimals)),
          borrowedValue: usd(a, whole(borrowed, token.decimals)),
        },
      ];
    });
    return {
      collateralValue: whole(collateralBase!, 8),
      debtValue: whole(debtBase!, 8),
      liquidationThreshold: Number(threshold) / 10_000,
      healthFactor: debtBase === 0n ? null : whole(hf!, 18),
      reserves,
    };
  }

  async function readMorpho(): Promise<MorphoPosition[]> {
    const m = protocols.morpho;
    if (!m || m.markets.length === 0) return [];
    const all = m.markets as `0x${string}`[];
    const first = await many<readonly unknown[]>(
      all.flatMap((id) => [
        { address: m.address, abi: MORPHO, functionName: "position", args: [id, account] },
        { address: m.address, abi: MORPHO, functionName: "idToMarketParams", args: [id] },
      ]),
    );
    const held = all.flatMap((id, i) => {
      const pos = first[2 * i] as readonly [bigint, bigint, bigint] | undefined;
      const params = first[2 * i + 1] as readonly [Address, Address, Address, Address, bigint] | undefined;
      if (!pos || !params || pos.every((x) => x === 0n)) return [];
      return [{ id, pos, params }];
    });
    // The market's totals with the interest accrued up to the block, as Morpho counts them before
    // any action (and as a repayment would pay): accrueInterest, then market(), in one multicall,
    // so the second read sees the first's writes (nothing is sent; an eth_call at the block).
    const markets = await many<unknown>(
      held.flatMap(({ id, params }) => [
        {
          address: m.address,
          abi: MORPHO,
          functionName: "accrueInterest",
          args: [
            { loanToken: params[0], collateralToken: params[1], oracle: params[2], irm: params[3], lltv: params[4] },
          ],
        },
        { address: m.address, abi: MORPHO, functionName: "market", args: [id] },
      ]),
    );
    return held.flatMap(({ id, pos, params }, i): MorphoPosition[] => {
      const mk = markets[2 * i + 1] as readonly bigint[] | undefined;
      if (!mk) return [];
      const [supplyShares, borrowShares, collateral] = pos;
      const [totalSupplyAssets, totalSupplyShares, totalBorrowAssets, totalBorrowShares] = mk as bigint[];
      // Morpho's share math (virtual shares 1e6, virtual assets 1): assets rounded down / up
      const supplied = (supplyShares * (totalSupplyAssets! + 1n)) / (totalSupplyShares! + 1_000_000n);
      const bs = borrowShares * (totalBorrowAssets! + 1n);
      const bd = totalBorrowShares! + 1_000_000n;
      const borrowed = (bs + bd - 1n) / bd;
      const loanToken = tokenOf(params[0]);
      const collateralToken = tokenOf(params[1]);
      return [
        {
          marketId: id,
          loanToken,
          collateralToken,
          lltv: whole(params[4], 18),
          supplied,
          borrowed,
          collateral,
          suppliedValue: usd(params[0], whole(supplied, loanToken.decimals)),
          borrowedValue: usd(params[0], whole(borrowed, loanToken.decimals)),
          collateralValue: usd(params[1], whole(collateral, collateralToken.decimals)),
        },
      ];
    });
  }

  async function readLendingVaults(): Promise<LendingVaultPosition[]> {
    const vaults = (protocols.morpho?.lendingVaults ?? []) as Address[];
    if (vaults.length === 0) return [];
    const first = await many<unknown>(
      vaults.flatMap((v) => [
        { address: v, abi: ERC4626, functionName: "balanceOf", args: [account] },
        { address: v, abi: ERC4626, functionName: "asset" },
      ]),
    );
    const shares = vaults.map((_, i) => (first[2 * i] as bigint | undefined) ?? 0n);
    const assetsOf = await many<bigint>(
      vaults.map((v, i) => ({ address: v, abi: ERC4626, functionName: "convertToAssets", args: [shares[i]] })),
    );
    return vaults.flatMap((v, i): LendingVaultPosition[] => {
      if (shares[i] === 0n) return [];
      const asset = tokenOf(first[2 * i + 1] as Address);
      const assets = assetsOf[i] ?? 0n;
      return [
        {
          vault: lc(v),
          asset,
          shares: shares[i]!,
          assets,
          value: usd(asset.address, whole(assets, asset.decimals)),
        },
      ];
    });
  }

  async function readUniswap(): Promise<{ positions: UniswapPosition[]; credited: StakerReward[] }> {
    const u = protocols.uniswap;
    if (!u) return { positions: [], credited: [] };
    const npm = u.positionManager;
    // the staker's incentives (its logs, kept per client): what its staked positions earn in,
    // read while the positions are (handled at once: a failure must not go unhandled meanwhile)
    const incentives = u.staker ? incentivesThrough(client, u.staker, block, hints.incentives) : Promise.resolve([]);
    incentives.catch(() => {});
    const owners: { owner: Address; staked: boolean }[] = [{ owner: account, staked: false }];
    if (u.staker) owners.push({ owner: u.staker, staked: true });
    const counts = await many<bigint>(
      owners.map((o) => ({ address: npm, abi: NPM, functionName: "balanceOf", args: [o.owner] })),
    );
    // the staker holds every position staked with it, anyone's: on a busy chain thousands, so
    // past `stakerListUpTo` its candidates are the account's indexed positions, not its list
    const listUpTo = hints.stakerListUpTo ?? STAKER_LIST_UP_TO;
    const fromHints = u.staker != null && hints.uniswapIds != null && (counts[1] ?? 0n) > BigInt(listUpTo);
    const slots = owners.flatMap((o, i) => {
      if (o.staked && fromHints) return [];
      const n = counts[i] ?? 0n;
      // a count no position manager answers (past 2^32) is no list to read
      return Array.from({ length: n > 0xffff_ffffn ? 0 : Number(n) }, (_, k) => ({ ...o, index: BigInt(k) }));
    });
    const ids = await many<bigint>(
      slots.map((s) => ({ address: npm, abi: NPM, functionName: "tokenOfOwnerByIndex", args: [s.owner, s.index] })),
    );
    let mine = slots.map((s, i) => ({ ...s, tokenId: ids[i] })).filter((s) => s.tokenId != null);
    if (fromHints) {
      const held = new Set(mine.map((s) => s.tokenId));
      for (const id of hints.uniswapIds!)
        if (!held.has(id)) mine.push({ owner: u.staker!, staked: true, index: -1n, tokenId: id });
    }
    if (u.staker) {
      const staked = mine.filter((s) => s.staked);
      const deposits = await many<readonly unknown[]>(
        staked.map((s) => ({ address: u.staker!, abi: STAKER_ABI, functionName: "deposits", args: [s.tokenId] })),
      );
      const ours = new Set(
        staked.filter((_, i) => lc((deposits[i]?.[0] as Address) ?? "0x") === lc(account)).map((s) => s.tokenId),
      );
      mine = mine.filter((s) => !s.staked || ours.has(s.tokenId));
    }
    const pos = await many<readonly unknown[]>(
      mine.map((s) => ({ address: npm, abi: NPM, functionName: "positions", args: [s.tokenId] })),
    );
    const withPos = mine.flatMap((s, i) => (pos[i] ? [{ ...s, p: pos[i]! }] : []));
    const pools = await many<Address>(
      withPos.map(({ p }) => ({ address: u.factory, abi: FACTORY, functionName: "getPool", args: [p[2], p[3], p[4]] })),
    );
    // rewards in the catalogue's tokens: valued through their feeds, in their own decimals (the
    // staker is open to anyone's incentives, in any token)
    const keys = (await incentives).filter((k) => tokens.has(lc(k.rewardToken)));
    // a staked position's incentives: those of its pool (getRewardInfo fails where it has no stake)
    const stakesOf = withPos.map(({ staked }, i) =>
      staked && pools[i] ? keys.filter((k) => lc(k.pool) === lc(pools[i]!)) : [],
    );
    const rewardTokens = [...new Set(keys.map((k) => lc(k.rewardToken)))];
    // each pool's price and the fee growth over the position's range: what it earned since the
    // position manager last counted its fees (tokensOwed holds only those counted); the staked
    // positions' rewards and what the staker holds for the account of each reward token
    const [poolReads, rewardReads, creditedReads] = await Promise.all([
      many<unknown>(
        withPos.flatMap(({ p }, i) => {
          const address = (pools[i] ?? u.factory) as Address;
          return [
            { address, abi: POOL, functionName: "slot0" },
            ...feeGrowthReads(address, Number(p[5]), Number(p[6])),
          ];
        }),
      ),
      many<readonly [bigint, bigint]>(
        withPos.flatMap(({ tokenId }, i) =>
          stakesOf[i]!.map((k) => ({
            address: u.staker!,
            abi: STAKER_ABI,
            functionName: "getRewardInfo",
            args: [k, tokenId],
          })),
        ),
      ),
      many<bigint>(
        rewardTokens.map((t) => ({ address: u.staker!, abi: STAKER_ABI, functionName: "rewards", args: [t, account] })),
      ),
    ]);
    let next = 0;
    const rewardsOf = stakesOf.map((ks) =>
      ks.flatMap((k) => {
        const raw = rewardReads[next++]?.[0] ?? 0n;
        return raw > 0n ? [{ ...reward(k.rewardToken, raw), incentive: incentiveId(k) }] : [];
      }),
    );
    const credited = rewardTokens.flatMap((t, i) => {
      const raw = creditedReads[i] ?? 0n;
      return raw > 0n ? [reward(t, raw)] : [];
    });
    const positions = withPos.flatMap(({ tokenId, staked, p }, i): UniswapPosition[] => {
      const [, , t0, t1, fee, tickLower, tickUpper, liquidity, last0, last1, owed0, owed1] = p as NpmPosition;
      const [s0, ...growthValues] = poolReads.slice(5 * i, 5 * i + 5) as [readonly unknown[] | undefined, ...unknown[]];
      if (!pools[i] || !s0) return [];
      const tick = Number(s0[1]);
      const growth = feeGrowthOf(growthValues);
      const range = { tick, lower: Number(tickLower), upper: Number(tickUpper) };
      const [earned0, earned1] = growth ? uncountedFees(range, growth, [last0, last1], liquidity) : [0n, 0n];
      const fees0 = owed0 + earned0;
      const fees1 = owed1 + earned1;
      const token0 = tokenOf(t0);
      const token1 = tokenOf(t1);
      const sqrtP = s0[0] as bigint;
      const [sqrtA, sqrtB] = [sqrtAtTick(Number(tickLower)), sqrtAtTick(Number(tickUpper))];
      // what burning the liquidity would give (rounded down, as the pool does), and what it is owed
      const held = amountsFor(liquidity, sqrtP, sqrtA, sqrtB);
      const amount0 = Number(held.amount0 + fees0) / 10 ** token0.decimals;
      const amount1 = Number(held.amount1 + fees1) / 10 ** token1.decimals;
      const v0 = usd(t0, amount0);
      const v1 = usd(t1, amount1);
      const rewards = rewardsOf[i]!;
      const rewardsValue = rewards.reduce((x, r) => x + (r.value ?? 0), 0);
      return [
        {
          tokenId: tokenId!,
          pool: lc(pools[i]!),
          token0,
          token1,
          fee: Number(fee),
          tickLower: Number(tickLower),
          tickUpper: Number(tickUpper),
          liquidity,
          amount0,
          amount1,
          inRange: sqrtP > sqrtA && sqrtP < sqrtB,
          staked,
          rewards,
          value: v0 == null || v1 == null ? null : v0 + v1 + rewardsValue,
        },
      ];
    });
    return { positions, credited };
  }

  const sum = (xs: (number | null)[]) => xs.reduce<number>((s, x) => s + (x ?? 0), 0);
  const tokenValue = sum(holdings.map((h) => h.value));
  const morphoCollateral = sum(morpho.map((m) => m.collateralValue));
  const collateralValue = (aave?.collateralValue ?? 0) + morphoCollateral;
  const loanValue = (aave?.debtValue ?? 0) + sum(morpho.map((m) => m.borrowedValue));
  const liquidationCollateral =
    (aave ? aave.collateralValue * aave.liquidationThreshold : 0) +
    sum(morpho.map((m) => (m.collateralValue == null ? null : m.collateralValue * m.lltv)));
  const venues: VenueFigures[] = [
    ...(aave && (aave.collateralValue > 0 || aave.debtValue > 0)
      ? [{ venue: "aave", debt: aave.debtValue, liquidation: aave.collateralValue * aave.liquidationThreshold }]
      : []),
    ...morpho
      .filter((m) => m.borrowed > 0n || m.collateral > 0n)
      .map((m) => ({
        venue: `morpho:${m.marketId}`,
        debt: m.borrowedValue ?? 0,
        liquidation: (m.collateralValue ?? 0) * m.lltv,
      })),
  ];
  const totalValue =
    tokenValue +
    sum(aave?.reserves.map((r) => r.suppliedValue) ?? []) +
    morphoCollateral +
    sum(morpho.map((m) => m.suppliedValue)) +
    sum(lendingVaults.map((v) => v.value)) +
    sum(uniswap.map((p) => p.value)) +
    sum(stakerRewards.map((r) => r.value));
  return {
    chainId: protocols.chainId,
    account: lc(account),
    blockNumber: block,
    prices: new Map(list.map((t) => [t.address, { ...tokenOf(t.address), price: price(t.address) }])),
    tokens: holdings,
    aave,
    morpho,
    lendingVaults,
    uniswap,
    stakerRewards,
    totals: {
      tokenValue,
      collateralValue,
      loanValue,
      liquidationCollateral,
      totalValue,
      netValue: totalValue - loanValue,
    },
    venues,
    healthFactor: chainVenuesFactor(morpho, venues),
  };
}
