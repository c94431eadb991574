/**
 * The transaction that switches the `indexer` views, bounded in how long it waits for a lock.
 *
 * Re-creating a view needs its ACCESS EXCLUSIVE lock, which waits for every transaction reading
 * it (an analyst's long query, or a `BEGIN` left open). The views are switched one after another
 * in one transaction, so a switch waiting on one view already holds the ones it has redone, and
 * every reader of those (the API among them) would wait with it. Each attempt therefore waits at
 * most `lock_timeout` for a lock and then gives all of them back; the next attempt waits twice as
 * long (from 1 s up to 30 s), so a switch behind a steady stream of readers still gets its turn.
 */
import { setTimeout as sleep } from "node:timers/promises";
import type pg from "pg";

const LOCK_NOT_AVAILABLE = "55P03";

export interface SwitchWaits {
  firstMs?: number;
  maxMs?: number;
}

export async function inViewSwitch<T>(
  client: pg.ClientBase,
  fn: () => Promise<T>,
  waits: SwitchWaits = {},
): Promise<T> {
  const max = waits.maxMs ?? 30_000;
  for (let ms = waits.firstMs ?? 1_000; ; ms = Math.min(ms * 2, max)) {
    await client.query("BEGIN");
    try {
      await client.query(`SET LOCAL lock_timeout = ${Math.round(ms)}`);
      const out = await fn();
      await client.query("COMMIT");
      return out;
    } catch (err) {
      await client.query("ROLLBACK").catch(() => undefined);
      if ((err as { code?: string }).code !== LOCK_NOT_AVAILABLE) throw err;
    }
    // let the readers queued behind the attempt through before the next one
    await sleep(100);
  }
}
