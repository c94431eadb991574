import type { RouteHandler } from "@hono/zod-openapi";
import { sql } from "kysely";
import type { ChainCheckpoint, ChainProgress } from "../../../db/progress.js";
import { chainHead, lagBetween, readCheckpoints, readProgress } from "../../../db/progress.js";
import { withDeadline } from "../../lib/deadline.js";
import { databaseFailure, publicMessage } from "../../lib/public-error.js";
import type { AppEnv } from "../../lib/router.js";
import { API_VERSION } from "../../version.js";
import type { ping, root } from "./system.routes.js";

export const rootHandler: RouteHandler<typeof root, AppEnv> = (c) =>
  c.json({ status: "ok" as const, version: API_VERSION, time: c.var.deps.now().toISOString() }, 200);

const iso = (d: Date | undefined) => d?.toISOString() ?? null;

/** How long the ping waits for the database's `SELECT 1`: a health check answers within seconds. */
export const PING_DB_TIMEOUT_MS = 3_000;

export const pingHandler: RouteHandler<typeof ping, AppEnv> = async (c) => {
  const { db, config, now } = c.var.deps;
  const t0 = performance.now();
  // an open route: it states what failed, the log has the error itself
  const failed = (what: string, err: unknown) => c.var.log.warn({ err, reqId: c.var.requestId }, `ping: ${what}`);
  const error = await withDeadline(
    PING_DB_TIMEOUT_MS,
    () =>
      sql`SELECT 1`.execute(db).then(
        () => null,
        (err: unknown) => {
          failed("the database failed", err);
          return databaseFailure(err);
        },
      ),
    () => `the database did not answer within ${PING_DB_TIMEOUT_MS / 1000} s`,
  );
  const database = {
    ok: error === null,
    latency_ms: error === null ? +(performance.now() - t0).toFixed(1) : null,
    error,
  };
  const heads = new Map<number, { block: number; time: Date }>();
  const rpc = await Promise.all(
    [...config.rpcUrls].map(async ([chainId, url]) => {
      try {
        const h = await chainHead(url);
        heads.set(chainId, h);
        return { chain_id: chainId, ok: true, head: h.block, head_time: iso(h.time), error: null };
      } catch (e) {
        failed(`chain ${chainId}'s RPC failed`, e);
        return { chain_id: chainId, ok: false, head: null, head_time: null, error: publicMessage(e) };
      }
    }),
  );
  // Before the indexer's views or the derived tables exist (a first start), both read as empty.
  let checkpoints: ChainCheckpoint[] = [];
  let progress: ChainProgress[] = [];
  if (database.ok) {
    [checkpoints, progress] = await Promise.all([
      readCheckpoints(db, config.indexerSchema).catch(() => []),
      readProgress(db).catch(() => []),
    ]);
  }
  const indexed = new Map(checkpoints.map((x) => [x.chainId, x]));
  const computed = new Map(progress.map((x) => [x.chainId, x]));
  const chains = [...new Set([...indexed.keys(), ...config.rpcUrls.keys()])].sort((a, b) => a - b);
  const indexer = chains.map((id) => {
    const cp = indexed.get(id);
    const head = heads.get(id);
    const lag = cp && head ? lagBetween(cp, head) : null;
    return {
      chain_id: id,
      indexed_block: cp?.block ?? null,
      indexed_block_time: iso(cp?.time),
      head: head?.block ?? null,
      lag_blocks: lag?.blocks ?? null,
      lag_seconds: lag?.seconds ?? null,
    };
  });
  const jobChains = [...new Set([...indexed.keys(), ...computed.keys()])]
    .sort((a, b) => a - b)
    .map((id) => {
      const p = computed.get(id);
      const cp = indexed.get(id);
      const lag = p && cp ? lagBetween(p, cp) : null;
      return {
        chain_id: id,
        computed_block: p?.block ?? null,
        computed_block_time: iso(p?.time),
        computed_at: iso(p?.computedAt),
        lag_blocks: lag?.blocks ?? null,
        lag_seconds: lag?.seconds ?? null,
      };
    });
  const newest = progress.reduce<Date | undefined>((m, p) => (m && m > p.computedAt ? m : p.computedAt), undefined);
  const lags = jobChains.flatMap((j) => (j.lag_seconds != null ? [j.lag_seconds] : []));
  const jobs = {
    last_computed_at: iso(newest),
    lag_seconds: lags.length ? Math.max(...lags) : null,
    chains: jobChains,
  };
  const status = !database.ok ? "down" : rpc.some((r) => !r.ok) ? "degraded" : "ok";
  const checks = { database, rpc, indexer, jobs };
  const body = { status, version: API_VERSION, time: now().toISOString(), checks } as const;
  return database.ok ? c.json(body, 200) : c.json(body, 503);
};
