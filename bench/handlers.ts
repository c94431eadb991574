/**
 * The indexing functions our app registers, read from the source of src/*.ts (`ponder.on(...)`
 * calls), and the log selectors they match. The bare benchmark app registers exactly these names,
 * and the event count only includes logs that one of them receives.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join, relative } from "node:path";
import { type Abi, type Hex, toEventSelector } from "viem";
import { CoreLedgerAbi } from "../abis/CoreLedgerAbi.js";
import { Erc4626Abi } from "../abis/Erc4626Abi.js";
import { LendingPoolAbi } from "../abis/LendingPoolAbi.js";
import { LoanAbi } from "../abis/LoanAbi.js";
import { LoanRegistryAbi } from "../abis/LoanRegistryAbi.js";
import { MorphoLendingVaultAbi } from "../abis/MorphoLendingVaultAbi.js";
import { PerpBridgeAAbi } from "../abis/PerpBridgeAAbi.js";
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
} from "../abis/ProtocolEventsAbi.js";
import { ReceiptTokenAbi } from "../abis/ReceiptTokenAbi.js";
import { SubaccountModuleAbi } from "../abis/SubaccountModuleAbi.js";
import { TimelockControllerAbi } from "../abis/TimelockControllerAbi.js";
import { TokenizedVaultV2Abi } from "../abis/TokenizedVaultV2Abi.js";

/** Contract names of ponder.config.ts and their ABIs. */
export const CONTRACT_ABIS: Record<string, Abi> = {
  LendingPool: LendingPoolAbi as Abi,
  TokenizedVaultV2: TokenizedVaultV2Abi as Abi,
  ReceiptToken: ReceiptTokenAbi as Abi,
  Erc4626Vault: Erc4626Abi as Abi,
  Timelock: TimelockControllerAbi as Abi,
  OwnerTimelock: TimelockControllerAbi as Abi,
  Loan: LoanAbi as Abi,
  // the subaccounts' protocol world (few events next to the bench's bulk; not in its event count)
  SubaccountSafe: SafeEventsAbi as Abi,
  SubaccountModule: SubaccountModuleAbi as Abi,
  SubaccountSafeV130: SafeV130EventsAbi as Abi,
  SubaccountModuleV130: SubaccountModuleAbi as Abi,
  AavePool: AavePoolEventsAbi as Abi,
  MorphoBlue: MorphoBlueEventsAbi as Abi,
  PositionsIn: PositionTransferAbi as Abi,
  PositionsOut: PositionTransferAbi as Abi,
  PositionLiquidity: PositionLiquidityAbi as Abi,
  StakerDepositsIn: StakerDepositAbi as Abi,
  StakerDepositsOut: StakerDepositAbi as Abi,
  Staker: StakerEventsAbi as Abi,
  StakerIncentives: StakerIncentiveAbi as Abi,
  PerpBridge: PerpBridgeAAbi as Abi,
  CoreLedger: CoreLedgerAbi as Abi,
  LoanRegistry: LoanRegistryAbi as Abi,
  RegistryLoan: LoanAbi as Abi,
  LendingVault: MorphoLendingVaultAbi as Abi,
};

function tsFiles(dir: string): string[] {
  const out: string[] = [];
  for (const name of readdirSync(dir).sort()) {
    const p = join(dir, name);
    if (statSync(p).isDirectory()) {
      if (name !== "api") out.push(...tsFiles(p));
    } else if (p.endsWith(".ts")) out.push(p);
  }
  return out;
}

/**
 * Every name passed to `ponder.on` in `<root>/src` (src/api excluded). Handles string literals and
 * template literals whose `${x}` comes from an enclosing `for (const x of ["A", "B"])`. Throws if a
 * `ponder.on(` call has a first argument of another shape, so the list is never silently short.
 */
export function registeredHandlerNames(root: string): string[] {
  const names = new Set<string>();
  const problems: string[] = [];
  for (const file of tsFiles(join(root, "src"))) {
    const text = readFileSync(file, "utf8");
    const loops = new Map<string, string[]>();
    for (const m of text.matchAll(/for\s*\(\s*const\s+(\w+)\s+of\s+\[([^\]]*)\]/g)) {
      loops.set(
        m[1]!,
        [...m[2]!.matchAll(/["']([^"']+)["']/g)].map((x) => x[1]!),
      );
    }
    const calls = [...text.matchAll(/ponder\.on\(/g)].length;
    let found = 0;
    for (const m of text.matchAll(/ponder\.on\(\s*(?:"([^"]+)"|'([^']+)'|`([^`]+)`)/g)) {
      found++;
      const literal = m[1] ?? m[2];
      if (literal !== undefined) {
        names.add(literal);
        continue;
      }
      let expanded = [m[3]!];
      for (const v of m[3]!.matchAll(/\$\{(\w+)\}/g)) {
        const values = loops.get(v[1]!);
        if (!values || values.length === 0) {
          problems.push(`${relative(root, file)}: cannot expand \${${v[1]}} in ponder.on(\`${m[3]}\`)`);
          expanded = [];
          break;
        }
        expanded = expanded.flatMap((s) => values.map((x) => s.replace(`\${${v[1]}}`, x)));
      }
      for (const e of expanded) names.add(e);
    }
    if (found !== calls) {
      problems.push(`${relative(root, file)}: ${calls} ponder.on( calls but only ${found} with a literal event name`);
    }
  }
  if (problems.length > 0)
    throw new Error(`cannot list the registered indexing functions:\n  ${problems.join("\n  ")}`);
  if (names.size === 0) throw new Error(`no ponder.on(...) calls found in ${join(root, "src")}`);
  return [...names].sort();
}

/**
 * Log selectors per contract name that the given handler names receive. "X:setup" and
 * "Y:block" are skipped. Overloaded names ("E(uint256 a, address indexed b)") give one selector.
 */
export function handledSelectors(names: string[]): Map<string, Set<Hex>> {
  const out = new Map<string, Set<Hex>>();
  for (const full of names) {
    const colon = full.indexOf(":");
    const contract = full.slice(0, colon);
    const event = full.slice(colon + 1);
    if (event === "setup" || event === "block") continue;
    const abi = CONTRACT_ABIS[contract];
    if (!abi) throw new Error(`handler ${full}: unknown contract ${contract}`);
    const set = out.get(contract) ?? new Set<Hex>();
    out.set(contract, set);
    const paren = event.indexOf("(");
    if (paren >= 0) {
      // "Name(uint256 a, address indexed b)" -> "Name(uint256,address)"
      const types = event
        .slice(paren + 1, -1)
        .split(",")
        .map((p) => p.trim().split(/\s+/)[0]!)
        .filter((t) => t.length > 0);
      set.add(toEventSelector(`${event.slice(0, paren)}(${types.join(",")})`));
      continue;
    }
    const items = abi.filter((i) => i.type === "event" && i.name === event);
    if (items.length !== 1) throw new Error(`handler ${full}: ${items.length} events named ${event} in the ABI`);
    const item = items[0]!;
    if (item.type !== "event") continue;
    set.add(toEventSelector(`${item.name}(${item.inputs.map((i) => i.type).join(",")})`));
  }
  return out;
}
