/**
 * Revert data, decoded: `Error(string)` (with the meaning of Aave v3's numeric codes, Safe's
 * `GSxxx` codes and Uniswap's short codes), `Panic(uint256)`, and the custom errors of the
 * contracts the subaccounts use (our SubaccountModule first: "universal subaccount errors"),
 * then those of every contract the service ships (its vaults, timelock, bridges, ledger, loans:
 * OpenZeppelin v5's Ownable, AccessControl, Timelock, ERC-20 and ERC-4626 errors among them) and
 * OpenZeppelin's other common ones (Address, Pausable, ReentrancyGuard, SafeERC20).
 */

import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { type Abi, decodeErrorResult, type Hex, parseAbi } from "viem";
import { CoreLedgerAbi } from "../../abis/CoreLedgerAbi.js";
import { LendingPoolAbi } from "../../abis/LendingPoolAbi.js";
import { LoanAbi } from "../../abis/LoanAbi.js";
import { LoanRegistryAbi } from "../../abis/LoanRegistryAbi.js";
import { MockERC20Abi } from "../../abis/MockERC20Abi.js";
import { MorphoLendingVaultAbi } from "../../abis/MorphoLendingVaultAbi.js";
import { OwnedERC4626Abi } from "../../abis/OwnedERC4626Abi.js";
import { PerpBridgeAAbi } from "../../abis/PerpBridgeAAbi.js";
import { PerpBridgeBAbi } from "../../abis/PerpBridgeBAbi.js";
import { ReceiptTokenAbi } from "../../abis/ReceiptTokenAbi.js";
import { RoleManagedERC4626Abi } from "../../abis/RoleManagedERC4626Abi.js";
import { SubaccountModuleAbi } from "../../abis/SubaccountModuleAbi.js";
import { TimelockControllerAbi } from "../../abis/TimelockControllerAbi.js";
import { TokenizedVaultV2Abi } from "../../abis/TokenizedVaultV2Abi.js";
import { TwoStepERC4626Abi } from "../../abis/TwoStepERC4626Abi.js";

export type RevertKind =
  | "empty"
  | "error"
  | "aave"
  | "safe"
  | "uniswap"
  | "panic"
  | "subaccount"
  | "custom"
  | "unknown";

export interface DecodedRevert {
  kind: RevertKind;
  /** the error's name: `Error`, `Panic`, a custom error's name, or an Aave/Safe code's name */
  name: string;
  /** the decoded arguments, as strings */
  args: string[];
  /** one readable sentence */
  message: string;
  /** the raw revert data */
  data: Hex;
}

// Safe's require codes (docs/error_codes.md of safe-global/safe-smart-account)
const SAFE: Record<string, string> = {
  GS000: "Could not finish initialization",
  GS001: "Threshold needs to be defined",
  GS002: "A call to set up modules couldn't be executed because the destination account was not a contract",
  GS010: "Not enough gas to execute Safe transaction",
  GS011: "Could not pay gas costs with ether",
  GS012: "Could not pay gas costs with token",
  GS013: "Safe transaction failed when gasPrice and safeTxGas were 0",
  GS020: "Signatures data too short",
  GS021: "Invalid contract signature location: inside static part",
  GS022: "Invalid contract signature location: length not present",
  GS023: "Invalid contract signature location: data not complete",
  GS024: "Invalid contract signature provided",
  GS025: "Hash has not been approved",
  GS026: "Invalid owner provided",
  GS030: "Only owners can approve a hash",
  GS031: "Method can only be called from this contract",
  GS100: "Modules have already been initialized",
  GS101: "Invalid module address provided",
  GS102: "Module has already been added",
  GS103: "Invalid prevModule, module pair provided",
  GS104: "Method can only be called from an enabled module",
  GS105: "Invalid starting point for fetching paginated modules",
  GS106: "Invalid page size for fetching paginated modules",
  GS200: "Owners have already been set up",
  GS201: "Threshold cannot exceed owner count",
  GS202: "Threshold needs to be greater than 0",
  GS203: "Invalid owner address provided",
  GS204: "Address is already an owner",
  GS205: "Invalid prevOwner, owner pair provided",
  GS300: "Guard does not implement IERC165",
  GS400: "Fallback handler cannot be set to self",
};

// Uniswap v3's short require codes (core and periphery), and v2's reasons
const UNISWAP: Record<string, string> = {
  STF: "Uniswap: token transferFrom failed (allowance or balance too low)",
  ST: "Uniswap: token transfer failed",
  SA: "Uniswap: token approve failed",
  TF: "Uniswap: ETH transfer failed",
  SPL: "Uniswap: the sqrt price limit is out of range",
  AS: "Uniswap: the amount specified is zero",
  LOK: "Uniswap: the pool is locked (reentrancy)",
  IIA: "Uniswap: insufficient input amount",
  M0: "Uniswap: the pool did not receive token0 for the mint",
  M1: "Uniswap: the pool did not receive token1 for the mint",
  TLU: "Uniswap: the lower tick is not below the upper tick",
  TLM: "Uniswap: the lower tick is below the minimum",
  TUM: "Uniswap: the upper tick is above the maximum",
  LO: "Uniswap: a tick of the range would hold more liquidity than a tick may (narrow the amount or widen the range)",
  LS: "Uniswap: more liquidity removed than the position holds",
  LA: "Uniswap: liquidity added past its maximum",
  NP: "Uniswap: the position has no liquidity",
  AI: "Uniswap: the pool is already initialized",
  "Invalid token ID": "Uniswap: no such position",
  "Not cleared": "Uniswap: the position still has liquidity or tokens owed",
  "Too little received": "Uniswap: the swap would return less than the minimum out (slippage)",
  "Too much requested": "Uniswap: the swap would need more than the maximum in (slippage)",
  "Price slippage check": "Uniswap: the position's amounts are below the minimums (slippage)",
  "Transaction too old": "Uniswap: the deadline has passed",
  "Not approved": "Uniswap: the caller may not manage this position",
  // Uniswap v2's router, library and pair
  "UniswapV2Router: INSUFFICIENT_OUTPUT_AMOUNT":
    "Uniswap v2: the swap would return less than the minimum out (slippage)",
  "UniswapV2Router: EXCESSIVE_INPUT_AMOUNT": "Uniswap v2: the swap would need more than the maximum in (slippage)",
  "UniswapV2Router: EXPIRED": "Uniswap v2: the deadline has passed",
  "UniswapV2Router: INVALID_PATH": "Uniswap v2: the path is not valid",
  "UniswapV2Library: INSUFFICIENT_LIQUIDITY": "Uniswap v2: a pair of the path has no liquidity",
  "UniswapV2Library: INSUFFICIENT_INPUT_AMOUNT": "Uniswap v2: the amount in is zero",
  "UniswapV2Library: INSUFFICIENT_OUTPUT_AMOUNT": "Uniswap v2: the amount out is zero",
  "UniswapV2Library: IDENTICAL_ADDRESSES": "Uniswap v2: a hop has the same token in and out",
  "TransferHelper: TRANSFER_FROM_FAILED": "Uniswap v2: token transferFrom failed (allowance or balance too low)",
  "UniswapV2: K": "Uniswap v2: the pair's constant product would fall",
  "UniswapV2: LOCKED": "Uniswap v2: the pair is locked (reentrancy)",
  "UniswapV2: INSUFFICIENT_LIQUIDITY": "Uniswap v2: the pair has too little liquidity for the amount out",
};

const PANIC: Record<number, string> = {
  0: "generic panic (inserted by the compiler)",
  1: "assertion failed",
  17: "arithmetic overflow or underflow",
  18: "division or modulo by zero",
  33: "conversion to an invalid enum value",
  34: "incorrectly encoded storage byte array",
  49: "pop on an empty array",
  50: "array index out of bounds",
  65: "out of memory",
  81: "call to an uninitialized function",
};

/**
 * Aave v3's numeric codes → their names, read from the Errors.sol of the installed
 * @aave/core-v3 (a devnet fixture; without it a code is reported by number only).
 */
let aaveCodes: Map<string, string> | undefined;
function aaveName(code: string): string | undefined {
  if (!aaveCodes) {
    aaveCodes = new Map();
    try {
      const file = createRequire(import.meta.url).resolve(
        "@aave/core-v3/contracts/protocol/libraries/helpers/Errors.sol",
      );
      for (const m of readFileSync(file, "utf8").matchAll(/string public constant (\w+) = '(\d+)';/g))
        aaveCodes.set(m[2]!, m[1]!);
    } catch {
      // the package is not installed: numbers only
    }
  }
  return aaveCodes.get(code);
}

const OZ_ERRORS = parseAbi([
  "error ERC20InsufficientBalance(address sender, uint256 balance, uint256 needed)",
  "error ERC20InsufficientAllowance(address spender, uint256 allowance, uint256 needed)",
  "error ERC20InvalidSender(address sender)",
  "error ERC20InvalidReceiver(address receiver)",
  "error ERC20InvalidApprover(address approver)",
  "error ERC20InvalidSpender(address spender)",
  "error SafeERC20FailedOperation(address token)",
  "error SafeERC20FailedDecreaseAllowance(address spender, uint256 currentAllowance, uint256 requestedDecrease)",
  "error AddressEmptyCode(address target)",
  "error AddressInsufficientBalance(address account)",
  "error FailedInnerCall()",
  "error FailedCall()",
  "error InsufficientBalance(uint256 balance, uint256 needed)",
  "error EnforcedPause()",
  "error ExpectedPause()",
  "error ReentrancyGuardReentrantCall()",
  "error OwnableUnauthorizedAccount(address account)",
  "error OwnableInvalidOwner(address owner)",
  "error AccessControlUnauthorizedAccount(address account, bytes32 neededRole)",
  "error AccessControlBadConfirmation()",
  "error InvalidInitialization()",
  "error NotInitializing()",
  "error SafeCastOverflowedUintDowncast(uint8 bits, uint256 value)",
]);

/** The error entries of ABIs, each signature once (the first ABI naming it wins). */
function errorsOf(abis: readonly Abi[]): Abi {
  const seen = new Set<string>();
  const out: Abi[number][] = [];
  for (const abi of abis)
    for (const item of abi) {
      if (item.type !== "error") continue;
      const sig = `${item.name}(${item.inputs.map((i) => i.type).join(",")})`;
      if (seen.has(sig)) continue;
      seen.add(sig);
      out.push(item);
    }
  return out;
}

/** The errors of the contracts the service ships and deploys, then OpenZeppelin's common ones. */
const SHIPPED = errorsOf([
  MorphoLendingVaultAbi,
  TimelockControllerAbi,
  TokenizedVaultV2Abi,
  LendingPoolAbi,
  OwnedERC4626Abi,
  TwoStepERC4626Abi,
  RoleManagedERC4626Abi,
  ReceiptTokenAbi,
  MockERC20Abi,
  PerpBridgeAAbi,
  PerpBridgeBAbi,
  CoreLedgerAbi,
  LoanRegistryAbi,
  LoanAbi,
  OZ_ERRORS,
] as Abi[]);

/** Custom-error ABIs, the subaccount module's first. */
const CUSTOM: { abi: Abi; kind: RevertKind }[] = [
  { abi: SubaccountModuleAbi as Abi, kind: "subaccount" },
  { abi: SHIPPED, kind: "custom" },
];

/** What a subaccount error means beyond its name and arguments, where that is not plain. */
const MEANING: Record<string, string> = {
  UnexpectedResult:
    ": the call returned another result than the one the transaction was built for (e.g. another deposit of the " +
    "Safe on the same bridge was mined first, so this one would get the next core hash): nothing was done; " +
    "build it again",
};

const str = (v: unknown): string =>
  typeof v === "bigint" ? v.toString() : Array.isArray(v) ? `[${v.map(str).join(", ")}]` : String(v);

function fromString(reason: string, data: Hex): DecodedRevert {
  const safe = SAFE[reason];
  if (safe) return { kind: "safe", name: reason, args: [], message: `Safe ${reason}: ${safe}`, data };
  // Aave v3's codes are numbers; with its Errors.sol at hand, only the numbers it defines
  const aave = /^\d{1,3}$/.test(reason) ? aaveName(reason) : undefined;
  if (aave || (/^\d{1,3}$/.test(reason) && aaveCodes?.size === 0)) {
    return {
      kind: "aave",
      name: aave ?? reason,
      args: [reason],
      message: `Aave v3 error '${reason}'${aave ? `: ${aave}` : ""}`,
      data,
    };
  }
  const uni = UNISWAP[reason];
  if (uni) return { kind: "uniswap", name: reason, args: [], message: uni, data };
  const message = reason === "" ? "reverted with an empty reason string" : reason;
  return { kind: "error", name: "Error", args: [reason], message, data };
}

/** Decodes one revert payload. */
export function decodeRevert(data: Hex | undefined | null): DecodedRevert {
  const d = (data ?? "0x") as Hex;
  if (d === "0x") return { kind: "empty", name: "", args: [], message: "reverted without a reason", data: d };
  const selector = d.slice(0, 10).toLowerCase();
  try {
    if (selector === "0x08c379a0") {
      const r = decodeErrorResult({ abi: [], data: d });
      return fromString(String(r.args?.[0] ?? ""), d);
    }
    if (selector === "0x4e487b71") {
      const r = decodeErrorResult({ abi: [], data: d });
      const code = Number(r.args?.[0] ?? 0);
      const what = PANIC[code] ?? "unknown panic";
      return {
        kind: "panic",
        name: "Panic",
        args: [String(code)],
        message: `Panic 0x${code.toString(16)}: ${what}`,
        data: d,
      };
    }
  } catch {
    return { kind: "unknown", name: "", args: [], message: `undecodable revert data ${d.slice(0, 10)}…`, data: d };
  }
  for (const { abi, kind } of CUSTOM) {
    try {
      const r = decodeErrorResult({ abi, data: d });
      const args = (r.args ?? []).map(str);
      const message = `${r.errorName}(${args.join(", ")})${MEANING[r.errorName] ?? ""}`;
      return { kind, name: r.errorName, args, message, data: d };
    } catch {
      // not this ABI's
    }
  }
  return { kind: "unknown", name: selector, args: [], message: `custom error ${selector} (unknown)`, data: d };
}
