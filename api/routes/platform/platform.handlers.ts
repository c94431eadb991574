import type { RouteHandler, z } from "@hono/zod-openapi";
import { type Selectable, sql } from "kysely";
import type { StrategyApySnapshotTable, UnrealizedPnlTable } from "../../../db/schema.js";
import { requestedChain, servedChain } from "../../lib/chain.js";
import { validationError } from "../../lib/errors.js";
import type { AppEnv } from "../../lib/router.js";
import { findVaultChain, isMissingRelation, vaultChains } from "../../lib/vaults.js";
import {
  guard,
  isEvmAddress,
  isoFromUnix,
  lowerBoundSec,
  normAddress,
  num,
  upperBoundSec,
  vaultNotFound,
} from "./platform.lib.js";
import type {
  strategistList,
  strategyApyByVault,
  strategyApyList,
  unrealizedPnl,
  unrealizedPnlLatest,
  vaultHistory,
  vaultHistoryArchived,
} from "./platform.routes.js";
import type { UnrealizedPnlRecordSchema } from "./platform.schemas.js";

// ---------------------------------------------------------------------------------------------
// Strategy APY snapshots and strategists

/** A registry.strategy_apy_snapshot row as read. */
type SnapshotRow = Selectable<StrategyApySnapshotTable>;

export const snapshotRead = (r: SnapshotRow) => ({
  vault_address: r.vault_address,
  chain: r.chain,
  platform_name: r.platform_name,
  strategy_type: r.strategy_type,
  allocation: r.allocation,
  apy: r.apy,
  points_apy: r.points_apy,
  strategist_address: r.strategist_address,
  snapshot_datetime: new Date(r.snapshot_datetime).toISOString(),
  id: r.id,
});

export const strategyApyListHandler: RouteHandler<typeof strategyApyList, AppEnv> = async (c) => {
  const rows = await c.var.deps.db
    .selectFrom("registry.strategy_apy_snapshot")
    .selectAll()
    .orderBy("snapshot_datetime", "desc")
    .orderBy("id")
    .execute();
  return c.json(rows.map(snapshotRead), 200);
};

export const strategyApyByVaultHandler: RouteHandler<typeof strategyApyByVault, AppEnv> = async (c) => {
  const { db, config } = c.var.deps;
  const address = normAddress(c.req.valid("param").vault_address);
  // EVM addresses compare case-insensitively (snapshots may have been posted in any case).
  const rows = await db
    .selectFrom("registry.strategy_apy_snapshot")
    .selectAll()
    .where(isEvmAddress(address) ? sql<string>`lower(vault_address)` : sql<string>`vault_address`, "=", address)
    .orderBy("snapshot_datetime", "desc")
    .orderBy("id")
    .execute();
  if (rows.length === 0) {
    const chains = await vaultChains(db, config.indexerSchema, address).catch(() => [] as number[]);
    if (chains.length === 0) return vaultNotFound(c, address);
  }
  return c.json(rows.map(snapshotRead), 200);
};

export const strategistListHandler: RouteHandler<typeof strategistList, AppEnv> = async (c) => {
  const { offset, limit } = c.req.valid("query");
  const rows = await c.var.deps.db
    .selectFrom("registry.strategist")
    .select(["id", "name", "logo_url", "website_url"])
    .orderBy("name")
    .orderBy("id")
    .offset(offset)
    .limit(limit)
    .execute();
  return c.json(
    rows.map((r) => ({ strategist_name: r.name, strategist_logo: r.logo_url, website_url: r.website_url, id: r.id })),
    200,
  );
};

// ---------------------------------------------------------------------------------------------
// Unrealized PnL

/** The derived.unrealized_pnl columns a record is built from. */
type PnlRow = Pick<
  Selectable<UnrealizedPnlTable>,
  | "chain_id"
  | "vault"
  | "timestamp"
  | "vault_name"
  | "strategist_name"
  | "reference_asset"
  | "asset_price"
  | "tvl_on_vault"
  | "actual_tvl"
  | "current_redeem_ratio"
  | "adjusted_redeem_ratio"
  | "unrealized_pnl"
  | "unrealized_pnl_in_asset"
>;

type PnlRecord = z.infer<typeof UnrealizedPnlRecordSchema>;

const pnlRecord = (r: PnlRow): PnlRecord => ({
  timestamp: isoFromUnix(r.timestamp),
  chain_id: r.chain_id,
  vault_name: r.vault_name,
  vault_address: r.vault,
  strategist_name: r.strategist_name,
  reference_asset: r.reference_asset,
  asset_price: num(r.asset_price),
  tvl_on_vault: Number(r.tvl_on_vault),
  current_redeem_ratio: num(r.current_redeem_ratio),
  actual_tvl: Number(r.actual_tvl),
  adjusted_redeem_ratio: num(r.adjusted_redeem_ratio),
  unrealized_pnl: num(r.unrealized_pnl),
  unrealized_pnl_in_asset: Number(r.unrealized_pnl_in_asset),
});

const PNL_COLUMNS = sql`chain_id, vault, timestamp::text AS timestamp, vault_name, strategist_name, reference_asset,
  asset_price::text AS asset_price, tvl_on_vault::text AS tvl_on_vault,
  actual_tvl::text AS actual_tvl, current_redeem_ratio::text AS current_redeem_ratio,
  adjusted_redeem_ratio::text AS adjusted_redeem_ratio,
  unrealized_pnl::text AS unrealized_pnl, unrealized_pnl_in_asset::text AS unrealized_pnl_in_asset`;

export const unrealizedPnlHandler: RouteHandler<typeof unrealizedPnl, AppEnv> = async (c) => {
  const q = c.req.valid("query");
  const { db, config } = c.var.deps;
  const lo = q.start_date ? lowerBoundSec(q.start_date) : null;
  const hi = q.end_date ? upperBoundSec(q.end_date) : null;
  if (lo != null && hi != null && lo > hi) {
    return validationError(c, [
      {
        loc: ["query", "start_date"],
        msg: `start_date (${q.start_date!.text}) must not be after end_date (${q.end_date!.text})`,
        type: "value_error",
      },
    ]) as never;
  }
  const address = normAddress(q.vault_address);
  const asked = requestedChain(q);
  const r = await guard(c, async () => {
    const chain = await findVaultChain(db, config.indexerSchema, address, asked);
    if (chain == null) return null;
    const where = [sql`vault = ${address}`, sql`chain_id = ${chain}`];
    if (lo != null) where.push(sql`timestamp >= ${lo}`);
    if (hi != null) where.push(sql`timestamp <= ${hi}`);
    const res = await sql<PnlRow & { collateral_ratio: number | null }>`
      SELECT ${PNL_COLUMNS}, (actual_tvl / NULLIF(tvl_on_vault, 0))::float8 AS collateral_ratio
      FROM derived.unrealized_pnl
      WHERE ${sql.join(where, sql` AND `)}
      ORDER BY timestamp DESC, block_number DESC, snapshot_id DESC
      ${q.limit != null ? sql`LIMIT ${q.limit}` : sql``}`.execute(db);
    return { chain, rows: res.rows };
  });
  if (r instanceof Response) return r as never;
  if (r == null) return vaultNotFound(c, address, asked);
  if (r.chain != null) servedChain(c, r.chain);
  if (q.fields === "ratio") {
    return c.json(
      r.rows.map((x) => ({
        timestamp: isoFromUnix(x.timestamp),
        chain_id: x.chain_id,
        current_redeem_ratio: num(x.current_redeem_ratio),
        adjusted_redeem_ratio: num(x.adjusted_redeem_ratio),
        collateral_ratio: x.collateral_ratio,
      })),
      200,
    );
  }
  return c.json(r.rows.map(pnlRecord), 200);
};

export const unrealizedPnlLatestHandler: RouteHandler<typeof unrealizedPnlLatest, AppEnv> = async (c) => {
  const { db } = c.var.deps;
  const r = await guard(c, async () => {
    const res = await sql<PnlRow>`
      SELECT DISTINCT ON (chain_id, vault) ${PNL_COLUMNS}
      FROM derived.unrealized_pnl
      ORDER BY chain_id, vault, timestamp DESC, block_number DESC, snapshot_id DESC`.execute(db);
    return res.rows;
  });
  if (r instanceof Response) return r as never;
  return c.json(r.map(pnlRecord), 200);
};

// ---------------------------------------------------------------------------------------------
// Vault history

export const vaultHistoryArchivedHandler: RouteHandler<typeof vaultHistoryArchived, AppEnv> = async (c) => {
  try {
    const res = await sql<{
      vault: string;
    }>`SELECT DISTINCT lower(vault) AS vault FROM ops.vault_backfill ORDER BY 1`.execute(c.var.deps.db);
    return c.json(
      res.rows.map((r) => r.vault),
      200,
    );
  } catch (err) {
    // the indexer runner creates the table once a first backfill completes
    if (isMissingRelation(err)) return c.json([] as string[], 200);
    throw err;
  }
};

/**
 * One SQL statement, built for the (chain_id, vault, block_number) index:
 * `ORDER BY block_number DESC, log_index DESC LIMIT n` on the served chain, from the `before`
 * cursor; Postgres builds the JSON array, so the handler only passes it through. Each record names
 * its asset (the base asset or, for a tokenizedVaultV2 deposit, the deposited one) with its
 * symbol and decimals, from the indexed vault and the registry's `alt_asset`.
 */
export const vaultHistoryHandler: RouteHandler<typeof vaultHistory, AppEnv> = async (c) => {
  const { db, config } = c.var.deps;
  const address = normAddress(c.req.valid("param").vault_address);
  const q = c.req.valid("query");
  const asked = requestedChain(q);
  const r = await guard(c, async () => {
    const chain = await findVaultChain(db, config.indexerSchema, address, asked);
    if (chain == null) return null;
    const ev = sql.id(config.indexerSchema, "vault_event");
    const vt = sql.id(config.indexerSchema, "vault");
    const filters = [sql`e.chain_id = ${chain}`, sql`e.vault = ${address}`];
    if (q.type) filters.push(sql`e.kind = ${q.type}`);
    if (q.wallet) {
      const w = q.wallet.toLowerCase();
      filters.push(sql`(e.owner = ${w} OR e.receiver = ${w} OR (e.kind = 'deposit' AND e.sender = ${w}))`);
    }
    if (q.before) {
      const b = q.before;
      filters.push(
        b.log == null ? sql`e.block_number < ${b.block}` : sql`(e.block_number, e.log_index) < (${b.block}, ${b.log})`,
      );
    }
    const res = await sql<{ body: string; last: string | null; n: number }>`
      WITH tokens AS (
        SELECT v.asset AS address, v.asset_symbol AS symbol, v.asset_decimals AS decimals FROM ${vt} v
        WHERE v.chain_id = ${chain} AND v.address = ${address}
        UNION ALL
        SELECT lower(rv.attributes->'alt_asset'->>'address'), rv.attributes->'alt_asset'->>'symbol',
               (rv.attributes->'alt_asset'->>'decimals')::int
        FROM registry.vault rv
        WHERE rv.chain_id = ${chain} AND rv.address = ${address} AND rv.attributes ? 'alt_asset'
      ), t AS (
        SELECT e.chain_id, e.timestamp, e.block_number, e.log_index, e.kind, e.owner, e.vault, e.assets,
          e.tx_hash, e.asset
        FROM ${ev} e WHERE ${sql.join(filters, sql` AND `)}
        ORDER BY e.block_number DESC, e.log_index DESC LIMIT ${q.limit}
      )
      SELECT coalesce(json_agg(json_build_object(
        'timestamp', to_char(to_timestamp(t.timestamp::float8) AT TIME ZONE 'UTC', 'YYYY-MM-DD"T"HH24:MI:SS.MS"Z"'),
        'type', t.kind, 'wallet', t.owner, 'pool', t.vault, 'chain_id', t.chain_id, 'amount_raw', t.assets::text,
        'amount', CASE WHEN k.decimals IS NULL THEN NULL
                       -- a dividend of scale 36 makes the division exact for up to 36 decimals
                       ELSE trim_scale(round(t.assets::numeric, 36) / (10::numeric ^ k.decimals))::text END,
        'transaction_hash', t.tx_hash, 'block_number', t.block_number, 'log_index', t.log_index,
        'asset_address', t.asset, 'asset_symbol', k.symbol, 'asset_decimals', k.decimals)
        ORDER BY t.block_number DESC, t.log_index DESC), '[]')::text AS body,
        (array_agg(t.block_number::text || ':' || t.log_index::text ORDER BY t.block_number, t.log_index))[1] AS last,
        count(*)::int AS n
      FROM t LEFT JOIN LATERAL (SELECT * FROM tokens WHERE tokens.address = t.asset LIMIT 1) k ON true`.execute(db);
    const row = res.rows[0];
    return { chain, body: row?.body ?? "[]", next: row && row.n >= q.limit ? row.last : null };
  });
  if (r instanceof Response) return r as never;
  if (r == null) return vaultNotFound(c, address, asked);
  if (r.chain != null) servedChain(c, r.chain);
  if (r.next != null) c.header("x-next-before", r.next);
  return c.body(r.body, 200, { "content-type": "application/json" }) as never;
};
