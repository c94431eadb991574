/**
 * Checks the registry's subaccount Safes against the chains before the indexer follows them: a
 * Safe 1.3.x emits its owner and module events with the address unindexed, and is followed by
 * sources of its own (ponder.config.ts) when the registry says so (`safeVersion`). Followed as a
 * later Safe, its EnabledModule would stop Ponder's sync; a later Safe followed as 1.3 would have
 * its owners and module missed. Each Safe's VERSION() is read on every indexed chain where it has
 * code (a Safe not yet deployed is checked when the registry next changes), and a later Safe's
 * also at the block it is followed from (or at its creation, when later): one migrated from 1.3
 * since has events of both kinds, which no source reads right, and is refused.
 */
import { type Address, BaseError, createPublicClient, fallback, http, type PublicClient, parseAbi } from "viem";
import { type IndexerPlan, subaccountsStart } from "../../config/indexer.js";
import { compareVersions, isSafeV130 } from "../../config/registry.js";
import { isTransportError } from "../../config/rpc-errors.js";
import { deploymentBlock } from "../../onchain/blocks.js";
import { errMessage } from "./procs.js";

const VERSION_ABI = parseAbi(["function VERSION() view returns (string)"]);

export interface SafeVersionCheck {
  /** registry settings the chains contradict, each naming the fix */
  problems: string[];
  /** chains none of whose RPC URLs could be asked (a transport failure), with the error */
  unreachable: string[];
}

/**
 * Whether a failed VERSION() call failed on the way (the node unreachable, or erring), not
 * answered by the contract (config/rpc-errors.ts): a revert, no data or data that is not a string
 * all say it is a contract but not a Safe. An error that is not viem's is not an answer either.
 */
export function transportFailure(err: unknown): boolean {
  return !(err instanceof BaseError) || isTransportError(err);
}

/**
 * A Safe's version at `blockNumber` (the head when absent): null where it has no code, or answers
 * VERSION() with no version (a contract, but not a Safe); throws on a transport failure.
 */
async function versionAt(client: PublicClient, safe: Address, blockNumber?: bigint): Promise<string | null> {
  const at = blockNumber === undefined ? {} : { blockNumber };
  const code = await client.getCode({ address: safe, ...at });
  if (!code || code === "0x") return null;
  let answer: string;
  try {
    answer = await client.readContract({ address: safe, abi: VERSION_ABI, functionName: "VERSION", ...at });
  } catch (err) {
    if (!transportFailure(err)) return null;
    throw err;
  }
  // a fork may add to it ("1.3.0+L2")
  return /^\d+\.\d+\.\d+/.exec(answer)?.[0] ?? null;
}

/**
 * A Safe's version at `from`, or where it was created when that was later (found by bisecting
 * its code, onchain/blocks.ts): the version its first followed events were emitted under.
 */
async function firstVersion(client: PublicClient, safe: Address, from: bigint) {
  const then = await versionAt(client, safe, from);
  if (then) return then;
  const created = await deploymentBlock(client, safe, await client.getBlockNumber());
  return created !== null && created > from ? versionAt(client, safe, created) : null;
}

export async function checkSafeVersions(plan: IndexerPlan): Promise<SafeVersionCheck> {
  const problems: string[] = [];
  const unreachable: string[] = [];
  const v130 = new Set(plan.safesV130);
  const where = `"safeVersion" in its vault's subaccountSettings (${plan.registry.path})`;
  await Promise.all(
    plan.chains.map(async (c) => {
      const transports = c.rpcUrls.map((url) => http(url, { batch: true, retryCount: 2 }));
      const client = createPublicClient({ transport: fallback(transports) });
      const from = subaccountsStart(c);
      try {
        await Promise.all(
          plan.subaccounts.map(async (safe) => {
            const version = await versionAt(client, safe);
            if (!version) return;
            const on = `subaccount ${safe} is a Safe ${version} on chain ${c.id}`;
            if (compareVersions(version, "1.3.0") < 0) {
              problems.push(`${on}: Safes before 1.3.0 are not supported`);
            } else if (isSafeV130(version) && !v130.has(safe)) {
              problems.push(
                `${on}: set ${where} to "${version}" (its owner and module events are unindexed, ` +
                  "and followed as a later Safe's they would stop the indexer)",
              );
            } else if (!isSafeV130(version) && v130.has(safe)) {
              problems.push(`${on}, not 1.3: remove or correct ${where}`);
            } else if (!isSafeV130(version)) {
              // migrated from 1.3 since the block it is followed from, or since its creation
              // after it: its 1.3 events would be read as a later Safe's (where the node keeps no
              // state that old, nothing is known)
              const then = await firstVersion(client, safe, BigInt(from)).catch(() => null);
              if (then && isSafeV130(then)) {
                problems.push(
                  `${on}, migrated from ${then} since block ${from}, where it is followed from: a Safe ` +
                    "that changed version within the followed blocks is not supported; leave it out",
                );
              }
            }
          }),
        );
      } catch (err) {
        unreachable.push(`chain ${c.id} (${c.rpcUrls.join(", ")}): ${errMessage(err).split("\n")[0]}`);
      }
    }),
  );
  return { problems: problems.sort(), unreachable };
}
