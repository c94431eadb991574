/**
 * GET /api/v1/vaults/{vault_address}/pending-redemptions and POST /api/v1/vaults/pending-redemptions:
 * a vault's (or a batch's) queued redemptions by claimable date, from the indexed requests
 * (./redemptions.ts computes the summary).
 */
import { createRoute, type RouteHandler, z } from "@hono/zod-openapi";
import { sql } from "kysely";
import { requestedChain, servedChain, vaultChainQuery } from "../../lib/chain.js";
import {
  type AppEnv,
  errorResponses,
  jsonResponse as json,
  openReadAuthResponses,
  openReadSecurity,
  QueryInt,
  VaultAddress,
  vaultJsonResponse,
} from "../../lib/router.js";
import { findVaultChain } from "../../lib/vaults.js";
import { readKey } from "../../middleware/auth.js";
import { guard, isEvmAddress, normAddress, vaultNotFound, vaultNotIndexed } from "../platform/platform.lib.js";
import {
  notFoundResponse,
  PendingRedemptionSummarySchema,
  PendingRedemptionsBatchBodySchema,
  PendingRedemptionsBatchSchema,
  unavailableResponse,
} from "../platform/platform.schemas.js";
import { loadSummaryInputs, type SummaryVault, summarize } from "./redemptions.js";

const VaultPath = z.object({ vault_address: VaultAddress.openapi({ param: { name: "vault_address", in: "path" } }) });

export const pendingRedemptions = createRoute({
  method: "get",
  path: "/vaults/{vault_address}/pending-redemptions",
  tags: ["redemptions"],
  summary: "Pending redemptions of a vault: totals, overdue, due, per claimable date, liquidity",
  description:
    "Days are UTC. Overdue: claimable on a day of the look-back `[today - past_days, today)`; due: claimable from " +
    "today to `today + future_days` included. " +
    "An address deployed on several chains: `chain_id` (or `chain`) picks one, else the lowest chain id is served " +
    "(`vault.chain_id` and header `X-Vault-Chain` say which). 404 for an unknown vault (or one that is not " +
    "indexed, e.g. a non-EVM vault).",
  middleware: [readKey] as const,
  security: openReadSecurity,
  request: {
    params: VaultPath,
    query: vaultChainQuery({
      past_days: QueryInt({ def: 7, min: 1, max: 30 }).openapi({
        type: "integer",
        default: 7,
        minimum: 1,
        maximum: 30,
        description: "Look-back for overdue requests, days",
      }),
      future_days: QueryInt({ def: 14, min: 1, max: 30 }).openapi({
        type: "integer",
        default: 14,
        minimum: 1,
        maximum: 30,
        description: "Look-ahead for due requests, days",
      }),
    }),
  },
  responses: {
    200: vaultJsonResponse("Pending redemption summary", PendingRedemptionSummarySchema),
    ...notFoundResponse,
    ...openReadAuthResponses,
    ...unavailableResponse,
    ...errorResponses,
  },
});

export const pendingRedemptionsBatch = createRoute({
  method: "post",
  path: "/vaults/pending-redemptions",
  tags: ["redemptions"],
  summary: "Pending redemption summaries of several vaults",
  description:
    "Selects vaults by address (`vault_addresses`), by strategist (`strategist_name`), both (the listed vaults of " +
    "that strategist) or neither (every indexed vault), with the default window (past_days 7, future_days 14). " +
    "Each vault is processed on its own: an unknown, malformed or non-EVM address, or one not managed by the " +
    "strategist, goes to `errors` and never fails the request. 404 when `strategist_name` names no strategist; 422 " +
    "when the body is not a JSON object of these types.",
  middleware: [readKey] as const,
  security: openReadSecurity,
  request: { body: { content: { "application/json": { schema: PendingRedemptionsBatchBodySchema } }, required: true } },
  responses: {
    200: json("Summaries and per-address errors", PendingRedemptionsBatchSchema),
    ...notFoundResponse,
    ...openReadAuthResponses,
    ...unavailableResponse,
    ...errorResponses,
  },
});

// ---------------------------------------------------------------------------------------------
// Pending redemptions

export const pendingRedemptionsHandler: RouteHandler<typeof pendingRedemptions, AppEnv> = async (c) => {
  const { db, config, now } = c.var.deps;
  const address = normAddress(c.req.valid("param").vault_address);
  const q = c.req.valid("query");
  const asked = requestedChain(q);
  const r = await guard(c, async () => {
    const chainId = await findVaultChain(db, config.indexerSchema, address, asked);
    if (chainId == null) return null;
    const inputs = await loadSummaryInputs(db, config.indexerSchema, { addresses: [address], chainId });
    if (inputs.vaults.length === 0) return { unindexed: chainId };
    const s = summarize(inputs, now(), { pastDays: q.past_days, futureDays: q.future_days });
    if (s.failed.length > 0) throw new Error(s.failed[0]!.reason);
    return s.ok[0] ?? null;
  });
  if (r instanceof Response) return r as never;
  if (r == null) return vaultNotFound(c, address, asked);
  if ("unindexed" in r) {
    // as the batch route words it: the registry has the vault, the indexer does not follow it
    return vaultNotIndexed(c, address, r.unindexed, "no redemptions here");
  }
  servedChain(c, r.vault.chain_id);
  return c.json(r, 200);
};

/** The window of the batch summaries: the defaults of the single-vault route. */
const BATCH_WINDOW = { pastDays: 7, futureDays: 14 };

export const pendingRedemptionsBatchHandler: RouteHandler<typeof pendingRedemptionsBatch, AppEnv> = async (c) => {
  const { db, config, now } = c.var.deps;
  const body = c.req.valid("json");
  const r = await guard(c, async () => {
    let strategist: string | undefined;
    if (body.strategist_name != null) {
      const s = await db
        .selectFrom("registry.strategist")
        .select("name")
        .where(sql<string>`lower(name)`, "=", body.strategist_name.trim().toLowerCase())
        .executeTakeFirst();
      if (!s) return { notFound: body.strategist_name };
      strategist = s.name;
    }
    if (!body.vault_addresses) {
      const s = summarize(await loadSummaryInputs(db, config.indexerSchema, { strategist }), now(), BATCH_WINDOW);
      const errors = s.failed.map((f) => ({ address: f.vault.address, reason: f.reason }));
      return { data: s.ok, total_requested: s.ok.length + errors.length, errors, total_successful: s.ok.length };
    }
    // by address: each one resolved on its own, in the order given (duplicates once)
    const errors: { address: string; reason: string }[] = [];
    const seen = [...new Set(body.vault_addresses.map((a) => normAddress(a.trim())))];
    const evm = seen.filter(isEvmAddress);
    // an address Postgres text cannot hold (NUL) is in no table: it goes to errors unqueried
    const storable = seen.filter((a) => !a.includes("\0"));
    const [inputs, reg] = await Promise.all([
      evm.length
        ? loadSummaryInputs(db, config.indexerSchema, { addresses: evm })
        : Promise.resolve({ vaults: [], groups: [], liquidity: [], subaccounts: [] }),
      storable.length
        ? db.selectFrom("registry.vault").select(["address", "chain_type"]).where("address", "in", storable).execute()
        : Promise.resolve([]),
    ]);
    const registered = new Map(reg.map((x) => [x.address, x.chain_type]));
    const selected: SummaryVault[] = [];
    for (const a of seen) {
      if (!isEvmAddress(a)) {
        errors.push({
          address: a,
          reason: registered.has(a)
            ? `not an EVM vault (${registered.get(a)}): pending redemptions are indexed for EVM vaults only`
            : "not a valid EVM address (0x followed by 40 hex digits)",
        });
        continue;
      }
      const vs = inputs.vaults.filter((v) => v.address === a);
      if (vs.length === 0) {
        errors.push({
          address: a,
          reason: registered.has(a) ? "vault is in the registry but not indexed" : "vault not found",
        });
        continue;
      }
      for (const v of vs) {
        if (strategist == null || v.strategist_name === strategist) selected.push(v);
        else
          errors.push({
            address: a,
            reason: `vault on chain ${v.chain_id} is not managed by strategist ${strategist}`,
          });
      }
    }
    const s = summarize(inputs, now(), BATCH_WINDOW, selected);
    for (const f of s.failed) errors.push({ address: f.vault.address, reason: f.reason });
    return { data: s.ok, total_requested: s.ok.length + errors.length, errors, total_successful: s.ok.length };
  });
  if (r instanceof Response) return r as never;
  if ("notFound" in r) return c.json({ detail: `Strategist ${r.notFound} not found` }, 404);
  return c.json(r, 200);
};
