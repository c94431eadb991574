/**
 * On-chain enrichment of governance accounts, read through the chain's RPC URL
 * (`deps.config.rpcUrls`) with a short timeout: whether an account is a contract, a Safe-like
 * multisig (`getOwners()`, `getThreshold()`, `VERSION()`) or a timelock (`getMinDelay()`), and a
 * timelock's minimum delay.
 * Never throws: every failure comes back as a degraded result with a reason.
 */
import {
  type Address,
  BaseError,
  ContractFunctionRevertedError,
  createPublicClient,
  http,
  type PublicClient,
  parseAbi,
} from "viem";
import { TimelockControllerAbi } from "../../../abis/TimelockControllerAbi.js";
import { isTransportError } from "../../../config/rpc-errors.js";
import { rpcFetch } from "../../../onchain/rpc-fetch.js";
import { publicMessage } from "../../lib/public-error.js";

/** The views of a Safe (1.x) the roles route reads: owners, threshold and version. */
export const SAFE_VIEWS = parseAbi([
  "function getOwners() view returns (address[])",
  "function getThreshold() view returns (uint256)",
  "function VERSION() view returns (string)",
]);

export const RPC_TIMEOUT_MS = 2500;

const clients = new Map<string, PublicClient>();
function clientFor(url: string): PublicClient {
  let c = clients.get(url);
  if (!c) {
    // one JSON-RPC batch per enrichment; no retries: a slow or dead RPC only degrades the answer
    c = createPublicClient({
      transport: http(url, { timeout: RPC_TIMEOUT_MS, retryCount: 0, batch: { wait: 0 }, fetchFn: rpcFetch as never }),
    }) as PublicClient;
    clients.set(url, c);
  }
  return c;
}

export type AccountType = "eoa" | "multisig" | "contract" | "timelock" | "zero_address" | "unknown";

export interface AccountInfo {
  account_type: AccountType;
  is_safe: boolean;
  safe_version: string | null;
  owners: string[] | null;
  threshold: number | null;
  /** why the metadata could not be read (RPC failure), else null */
  error: string | null;
}

const ZERO = "0x0000000000000000000000000000000000000000";
const short = (e: unknown) => publicMessage(e).replace(/\.$/, "").slice(0, 160);

const degraded = (account_type: AccountType, error: string | null): AccountInfo => ({
  account_type,
  is_safe: false,
  safe_version: null,
  owners: null,
  threshold: null,
  error,
});

/** Reads one account: code, then the multisig and timelock views. */
export async function readAccount(rpcUrl: string | undefined, address: string): Promise<AccountInfo> {
  if (address === ZERO) return degraded("zero_address", null);
  if (!rpcUrl) return degraded("unknown", "no RPC URL is configured for the chain");
  const client = clientFor(rpcUrl);
  const addr = address as Address;
  let code: string | undefined;
  try {
    code = await client.getCode({ address: addr });
  } catch (e) {
    return degraded("unknown", `RPC failure: ${short(e)}`);
  }
  if (!code || code === "0x") return degraded("eoa", null);
  const [owners, threshold, version, minDelay] = await Promise.allSettled([
    client.readContract({ address: addr, abi: SAFE_VIEWS, functionName: "getOwners" }),
    client.readContract({ address: addr, abi: SAFE_VIEWS, functionName: "getThreshold" }),
    client.readContract({ address: addr, abi: SAFE_VIEWS, functionName: "VERSION" }),
    client.readContract({ address: addr, abi: TimelockControllerAbi, functionName: "getMinDelay" }),
  ]);
  const reads = [owners, threshold, version, minDelay];
  const transport = reads.find((r) => r.status === "rejected" && isTransportError(r.reason)) as
    | PromiseRejectedResult
    | undefined;
  if (transport) return degraded("unknown", `RPC failure: ${short(transport.reason)}`);
  if (owners.status !== "fulfilled" || threshold.status !== "fulfilled") {
    // a TimelockController answers getMinDelay()
    return degraded(minDelay.status === "fulfilled" ? "timelock" : "contract", null);
  }
  const v = version.status === "fulfilled" && typeof version.value === "string" ? version.value : null;
  return {
    account_type: "multisig",
    // a Safe answers VERSION() with a semantic version ("1.3.0", "1.4.1")
    is_safe: v != null && /^\d+\.\d+\.\d+/.test(v),
    safe_version: v,
    owners: (owners.value as readonly string[]).map((o) => o.toLowerCase()),
    threshold: Number(threshold.value),
    error: null,
  };
}

/** A TimelockController's current minimum delay in seconds, or the reason it could not be read. */
export async function readMinDelay(
  rpcUrl: string | undefined,
  timelock: string,
): Promise<{ value: number | null; error: string | null }> {
  if (!rpcUrl) return { value: null, error: "no RPC URL is configured for the chain" };
  try {
    const d = await clientFor(rpcUrl).readContract({
      address: timelock as Address,
      abi: TimelockControllerAbi,
      functionName: "getMinDelay",
    });
    return { value: Number(d), error: null };
  } catch (e) {
    return {
      value: null,
      error: isTransportError(e) ? `RPC failure: ${short(e)}` : `getMinDelay() failed: ${short(e)}`,
    };
  }
}

const OWNER_VIEW = parseAbi(["function owner() view returns (address)"]);

/**
 * What `owner()` answers now, for an erc4626 vault whose ownership events were not indexed (its
 * registry start block after its deployment): the owner; `exposed: false` when the call reverts
 * (the vault has no Ownable); an error when the RPC failed.
 */
export async function readOwner(
  rpcUrl: string | undefined,
  vault: string,
): Promise<{ owner: string | null; exposed: boolean | null; error: string | null }> {
  if (!rpcUrl) return { owner: null, exposed: null, error: "no RPC URL is configured for the chain" };
  try {
    const o = await clientFor(rpcUrl).readContract({
      address: vault as Address,
      abi: OWNER_VIEW,
      functionName: "owner",
    });
    return { owner: o.toLowerCase(), exposed: true, error: null };
  } catch (e) {
    // a node reports a revert as an RPC error too: the revert is looked for first
    const reverted = e instanceof BaseError && e.walk((x) => x instanceof ContractFunctionRevertedError) != null;
    if (!reverted && isTransportError(e)) return { owner: null, exposed: null, error: `RPC failure: ${short(e)}` };
    return { owner: null, exposed: false, error: null };
  }
}
