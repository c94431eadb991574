/**
 * An Aave v3 market from the npm artifacts (@aave/core-v3), priced by our PriceFeed contracts
 * through AaveOracle, every token a reserve usable as collateral and borrowable.
 *
 * Order: addresses provider -> ACL admin -> ACLManager -> pool admin -> Pool (7 linked libraries)
 * -> setPoolImpl -> PoolConfigurator (ConfiguratorLogic linked) -> setPoolConfiguratorImpl ->
 * AaveOracle -> setPriceOracle -> data provider -> token implementations -> initReserves ->
 * collateral and borrowing configuration -> seed liquidity.
 */
import { type Address, getAddress } from "viem";
import { aave, link } from "./artifacts.js";
import { type Ctx, deploy, ERC20_ABI, MAX_UINT256, PRICE_FEED_ABI, read, write } from "./tx.js";
import type { TokenInput } from "./types.js";

export interface AaveReserve {
  asset: Address;
  symbol: string;
  aToken: Address;
  variableDebtToken: Address;
  stableDebtToken: Address;
  ltvBps: number;
  liquidationThresholdBps: number;
  liquidationBonusBps: number;
}

export interface AaveDeployment {
  addressesProvider: Address;
  aclManager: Address;
  pool: Address;
  poolConfigurator: Address;
  oracle: Address;
  dataProvider: Address;
  rateStrategy: Address;
  treasury: Address;
  reserves: AaveReserve[];
}

export interface AaveOptions {
  tokens: TokenInput[];
  /** symbols treated as stablecoins (higher LTV) */
  stables?: string[];
  /** USD each reserve is seeded with by the deployer, so there is something to borrow (default 5 million) */
  seedUsd?: number;
  marketId?: string;
}

const POOL_LIBRARIES = [
  "BorrowLogic",
  "BridgeLogic",
  "EModeLogic",
  "FlashLoanLogic",
  "LiquidationLogic",
  "PoolLogic",
  "SupplyLogic",
] as const;

const RAY = 10n ** 27n;

export async function deployAave(ctx: Ctx, opts: AaveOptions): Promise<AaveDeployment> {
  const admin = ctx.from;
  const providerA = aave.addressesProvider();
  const addressesProvider = await deploy(
    ctx,
    providerA,
    [opts.marketId ?? "Devnet Aave Market", admin],
    "PoolAddressesProvider",
  );
  await write(ctx, addressesProvider, providerA.abi, "setACLAdmin", [admin]);
  const aclA = aave.aclManager();
  const aclManager = await deploy(ctx, aclA, [addressesProvider], "ACLManager");
  await write(ctx, addressesProvider, providerA.abi, "setACLManager", [aclManager]);
  await write(ctx, aclManager, aclA.abi, "addPoolAdmin", [admin]);

  // Libraries: FlashLoanLogic links BorrowLogic, so BorrowLogic goes first.
  const libs: Record<string, Address> = {};
  for (const name of POOL_LIBRARIES) {
    const a = aave.library(name);
    libs[name] = await deploy(ctx, a, [], name, link(a, libs));
  }
  const poolA = aave.pool();
  const poolImpl = await deploy(ctx, poolA, [addressesProvider], "Pool", link(poolA, libs));
  await write(ctx, addressesProvider, providerA.abi, "setPoolImpl", [poolImpl]);
  const pool = getAddress(await read<Address>(ctx, addressesProvider, providerA.abi, "getPool"));

  const cfgLib = aave.library("ConfiguratorLogic");
  const configuratorLogic = await deploy(ctx, cfgLib, [], "ConfiguratorLogic");
  const cfgA = aave.poolConfigurator();
  const cfgImpl = await deploy(ctx, cfgA, [], "PoolConfigurator", link(cfgA, { ConfiguratorLogic: configuratorLogic }));
  await write(ctx, addressesProvider, providerA.abi, "setPoolConfiguratorImpl", [cfgImpl]);
  const poolConfigurator = getAddress(
    await read<Address>(ctx, addressesProvider, providerA.abi, "getPoolConfigurator"),
  );

  const oracle = await deploy(
    ctx,
    aave.oracle(),
    [
      addressesProvider,
      opts.tokens.map((t) => t.address),
      opts.tokens.map((t) => t.feed),
      "0x0000000000000000000000000000000000000000",
      "0x0000000000000000000000000000000000000000",
      10n ** 8n,
    ],
    "AaveOracle",
  );
  await write(ctx, addressesProvider, providerA.abi, "setPriceOracle", [oracle]);
  const dataProvider = await deploy(ctx, aave.dataProvider(), [addressesProvider], "AaveProtocolDataProvider");
  await write(ctx, addressesProvider, providerA.abi, "setPoolDataProvider", [dataProvider]);

  const aTokenImpl = await deploy(ctx, aave.aToken(), [pool], "AToken");
  const variableDebtImpl = await deploy(ctx, aave.variableDebtToken(), [pool], "VariableDebtToken");
  const stableDebtImpl = await deploy(ctx, aave.stableDebtToken(), [pool], "StableDebtToken");
  // 80 % optimal usage, 0 % base, 4 % slope below it, 75 % above; stable-rate borrowing stays off.
  const rateStrategy = await deploy(
    ctx,
    aave.rateStrategy(),
    [addressesProvider, (RAY * 8n) / 10n, 0n, (RAY * 4n) / 100n, (RAY * 75n) / 100n, 0n, 0n, 0n, 0n, (RAY * 2n) / 10n],
    "DefaultReserveInterestRateStrategy",
  );

  const treasury = admin;
  await write(ctx, poolConfigurator, cfgA.abi, "initReserves", [
    opts.tokens.map((t) => ({
      aTokenImpl,
      stableDebtTokenImpl: stableDebtImpl,
      variableDebtTokenImpl: variableDebtImpl,
      underlyingAssetDecimals: t.decimals,
      interestRateStrategyAddress: rateStrategy,
      underlyingAsset: t.address,
      treasury,
      incentivesController: "0x0000000000000000000000000000000000000000",
      aTokenName: `Aave Devnet ${t.symbol}`,
      aTokenSymbol: `a${t.symbol}`,
      variableDebtTokenName: `Aave Devnet Variable Debt ${t.symbol}`,
      variableDebtTokenSymbol: `variableDebt${t.symbol}`,
      stableDebtTokenName: `Aave Devnet Stable Debt ${t.symbol}`,
      stableDebtTokenSymbol: `stableDebt${t.symbol}`,
      params: "0x",
    })),
  ]);

  const stables = new Set(opts.stables ?? ["USDC", "USDT", "DAI"]);
  const poolAbi = poolA.abi;
  const reserves: AaveReserve[] = [];
  const seedUsd = BigInt(Math.round(opts.seedUsd ?? 5_000_000));
  for (const t of opts.tokens) {
    const stable = stables.has(t.symbol);
    const ltv = stable ? 8000 : 7500;
    const threshold = stable ? 8500 : 8000;
    const bonus = 10500;
    await write(ctx, poolConfigurator, cfgA.abi, "configureReserveAsCollateral", [
      t.address,
      BigInt(ltv),
      BigInt(threshold),
      BigInt(bonus),
    ]);
    await write(ctx, poolConfigurator, cfgA.abi, "setReserveBorrowing", [t.address, true]);
    const data = await read<{
      aTokenAddress: Address;
      variableDebtTokenAddress: Address;
      stableDebtTokenAddress: Address;
    }>(ctx, pool, poolAbi, "getReserveData", [t.address]);
    if (seedUsd > 0n) {
      const price = await read<bigint>(ctx, t.feed, PRICE_FEED_ABI, "latestAnswer");
      const amount = (seedUsd * 10n ** BigInt(t.decimals) * 10n ** 8n) / price;
      await write(ctx, t.address, ERC20_ABI, "mint", [admin, amount]);
      await write(ctx, t.address, ERC20_ABI, "approve", [pool, MAX_UINT256]);
      await write(ctx, pool, poolAbi, "supply", [t.address, amount, admin, 0]);
    }
    reserves.push({
      asset: getAddress(t.address),
      symbol: t.symbol,
      aToken: getAddress(data.aTokenAddress),
      variableDebtToken: getAddress(data.variableDebtTokenAddress),
      stableDebtToken: getAddress(data.stableDebtTokenAddress),
      ltvBps: ltv,
      liquidationThresholdBps: threshold,
      liquidationBonusBps: bonus,
    });
  }
  return {
    addressesProvider,
    aclManager,
    pool,
    poolConfigurator,
    oracle,
    dataProvider,
    rateStrategy,
    treasury,
    reserves,
  };
}
