/**
 * Morpho Blue (compiled from @morpho-org/morpho-blue with solc 0.8.19) with IrmMock and OracleMock,
 * one market (a stablecoin lent against a collateral asset), and our ERC-4626 lending vault
 * (MorphoLendingVault) supplying it. A seed borrower gives the market utilization, so the vault
 * earns interest from the start.
 */
import { type Address, encodeAbiParameters, getAddress, type Hex, keccak256 } from "viem";
import { morphoArtifacts, morphoLendingVault } from "./artifacts.js";
import { type Ctx, deploy, ERC20_ABI, MAX_UINT256, PRICE_FEED_ABI, read, write } from "./tx.js";
import type { TokenInput } from "./types.js";

export interface MorphoMarketParams {
  loanToken: Address;
  collateralToken: Address;
  oracle: Address;
  irm: Address;
  lltv: bigint;
}

export interface MorphoDeployment {
  morpho: Address;
  irm: Address;
  oracle: Address;
  marketId: Hex;
  market: Omit<MorphoMarketParams, "lltv"> & { lltv: string };
  lendingVault: Address;
}

export interface MorphoOptions {
  loan: TokenInput;
  collateral: TokenInput;
  /** liquidation LTV, 18 decimals (default 0.86) */
  lltv?: bigint;
  /** USD the deployer deposits in the lending vault (default 1 million; 0 for none) */
  seedUsd?: number;
  /** share of the seed the deployer borrows against collateral (default 0.5) */
  seedUtilization?: number;
  vaultName?: string;
  vaultSymbol?: string;
}

const MARKET_PARAMS = [
  {
    type: "tuple",
    components: [
      { name: "loanToken", type: "address" },
      { name: "collateralToken", type: "address" },
      { name: "oracle", type: "address" },
      { name: "irm", type: "address" },
      { name: "lltv", type: "uint256" },
    ],
  },
] as const;

export function morphoMarketId(p: MorphoMarketParams): Hex {
  return keccak256(encodeAbiParameters(MARKET_PARAMS, [p]));
}

/**
 * The OracleMock price: collateral in loan-token raw units per collateral raw unit, scaled by 1e36
 * (keep it in step with the feeds when they move).
 */
export function morphoOraclePrice(collateralUsd: bigint, collateralDec: number, loanUsd: bigint, loanDec: number) {
  return (collateralUsd * 10n ** 36n * 10n ** BigInt(loanDec)) / (loanUsd * 10n ** BigInt(collateralDec));
}

export async function deployMorpho(ctx: Ctx, opts: MorphoOptions): Promise<MorphoDeployment> {
  const art = morphoArtifacts();
  const morpho = await deploy(ctx, art.Morpho, [ctx.from], "Morpho");
  const irm = await deploy(ctx, art.IrmMock, [], "IrmMock");
  const oracle = await deploy(ctx, art.OracleMock, [], "OracleMock");
  const loanUsd = await read<bigint>(ctx, opts.loan.feed, PRICE_FEED_ABI, "latestAnswer");
  const colUsd = await read<bigint>(ctx, opts.collateral.feed, PRICE_FEED_ABI, "latestAnswer");
  await write(ctx, oracle, art.OracleMock.abi, "setPrice", [
    morphoOraclePrice(colUsd, opts.collateral.decimals, loanUsd, opts.loan.decimals),
  ]);
  const lltv = opts.lltv ?? 860_000_000_000_000_000n;
  await write(ctx, morpho, art.Morpho.abi, "enableIrm", [irm]);
  await write(ctx, morpho, art.Morpho.abi, "enableLltv", [lltv]);
  const params: MorphoMarketParams = {
    loanToken: getAddress(opts.loan.address),
    collateralToken: getAddress(opts.collateral.address),
    oracle,
    irm,
    lltv,
  };
  await write(ctx, morpho, art.Morpho.abi, "createMarket", [params]);
  const vaultA = morphoLendingVault();
  const lendingVault = await deploy(
    ctx,
    vaultA,
    [
      morpho,
      params,
      opts.vaultName ?? `Morpho ${opts.loan.symbol} Lending Vault`,
      opts.vaultSymbol ?? `ml${opts.loan.symbol}`,
    ],
    "MorphoLendingVault",
  );

  const seedUsd = BigInt(Math.round(opts.seedUsd ?? 1_000_000));
  if (seedUsd > 0n) {
    const me = ctx.from;
    const deposit = (seedUsd * 10n ** BigInt(opts.loan.decimals) * 10n ** 8n) / loanUsd;
    await write(ctx, opts.loan.address, ERC20_ABI, "mint", [me, deposit]);
    await write(ctx, opts.loan.address, ERC20_ABI, "approve", [lendingVault, deposit]);
    await write(ctx, lendingVault, vaultA.abi, "deposit", [deposit, me]);
    const borrow = (deposit * BigInt(Math.round((opts.seedUtilization ?? 0.5) * 1000))) / 1000n;
    if (borrow > 0n) {
      // collateral worth twice the borrow
      const collateral =
        (2n * borrow * loanUsd * 10n ** BigInt(opts.collateral.decimals)) /
        (colUsd * 10n ** BigInt(opts.loan.decimals));
      await write(ctx, opts.collateral.address, ERC20_ABI, "mint", [me, collateral]);
      await write(ctx, opts.collateral.address, ERC20_ABI, "approve", [morpho, MAX_UINT256]);
      await write(ctx, morpho, art.Morpho.abi, "supplyCollateral", [params, collateral, me, "0x"]);
      await write(ctx, morpho, art.Morpho.abi, "borrow", [params, borrow, 0n, me, me]);
    }
  }
  return {
    morpho,
    irm,
    oracle,
    marketId: morphoMarketId(params),
    market: { ...params, lltv: lltv.toString() },
    lendingVault,
  };
}
