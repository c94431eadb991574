/** What the devnet deploys: the four vault kinds of the spec, spread over both chains and families. */
export type VaultFamily = "lendingPool" | "tokenizedVaultV2";

export interface AssetSpec {
  name: string;
  symbol: string;
  decimals: number;
  usdPrice: number; // starting USD price
  usdVolatility: number; // daily relative volatility of the feed
}

export interface VaultSpec {
  chainId: number;
  family: VaultFamily;
  kind: "stablecoin" | "tokenized_eth" | "wrapped_staked_eth" | "restaked_eth";
  name: string;
  symbol: string;
  publicType: "Lending" | "Defi Yield" | "Pre-deposit";
  strategist: string;
  asset: AssetSpec;
  /**
   * A second deposit asset accepted at a fixed `rate` of base asset (tokenizedVaultV2 only), with a
   * USD feed of its own. It is a liquid-staking token of the same ether as the base asset, so its
   * feed follows the base asset's at the ratio of their starting prices and strays from that peg
   * by `pegVolatility` (relative, drawn afresh each day): its USD volatility is the base asset's.
   */
  altAsset?: Omit<AssetSpec, "usdVolatility"> & { rate: number; pegVolatility: number };
  baseApy: number; // typical yearly return reported by the operator
  depositRange: [number, number]; // whole asset units per deposit
}

export const VAULT_SPECS: readonly VaultSpec[] = [
  {
    chainId: 1,
    family: "lendingPool",
    kind: "stablecoin",
    name: "Stablecoin Strategy",
    symbol: "ssUSDC",
    publicType: "Lending",
    strategist: "Meridian Credit",
    asset: { name: "USD Coin", symbol: "USDC", decimals: 6, usdPrice: 1, usdVolatility: 0.0005 },
    baseApy: 0.085,
    depositRange: [500, 250_000],
  },
  {
    chainId: 1,
    family: "tokenizedVaultV2",
    kind: "tokenized_eth",
    name: "Tokenized ETH",
    symbol: "tETH",
    publicType: "Defi Yield",
    strategist: "Northwind Digital",
    asset: { name: "Wrapped Ether", symbol: "WETH", decimals: 18, usdPrice: 3200, usdVolatility: 0.025 },
    altAsset: {
      name: "Staked Ether",
      symbol: "stETH",
      decimals: 18,
      usdPrice: 3200,
      rate: 0.999,
      pegVolatility: 0.002,
    },
    baseApy: 0.042,
    depositRange: [0.2, 60],
  },
  {
    chainId: 8453,
    family: "lendingPool",
    kind: "wrapped_staked_eth",
    name: "Wrapped Staked ETH",
    symbol: "pwstETH",
    publicType: "Lending",
    strategist: "Northwind Digital",
    asset: {
      name: "Wrapped liquid staked Ether",
      symbol: "wstETH",
      decimals: 18,
      usdPrice: 3800,
      usdVolatility: 0.025,
    },
    baseApy: 0.031,
    depositRange: [0.1, 40],
  },
  {
    chainId: 8453,
    family: "tokenizedVaultV2",
    kind: "restaked_eth",
    name: "Restaked ETH",
    symbol: "rstETH",
    publicType: "Pre-deposit",
    strategist: "Meridian Credit",
    asset: { name: "Restaked Ether", symbol: "rsETH", decimals: 18, usdPrice: 3300, usdVolatility: 0.027 },
    altAsset: {
      name: "Wrapped eETH",
      symbol: "weETH",
      decimals: 18,
      usdPrice: 3450,
      rate: 1.045,
      pegVolatility: 0.002,
    },
    baseApy: 0.058,
    depositRange: [0.1, 30],
  },
];

/**
 * The devnet chains. At least one block every `blockTime` seconds (padding blocks fill quiet
 * slots) and a snapshot every `snapshotInterval` blocks, so every day has several snapshots.
 * anvil keeps every block's state in memory (about half a megabyte each here), so quiet hours
 * get few blocks.
 */
export const DEVNET_CHAINS = [
  { chainId: 1, port: 8545, blockTime: 14_400, snapshotInterval: 3 },
  { chainId: 8453, port: 8546, blockTime: 7_200, snapshotInterval: 6 },
] as const;
