/** Compiled contract artifacts (contracts/out, written by contracts/compile.ts) and their ABIs. */
import { existsSync, readFileSync } from "node:fs";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { Abi, Hex } from "viem";
import { CoreLedgerAbi } from "../../abis/CoreLedgerAbi.js";
import { LendingPoolAbi } from "../../abis/LendingPoolAbi.js";
import { LoanAbi } from "../../abis/LoanAbi.js";
import { LoanRegistryAbi } from "../../abis/LoanRegistryAbi.js";
import { MockERC20Abi } from "../../abis/MockERC20Abi.js";
import { Multicall3Abi } from "../../abis/Multicall3Abi.js";
import { PerpBridgeAAbi } from "../../abis/PerpBridgeAAbi.js";
import { PerpBridgeBAbi } from "../../abis/PerpBridgeBAbi.js";
import { PriceFeedAbi } from "../../abis/PriceFeedAbi.js";
import { ReceiptTokenAbi } from "../../abis/ReceiptTokenAbi.js";
import { SmartWalletAbi } from "../../abis/SmartWalletAbi.js";
import { TestUniversalResolverAbi } from "../../abis/TestUniversalResolverAbi.js";
import { TimelockControllerAbi } from "../../abis/TimelockControllerAbi.js";
import { TokenizedVaultV2Abi } from "../../abis/TokenizedVaultV2Abi.js";

export const ABIS = {
  CoreLedger: CoreLedgerAbi,
  LendingPool: LendingPoolAbi,
  Loan: LoanAbi,
  LoanRegistry: LoanRegistryAbi,
  MockERC20: MockERC20Abi,
  Multicall3: Multicall3Abi,
  PerpBridgeA: PerpBridgeAAbi,
  PerpBridgeB: PerpBridgeBAbi,
  PriceFeed: PriceFeedAbi,
  ReceiptToken: ReceiptTokenAbi,
  SmartWallet: SmartWalletAbi,
  TestUniversalResolver: TestUniversalResolverAbi,
  TimelockController: TimelockControllerAbi,
  TokenizedVaultV2: TokenizedVaultV2Abi,
} as const;

export type ContractName = keyof typeof ABIS;

const outDir = join(resolve(dirname(fileURLToPath(import.meta.url)), ".."), "out");

export function bytecode(name: ContractName): Hex {
  const file = join(outDir, `${name}.json`);
  if (!existsSync(file)) {
    throw new Error(`missing ${file}: run "npm run build:contracts" (npm install does it too)`);
  }
  return (JSON.parse(readFileSync(file, "utf8")) as { bytecode: Hex }).bytecode;
}

/** Every event any of our contracts can emit, for decoding receipts. */
export const ALL_EVENTS_ABI: Abi = dedupe(
  Object.values(ABIS).flatMap((abi) => (abi as Abi).filter((item) => item.type === "event")),
);

function dedupe(items: Abi): Abi {
  const seen = new Set<string>();
  return items.filter((item) => {
    const key = JSON.stringify(item);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
}
