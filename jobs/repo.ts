/**
 * Reads the jobs' inputs (indexed tables through the views schema, registry tables) and
 * fingerprints them. Writes live in ./write.ts. Every function takes the database first.
 */
import { createHash } from "node:crypto";
import { sql, type Kysely, type Transaction } from "kysely";
import { loadRegistry } from "../config/registry.js";
import type { Database, IndexerTables } from "./db/schema.js";
import { DAY_SECONDS, dateToDay, dayOf, dayToDate, endOfDay } from "./lib/days.js";
import { mulFixed, parseFixed, SCALE } from "./lib/fixed.js";
import type { FeeIn, SnapshotIn, VaultMeta } from "./vault/compute.js";
import type { TransferIn } from "./points/compute.js";

export type Db = Kysely<Database>;
type AnyDb = Kysely<Database> | Transaction<Database>;
type Idx = Kysely<IndexerTables>;
const idx = (db: AnyDb, schema: string): Idx => db.withSchema(schema) as unknown as Idx;

export interface VaultRef {
  chainId: number;
  address: string;
}
export const vaultKey = (v: VaultRef) => `${v.chainId}:${v.address}`;

/** Every indexed vault with what the computations need, strategist names from the registry file. */
export async function loadVaults(db: AnyDb, schema: string, registryPath?: string): Promise<VaultMeta[]> {
  const rows = await idx(db, schema)
    .selectFrom("vault")
    .select(["chain_id", "address", "name", "decimals", "asset_symbol", "asset_decimals"])
    .orderBy("chain_id")
    .orderBy("address")
    .execute();
  const strategists = new Map<string, string>();
  if (registryPath) {
    try {
      for (const v of loadRegistry(registryPath).evm) if (v.strategist?.name) strategists.set(`${v.chainId}:${v.address}`, v.strategist.name);
    } catch {
      // The registry file is optional for the jobs: without it strategist names are null.
    }
  }
  return rows.map((r) => ({
    chainId: r.chain_id,
    address: r.address.toLowerCase(),
    name: r.name,
    shareDecimals: r.decimals,
    assetDecimals: r.asset_decimals,
    assetSymbol: r.asset_symbol,
    strategistName: strategists.get(`${r.chain_id}:${r.address.toLowerCase()}`) ?? null,
  }));
}

/**
 * The snapshots a computation of the days from `fromTs` on needs, in chain order: every one from
 * `fromTs` to `beforeTs`, and before `fromTs` only the last of each day (what sp(D), the TVL
 * and the index of earlier days are read from).
 */
export async function loadSnapshotsFrom(db: AnyDb, schema: string, v: VaultRef, fromTs: number, beforeTs: number, history = true): Promise<SnapshotIn[]> {
  const t = sql.id(schema, "share_ratio_snapshot");
  // numeric columns arrive as strings (pg's default)
  const cols = sql`id, timestamp, block_number, total_assets, total_supply, asset_share_ratio, asset_usd_price, idle_assets, subaccount_assets`;
  const { rows } = await sql<Record<string, string | null>>`
    SELECT * FROM (
      (SELECT DISTINCT ON (floor(timestamp / ${sql.lit(DAY_SECONDS)})) ${cols} FROM ${t}
        WHERE chain_id = ${v.chainId} AND vault = ${v.address} AND timestamp < ${history ? Math.min(fromTs, beforeTs) : 0}
        ORDER BY floor(timestamp / ${sql.lit(DAY_SECONDS)}), timestamp DESC, block_number DESC, id DESC)
      UNION ALL
      (SELECT ${cols} FROM ${t} WHERE chain_id = ${v.chainId} AND vault = ${v.address} AND timestamp >= ${fromTs} AND timestamp < ${beforeTs})
    ) s ORDER BY timestamp, block_number, id`.execute(db);
  return rows.map((r) => ({
    id: r.id!,
    timestamp: Number(r.timestamp),
    blockNumber: Number(r.block_number),
    totalAssets: BigInt(r.total_assets!),
    totalSupply: BigInt(r.total_supply!),
    ratio: r.asset_share_ratio == null ? null : parseFixed(r.asset_share_ratio),
    price: r.asset_usd_price == null ? null : parseFixed(r.asset_usd_price),
    idleAssets: BigInt(r.idle_assets!),
    subaccountAssets: BigInt(r.subaccount_assets!),
  }));
}

/** The vault's first snapshot day (null without snapshots). */
export async function loadFirstDay(db: AnyDb, schema: string, v: VaultRef): Promise<number | null> {
  const { rows } = await sql<{ ts: string }>`
    SELECT timestamp AS ts FROM ${sql.id(schema, "share_ratio_snapshot")} WHERE chain_id = ${v.chainId} AND vault = ${v.address}
    ORDER BY timestamp LIMIT 1`.execute(db);
  return rows[0] ? dayOf(Number(rows[0].ts)) : null;
}

/**
 * The last snapshot of each day firstDay..beforeDay-1 as the vault's stored daily rows hold it
 * (derived.vault_day, computed from the same snapshots: the days before a job's range are the
 * ones whose fingerprints matched). Null unless every one of those days has its row, the first
 * being firstDay; the caller then reads the snapshots instead. Idle and subaccount assets are
 * not stored there and come back 0: no computation of the range reads them for earlier days.
 */
export async function loadStoredDays(db: AnyDb, v: VaultRef, firstDay: number, beforeDay: number): Promise<SnapshotIn[] | null> {
  const { rows } = await sql<{
    d: number;
    missing: boolean;
    snapshot_id: string | null;
    snapshot_timestamp: string | null;
    block_number: string | null;
    total_assets: string | null;
    total_shares: string | null;
    asset_share_ratio: string | null;
    asset_usd_price: string | null;
  }>`
    SELECT (day - date '1970-01-01') AS d, missing, snapshot_id, snapshot_timestamp, block_number, total_assets, total_shares, asset_share_ratio, asset_usd_price
    FROM derived.vault_day WHERE chain_id = ${v.chainId} AND vault = ${v.address} AND day < ${dayToDate(beforeDay)}::date
    ORDER BY day`.execute(db);
  if (rows.length !== beforeDay - firstDay || (rows.length > 0 && rows[0]!.d !== firstDay)) return null;
  const out: SnapshotIn[] = [];
  for (const r of rows) {
    if (r.missing) continue;
    if (r.snapshot_id == null || r.snapshot_timestamp == null || r.block_number == null || r.total_assets == null || r.total_shares == null) return null;
    out.push({
      id: r.snapshot_id,
      timestamp: Number(r.snapshot_timestamp),
      blockNumber: Number(r.block_number),
      totalAssets: BigInt(r.total_assets),
      totalSupply: BigInt(r.total_shares),
      ratio: r.asset_share_ratio == null ? null : parseFixed(r.asset_share_ratio),
      price: r.asset_usd_price == null ? null : parseFixed(r.asset_usd_price),
      idleAssets: 0n,
      subaccountAssets: 0n,
    });
  }
  return out;
}

/** Share balances of `wallets` at the end of day beforeDay-1, from the stored position rows. */
export async function loadPositionBalances(db: AnyDb, v: VaultRef, wallets: readonly string[], beforeDay: number): Promise<Map<string, bigint>> {
  const { rows } = await sql<{ wallet: string; shares: string }>`
    SELECT DISTINCT ON (wallet) wallet, shares FROM derived.points_position
    WHERE chain_id = ${v.chainId} AND vault = ${v.address} AND wallet = ANY(${[...wallets]}::text[])
      AND day < ${dayToDate(beforeDay)}::date
    ORDER BY wallet, day DESC`.execute(db);
  return new Map(rows.map((r) => [r.wallet, BigInt(r.shares)]));
}

/** Management fees charged before `beforeTs`. */
export async function loadFees(db: AnyDb, schema: string, v: VaultRef, beforeTs: number): Promise<FeeIn[]> {
  const rows = await idx(db, schema)
    .selectFrom("fee_event")
    .select(["timestamp", "amount"])
    .where("chain_id", "=", v.chainId)
    .where("vault", "=", v.address)
    .where("kind", "=", "management_fee_charged")
    .where("timestamp", "<", String(beforeTs))
    .orderBy("timestamp")
    .execute();
  return rows.map((r) => ({ timestamp: Number(r.timestamp), amount: BigInt(r.amount ?? "0") }));
}

/**
 * Share balances per wallet from every transfer before `beforeTs`, zero balances included: the
 * positions of wallets that left stay dated like everyone else's, so a recompute equals the
 * incremental runs.
 */
export async function loadBalances(db: AnyDb, schema: string, v: VaultRef, beforeTs: number, wallets?: readonly string[]): Promise<Map<string, bigint>> {
  // `wallets`: only these wallets' balances (the indexer stores addresses in lower case)
  const only = (col: string) => (wallets ? sql` AND ${sql.ref(col)} = ANY(${[...wallets]}::text[])` : sql``);
  const { rows } = await sql<{ wallet: string; balance: string }>`
    SELECT wallet, sum(delta)::text AS balance FROM (
      SELECT to_address AS wallet, shares AS delta FROM ${sql.id(schema, "share_transfer")}
        WHERE chain_id = ${v.chainId} AND vault = ${v.address} AND timestamp < ${beforeTs}${only("to_address")}
      UNION ALL
      SELECT from_address, -shares FROM ${sql.id(schema, "share_transfer")}
        WHERE chain_id = ${v.chainId} AND vault = ${v.address} AND timestamp < ${beforeTs}${only("from_address")}
    ) t GROUP BY wallet`.execute(db);
  return new Map(rows.map((r) => [r.wallet.toLowerCase(), BigInt(r.balance)]));
}

/** Share transfers with fromTs <= timestamp < toTs, in chain order. */
export async function loadTransfers(db: AnyDb, schema: string, v: VaultRef, fromTs: number, toTs: number): Promise<TransferIn[]> {
  const rows = await idx(db, schema)
    .selectFrom("share_transfer")
    .select(["from_address", "to_address", "shares", "timestamp"])
    .where("chain_id", "=", v.chainId)
    .where("vault", "=", v.address)
    .where("timestamp", ">=", String(fromTs))
    .where("timestamp", "<", String(toTs))
    .orderBy("block_number")
    .orderBy("log_index")
    .execute();
  return rows.map((r) => ({ day: dayOf(Number(r.timestamp)), from: r.from_address.toLowerCase(), to: r.to_address.toLowerCase(), shares: BigInt(r.shares) }));
}

export interface RewardWindow {
  id: string;
  multiplier: bigint;
  start: number; // unix seconds
  end: number | null;
}

export async function loadRewards(db: AnyDb, v?: VaultRef): Promise<Map<string, RewardWindow[]>> {
  let q = db.selectFrom("registry.reward").select(["id", "chain_id", "vault", "multiplier", "start_datetime", "end_datetime"]).orderBy("id");
  if (v) q = q.where("chain_id", "=", v.chainId).where("vault", "=", v.address);
  const out = new Map<string, RewardWindow[]>();
  for (const r of await q.execute()) {
    const key = `${r.chain_id}:${r.vault.toLowerCase()}`;
    const list = out.get(key) ?? [];
    list.push({
      id: r.id,
      multiplier: parseFixed(String(r.multiplier)),
      start: Math.floor(new Date(r.start_datetime).getTime() / 1000),
      end: r.end_datetime == null ? null : Math.floor(new Date(r.end_datetime).getTime() / 1000),
    });
    out.set(key, list);
  }
  return out;
}

/**
 * The vault's points multiplier on `day`: the product of the multipliers of the rewards in
 * force at the last instant of the day (start <= t < end), 1 when none.
 */
export function multiplierOn(rewards: readonly RewardWindow[] | undefined, day: number): bigint {
  const t = endOfDay(day) - 1;
  let m = SCALE;
  for (const r of rewards ?? []) if (r.start <= t && (r.end == null || t < r.end)) m = mulFixed(m, r.multiplier);
  return m;
}

// ---- fingerprints ---------------------------------------------------------------------------

const md5 = (s: string) => createHash("md5").update(s).digest("hex");

/**
 * Per vault and day, a hash of everything indexed that day which the day's figures depend on
 * (snapshots, share transfers, management fees). One query for one vault or for all.
 */
export async function loadDayHashes(db: AnyDb, schema: string, v?: VaultRef, fromDay?: number): Promise<Map<string, Map<number, string>>> {
  const since = (alias: string) => (fromDay != null ? sql` AND ${sql.ref(`${alias}.timestamp`)} >= ${fromDay * DAY_SECONDS}` : sql``);
  const where = (alias: string) =>
    v
      ? sql`WHERE ${sql.ref(`${alias}.chain_id`)} = ${v.chainId} AND ${sql.ref(`${alias}.vault`)} = ${v.address}${since(alias)}`
      : sql`WHERE true${since(alias)}`;
  const { rows } = await sql<{ chain_id: number; vault: string; d: number; h: string }>`
    SELECT chain_id, vault, d, string_agg(part, '|' ORDER BY part) AS h FROM (
      SELECT s.chain_id, s.vault, floor(s.timestamp / ${DAY_SECONDS})::int AS d,
        's' || md5(string_agg(s.id || ':' || s.total_assets || ':' || s.total_supply || ':' || coalesce(s.asset_share_ratio::text, '-')
          || ':' || coalesce(s.asset_usd_price::text, '-') || ':' || s.idle_assets || ':' || s.subaccount_assets, ',' ORDER BY s.id)) AS part
      FROM ${sql.id(schema, "share_ratio_snapshot")} s ${where("s")} GROUP BY 1, 2, 3
      UNION ALL
      SELECT t.chain_id, t.vault, floor(t.timestamp / ${DAY_SECONDS})::int,
        't' || md5(string_agg(t.id || ':' || t.from_address || ':' || t.to_address || ':' || t.shares, ',' ORDER BY t.id))
      FROM ${sql.id(schema, "share_transfer")} t ${where("t")} GROUP BY 1, 2, 3
      UNION ALL
      SELECT f.chain_id, f.vault, floor(f.timestamp / ${DAY_SECONDS})::int,
        'f' || md5(string_agg(f.id || ':' || coalesce(f.amount::text, '-'), ',' ORDER BY f.id))
      FROM ${sql.id(schema, "fee_event")} f ${where("f")} AND f.kind = 'management_fee_charged' GROUP BY 1, 2, 3
    ) x GROUP BY 1, 2, 3`.execute(db);
  const out = new Map<string, Map<number, string>>();
  for (const r of rows) {
    const key = `${r.chain_id}:${r.vault.toLowerCase()}`;
    let m = out.get(key);
    if (!m) out.set(key, (m = new Map()));
    m.set(r.d, r.h);
  }
  return out;
}

export interface FingerprintInput {
  meta: VaultMeta;
  firstDay: number;
  dayHashes: ReadonlyMap<number, string>;
  rewards: readonly RewardWindow[] | undefined;
  rulesKey: string;
}

/**
 * Chained fingerprints, one per day from the vault's first day to `to`: day D's covers every
 * input of days <= D (snapshots, transfers, fees, multipliers, vault metadata, points rules), so
 * a change on day X changes the fingerprint of every day >= X. Registrations are not inputs:
 * referral points are computed on read from the registry (derived.points_referral).
 */
export function chainFingerprints(f: FingerprintInput, to: number, seed?: { day: number; fingerprint: string }): Map<number, string> {
  // A seed (the stored fingerprint of the day before a range) continues the chain without
  // rehashing the history before it; a stale seed only means the fan-out recomputes from earlier.
  let h = seed && seed.day >= f.firstDay ? seed.fingerprint : md5(JSON.stringify([f.meta, f.rulesKey]));
  const out = new Map<number, string>();
  for (let d = seed && seed.day >= f.firstDay ? seed.day + 1 : f.firstDay; d <= to; d++) {
    const m = multiplierOn(f.rewards, d);
    h = md5(`${h}|${f.dayHashes.get(d) ?? ""}|${m === SCALE ? "" : m.toString()}`);
    out.set(d, h);
  }
  return out;
}

/** First snapshot day per vault. */
export async function loadFirstDays(db: AnyDb, schema: string): Promise<Map<string, number>> {
  const { rows } = await sql<{ chain_id: number; vault: string; ts: string }>`
    SELECT chain_id, vault, min(timestamp)::text AS ts FROM ${sql.id(schema, "share_ratio_snapshot")} GROUP BY 1, 2`.execute(db);
  return new Map(rows.map((r) => [`${r.chain_id}:${r.vault.toLowerCase()}`, dayOf(Number(r.ts))]));
}

/** Stored fingerprints per vault and day. */
export async function loadStoredFingerprints(db: AnyDb, v?: VaultRef, sinceDay?: number): Promise<Map<string, Map<number, string>>> {
  let q = db.selectFrom("derived.vault_day").select(["chain_id", "vault", "day", "fingerprint"]);
  if (v) q = q.where("chain_id", "=", v.chainId).where("vault", "=", v.address);
  if (sinceDay != null) q = q.where("day", ">=", dayToDate(sinceDay));
  const out = new Map<string, Map<number, string>>();
  for (const r of await q.execute()) {
    const key = `${r.chain_id}:${r.vault}`;
    let m = out.get(key);
    if (!m) out.set(key, (m = new Map()));
    m.set(dateToDay(r.day), r.fingerprint);
  }
  return out;
}
