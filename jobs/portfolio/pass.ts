/**
 * One run of the portfolio queue: the subaccounts' portfolio data (job.ts), their valuation
 * series (subaccounts/valuation.ts) and the lending vaults' days (lending/). Each step runs
 * whatever the others did: a chain that does not answer fails the two steps that read the
 * chains, not the lending vaults' days, which come from the indexed tables. The portfolio step
 * still writes the other chains' parts (job.ts) and fails after. The worker fails the job after
 * the pass when a step failed (BullMQ retries it), naming each failure.
 */
import { replaceLendingVaultDays } from "../lending/lending-vault-day-write.js";
import type { Db } from "../repo.js";
import { runSubaccountDays } from "../subaccounts/valuation.js";
import { runPortfolio } from "./job.js";

export interface PassFailure {
  step: "portfolio" | "subaccount days" | "lending vault days";
  error: unknown;
}

export async function portfolioPass(
  db: Db,
  cfg: { rpcUrls: ReadonlyMap<number, string>; indexerSchema: string; readLanes?: number },
  wholeLendingDays: boolean,
) {
  const failed: PassFailure[] = [];
  const step = async <T>(name: PassFailure["step"], run: () => Promise<T>): Promise<T | null> => {
    try {
      return await run();
    } catch (error) {
      failed.push({ step: name, error });
      return null;
    }
  };
  const portfolio = await step("portfolio", async () => {
    const out = await runPortfolio(db, cfg.rpcUrls, cfg.indexerSchema, cfg.readLanes);
    // written without the chains that failed: the step fails, the job is retried
    if (out.unread.length > 0) failed.push({ step: "portfolio", error: new Error(`unread ${out.unread.join("; ")}`) });
    return out;
  });
  const series = await step("subaccount days", () =>
    runSubaccountDays(db, cfg.indexerSchema, cfg.rpcUrls, cfg.readLanes),
  );
  const lendingVaultDays = await step("lending vault days", () =>
    replaceLendingVaultDays(db, cfg.indexerSchema, wholeLendingDays),
  );
  return { portfolio, series, lendingVaultDays, failed };
}

/** The error a pass with failed steps fails its job with: every step's message, the first as cause. */
export function passError(failed: readonly PassFailure[]): Error {
  const text = failed.map((f) => `${f.step}: ${(f.error as Error)?.message ?? String(f.error)}`).join("; ");
  return new Error(`portfolio pass: ${text}`, { cause: failed[0]?.error });
}
