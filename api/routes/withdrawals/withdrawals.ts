/**
 * GET /api/v1/withdrawals/{chain}/{vault_address}: a vault's withdrawal queue, pending and
 * processed requests, from the indexed requests.
 */
import { createRoute, type RouteHandler, z } from "@hono/zod-openapi";
import { sql } from "kysely";
import { dueDateSql } from "../../../db/redemption-due.js";
import { ChainIdParam, servedChain } from "../../lib/chain.js";
import { exactNumber } from "../../lib/exact.js";
import {
  type AppEnv,
  errorResponses,
  openReadAuthResponses,
  openReadSecurity,
  QueryInt,
  VaultAddress,
  vaultJsonResponse,
} from "../../lib/router.js";
import { vaultChains } from "../../lib/vaults.js";
import { readKey } from "../../middleware/auth.js";
import {
  formatUnits,
  guard,
  isoFromUnix,
  normAddress,
  percentString,
  utcDay,
  vaultNotFound,
  vaultNotIndexed,
} from "../platform/platform.lib.js";
import { notFoundResponse, unavailableResponse, WithdrawalQueueSchema } from "../platform/platform.schemas.js";

export const withdrawalQueue = createRoute({
  method: "get",
  path: "/withdrawals/{chain}/{vault_address}",
  tags: ["redemptions"],
  summary: "Withdrawal queue of a vault: pending requests and the latest processed ones",
  description:
    "`chain` is a chain id of the catalogue (else 422). 404 when the vault is not indexed on that chain (its " +
    "detail says when the registry has it there, as for a non-EVM vault).",
  middleware: [readKey] as const,
  security: openReadSecurity,
  request: {
    params: z.object({
      chain: ChainIdParam.openapi({ param: { name: "chain", in: "path" }, type: "integer", example: 1 }),
      vault_address: VaultAddress.openapi({ param: { name: "vault_address", in: "path" } }),
    }),
    query: z.object({
      limit: QueryInt({ def: 100, min: 1, max: 1000 }).openapi({
        type: "integer",
        default: 100,
        minimum: 1,
        maximum: 1000,
        description:
          "At most this many of the latest processed requests. The pending list is always whole, as its totals are",
      }),
    }),
  },
  responses: {
    200: vaultJsonResponse("Withdrawal queue", WithdrawalQueueSchema),
    ...notFoundResponse,
    ...openReadAuthResponses,
    ...unavailableResponse,
    ...errorResponses,
  },
});

// ---------------------------------------------------------------------------------------------
// Withdrawal queue

type WithdrawalQueue = z.infer<typeof WithdrawalQueueSchema>;

export const withdrawalQueueHandler: RouteHandler<typeof withdrawalQueue, AppEnv> = async (c) => {
  const { db, config } = c.var.deps;
  const { chain, vault_address } = c.req.valid("param");
  const { limit } = c.req.valid("query");
  const address = normAddress(vault_address);
  const s = config.indexerSchema;
  const r = await guard(c, async (): Promise<WithdrawalQueue | null> => {
    const v = (
      await sql<{
        family: string;
        asset: string;
        asset_symbol: string;
        asset_decimals: number;
        total_assets: string | null;
        withdrawal_queue_head: number;
        withdrawal_queue_tail: number;
      }>`SELECT family, asset, asset_symbol, asset_decimals, total_assets::text AS total_assets, withdrawal_queue_head,
        withdrawal_queue_tail
         FROM ${sql.id(s, "vault")} WHERE chain_id = ${chain} AND address = ${address}`.execute(db)
    ).rows[0];
    if (!v) return null;
    const amount = sql`CASE WHEN r.assets IS NULL THEN coalesce(trunc(r.shares * v.asset_share_ratio), 0)
      ELSE r.assets - coalesce(r.fee, 0) END`;
    const from = sql`${sql.id(s, "withdrawal_request")} r JOIN ${sql.id(s, "vault")} v ON v.chain_id = r.chain_id
      AND v.address = r.vault`;
    const where = sql`r.chain_id = ${chain} AND r.vault = ${address}`;
    const [tot, pend, done] = await Promise.all([
      sql<{
        n: number;
        amount: string;
      }>`SELECT count(*)::int AS n, coalesce(sum(${amount}), 0)::text AS amount FROM ${from} WHERE ${where}
        AND r.status = 'requested'`.execute(db),
      sql<{
        id: string;
        owner: string;
        receiver: string;
        shares: string;
        amount: string;
        estimated: boolean;
        claimable_date: string | null;
        due_date: string | null;
        timestamp: string;
        tx_hash: string;
      }>`
        SELECT r.id, r.owner, r.receiver, r.shares::text AS shares, (${amount})::text AS amount,
               (r.assets IS NULL) AS estimated, r.claimable_date,
               ${dueDateSql("r", "v")} AS due_date, r.timestamp::text AS timestamp, r.tx_hash
        FROM ${from} WHERE ${where} AND r.status = 'requested'
        ORDER BY due_date ASC NULLS LAST, r.id ASC`.execute(db),
      sql<{
        id: string;
        owner: string;
        receiver: string;
        shares: string;
        amount: string | null;
        claimable_date: string | null;
        timestamp: string;
        tx_hash: string;
        processed_timestamp: string | null;
        processed_tx_hash: string | null;
      }>`
        SELECT r.id, r.owner, r.receiver, r.shares::text AS shares, r.processed_assets::text AS amount,
               r.claimable_date, r.timestamp::text AS timestamp, r.tx_hash,
               r.processed_timestamp::text AS processed_timestamp, r.processed_tx_hash
        FROM ${from} WHERE ${where} AND r.status = 'processed'
        ORDER BY r.processed_timestamp DESC NULLS LAST, r.processed_block_number DESC NULLS LAST, r.id DESC
          LIMIT ${limit}`.execute(db),
    ]);
    const d = v.asset_decimals;
    const totalAssets = v.total_assets == null ? null : BigInt(v.total_assets);
    const fifo = v.family === "tokenizedVaultV2";
    const total = tot.rows[0] ?? { n: 0, amount: "0" };
    return {
      chain_id: chain,
      vault: address,
      family: v.family,
      symbol: v.asset_symbol,
      asset: { address: v.asset, symbol: v.asset_symbol, decimals: d },
      // an erc4626 vault has no redemption queue: no counters, rather than zeros that suggest one
      queue:
        v.family === "erc4626"
          ? null
          : {
              head: v.withdrawal_queue_head,
              tail: v.withdrawal_queue_tail,
              length: v.withdrawal_queue_tail - v.withdrawal_queue_head,
            },
      pending_count: total.n,
      total_withdrawals_raw_amount: exactNumber(total.amount),
      normalized_total_withdrawals_amount: formatUnits(total.amount, d),
      total_assets: v.total_assets,
      normalized_total_assets: v.total_assets == null ? null : formatUnits(v.total_assets, d),
      pending_withdrawals: pend.rows.map((p, i) => ({
        id: p.id,
        date: p.due_date ?? utcDay(new Date(Number(p.timestamp) * 1000)),
        amount_raw: exactNumber(p.amount),
        normalized_amount: formatUnits(p.amount, d),
        amount_estimated: p.estimated,
        vault_percentage: percentString(BigInt(p.amount), totalAssets),
        vault: address,
        receiver: p.receiver,
        owner: p.owner,
        shares_raw: p.shares,
        requested_at: isoFromUnix(p.timestamp),
        request_tx_hash: p.tx_hash,
        claimable_date: p.claimable_date,
        queue_position: fifo ? i + 1 : null,
      })),
      recent_processed: done.rows.map((p) => ({
        id: p.id,
        date: utcDay(new Date(Number(p.processed_timestamp ?? p.timestamp) * 1000)),
        amount_raw: exactNumber(p.amount ?? "0"),
        normalized_amount: formatUnits(p.amount ?? "0", d),
        owner: p.owner,
        receiver: p.receiver,
        shares_raw: p.shares,
        requested_at: isoFromUnix(p.timestamp),
        request_tx_hash: p.tx_hash,
        claimable_date: p.claimable_date,
        processed_at: p.processed_timestamp == null ? null : isoFromUnix(p.processed_timestamp),
        processed_tx_hash: p.processed_tx_hash,
      })),
    };
  });
  if (r instanceof Response) return r as never;
  if (r == null) {
    const known = await guard(c, async () => (await vaultChains(db, s, address)).includes(chain));
    if (known instanceof Response) return known as never;
    return known ? vaultNotIndexed(c, address, chain, "no withdrawal queue here") : vaultNotFound(c, address, chain);
  }
  servedChain(c, chain);
  return c.json(r, 200);
};
