/**
 * Telling a node's failure to answer from a contract's answer: a call that reverted (viem wraps the
 * revert around the node's RpcRequestError) is an answer; one that never got through is not.
 */

/** Errors that say the call ran and reverted: viem wraps them around an RpcRequestError. */
const REVERTS = ["ContractFunctionRevertedError", "ExecutionRevertedError", "ContractFunctionZeroDataError"];

/** True when the failure is the transport's (unreachable, timeout, HTTP or RPC error), not a revert. */
export function isTransportError(e: unknown): boolean {
  let cur: unknown = e;
  for (let i = 0; i < 8 && cur; i++) {
    const name = (cur as { name?: string }).name ?? "";
    if (REVERTS.includes(name)) return false;
    if (
      [
        "HttpRequestError",
        "TimeoutError",
        "WebSocketRequestError",
        "RpcRequestError",
        "SocketClosedError",
        "InternalRpcError",
        "LimitExceededRpcError",
        "ResourceUnavailableRpcError",
        "MethodNotFoundRpcError",
      ].includes(name)
    )
      return true;
    const msg = (cur as { message?: string }).message ?? "";
    if (/fetch failed|ECONNREFUSED|ECONNRESET|timed out|took too long/i.test(msg)) return true;
    cur = (cur as { cause?: unknown }).cause;
  }
  return false;
}
