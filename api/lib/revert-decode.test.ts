/**
 * The decoder on revert data encoded from the errors' own signatures: the errors of the
 * contracts the service ships (timelock, Ownable, AccessControl), OpenZeppelin's common ones,
 * Aave's numeric codes (only the numbers its Errors.sol defines), an empty reason and Panic 0.
 * Real reverts from the devnet's contracts are decoded in the revert_reason e2e tests.
 */
import { encodeErrorResult, type Hex, parseAbi } from "viem";
import { describe, expect, it } from "vitest";
import { decodeRevert } from "./revert-decode.js";

const ABI = parseAbi([
  "error TimelockUnexpectedOperationState(bytes32 operationId, bytes32 expectedStates)",
  "error OwnableUnauthorizedAccount(address account)",
  "error AccessControlUnauthorizedAccount(address account, bytes32 neededRole)",
  "error EnforcedPause()",
  "error ReentrancyGuardReentrantCall()",
  "error Error(string)",
  "error Panic(uint256)",
  "error UnexpectedResult(bytes returned, bytes expected)",
]);
const enc = (errorName: string, args: readonly unknown[] = []) =>
  encodeErrorResult({ abi: ABI, errorName, args } as never) as Hex;
const ACCOUNT = "0x1111111111111111111111111111111111111111";
const ROLE = `0x${"ab".repeat(32)}`;

describe("decodeRevert", () => {
  it("names the errors of the service's own contracts", () => {
    const op = `0x${"01".repeat(32)}`;
    const timelock = decodeRevert(enc("TimelockUnexpectedOperationState", [op, `0x${"0".repeat(63)}2`]));
    expect(timelock).toMatchObject({ kind: "custom", name: "TimelockUnexpectedOperationState" });
    expect(timelock.args[0]).toBe(op);
    const owner = decodeRevert(enc("OwnableUnauthorizedAccount", [ACCOUNT]));
    expect(owner).toMatchObject({ kind: "custom", message: `OwnableUnauthorizedAccount(${ACCOUNT})` });
    const role = decodeRevert(enc("AccessControlUnauthorizedAccount", [ACCOUNT, ROLE]));
    expect(role).toMatchObject({ kind: "custom", args: [ACCOUNT, ROLE] });
  });

  it("says what the module's UnexpectedResult means", () => {
    const [got, want] = [`0x${"02".repeat(32)}`, `0x${"01".repeat(32)}`];
    const r = decodeRevert(enc("UnexpectedResult", [got, want]));
    expect(r).toMatchObject({ kind: "subaccount", name: "UnexpectedResult", args: [got, want] });
    expect(r.message).toMatch(
      /^UnexpectedResult\(0x0202.*, 0x0101.*\): the call returned another result .* build it again$/,
    );
  });

  it("names OpenZeppelin's common errors", () => {
    expect(decodeRevert(enc("EnforcedPause")).message).toBe("EnforcedPause()");
    expect(decodeRevert(enc("ReentrancyGuardReentrantCall")).name).toBe("ReentrancyGuardReentrantCall");
  });

  it("reads a number as Aave's code only when Aave defines it", () => {
    expect(decodeRevert(enc("Error", ["36"]))).toMatchObject({
      kind: "aave",
      name: "COLLATERAL_CANNOT_COVER_NEW_BORROW",
    });
    expect(decodeRevert(enc("Error", ["999"]))).toMatchObject({ kind: "error", message: "999" });
  });

  it("gives an empty reason and Panic 0 a sentence", () => {
    expect(decodeRevert(enc("Error", [""]))).toMatchObject({
      kind: "error",
      message: "reverted with an empty reason string",
    });
    expect(decodeRevert(enc("Panic", [0n])).message).toBe("Panic 0x0: generic panic (inserted by the compiler)");
  });
});
