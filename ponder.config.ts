import { createConfig, factory } from "ponder";
import { getAbiItem } from "viem";
import { CoreLedgerAbi } from "./abis/CoreLedgerAbi";
import { Erc4626Abi } from "./abis/Erc4626Abi";
import { LendingPoolAbi } from "./abis/LendingPoolAbi";
import { LoanAbi } from "./abis/LoanAbi";
import { LoanRegistryAbi } from "./abis/LoanRegistryAbi";
import { MorphoLendingVaultAbi } from "./abis/MorphoLendingVaultAbi";
import { PerpBridgeAAbi } from "./abis/PerpBridgeAAbi";
import {
  AavePoolEventsAbi,
  MorphoBlueEventsAbi,
  PositionLiquidityAbi,
  PositionTransferAbi,
  SafeEventsAbi,
  SafeV130EventsAbi,
  StakerDepositAbi,
  StakerEventsAbi,
  StakerIncentiveAbi,
} from "./abis/ProtocolEventsAbi";
import { ReceiptTokenAbi } from "./abis/ReceiptTokenAbi";
import { SubaccountModuleAbi } from "./abis/SubaccountModuleAbi";
import { TimelockControllerAbi } from "./abis/TimelockControllerAbi";
import { TokenizedVaultV2Abi } from "./abis/TokenizedVaultV2Abi";
import { type IndexedChain, indexerPlan, stakerIncentivesStart, subaccountsStart } from "./config/indexer";

const plan = indexerPlan();

type PerChain<T> = Record<string, T>;
function perChain<T>(pick: (c: IndexedChain) => T | undefined): PerChain<T> {
  const out: PerChain<T> = {};
  for (const c of plan.chains) {
    const v = pick(c);
    if (v !== undefined) out[c.name] = v;
  }
  return out;
}
function addresses(c: IndexedChain, pick: (v: IndexedChain["vaults"][number]) => string | null | undefined) {
  const list = [...new Set(c.vaults.map(pick).filter((a): a is string => !!a))] as `0x${string}`[];
  return list.length > 0 ? list : undefined;
}
function startOf(c: IndexedChain, family: string) {
  const blocks = c.vaults.filter((v) => v.family === family).map((v) => v.startBlock);
  return blocks.length > 0 ? Math.min(...blocks) : c.startBlock;
}

const pools = perChain((c) => {
  const address = addresses(c, (v) => (v.family === "lendingPool" ? v.address : null));
  return address && { address, startBlock: startOf(c, "lendingPool") };
});
const v2Vaults = perChain((c) => {
  const address = addresses(c, (v) => (v.family === "tokenizedVaultV2" ? v.address : null));
  return address && { address, startBlock: startOf(c, "tokenizedVaultV2") };
});
const erc4626Vaults = perChain((c) => {
  const address = addresses(c, (v) => (v.family === "erc4626" ? v.address : null));
  return address && { address, startBlock: startOf(c, "erc4626") };
});
const receiptTokens = perChain((c) => {
  const address = addresses(c, (v) => (v.family === "tokenizedVaultV2" ? v.receiptToken : null));
  return address && { address, startBlock: startOf(c, "tokenizedVaultV2") };
});
// from the earliest timelock's deployment, where the registry knows it (its constructor's roles)
const timelocks = perChain((c) => {
  const address = addresses(c, (v) => v.timelock);
  const starts = c.vaults.filter((v) => v.timelock).map((v) => v.timelockStartBlock ?? c.startBlock - 64);
  return address && { address, startBlock: Math.max(0, Math.min(...starts)) };
});
// every contract a vault's ownership moves to: src/timelock.ts follows it when it is a
// TimelockController the registry does not name (the others emit nothing, or are followed above)
const ownerTimelocks = perChain((c) => {
  const address = addresses(c, (v) => v.address);
  if (!address) return undefined;
  const event = getAbiItem({ abi: LendingPoolAbi, name: "OwnershipTransferred" });
  return { address: factory({ address, event, parameter: "newOwner" }), startBlock: c.startBlock };
});
const loans = perChain((c) => {
  const poolAddresses = addresses(c, (v) => (v.family === "lendingPool" ? v.address : null));
  if (!poolAddresses) return undefined;
  return {
    address: factory({
      address: poolAddresses,
      event: getAbiItem({ abi: LendingPoolAbi, name: "NewLoanDeployedByPool" }),
      parameter: "loanAddr",
    }),
    startBlock: startOf(c, "lendingPool"),
  };
});
const snapshots = perChain((c) => ({ startBlock: c.startBlock, interval: c.snapshotInterval }));

// ---- the subaccounts' protocol world (registry `protocols`; src/subaccounts.ts, src/protocols.ts) ----
// A subaccount has the same address on every chain: each chain's sources follow every registry
// subaccount. Only their events are fetched (indexed topics), except where a topic cannot name
// them (position liquidity and staking by token id: kept by the handlers for their positions).
const subs = plan.subaccounts;
const withSubs = <T>(pick: (c: IndexedChain) => T | undefined) =>
  perChain((c) => (subs.length > 0 ? pick(c) : undefined));
const protocolStart = (c: IndexedChain) => c.startBlock;
// Safe 1.3.x emits AddedOwner, EnabledModule, ... with the address in the data, 1.4.0 on as a
// topic: the same event selectors, decoded differently, so each kind has its Safe and module
// sources (a topic-reading factory given a 1.3 log stops Ponder's sync)
const v130 = new Set(plan.safesV130);
const safeSources = (list: `0x${string}`[], abi: typeof SafeEventsAbi | typeof SafeV130EventsAbi) => ({
  safes: perChain((c) => (list.length > 0 ? { address: list, startBlock: subaccountsStart(c) } : undefined)),
  modules: perChain((c) =>
    list.length > 0
      ? {
          address: factory({ address: list, event: getAbiItem({ abi, name: "EnabledModule" }), parameter: "module" }),
          startBlock: subaccountsStart(c),
        }
      : undefined,
  ),
});
const safesV14 = safeSources(
  subs.filter((a) => !v130.has(a)),
  SafeEventsAbi,
);
const safesV130 = safeSources(plan.safesV130, SafeV130EventsAbi);
const aave = withSubs((c) =>
  c.protocols?.aave ? { address: c.protocols.aave.pool, startBlock: protocolStart(c) } : undefined,
);
const morpho = withSubs((c) => {
  const m = c.protocols?.morpho;
  if (!m || m.markets.length === 0) return undefined;
  const id = m.markets as `0x${string}`[];
  return {
    address: m.address,
    startBlock: protocolStart(c),
    filter: [
      { event: "Supply" as const, args: { id, onBehalf: subs } },
      { event: "Withdraw" as const, args: { id, onBehalf: subs } },
      { event: "Borrow" as const, args: { id, onBehalf: subs } },
      { event: "Repay" as const, args: { id, onBehalf: subs } },
      { event: "SupplyCollateral" as const, args: { id, onBehalf: subs } },
      { event: "WithdrawCollateral" as const, args: { id, onBehalf: subs } },
    ],
  };
});
const positionManager = withSubs((c) =>
  c.protocols?.uniswap ? { address: c.protocols.uniswap.positionManager, startBlock: protocolStart(c) } : undefined,
);
const staker = withSubs((c) =>
  c.protocols?.uniswap?.staker ? { address: c.protocols.uniswap.staker, startBlock: protocolStart(c) } : undefined,
);
// every incentive of the staker (anyone's), from its deployment where the registry gives it
const stakerIncentives = withSubs((c) =>
  c.protocols?.uniswap?.staker
    ? { address: c.protocols.uniswap.staker, startBlock: stakerIncentivesStart(c) }
    : undefined,
);
const bridges = withSubs((c) => {
  const p = c.protocols?.perp;
  return p ? { address: [p.bridgeA, p.bridgeB], startBlock: protocolStart(c) } : undefined;
});
const coreLedgers = withSubs((c) => {
  const ledgers = plan.coreLedgers.filter((l) => l.chainId === c.id).map((l) => l.ledger);
  return ledgers.length > 0 ? { address: ledgers, startBlock: protocolStart(c) } : undefined;
});
const loanRegistries = perChain((c) =>
  c.protocols?.loanRegistry ? { address: c.protocols.loanRegistry, startBlock: protocolStart(c) } : undefined,
);
const registryLoans = perChain((c) =>
  c.protocols?.loanRegistry
    ? {
        address: factory({
          address: c.protocols.loanRegistry,
          event: getAbiItem({ abi: LoanRegistryAbi, name: "LoanRegistered" }),
          parameter: "loan",
        }),
        startBlock: protocolStart(c),
      }
    : undefined,
);
const lendingVaults = perChain((c) => {
  const address = c.protocols?.morpho?.lendingVaults ?? [];
  return address.length > 0 ? { address, startBlock: protocolStart(c) } : undefined;
});
const lendingVaultSnapshots = perChain((c) =>
  (c.protocols?.morpho?.lendingVaults ?? []).length > 0
    ? { startBlock: protocolStart(c), interval: c.snapshotInterval }
    : undefined,
);

export default createConfig({
  database: {
    kind: "postgres",
    connectionString: process.env.DATABASE_URL ?? "postgresql://postgres:postgres@127.0.0.1:54320/vaults",
    poolConfig: { max: 10 },
  },
  ordering: "multichain",
  chains: Object.fromEntries(
    plan.chains.map((c) => [c.name, { id: c.id, rpc: c.rpc, pollingInterval: 500, ethGetLogsBlockRange: 5000 }]),
  ),
  contracts: {
    LendingPool: { abi: LendingPoolAbi, chain: pools },
    TokenizedVaultV2: { abi: TokenizedVaultV2Abi, chain: v2Vaults },
    ReceiptToken: { abi: ReceiptTokenAbi, chain: receiptTokens },
    Erc4626Vault: { abi: Erc4626Abi, chain: erc4626Vaults },
    Timelock: { abi: TimelockControllerAbi, chain: timelocks },
    OwnerTimelock: { abi: TimelockControllerAbi, chain: ownerTimelocks },
    Loan: { abi: LoanAbi, chain: loans },
    SubaccountSafe: { abi: SafeEventsAbi, chain: safesV14.safes },
    SubaccountModule: { abi: SubaccountModuleAbi, chain: safesV14.modules },
    SubaccountSafeV130: { abi: SafeV130EventsAbi, chain: safesV130.safes },
    SubaccountModuleV130: { abi: SubaccountModuleAbi, chain: safesV130.modules },
    AavePool: {
      abi: AavePoolEventsAbi,
      chain: aave,
      filter: [
        { event: "Supply", args: { onBehalfOf: subs } },
        { event: "Withdraw", args: { user: subs } },
        { event: "Borrow", args: { onBehalfOf: subs } },
        { event: "Repay", args: { user: subs } },
        { event: "LiquidationCall", args: { user: subs } },
      ],
    },
    MorphoBlue: { abi: MorphoBlueEventsAbi, chain: morpho },
    PositionsIn: {
      abi: PositionTransferAbi,
      chain: positionManager,
      filter: { event: "Transfer", args: { to: subs } },
    },
    PositionsOut: {
      abi: PositionTransferAbi,
      chain: positionManager,
      filter: { event: "Transfer", args: { from: subs } },
    },
    PositionLiquidity: { abi: PositionLiquidityAbi, chain: positionManager },
    StakerDepositsIn: {
      abi: StakerDepositAbi,
      chain: staker,
      filter: { event: "DepositTransferred", args: { newOwner: subs } },
    },
    StakerDepositsOut: {
      abi: StakerDepositAbi,
      chain: staker,
      filter: { event: "DepositTransferred", args: { oldOwner: subs } },
    },
    Staker: { abi: StakerEventsAbi, chain: staker, filter: { event: "RewardClaimed", args: { to: subs } } },
    StakerIncentives: { abi: StakerIncentiveAbi, chain: stakerIncentives },
    PerpBridge: { abi: PerpBridgeAAbi, chain: bridges, filter: { event: "Deposited", args: { depositor: subs } } },
    CoreLedger: { abi: CoreLedgerAbi, chain: coreLedgers, filter: { event: "Credited", args: { depositor: subs } } },
    LoanRegistry: { abi: LoanRegistryAbi, chain: loanRegistries },
    RegistryLoan: { abi: LoanAbi, chain: registryLoans },
    LendingVault: { abi: MorphoLendingVaultAbi, chain: lendingVaults },
  },
  blocks: {
    VaultSnapshot: { chain: snapshots },
    LendingVaultSnapshot: { chain: lendingVaultSnapshots },
  },
});
