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

/** What nodes answer for state they do not keep (geth, Erigon, Nethermind, Reth, hosted providers). */
const NO_STATE =
  /missing trie node|historical state|state (history )?(is )?(not available|unavailable)|pruned|archive|header not found/i;

/**
 * True when the node answered that it does not keep the state asked for (a full node asked for
 * an old block): a lasting answer about the node, unlike a timeout or a rate limit, which the
 * same call would get past later.
 */
export function isMissingState(e: unknown): boolean {
  let cur: unknown = e;
  for (let i = 0; i < 8 && cur; i++) {
    const { message, details } = cur as { message?: unknown; details?: unknown };
    if (NO_STATE.test(`${String(message ?? "")} ${String(details ?? "")}`)) return true;
    cur = (cur as { cause?: unknown }).cause;
  }
  return false;
}
