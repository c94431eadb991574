import type { RouteHandler } from "@hono/zod-openapi";
import { sql } from "kysely";
import { API_VERSION } from "../../version.js";
import { indexer } from "../../lib/db.js";
import type { AppEnv } from "../../lib/router.js";
import type { ping, root } from "./system.routes.js";

export const rootHandler: RouteHandler<typeof root, AppEnv> = (c) => c.json({ status: "ok" as const, version: API_VERSION, time: c.var.deps.now().toISOString() }, 200);

async function rpcHead(url: string, timeoutMs = 1500): Promise<number> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method: "eth_blockNumber", params: [] }),
    signal: AbortSignal.timeout(timeoutMs),
  });
  const body = (await res.json()) as { result?: string; error?: { message: string } };
  if (!body.result) throw new Error(body.error?.message ?? `HTTP ${res.status}`);
  return Number(BigInt(body.result));
}

const errText = (e: unknown) => (e instanceof Error ? e.message : String(e)).slice(0, 200);

export const pingHandler: RouteHandler<typeof ping, AppEnv> = async (c) => {
  const { db, config, now } = c.var.deps;
  const t0 = performance.now();
  const database = { ok: true, latency_ms: null as number | null, error: null as string | null };
  try {
    await sql`SELECT 1`.execute(db as never);
    database.latency_ms = +(performance.now() - t0).toFixed(1);
  } catch (e) {
    database.ok = false;
    database.error = errText(e);
  }
  const rpc = await Promise.all(
    [...config.rpcUrls].map(async ([chainId, url]) => {
      try {
        return { chain_id: chainId, ok: true, head: await rpcHead(url), error: null };
      } catch (e) {
        return { chain_id: chainId, ok: false, head: null, error: errText(e) };
      }
    }),
  );
  const indexed = new Map<number, number>();
  const jobs = { last_computed_at: null as string | null, oldest_vault_cached_at: null as string | null, age_seconds: null as number | null };
  if (database.ok) {
    try {
      const rows = await indexer(db, config.indexerSchema)
        .selectFrom("vault")
        .select(["chain_id", (eb) => eb.fn.max("last_snapshot_block").as("b")])
        .groupBy("chain_id")
        .execute();
      for (const r of rows) if (r.b != null) indexed.set(r.chain_id, Number(r.b));
      const m = await db
        .selectFrom("derived.vault_metrics")
        .select([(eb) => eb.fn.max("apy_computed_at").as("last"), (eb) => eb.fn.min("cached_at").as("oldest")])
        .executeTakeFirst();
      if (m?.last) {
        jobs.last_computed_at = new Date(m.last as Date).toISOString();
        jobs.oldest_vault_cached_at = m.oldest ? new Date(m.oldest as Date).toISOString() : null;
        jobs.age_seconds = Math.round((now().getTime() - new Date((m.oldest ?? m.last) as Date).getTime()) / 1000);
      }
    } catch {
      // views or derived tables not there yet (first start): reported as nulls
    }
  }
  const chains = [...new Set([...indexed.keys(), ...config.rpcUrls.keys()])].sort((a, b) => a - b);
  const idx = chains.map((id) => {
    const head = rpc.find((r) => r.chain_id === id)?.head ?? null;
    const b = indexed.get(id) ?? null;
    return { chain_id: id, indexed_block: b, head, lag_blocks: head != null && b != null ? Math.max(0, head - b) : null };
  });
  const status = !database.ok ? "down" : rpc.some((r) => !r.ok) ? "degraded" : "ok";
  const body = { status, version: API_VERSION, time: now().toISOString(), checks: { database, rpc, indexer: idx, jobs } } as const;
  return database.ok ? c.json(body, 200) : c.json(body, 503);
};
