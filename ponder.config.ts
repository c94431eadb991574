import { createConfig, factory } from "ponder";
import { getAbiItem } from "viem";
import { LendingPoolAbi } from "./abis/LendingPoolAbi";
import { LoanAbi } from "./abis/LoanAbi";
import { ReceiptTokenAbi } from "./abis/ReceiptTokenAbi";
import { TimelockControllerAbi } from "./abis/TimelockControllerAbi";
import { TokenizedVaultV2Abi } from "./abis/TokenizedVaultV2Abi";
import { type IndexedChain, indexerPlan } from "./config/indexer";

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
const receiptTokens = perChain((c) => {
  const address = addresses(c, (v) => (v.family === "tokenizedVaultV2" ? v.receiptToken : null));
  return address && { address, startBlock: startOf(c, "tokenizedVaultV2") };
});
const timelocks = perChain((c) => {
  const address = addresses(c, (v) => v.timelock);
  return address && { address, startBlock: Math.max(0, c.startBlock - 64) };
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
    Timelock: { abi: TimelockControllerAbi, chain: timelocks },
    Loan: { abi: LoanAbi, chain: loans },
  },
  blocks: {
    VaultSnapshot: { chain: snapshots },
  },
});
