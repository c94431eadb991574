import { createRoute, z } from "@hono/zod-openapi";
import { ErrorSchema } from "../../lib/errors.js";
import { errorResponses, openReadAuthResponses } from "../../lib/router.js";
import { openRoute } from "../../middleware/auth.js";

export const HealthSchema = z.object({ status: z.literal("ok"), version: z.string(), time: z.string() }).openapi("Health");

export const PingSchema = z
  .object({
    status: z.enum(["ok", "degraded", "down"]),
    version: z.string(),
    time: z.string(),
    checks: z.object({
      database: z.object({ ok: z.boolean(), latency_ms: z.number().nullable(), error: z.string().nullable() }),
      rpc: z.array(z.object({ chain_id: z.number().int(), ok: z.boolean(), head: z.number().int().nullable(), error: z.string().nullable() })),
      indexer: z.array(z.object({ chain_id: z.number().int(), indexed_block: z.number().int().nullable(), head: z.number().int().nullable(), lag_blocks: z.number().int().nullable() })),
      jobs: z.object({ last_computed_at: z.string().nullable(), oldest_vault_cached_at: z.string().nullable(), age_seconds: z.number().nullable() }),
    }),
  })
  .openapi("Ping");

export const root = createRoute({
  method: "get",
  path: "/",
  tags: ["system"],
  summary: "Health of the public surface",
  ...openRoute,
  responses: { 200: { description: "The service answers", content: { "application/json": { schema: HealthSchema } } }, ...openReadAuthResponses, ...errorResponses },
});

export const ping = createRoute({
  method: "get",
  path: "/ping",
  tags: ["system"],
  summary: "Health: database (critical), chain RPC (non-critical), indexer lag, job freshness",
  description: "200 with `status` `ok`, or `degraded` when a chain RPC fails or lags; 503 with `status` `down` when the database cannot be reached.",
  ...openRoute,
  responses: {
    200: { description: "Up (ok or degraded)", content: { "application/json": { schema: PingSchema } } },
    503: { description: "Database down", content: { "application/json": { schema: PingSchema.or(ErrorSchema) } } },
    ...openReadAuthResponses, ...errorResponses,
  },
});
