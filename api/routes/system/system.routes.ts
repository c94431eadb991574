import { createRoute, z } from "@hono/zod-openapi";
import { ErrorSchema } from "../../lib/errors.js";
import { errorResponses } from "../../lib/router.js";
import { healthRoute } from "../../middleware/auth.js";

export const HealthSchema = z
  .object({ status: z.literal("ok"), version: z.string(), time: z.string() })
  .openapi("Health");

const Iso = (description: string) => z.string().nullable().openapi({ format: "date-time", description });
const Blocks = (description: string) => z.number().int().nullable().openapi({ description });
const Seconds = (description: string) => z.number().int().nullable().openapi({ description });

const RpcCheck = z.object({
  chain_id: z.number().int(),
  ok: z.boolean(),
  head: Blocks("the chain's newest block number"),
  head_time: Iso("its timestamp"),
  error: z.string().nullable(),
});

const IndexerCheck = z.object({
  chain_id: z.number().int(),
  indexed_block: Blocks("the indexer's checkpoint: the newest block it has processed, with or without events"),
  indexed_block_time: Iso("that block's timestamp"),
  head: Blocks("the chain's newest block (null when its RPC fails)"),
  lag_blocks: Blocks("head - indexed_block"),
  lag_seconds: Seconds("head's timestamp - indexed_block's timestamp: 0 on a quiet chain that is indexed to its head"),
});

const JobsChain = z.object({
  chain_id: z.number().int(),
  computed_block: Blocks("the indexer checkpoint the derived tables are computed from (the last completed run's)"),
  computed_block_time: Iso("that block's timestamp"),
  computed_at: Iso("when that run finished, or the last fan-out that found nothing new to compute"),
  lag_blocks: Blocks("indexed_block - computed_block: blocks indexed that the derived tables do not reflect yet"),
  lag_seconds: Seconds("indexed_block_time - computed_block_time, in chain time"),
});

export const PingSchema = z
  .object({
    status: z.enum(["ok", "degraded", "down"]),
    version: z.string(),
    time: z.string(),
    checks: z.object({
      database: z.object({ ok: z.boolean(), latency_ms: z.number().nullable(), error: z.string().nullable() }),
      rpc: z.array(RpcCheck),
      indexer: z.array(IndexerCheck),
      jobs: z.object({
        last_computed_at: Iso("the newest `computed_at` of `chains` (null before the first completed run)"),
        lag_seconds: Seconds("the largest `lag_seconds` of `chains`"),
        chains: z.array(JobsChain),
      }),
    }),
  })
  .openapi("Ping");

export const root = createRoute({
  method: "get",
  path: "/",
  tags: ["system"],
  summary: "Health of the public surface",
  description:
    "Answers while the process serves requests, with the interface version and the time; GET " +
    "/api/v1/ping checks the database, the chains, the indexer and the jobs.",
  ...healthRoute,
  responses: {
    200: { description: "The service answers", content: { "application/json": { schema: HealthSchema } } },
    ...errorResponses,
  },
});

export const ping = createRoute({
  method: "get",
  path: "/ping",
  tags: ["system"],
  summary: "Health: database (critical), chain RPC (non-critical), indexer lag, job freshness",
  description: [
    "200 with `status` `ok`, or `degraded` when a chain's RPC fails; 503 with `status` `down` when the",
    "database cannot be reached. Lags are measured on the chain's own blocks, so a quiet chain whose indexer",
    "and jobs are up to date reads 0 however long ago its last block was: `indexer` compares the indexer's",
    "checkpoint (Ponder's `_ponder_checkpoint`) with the chain's head, `jobs` compares the checkpoint the",
    "derived tables were computed from (`derived.jobs_progress`) with the indexer's.",
  ].join(" "),
  ...healthRoute,
  responses: {
    200: { description: "Up (ok or degraded)", content: { "application/json": { schema: PingSchema } } },
    503: { description: "Database down", content: { "application/json": { schema: PingSchema.or(ErrorSchema) } } },
    ...errorResponses,
  },
});
