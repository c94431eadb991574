/**
 * The vault resource's reads. Each route costs one or two round trips: the vault object (list or
 * single) is one statement whose per-vault parts (rewards, operators, subaccounts, snapshots)
 * are correlated JSON aggregates over indexed keys, so the list never issues a query per vault.
 */
import { type RawBuilder, sql } from "kysely";
import type { ReadDb } from "../../lib/db.js";
import {
  BASE_COLUMNS,
  METRICS_JOIN,
  overVaultSet,
  type VaultBaseRow,
  type VaultFilter,
  where,
} from "../../lib/vaults.js";

export interface RewardJson {
  id: string;
  text: string;
  img_url: string | null;
  multiplier: string;
  start_datetime: string;
  updated_at: string;
  created_at: string;
}
export interface OperatorJson {
  id: string;
  address: string;
  operator_type: string;
  name: string | null;
}
export interface SubaccountJson {
  id: string;
  chain_id: number;
  address: string;
  internal_name: string | null;
  friendly_name: string | null;
  status: string;
  subaccount_type: string;
  /** numeric as text */
  min_health_factor: string | null;
  s_id: string | null;
  s_name: string | null;
  s_logo: string | null;
  s_web: string | null;
}
/**
 * [snapshot_id, snapshot_timestamp, block_number, total_assets, total_shares, asset_share_ratio, asset_usd_price, tvl],
 * numerics as text
 */
export type SnapshotJson = [
  string,
  string,
  string,
  string | null,
  string | null,
  string | null,
  string | null,
  string | null,
];

export interface VaultRow extends VaultBaseRow {
  s_id: string | null;
  s_name: string | null;
  s_logo: string | null;
  s_web: string | null;
  rewards: RewardJson[];
  operators: OperatorJson[];
  subaccounts: SubaccountJson[] | null;
  snapshots: SnapshotJson[] | null;
}

/** The vault objects' data, ordered by chain then address (one statement). */
export async function loadVaults(
  db: ReadDb,
  indexerSchema: string,
  f: VaultFilter & { loadSubaccounts: boolean; loadSnapshots: boolean; limit?: number },
): Promise<VaultRow[]> {
  const subaccounts = f.loadSubaccounts
    ? sql`(SELECT coalesce(json_agg(json_build_object(
          'id', sa.id, 'chain_id', sa.chain_id, 'address', sa.address, 'internal_name', sa.internal_name,
          'friendly_name', sa.friendly_name, 'status', sa.status, 'subaccount_type', sa.subaccount_type,
          'min_health_factor', sa.min_health_factor::text, 's_id', ss.id, 's_name', ss.name, 's_logo', ss.logo_url,
          's_web', ss.website_url) ORDER BY sa.address), '[]'::json)
        FROM registry.subaccount sa LEFT JOIN registry.strategist ss ON ss.id = sa.strategist_id
        WHERE sa.chain_id = rv.chain_id AND sa.vault = rv.address)`
    : sql`NULL::json`;
  const snapshots = f.loadSnapshots
    ? sql`(SELECT coalesce(json_agg(json_build_array(d.snapshot_id, d.snapshot_timestamp::text, d.block_number::text,
          d.total_assets::text, d.total_shares::text, d.asset_share_ratio::text, d.asset_usd_price::text, d.tvl::text)
          ORDER BY d.day), '[]'::json)
        FROM derived.vault_day d
        WHERE d.chain_id = rv.chain_id AND d.vault = rv.address AND NOT d.missing AND d.snapshot_id IS NOT NULL)`
    : sql`NULL::json`;
  const q = (from: RawBuilder<unknown>) => sql<VaultRow>`
    SELECT ${BASE_COLUMNS},
      s.id AS s_id, s.name AS s_name, s.logo_url AS s_logo, s.website_url AS s_web,
      (SELECT coalesce(json_agg(json_build_object('id', r.id, 'text', r.text, 'img_url', r.img_url, 'multiplier',
          r.multiplier::text,
          'start_datetime', r.start_datetime, 'updated_at', r.updated_at, 'created_at', r.created_at)
          ORDER BY r.start_datetime, r.id), '[]'::json)
        FROM registry.reward r WHERE r.chain_id = rv.chain_id AND r.vault = rv.address) AS rewards,
      (SELECT coalesce(json_agg(json_build_object('id', o.id, 'address', o.address, 'operator_type', o.operator_type,
      'name', o.name)
          ORDER BY o.operator_type, o.address), '[]'::json)
        FROM registry.operator o WHERE o.chain_id = rv.chain_id AND o.vault = rv.address) AS operators,
      ${subaccounts} AS subaccounts,
      ${snapshots} AS snapshots
    FROM ${from} rv
    ${METRICS_JOIN}
    LEFT JOIN registry.strategist s ON s.id = rv.strategist_id
    WHERE ${where(f)}
    ORDER BY rv.chain_id, rv.address
    ${f.limit != null ? sql`LIMIT ${f.limit}` : sql``}`;
  return overVaultSet(indexerSchema, async (from) => (await q(from).execute(db)).rows);
}

export interface DayRow {
  day: string;
  missing: boolean;
  share_price: string | null;
  total_assets: string | null;
  total_shares: string | null;
  asset_share_ratio: string | null;
  tvl: string | null;
  daily_apy: number | null;
  daily_pnl: string | null;
}

/** derived.vault_day rows of a vault within [from, to] (dates 'YYYY-MM-DD'), oldest first. */
export async function vaultDays(
  db: ReadDb,
  chainId: number,
  vault: string,
  from?: string,
  to?: string,
): Promise<DayRow[]> {
  let q = db
    .selectFrom("derived.vault_day")
    .select([
      "day",
      "missing",
      sql<string | null>`share_price::text`.as("share_price"),
      sql<string | null>`total_assets::text`.as("total_assets"),
      sql<string | null>`total_shares::text`.as("total_shares"),
      sql<string | null>`asset_share_ratio::text`.as("asset_share_ratio"),
      sql<string | null>`tvl::text`.as("tvl"),
      "daily_apy",
      sql<string | null>`daily_pnl::text`.as("daily_pnl"),
    ])
    .where("chain_id", "=", chainId)
    .where("vault", "=", vault);
  if (from != null) q = q.where("day", ">=", from);
  if (to != null) q = q.where("day", "<=", to);
  return (await q.orderBy("day").execute()) as DayRow[];
}

export interface LatestSnapshotRow {
  id: string;
  timestamp: string;
  block_number: string;
  total_assets: string;
  total_supply: string;
  asset_share_ratio: string | null;
  asset_usd_price: string | null;
}

/** The newest indexed share-ratio snapshot of a vault (same order as derived.vault_day's sp). */
export async function latestSnapshot(
  db: ReadDb,
  schema: string,
  chainId: number,
  vault: string,
): Promise<LatestSnapshotRow | undefined> {
  const q = sql<LatestSnapshotRow>`
    SELECT s.id, s.timestamp::text AS timestamp, s.block_number::text AS block_number,
      s.total_assets::text AS total_assets,
      s.total_supply::text AS total_supply, s.asset_share_ratio::text AS asset_share_ratio,
      s.asset_usd_price::text AS asset_usd_price
    FROM ${sql.table(`${schema}.share_ratio_snapshot`)} s
    WHERE s.chain_id = ${chainId} AND s.vault = ${vault}
    ORDER BY s.timestamp DESC, s.block_number DESC, s.id DESC
    LIMIT 1`;
  return (await q.execute(db)).rows[0];
}

export async function portfolioCache(
  db: ReadDb,
  chainId: number,
  vault: string,
): Promise<{ subaccount: string; data: Record<string, unknown> }[]> {
  return db
    .selectFrom("registry.portfolio_cache")
    .select(["subaccount", "data"])
    .where("chain_id", "=", chainId)
    .where("vault", "=", vault)
    .orderBy("subaccount")
    .execute();
}
