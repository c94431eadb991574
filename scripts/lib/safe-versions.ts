/**
 * Checks the registry's subaccount Safes against the chains before the indexer follows them: a
 * Safe 1.3.x emits its owner and module events with the address unindexed, and is followed by
 * sources of its own (ponder.config.ts) when the registry says so (`safeVersion`). Followed as a
 * later Safe, its EnabledModule would stop Ponder's sync; a later Safe followed as 1.3 would have
 * its owners and module missed. Each Safe's VERSION() is read on every indexed chain where it has
 * code (a Safe not yet deployed is checked when the registry next changes).
 */
import { type Address, BaseError, ContractFunctionRevertedError, createPublicClient, http, parseAbi } from "viem";
import type { IndexerPlan } from "../../config/indexer.js";
import { compareVersions, isSafeV130 } from "../../config/registry.js";
import { errMessage } from "./procs.js";

const VERSION_ABI = parseAbi(["function VERSION() view returns (string)"]);

export interface SafeVersionCheck {
  /** registry settings the chains contradict, each naming the fix */
  problems: string[];
  /** chains that could not be asked (a transport failure), with the error */
  unreachable: string[];
}

/** Whether a failed VERSION() call was answered by the chain (a revert: not a Safe). */
function reverted(err: unknown): boolean {
  return err instanceof BaseError && !!err.walk((e) => e instanceof ContractFunctionRevertedError);
}

export async function checkSafeVersions(plan: IndexerPlan): Promise<SafeVersionCheck> {
  const problems: string[] = [];
  const unreachable: string[] = [];
  const v130 = new Set(plan.safesV130);
  const where = `"safeVersion" in its vault's subaccountSettings (${plan.registry.path})`;
  await Promise.all(
    plan.chains.map(async (c) => {
      const client = createPublicClient({ transport: http(c.rpcUrl, { batch: true, retryCount: 2 }) });
      try {
        await Promise.all(
          plan.subaccounts.map(async (safe) => {
            const code = await client.getCode({ address: safe as Address });
            if (!code || code === "0x") return;
            let version: string;
            try {
              version = await client.readContract({ address: safe, abi: VERSION_ABI, functionName: "VERSION" });
            } catch (err) {
              if (reverted(err)) return; // not a Safe: nothing of a Safe's to follow
              throw err;
            }
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
            }
          }),
        );
      } catch (err) {
        unreachable.push(`chain ${c.id} (${c.rpcUrl}): ${errMessage(err).split("\n")[0]}`);
      }
    }),
  );
  return { problems: problems.sort(), unreachable };
}
