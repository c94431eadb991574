import type { RouteHandler, z } from "@hono/zod-openapi";
import { type Selectable, sql } from "kysely";
import type { StrategyApySnapshotTable, UnrealizedPnlTable } from "../../../db/schema.js";
import { requestedChain, servedChain } from "../../lib/chain.js";
import { validationError } from "../../lib/errors.js";
import { exactNumber } from "../../lib/exact.js";
import type { AppEnv } from "../../lib/router.js";
import { findVaultChain, isMissingRelation, vaultChains } from "../../lib/vaults.js";
import {
  formatUnits,
  guard,
  isEvmAddress,
  isoFromUnix,
  lowerBoundSec,
  normAddress,
  num,
  percentString,
  upperBoundSec,
  utcDay,
  vaultNotFound,
} from "./platform.lib.js";
import type {
  pendingRedemptions,
  pendingRedemptionsBatch,
  strategistList,
  strategyApyByVault,
  strategyApyList,
  unrealizedPnl,
  unrealizedPnlLatest,
  vaultHistory,
  vaultHistoryArchived,
  withdrawalQueue,
} from "./platform.routes.js";
import type { UnrealizedPnlRecordSchema, WithdrawalQueueSchema } from "./platform.schemas.js";
import { loadSummaryInputs, type SummaryVault, summarize } from "./redemptions.js";

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

const PNL_COLUMNS = sql`chain_id, vault, timestamp::text AS timestamp, vault_name, strategist_name, reference_asset, asset_price::text AS asset_price, tvl_on_vault::text AS tvl_on_vault,
  actual_tvl::text AS actual_tvl, current_redeem_ratio::text AS current_redeem_ratio, adjusted_redeem_ratio::text AS adjusted_redeem_ratio,
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
      ${q.limit != null ? sql`LIMIT ${q.limit}` : sql``}`.execute(db as never);
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
      ORDER BY chain_id, vault, timestamp DESC, block_number DESC, snapshot_id DESC`.execute(db as never);
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
    }>`SELECT DISTINCT lower(vault) AS vault FROM ops.vault_backfill ORDER BY 1`.execute(c.var.deps.db as never);
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
        SELECT e.chain_id, e.timestamp, e.block_number, e.log_index, e.kind, e.owner, e.vault, e.assets, e.tx_hash, e.asset
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
      FROM t LEFT JOIN LATERAL (SELECT * FROM tokens WHERE tokens.address = t.asset LIMIT 1) k ON true`.execute(
      db as never,
    );
    const row = res.rows[0];
    return { chain, body: row?.body ?? "[]", next: row && row.n >= q.limit ? row.last : null };
  });
  if (r instanceof Response) return r as never;
  if (r == null) return vaultNotFound(c, address, asked);
  if (r.chain != null) servedChain(c, r.chain);
  if (r.next != null) c.header("x-next-before", r.next);
  return c.body(r.body, 200, { "content-type": "application/json" }) as never;
};

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
    if (inputs.vaults.length === 0) return null;
    const s = summarize(inputs, now(), { pastDays: q.past_days, futureDays: q.future_days });
    if (s.failed.length > 0) throw new Error(s.failed[0]!.reason);
    return s.ok[0] ?? null;
  });
  if (r instanceof Response) return r as never;
  if (r == null) return vaultNotFound(c, address, asked);
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
    const [inputs, reg] = await Promise.all([
      evm.length
        ? loadSummaryInputs(db, config.indexerSchema, { addresses: evm })
        : Promise.resolve({ vaults: [], groups: [], liquidity: [], subaccounts: [] }),
      seen.length
        ? db.selectFrom("registry.vault").select(["address", "chain_type"]).where("address", "in", seen).execute()
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
      }>`SELECT family, asset, asset_symbol, asset_decimals, total_assets::text AS total_assets, withdrawal_queue_head, withdrawal_queue_tail
         FROM ${sql.id(s, "vault")} WHERE chain_id = ${chain} AND address = ${address}`.execute(db as never)
    ).rows[0];
    if (!v) return null;
    const amount = sql`CASE WHEN r.assets IS NULL THEN coalesce(trunc(r.shares * v.asset_share_ratio), 0) ELSE r.assets - coalesce(r.fee, 0) END`;
    const from = sql`${sql.id(s, "withdrawal_request")} r JOIN ${sql.id(s, "vault")} v ON v.chain_id = r.chain_id AND v.address = r.vault`;
    const where = sql`r.chain_id = ${chain} AND r.vault = ${address}`;
    const [tot, pend, done] = await Promise.all([
      sql<{
        n: number;
        amount: string;
      }>`SELECT count(*)::int AS n, coalesce(sum(${amount}), 0)::text AS amount FROM ${from} WHERE ${where} AND r.status = 'requested'`.execute(
        db as never,
      ),
      sql<{
        id: string;
        owner: string;
        receiver: string;
        shares: string;
        amount: string;
        estimated: boolean;
        claimable_date: string | null;
        timestamp: string;
        tx_hash: string;
      }>`
        SELECT r.id, r.owner, r.receiver, r.shares::text AS shares, (${amount})::text AS amount, (r.assets IS NULL) AS estimated, r.claimable_date, r.timestamp::text AS timestamp, r.tx_hash
        FROM ${from} WHERE ${where} AND r.status = 'requested'
        ORDER BY r.claimable_date ASC NULLS LAST, r.id ASC LIMIT ${limit}`.execute(db as never),
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
        SELECT r.id, r.owner, r.receiver, r.shares::text AS shares, r.processed_assets::text AS amount, r.claimable_date, r.timestamp::text AS timestamp, r.tx_hash,
               r.processed_timestamp::text AS processed_timestamp, r.processed_tx_hash
        FROM ${from} WHERE ${where} AND r.status = 'processed'
        ORDER BY r.processed_timestamp DESC NULLS LAST, r.processed_block_number DESC NULLS LAST, r.id DESC LIMIT ${limit}`.execute(
        db as never,
      ),
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
      queue: {
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
        date: p.claimable_date ?? utcDay(new Date(Number(p.timestamp) * 1000)),
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
  if (r == null) return vaultNotFound(c, address, chain);
  servedChain(c, chain);
  return c.json(r, 200);
};
