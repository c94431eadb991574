/**
 * Telling a node's failure to answer from a contract's answer: a call that reverted (viem wraps the
 * revert around the node's RpcRequestError) is an answer; one that never got through is not.
 */

/** Errors that say the call ran and reverted: viem wraps them around an RpcRequestError. */
const REVERTS = ["ContractFunctionRevertedError", "ExecutionRevertedError", "ContractFunctionZeroDataError"];

/** `e` and its causes, outermost first (at most 8: viem nests a few levels). */
function* causes(e: unknown): Generator<unknown> {
  let cur: unknown = e;
  for (let i = 0; i < 8 && cur; i++) {
    yield cur;
    cur = (cur as { cause?: unknown }).cause;
  }
}

/** True when the failure is the transport's (unreachable, timeout, HTTP or RPC error), not a revert. */
export function isTransportError(e: unknown): boolean {
  for (const cur of causes(e)) {
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
  for (const cur of causes(e)) {
    const { message, details } = cur as { message?: unknown; details?: unknown };
    if (NO_STATE.test(`${String(message ?? "")} ${String(details ?? "")}`)) return true;
  }
  return false;
}

/**
 * A failure the same read may get past later (a timeout, a rate limit, an unreachable node), not
 * the contract's answer nor the node's lasting one that it keeps no such state. A read whose
 * answer is stored once throws on it rather than store a fallback.
 */
export const failsForNow = (e: unknown): boolean => isTransportError(e) && !isMissingState(e);
