/**
 * POST /api/v1/platform/strategy_apy: stores strategy APY snapshots (201 with the rows as read).
 * Takes an API key or an operator's bearer token (POST /api/v1/token) with `strategy_apy:write`.
 */
import { createRoute, type RouteHandler, z } from "@hono/zod-openapi";
import { sql } from "kysely";
import {
  type AppEnv,
  IdempotencyHeader,
  jsonResponse,
  laxInt,
  laxNumber,
  PgText,
  VaultAddress,
  writeResponses,
} from "../../lib/router.js";
import { Refusal, runWrite } from "../../lib/writes.js";
import { requireScope } from "../../middleware/auth.js";
import { snapshotRead } from "./platform.handlers.js";
import { normAddress } from "./platform.lib.js";
import { StrategyApySnapshotReadSchema } from "./platform.schemas.js";

// zod 4 numbers are finite
const finite = (description: string) => laxNumber(z.number()).openapi({ description });

export const StrategyApySnapshotCreateSchema = z
  .object({
    vault_address: VaultAddress,
    // any chain id: non-EVM vaults of the registry have ids 0 and below; an unknown one is vault_not_found
    chain: laxInt(z.number().int()).openapi({ description: "Chain id of the vault (0 and below: non-EVM chains)" }),
    platform_name: PgText().trim().min(1).max(200),
    strategy_type: PgText().trim().min(1).max(200),
    allocation: finite("Share of the vault's assets in this strategy"),
    apy: finite("APY of the strategy"),
    points_apy: finite("APY-equivalent of the points the strategy earns"),
  })
  .openapi("StrategyApySnapshotCreate");

// typed as OpenAPI security requirements: a literal union of two shapes defeats the route's typing
const keyOrToken: Record<string, string[]>[] = [{ ApiKeyHeader: [] }, { OAuth2Password: ["strategy_apy:write"] }];

export const strategyApyCreate = createRoute({
  method: "post",
  path: "/platform/strategy_apy",
  tags: ["platform"],
  summary: "Store strategy APY snapshots",
  description:
    "Requires an API key (`x-api-key`) or a bearer token from `POST /api/v1/token`, with the scope " +
    "`strategy_apy:write`. Stores every snapshot of the array in one transaction (all or none), stamped with the " +
    "time of the request; `strategist_address` is the vault's strategist's address from the registry. Answers 201 " +
    "with the snapshots as read.\n\nRefusals (`code`): 404 `vault_not_found` (a snapshot names a vault that is not " +
    "in the registry on that chain; nothing is stored).",
  middleware: [requireScope("strategy_apy:write", { bearer: true })] as const,
  security: keyOrToken,
  request: {
    headers: IdempotencyHeader,
    body: {
      required: true,
      content: {
        "application/json": {
          schema: z
            .array(StrategyApySnapshotCreateSchema)
            .min(1)
            .max(1000)
            .openapi({
              example: [
                {
                  vault_address: "0x2c622344b5dc29dccc034ca76f123d4479d24122",
                  chain: 1,
                  platform_name: "Aave",
                  strategy_type: "lending",
                  allocation: 0.6,
                  apy: 0.052,
                  points_apy: 0,
                },
              ],
            }),
        },
      },
    },
  },
  responses: {
    201: jsonResponse("The stored snapshots", z.array(StrategyApySnapshotReadSchema)),
    ...writeResponses({ 404: "`vault_not_found`" }),
  },
});

export const strategyApyCreateHandler: RouteHandler<typeof strategyApyCreate, AppEnv> = async (c) => {
  const items = c.req.valid("json").map((s) => ({ ...s, vault_address: normAddress(s.vault_address) }));
  const at = c.var.deps.now();
  return runWrite(c, "strategy_apy.create", items, async (trx) => {
    const keys = [...new Set(items.map((s) => `${s.chain}:${s.vault_address}`))];
    const known = await sql<{ k: string; strategist_address: string | null }>`
      SELECT v.chain_id || ':' || v.address AS k, s.address AS strategist_address
      FROM registry.vault v LEFT JOIN registry.strategist s ON s.id = v.strategist_id
      WHERE v.chain_id || ':' || v.address = ANY(${keys})`.execute(trx);
    const strategist = new Map(known.rows.map((r) => [r.k, r.strategist_address]));
    const missing = keys.filter((k) => !strategist.has(k));
    if (missing.length)
      throw new Refusal(404, "vault_not_found", `Not vaults of the registry (chain:address): ${missing.join(", ")}`);
    const rows = await trx
      .insertInto("registry.strategy_apy_snapshot")
      .values(
        items.map((s) => ({
          ...s,
          strategist_address: strategist.get(`${s.chain}:${s.vault_address}`) ?? null,
          snapshot_datetime: at,
        })),
      )
      .returningAll()
      .execute();
    return {
      status: 201 as const,
      body: rows.map(snapshotRead),
      target: keys.join(","),
      detail: { snapshots: rows.length, ids: rows.map((r) => r.id) },
    };
  });
};
