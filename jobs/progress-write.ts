/** The one writer of derived.jobs_progress: how far the workers' last completed run got. */
import type { Insertable, Kysely } from "kysely";
import type { ChainCheckpoint } from "../db/progress.js";
import type { Database, JobsProgressTable } from "../db/schema.js";

/**
 * Records that the derived tables are computed from `seen` (the checkpoints read before the
 * run's inputs were): one row per chain, chains no longer indexed dropped. Nothing is recorded
 * when the indexer had no checkpoint to show.
 */
export async function recordProgress(
  db: Kysely<Database>,
  seen: readonly ChainCheckpoint[],
  at: Date,
  runId: string | null,
): Promise<void> {
  if (seen.length === 0) return;
  const rows: Insertable<JobsProgressTable>[] = seen.map((c) => ({
    chain_id: c.chainId,
    block_number: String(c.block),
    block_time: c.time,
    computed_at: at,
    run_id: runId,
  }));
  await db.transaction().execute(async (trx) => {
    await trx
      .deleteFrom("derived.jobs_progress")
      .where(
        "chain_id",
        "not in",
        seen.map((c) => c.chainId),
      )
      .execute();
    await trx
      .insertInto("derived.jobs_progress")
      .values(rows)
      .onConflict((oc) =>
        oc.column("chain_id").doUpdateSet((eb) => ({
          block_number: eb.ref("excluded.block_number"),
          block_time: eb.ref("excluded.block_time"),
          computed_at: eb.ref("excluded.computed_at"),
          run_id: eb.ref("excluded.run_id"),
        })),
      )
      .execute();
  });
}
