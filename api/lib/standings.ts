/**
 * Points standings: every wallet's total, streak and ranks (derived.points_balance, a view that
 * computes them when read), held in memory for POINTS_STANDINGS_MS so the leaderboard and a
 * wallet's rank cost a lookup instead of ranking every wallet per request. One load at a time per
 * database. A copy is never served once it is POINTS_STANDINGS_MS old (its age counts from the
 * start of the read that made it, on the app's clock): past half the TTL a caller starts a reload
 * in the background and still gets the current copy; past the whole TTL callers wait for the
 * reload. With a TTL of 0 every call reads the view.
 */
import { sql } from "kysely";
import type { ReadDb } from "./db.js";

export interface Standing {
  wallet: string;
  total_points: string;
  streak_days: number;
  last_claim_day: string | null;
  top_vault: string | null;
  top_vault_chain_id: number | null;
  top_vault_lifetime_deposit: string | null;
  rank_total: number;
  rank_streak: number;
}

export interface Standings {
  /** index k holds rank k + 1 */
  byTotal: readonly Standing[];
  byStreak: readonly Standing[];
  byWallet: ReadonlyMap<string, Standing>;
  loadedAt: number;
}

interface Slot {
  current?: Standings;
  loading?: Promise<Standings>;
}
const slots = new WeakMap<object, Slot>();

async function load(db: ReadDb, now: () => number): Promise<Standings> {
  const loadedAt = now();
  const { rows } = await sql<Standing>`
    SELECT wallet, total_points::text AS total_points, streak_days, last_claim_day::text AS last_claim_day, top_vault,
           top_vault_chain_id, top_vault_lifetime_deposit::text AS top_vault_lifetime_deposit, rank_total, rank_streak
    FROM derived.points_balance`.execute(db);
  const byTotal: Standing[] = new Array(rows.length);
  const byStreak: Standing[] = new Array(rows.length);
  const byWallet = new Map<string, Standing>();
  for (const r of rows) {
    byTotal[r.rank_total - 1] = r;
    byStreak[r.rank_streak - 1] = r;
    byWallet.set(r.wallet, r);
  }
  return { byTotal, byStreak, byWallet, loadedAt };
}

/** The standings, at most `ttlMs` old on the clock `now` (ms). */
export async function standings(db: ReadDb, ttlMs: number, now: () => number = Date.now): Promise<Standings> {
  if (ttlMs <= 0) return load(db, now);
  let slot = slots.get(db);
  if (!slot) {
    slot = {};
    slots.set(db, slot);
  }
  const s = slot;
  const reload = () =>
    (s.loading ??= load(db, now).then(
      (fresh) => {
        s.current = fresh;
        s.loading = undefined;
        return fresh;
      },
      (err: unknown) => {
        s.loading = undefined;
        throw err;
      },
    ));
  const age = s.current ? now() - s.current.loadedAt : Number.POSITIVE_INFINITY;
  if (age >= ttlMs) return reload();
  // a failed background reload keeps the current copy; the next call retries
  if (age >= ttlMs / 2) void reload().catch(() => {});
  return s.current!;
}
