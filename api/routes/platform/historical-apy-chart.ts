/**
 * GET /api/v1/platform/historical_apy/chart (deprecated): a vault's daily trailing-APY chart from
 * its stored daily ratios (db/chart.ts), its last point the vault's published historical APY.
 */
import { createRoute, type RouteHandler, z } from "@hono/zod-openapi";
import { sql } from "kysely";
import { apyChart } from "../../../db/chart.js";
import { dateToDay, dayToDate } from "../../../db/days.js";
import { requestedChain, servedChain, vaultChainQuery } from "../../lib/chain.js";
import { ErrorSchema } from "../../lib/errors.js";
import {
  type AppEnv,
  errorResponses,
  jsonResponse,
  openReadAuthResponses,
  openReadSecurity,
  QueryBool,
  QueryInt,
  VaultAddress,
  vaultJsonResponse,
} from "../../lib/router.js";
import { findVault } from "../../lib/vaults.js";
import { readKey } from "../../middleware/auth.js";

const FRACTION = "A fraction: 0.05 is 5 % (annualized for an APY).";

export const ChartQuery = vaultChainQuery({
  vault_address: VaultAddress,
  days_ago: QueryInt({ def: 30, min: -1 }).openapi({
    type: "integer",
    default: 30,
    minimum: -1,
    description: "The last `days_ago` days; -1 gives the whole series since inception.",
  }),
  averaging_period_in_days: QueryInt({ def: 7, min: 2 }).openapi({
    type: "integer",
    default: 7,
    minimum: 2,
    description: "Trailing period of each point's APY, in days.",
  }),
  apply_smoothing: QueryBool(true).openapi({
    description: "3-day centred moving average on every point but the last.",
  }),
});

export const ChartSchema = z
  .object({
    data: z.object({
      labels: z.array(z.string().openapi({ format: "date" })),
      values: z.array(z.number()).openapi({ description: `Each day's trailing APY. ${FRACTION}` }),
    }),
    average_apy: z.number().openapi({ description: `Mean of \`values\`; 0 for an empty series. ${FRACTION}` }),
    status: z.number().int(),
    error: z.string().nullable(),
    chain_id: z.number().int().openapi({ description: "Chain of the vault served" }),
  })
  .openapi("HistoricalApyChart");

const inst = { middleware: [readKey], security: openReadSecurity };
const notFoundResponse = { 404: jsonResponse("Unknown vault", ErrorSchema) };

export const historicalApyChart = createRoute({
  method: "get",
  path: "/platform/historical_apy/chart",
  tags: ["platform"],
  summary: "Historical APY chart (deprecated)",
  description:
    "One point per calendar day (the last `days_ago` days, or since inception with -1): the simple APY over the " +
    "preceding `averaging_period_in_days` days, missing days carried (a day without supply has no point). The last " +
    "point equals the vault's published `historical_apy` for that horizon; smoothing (3-day centred mean of the " +
    "days with a value, the day before the window included, so a day's value does not depend on `days_ago`) never " +
    "changes the last point. `average_apy` is the mean of the values (0 when empty). Deprecated: use " +
    "`/tokenized_vault/{vault_address}/historical-timeseries`.",
  deprecated: true,
  ...inst,
  request: { query: ChartQuery },
  responses: {
    200: vaultJsonResponse("Chart series", ChartSchema),
    ...notFoundResponse,
    ...openReadAuthResponses,
    ...errorResponses,
  },
});

export const historicalApyChartHandler: RouteHandler<typeof historicalApyChart, AppEnv> = async (c) => {
  const q = c.req.valid("query");
  const { db } = c.var.deps;
  const v = await findVault(db, c.var.deps.config.indexerSchema, q.vault_address, requestedChain(q));
  if (!v) return c.json({ detail: `Vault ${q.vault_address} not found` }, 404);
  servedChain(c, v.chain_id);
  const days = await db
    .selectFrom("derived.vault_day")
    .select(["day", "missing", sql<string | null>`asset_share_ratio::text`.as("ratio")])
    .where("chain_id", "=", v.chain_id)
    .where("vault", "=", v.address)
    .orderBy("day")
    .execute();
  const series = days.map((d) => ({
    day: dateToDay(d.day),
    ratio: d.ratio == null ? null : Number(d.ratio),
    missing: d.missing,
  }));
  const points =
    series.length === 0
      ? []
      : apyChart(series, {
          period: q.averaging_period_in_days,
          smoothing: q.apply_smoothing,
          daysAgo: q.days_ago,
          // the day the published figures are for, so the last point equals historical_apy[period]
          asOf: v.as_of_day ? dateToDay(v.as_of_day) : series[series.length - 1]!.day,
        });
  const values = points.map((p) => p.value);
  return c.json(
    {
      data: { labels: points.map((p) => dayToDate(p.day)), values },
      average_apy: values.length ? values.reduce((s, x) => s + x, 0) / values.length : 0,
      status: 200,
      error: null,
      chain_id: v.chain_id,
    },
    200,
  );
};
