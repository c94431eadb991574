/**
 * How far the derived tables are: per chain, the indexer checkpoint (block number and time) that
 * the workers' last completed run computed them from, and when it finished. A fan-out that finds
 * nothing to compute records the checkpoint it compared against; a run that computed something
 * records it once its points rollup is done and none of its batches failed (jobs/progress.ts).
 * The API's ping and the workers' metrics compare it with the indexer's own checkpoint.
 * FROZEN: once landed, never edit this file.
 */
import { type Kysely, sql } from "kysely";

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`
    CREATE TABLE derived.jobs_progress (
      chain_id integer PRIMARY KEY,
      block_number bigint NOT NULL,
      block_time timestamptz NOT NULL,
      computed_at timestamptz NOT NULL,
      run_id text
    )`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`DROP TABLE derived.jobs_progress`.execute(db);
}
