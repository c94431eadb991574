/**
 * The transaction every builder returns: a call of the subaccount's SubaccountModule, which makes
 * the inner protocol calls as the Safe. One inner call without approvals is `execute`; with
 * approvals `executeWithApprovals`; several calls `executeBatch`. Approvals are exact and the
 * module resets them to 0 after the calls, so nothing lingers. One call whose result the builder
 * promises (`expect`: a bridge deposit's core hash) is `executeExpecting`: the transaction
 * reverts (`UnexpectedResult`) rather than return anything else.
 */
import { type Abi, type Address, encodeFunctionData, type Hex } from "viem";
import { SubaccountModuleAbi } from "../../../abis/SubaccountModuleAbi.js";

export interface InnerCall {
  target: Address;
  value: bigint;
  data: Hex;
  /** what the call does, for people */
  description: string;
}

export interface Approval {
  token: Address;
  spender: Address;
  amount: bigint;
}

export interface ModuleTransaction {
  target: Address;
  data: Hex;
  value: bigint;
  calls: InnerCall[];
  approvals: Approval[];
}

const abi = SubaccountModuleAbi as Abi;

export function moduleTransaction(
  module: Address,
  calls: readonly InnerCall[],
  approvals: readonly Approval[] = [],
  options: { expect?: Hex } = {},
): ModuleTransaction {
  if (calls.length === 0) throw new Error("a module transaction needs at least one call");
  const approvalArgs = approvals.map((a) => ({ token: a.token, spender: a.spender, amount: a.amount }));
  let data: Hex;
  if (options.expect !== undefined) {
    if (calls.length !== 1) throw new Error("an expected result pins one call");
    const c = calls[0]!;
    data = encodeFunctionData({
      abi,
      functionName: "executeExpecting",
      args: [approvalArgs, c.target, c.value, c.data, options.expect],
    });
  } else if (calls.length === 1) {
    const c = calls[0]!;
    data =
      approvals.length === 0
        ? encodeFunctionData({ abi, functionName: "execute", args: [c.target, c.value, c.data] })
        : encodeFunctionData({
            abi,
            functionName: "executeWithApprovals",
            args: [approvalArgs, c.target, c.value, c.data],
          });
  } else {
    const callArgs = calls.map((c) => ({ target: c.target, value: c.value, data: c.data }));
    data = encodeFunctionData({ abi, functionName: "executeBatch", args: [approvalArgs, callArgs] });
  }
  // the module forwards value from the Safe's own balance: the transaction itself carries none
  return { target: module, data, value: 0n, calls: [...calls], approvals: [...approvals] };
}
