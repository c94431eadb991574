/**
 * The protocol world of a devnet chain: Uniswap v3 and v2, Aave v3, Morpho Blue with our lending vault,
 * Safe, two perp deposit bridges (and, on the core chain, the core ledger) and a loan registry,
 * deployed from the npm packages' artifacts on a running anvil, plus subaccounts (Safes whose only
 * module is SubaccountModule). Tokens and price feeds are the devnet's own, given as inputs.
 */
import { type Address, getAddress } from "viem";
import type { ChainSession } from "../session.js";
import { type AaveDeployment, deployAave } from "./aave.js";
import { deployLoanRegistry, type LoansDeployment } from "./loans.js";
import { deployMorpho, type MorphoDeployment } from "./morpho.js";
import {
  type CoreLedgerDeployment,
  deployCoreLedger,
  deployPerpBridges,
  type PerpBridgesDeployment,
  perpSubaccountCalls,
} from "./perp.js";
import { type AllowedCall, deploySafe, type SafeDeployment } from "./safe.js";
import type { Ctx } from "./tx.js";
import type { TokenInput } from "./types.js";
import { deployUniswap, type UniswapDeployment } from "./uniswap.js";
import { deployUniswapV2, type UniswapV2Deployment } from "./uniswap-v2.js";

export { type AaveDeployment, deployAave } from "./aave.js";
export {
  createLoan,
  deployLoanRegistry,
  LOAN_STATES,
  type LoanSpec,
  type LoanStateName,
  type LoansDeployment,
  type LoanView,
  loanInterest,
  loanSubaccountCalls,
  readLoan,
} from "./loans.js";
export { deployMorpho, type MorphoDeployment, morphoMarketId, morphoOraclePrice } from "./morpho.js";
export {
  type BridgeDeposit,
  type CoreLedgerDeployment,
  coreHash,
  decide,
  deployCoreLedger,
  deployPerpBridges,
  LEDGER_STATUS,
  type LedgerStatus,
  ledgerStatus,
  nextCoreHash,
  PERP_DESTINATION,
  type PerpBridgesDeployment,
  type PerpDestination,
  perpSubaccountCalls,
  planRelay,
  type RelayAction,
  type RelayOptions,
  type RelayPlan,
  type RelayResult,
  type RelaySource,
  readDeposits,
  relayOnce,
} from "./perp.js";
export {
  type AllowedCall,
  createSafe,
  createSubaccount,
  deploySafe,
  execAsOwner,
  prevalidatedSignature,
  type SafeDeployment,
  type SafeOptions,
  type Subaccount,
  type SubaccountOptions,
} from "./safe.js";
export { CREATE2_DEPLOYER, type Ctx } from "./tx.js";
export type { TokenInput } from "./types.js";
export { defaultPools, deployUniswap, sortTokens, sqrtPriceX96, type UniswapDeployment } from "./uniswap.js";
export {
  deployUniswapV2,
  type UniswapV2Deployment,
  type UniswapV2Pair,
  v2Rebalance,
} from "./uniswap-v2.js";

export interface ProtocolsInput {
  tokens: TokenInput[];
  /** symbol of the chain's wrapped ether among `tokens` */
  weth: string;
  /** symbol of the stablecoin among `tokens` */
  stable: string;
  /** symbol of the Morpho market's collateral (default the WETH) */
  morphoCollateral?: string;
  uniswapLiquidityUsd?: number;
  /** USD value of each Uniswap v2 pair's reserves (default 5 million) */
  uniswapV2LiquidityUsd?: number;
  aaveSeedUsd?: number;
  morphoSeedUsd?: number;
  /** the perp bridges' minimum deposit in USD (default 5) */
  perpMinimumUsd?: number;
  /** deploy the core ledger on this chain (the core chain), credited by `relayer` */
  core?: { relayer: Address; owner?: Address };
}

export interface ProtocolsManifest {
  chainId: number;
  tokens: TokenInput[];
  uniswap: UniswapDeployment;
  /** the second swap venue, deployed last (the other protocols' addresses are as before it) */
  uniswapV2: UniswapV2Deployment;
  aave: AaveDeployment;
  morpho: MorphoDeployment;
  safe: SafeDeployment;
  perp: PerpBridgesDeployment;
  /** on the core chain only */
  core: CoreLedgerDeployment | null;
  loans: LoansDeployment;
  /** what the deployment cost */
  stats: { transactions: number; ms: number };
}

function bySymbol(tokens: TokenInput[], symbol: string): TokenInput {
  const t = tokens.find((x) => x.symbol === symbol);
  if (!t) throw new Error(`no token ${symbol} among ${tokens.map((x) => x.symbol).join(", ")}`);
  return t;
}

/** Deploys every protocol on the session's chain, sending from `deployer` (impersonated). */
export async function deployProtocols(
  s: ChainSession,
  deployer: Address,
  input: ProtocolsInput,
): Promise<ProtocolsManifest> {
  const t0 = performance.now();
  const tx0 = s.txCount;
  await s.syncClock();
  const ctx: Ctx = { s, from: getAddress(deployer) };
  const tokens = input.tokens.map((t) => ({ ...t, address: getAddress(t.address), feed: getAddress(t.feed) }));
  const weth = bySymbol(tokens, input.weth);
  const stable = bySymbol(tokens, input.stable);
  const safe = await deploySafe(ctx);
  const uniswap = await deployUniswap(ctx, {
    tokens,
    weth: weth.address,
    stable: stable.address,
    ...(input.uniswapLiquidityUsd !== undefined ? { liquidityUsd: input.uniswapLiquidityUsd } : {}),
  });
  const aave = await deployAave(ctx, {
    tokens,
    stables: [stable.symbol],
    ...(input.aaveSeedUsd !== undefined ? { seedUsd: input.aaveSeedUsd } : {}),
  });
  const morpho = await deployMorpho(ctx, {
    loan: stable,
    collateral: bySymbol(tokens, input.morphoCollateral ?? input.weth),
    ...(input.morphoSeedUsd !== undefined ? { seedUsd: input.morphoSeedUsd } : {}),
  });
  const perp = await deployPerpBridges(ctx, {
    usdc: stable,
    tokensB: [stable, weth],
    ...(input.perpMinimumUsd !== undefined ? { minimumUsd: input.perpMinimumUsd } : {}),
  });
  const core = input.core ? await deployCoreLedger(ctx, input.core) : null;
  const loans = await deployLoanRegistry(ctx);
  const uniswapV2 = await deployUniswapV2(ctx, {
    tokens,
    weth: weth.address,
    stable: stable.address,
    ...(input.uniswapV2LiquidityUsd !== undefined ? { liquidityUsd: input.uniswapV2LiquidityUsd } : {}),
  });
  return {
    chainId: s.chainId,
    tokens,
    uniswap,
    uniswapV2,
    aave,
    morpho,
    safe,
    perp,
    core,
    loans,
    stats: { transactions: s.txCount - tx0, ms: Math.round(performance.now() - t0) },
  };
}

const MORPHO_MP = "(address,address,address,address,uint256)";

/**
 * Every call a subaccount needs on the protocol world; each has its recipients checked by the
 * module, or has none (perp deposits credit the sender). Loans are added per loan
 * (`loanSubaccountCalls`).
 */
export function defaultSubaccountCalls(
  p: Pick<ProtocolsManifest, "uniswap" | "uniswapV2" | "aave" | "morpho" | "perp">,
): AllowedCall[] {
  return [
    {
      target: p.uniswap.swapRouter,
      signatures: [
        "exactInputSingle((address,address,uint24,address,uint256,uint256,uint256,uint160))",
        "exactInput((bytes,address,uint256,uint256,uint256))",
        "exactOutputSingle((address,address,uint24,address,uint256,uint256,uint256,uint160))",
        "exactOutput((bytes,address,uint256,uint256,uint256))",
      ],
    },
    {
      target: p.uniswapV2.router,
      signatures: ["swapExactTokensForTokens(uint256,uint256,address[],address,uint256)"],
    },
    {
      target: p.uniswap.positionManager,
      signatures: [
        "mint((address,address,uint24,int24,int24,uint256,uint256,uint256,uint256,address,uint256))",
        "increaseLiquidity((uint256,uint256,uint256,uint256,uint256,uint256))",
        "decreaseLiquidity((uint256,uint128,uint256,uint256,uint256))",
        "collect((uint256,address,uint128,uint128))",
        "safeTransferFrom(address,address,uint256,bytes)",
      ],
    },
    {
      target: p.uniswap.staker,
      signatures: [
        "stakeToken((address,address,uint256,uint256,address),uint256)",
        "unstakeToken((address,address,uint256,uint256,address),uint256)",
        "claimReward(address,address,uint256)",
        "withdrawToken(uint256,address,bytes)",
      ],
    },
    {
      target: p.aave.pool,
      signatures: [
        "supply(address,uint256,address,uint16)",
        "borrow(address,uint256,uint256,uint16,address)",
        "repay(address,uint256,uint256,address)",
        "withdraw(address,uint256,address)",
        "setUserUseReserveAsCollateral(address,bool)",
      ],
    },
    {
      target: p.morpho.morpho,
      signatures: [
        `supply(${MORPHO_MP},uint256,uint256,address,bytes)`,
        `withdraw(${MORPHO_MP},uint256,uint256,address,address)`,
        `borrow(${MORPHO_MP},uint256,uint256,address,address)`,
        `repay(${MORPHO_MP},uint256,uint256,address,bytes)`,
        `supplyCollateral(${MORPHO_MP},uint256,address,bytes)`,
        `withdrawCollateral(${MORPHO_MP},uint256,address,address)`,
      ],
    },
    {
      target: p.morpho.lendingVault,
      signatures: [
        "deposit(uint256,address)",
        "mint(uint256,address)",
        "withdraw(uint256,address,address)",
        "redeem(uint256,address,address)",
      ],
    },
    ...perpSubaccountCalls(p.perp),
  ];
}
