/**
 * Reads the jobs' inputs (indexed tables through the views schema, registry tables) and
 * fingerprints them. Each table's writer is named in docs/schema.md ("Who writes what"). Every
 * function takes the database first.
 */
import { createHash } from "node:crypto";
import { type Kysely, sql, type Transaction } from "kysely";
import { loadRegistry } from "../config/registry.js";
import { groupByVault, rowKey, type VaultRef, vaultBatch, vaultKey } from "../db/batch.js";
import { DAY_SECONDS, dateToDay, dayOf, dayToDate, endOfDay } from "../db/days.js";
import { fixedTextToNumber, mulFixed, parseFixed, SCALE } from "../db/fixed.js";
import type { Database, IndexerTables } from "../db/schema.js";
import type { TransferIn } from "./points/compute.js";
import type { FeeIn, SnapshotIn, VaultMeta } from "./vault/compute.js";

export type Db = Kysely<Database>;
type AnyDb = Kysely<Database> | Transaction<Database>;
type Idx = Kysely<IndexerTables>;
const idx = (db: AnyDb, schema: string): Idx => db.withSchema(schema) as unknown as Idx;

/**
 * Every indexed vault with what the computations need. Strategist names come from the registry
 * tables (what the API serves; the indexer loads them from the file), else from the registry file
 * when the tables lack the vault: so a process started without VAULT_REGISTRY (a recompute in the
 * wrong environment) computes the same rows as the workers, not rows without strategist names.
 */
export async function loadVaultMetas(db: AnyDb, schema: string, registryPath?: string): Promise<VaultMeta[]> {
  const rows = await idx(db, schema)
    .selectFrom("vault")
    .select([
      "chain_id",
      "address",
      "name",
      "family",
      "decimals",
      "asset_symbol",
      "asset_decimals",
      "alt_asset_decimals",
    ])
    .orderBy("chain_id")
    .orderBy("address")
    .execute();
  const strategists = new Map<string, string>();
  const named = await sql<{ chain_id: number; address: string; name: string }>`
    SELECT v.chain_id, lower(v.address) AS address, s.name
    FROM registry.vault v JOIN registry.strategist s ON s.id = v.strategist_id`.execute(db);
  for (const r of named.rows) strategists.set(vaultKey({ chainId: r.chain_id, address: r.address }), r.name);
  if (registryPath) {
    try {
      for (const v of loadRegistry(registryPath).evm) {
        const key = vaultKey(v);
        if (v.strategist?.name && !strategists.has(key)) strategists.set(key, v.strategist.name);
      }
    } catch {
      // The registry file is optional for the jobs: the tables' names stand alone.
    }
  }
  return rows.map((r) => ({
    chainId: r.chain_id,
    address: r.address.toLowerCase(),
    name: r.name,
    shareDecimals: r.decimals,
    assetDecimals: r.asset_decimals,
    assetSymbol: r.asset_symbol,
    altAssetDecimals: r.alt_asset_decimals,
    strategistName: strategists.get(vaultKey({ chainId: r.chain_id, address: r.address })) ?? null,
    family: r.family,
  }));
}

/**
 * Share balances per wallet from every transfer before `beforeTs`, zero balances included: the
 * positions of wallets that left stay dated like everyone else's, so a recompute equals the
 * incremental runs.
 */
export async function loadBalances(
  db: AnyDb,
  schema: string,
  v: VaultRef,
  beforeTs: number,
  wallets?: readonly string[],
): Promise<Map<string, bigint>> {
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

// ---- batch readers: one statement for a list of vaults, each with its own bounds (db/batch.ts) ----

type SnapshotRow = Record<string, string | null> & { chain_id: number; vault: string };
const snapshotIn = (r: SnapshotRow): SnapshotIn => ({
  id: r.id!,
  timestamp: Number(r.timestamp),
  blockNumber: Number(r.block_number),
  totalAssets: BigInt(r.total_assets!),
  totalSupply: BigInt(r.total_supply!),
  ratio: r.asset_share_ratio == null ? null : parseFixed(r.asset_share_ratio),
  ratioNumber: r.asset_share_ratio == null ? undefined : fixedTextToNumber(r.asset_share_ratio),
  price: r.asset_usd_price == null ? null : parseFixed(r.asset_usd_price),
  idleAssets: BigInt(r.idle_assets!),
  subaccountAssets: BigInt(r.subaccount_assets!),
  altAssets: r.alt_assets == null ? null : BigInt(r.alt_assets),
  altPrice: r.alt_asset_usd_price == null ? null : parseFixed(r.alt_asset_usd_price),
});

/**
 * Per vault, the snapshots a computation of the days from `fromTs` on needs, in chain order:
 * every one from `fromTs` to `beforeTs`, and, with `history`, before `fromTs` only the last of
 * each day (what sp(D), the TVL and the index of earlier days are read from).
 */
export async function loadSnapshotsFrom(
  db: AnyDb,
  schema: string,
  items: readonly { v: VaultRef; fromTs: number; beforeTs: number; history: boolean }[],
): Promise<Map<string, SnapshotIn[]>> {
  const t = sql.id(schema, "share_ratio_snapshot");
  const hist = items.filter((i) => i.history);
  // numeric columns arrive as strings (pg's default)
  const cols = sql`s.chain_id, s.vault, s.id, s.timestamp, s.block_number, s.total_assets, s.total_supply,
    s.asset_share_ratio, s.asset_usd_price, s.idle_assets, s.subaccount_assets,
    s.alt_assets, s.alt_asset_usd_price`;
  const { rows } = await sql<SnapshotRow>`
    SELECT * FROM (
      (SELECT DISTINCT ON (s.chain_id, s.vault, floor(s.timestamp / ${sql.lit(DAY_SECONDS)})) ${cols}
        FROM ${vaultBatch(hist, (i) => i.v, { before_ts: ["bigint", (i) => Math.min(i.fromTs, i.beforeTs)] })}
        CROSS JOIN LATERAL (SELECT * FROM ${t} s WHERE s.chain_id = r.chain_id AND s.vault = r.vault
          AND s.timestamp < r.before_ts OFFSET 0) s
        ORDER BY s.chain_id, s.vault, floor(s.timestamp / ${sql.lit(DAY_SECONDS)}), s.timestamp DESC,
          s.block_number DESC, s.id DESC)
      UNION ALL
      (SELECT ${cols}
        FROM ${vaultBatch(items, (i) => i.v, {
          from_ts: ["bigint", (i) => i.fromTs],
          before_ts: ["bigint", (i) => i.beforeTs],
        })}
        CROSS JOIN LATERAL (
          SELECT * FROM ${t} s WHERE s.chain_id = r.chain_id AND s.vault = r.vault AND s.timestamp >= r.from_ts
            AND s.timestamp < r.before_ts OFFSET 0) s)
    ) x ORDER BY chain_id, vault, timestamp, block_number, id`.execute(db);
  return groupByVault(rows, snapshotIn);
}

/**
 * Per vault, the last snapshot of each day firstDay..beforeDay-1 as its stored daily rows hold it
 * (derived.vault_day, computed from the same snapshots: the days before a job's range are the
 * ones whose fingerprints matched). A vault maps to null unless every one of those days has its
 * row, the first being firstDay; the caller then reads its snapshots instead. Not stored there,
 * and read by no computation of a later range for earlier days: the snapshot id (''), idle and
 * subaccount assets (0), the alt asset and its price (null).
 *
 * Each vault's days come as one text (one row per vault, days split by ';', fields by ','): a
 * history of 730 days as 8,000 protocol fields cost the job more than the computation did.
 */
export async function loadStoredDays(
  db: AnyDb,
  items: readonly { v: VaultRef; firstDay: number; beforeDay: number }[],
): Promise<Map<string, SnapshotIn[] | null>> {
  const { rows } = await sql<{
    chain_id: number;
    vault: string;
    n: number;
    first: number | null;
    packed: string | null;
  }>`
    SELECT r.chain_id, r.vault, d.n, d.first, d.packed
    FROM ${vaultBatch(items, (i) => i.v, { before_day: ["int", (i) => i.beforeDay] })}
    CROSS JOIN LATERAL (
      SELECT count(*)::int AS n, min(x.day) - date '1970-01-01' AS first,
        string_agg(CASE WHEN x.missing THEN '' ELSE
          concat(x.snapshot_timestamp, ',', x.block_number, ',', x.total_assets, ',', x.total_shares, ',',
          x.asset_share_ratio, ',', x.asset_usd_price, ',', (x.snapshot_id IS NULL)::int) END, ';'
          ORDER BY x.day) AS packed
      FROM derived.vault_day x WHERE x.chain_id = r.chain_id AND x.vault = r.vault
        AND x.day < date '1970-01-01' + r.before_day) d`.execute(db);
  const byVault = new Map(rows.map((r) => [rowKey(r), r]));
  return new Map(
    items.map(({ v, firstDay, beforeDay }) => {
      const r = byVault.get(vaultKey(v));
      const complete = r != null && r.n === beforeDay - firstDay && (r.n === 0 || r.first === firstDay);
      return [vaultKey(v), complete ? storedSnapshots(r.packed) : null];
    }),
  );
}

/** The snapshots of packed stored days (see loadStoredDays); null when a day lacks a field. */
function storedSnapshots(packed: string | null): SnapshotIn[] | null {
  const out: SnapshotIn[] = [];
  if (packed == null) return out;
  for (const day of packed.split(";")) {
    if (day === "") continue; // a missing day
    const [ts, block, assets, shares, ratio, price, noId] = day.split(",") as [
      string,
      string,
      string,
      string,
      string,
      string,
      string,
    ];
    if (ts === "" || block === "" || assets === "" || shares === "" || noId === "1") return null;
    out.push({
      id: "",
      timestamp: Number(ts),
      blockNumber: Number(block),
      totalAssets: BigInt(assets),
      totalSupply: BigInt(shares),
      ratio: ratio === "" ? null : parseFixed(ratio),
      ratioNumber: ratio === "" ? undefined : fixedTextToNumber(ratio),
      price: price === "" ? null : parseFixed(price),
      idleAssets: 0n,
      subaccountAssets: 0n,
      altAssets: null,
      altPrice: null,
    });
  }
  return out;
}

/** Per vault, the share balances of its `wallets` at the end of day beforeDay-1, from the stored position rows. */
export async function loadPositionBalances(
  db: AnyDb,
  items: readonly { v: VaultRef; wallets: readonly string[]; beforeDay: number }[],
): Promise<Map<string, Map<string, bigint>>> {
  const flat = items.flatMap((i) => i.wallets.map((w) => ({ v: i.v, w, beforeDay: i.beforeDay })));
  const { rows } = await sql<{ chain_id: number; vault: string; wallet: string; shares: string }>`
    SELECT r.chain_id, r.vault, r.wallet, p.shares
    FROM ${vaultBatch(flat, (f) => f.v, { wallet: ["text", (f) => f.w], before_day: ["int", (f) => f.beforeDay] })}
    CROSS JOIN LATERAL (
      SELECT p.shares FROM derived.points_position p
      WHERE p.chain_id = r.chain_id AND p.vault = r.vault AND p.wallet = r.wallet
        AND p.day < date '1970-01-01' + r.before_day
      ORDER BY p.day DESC LIMIT 1) p`.execute(db);
  const out = new Map<string, Map<string, bigint>>();
  for (const [key, list] of groupByVault(rows, (r) => [r.wallet, BigInt(r.shares)] as const))
    out.set(key, new Map(list));
  return out;
}

/** Per vault, the management fees charged before its `beforeTs`. */
export async function loadFees(
  db: AnyDb,
  schema: string,
  items: readonly { v: VaultRef; beforeTs: number }[],
): Promise<Map<string, FeeIn[]>> {
  const { rows } = await sql<{ chain_id: number; vault: string; timestamp: string; amount: string | null }>`
    SELECT f.chain_id, f.vault, f.timestamp, f.amount
    FROM ${vaultBatch(items, (i) => i.v, { before_ts: ["bigint", (i) => i.beforeTs] })}
    CROSS JOIN LATERAL (
      SELECT * FROM ${sql.id(schema, "fee_event")} f
      WHERE f.chain_id = r.chain_id AND f.vault = r.vault AND f.kind = 'management_fee_charged'
        AND f.timestamp < r.before_ts OFFSET 0) f
    ORDER BY f.chain_id, f.vault, f.timestamp`.execute(db);
  return groupByVault(rows, (r) => ({ timestamp: Number(r.timestamp), amount: BigInt(r.amount ?? "0") }));
}

/**
 * Per vault, its share transfers with fromTs <= timestamp < toTs, in chain order. `fromBlock` (a
 * block at or before the first one at fromTs; 0 when unknown) bounds the scan of the
 * (chain_id, vault, block_number) index.
 */
export async function loadTransfers(
  db: AnyDb,
  schema: string,
  items: readonly { v: VaultRef; fromTs: number; toTs: number; fromBlock: number }[],
): Promise<Map<string, TransferIn[]>> {
  const { rows } = await sql<{
    chain_id: number;
    vault: string;
    from_address: string;
    to_address: string;
    shares: string;
    timestamp: string;
  }>`
    SELECT t.chain_id, t.vault, t.from_address, t.to_address, t.shares, t.timestamp
    FROM ${vaultBatch(items, (i) => i.v, {
      from_ts: ["bigint", (i) => i.fromTs],
      to_ts: ["bigint", (i) => i.toTs],
      from_block: ["bigint", (i) => i.fromBlock],
    })}
    CROSS JOIN LATERAL (
      SELECT * FROM ${sql.id(schema, "share_transfer")} t
      WHERE t.chain_id = r.chain_id AND t.vault = r.vault AND t.block_number >= r.from_block
        AND t.timestamp >= r.from_ts AND t.timestamp < r.to_ts OFFSET 0) t
    ORDER BY t.chain_id, t.vault, t.block_number, t.log_index`.execute(db);
  return groupByVault(rows, (r) => ({
    day: dayOf(Number(r.timestamp)),
    timestamp: Number(r.timestamp),
    from: r.from_address.toLowerCase(),
    to: r.to_address.toLowerCase(),
    shares: BigInt(r.shares),
  }));
}

/** Every vault with a stored row for `day`, with the block of that day's last snapshot (0 on a day without one). */
export async function loadBlocksOn(db: AnyDb, day: number): Promise<{ v: VaultRef; block: number }[]> {
  const { rows } = await sql<{ chain_id: number; vault: string; block: string }>`
    SELECT chain_id, vault, coalesce(block_number, 0)::text AS block FROM derived.vault_day
      WHERE day = ${dayToDate(day)}::date`.execute(db);
  return rows.map((r) => ({ v: { chainId: r.chain_id, address: r.vault }, block: Number(r.block) }));
}

/** Per vault, its stored fingerprint of one day (the day before a job's range), where there is one. */
export async function loadFingerprintsOn(
  db: AnyDb,
  items: readonly { v: VaultRef; day: number }[],
): Promise<Map<string, string>> {
  const { rows } = await sql<{ chain_id: number; vault: string; fingerprint: string }>`
    SELECT d.chain_id, d.vault, d.fingerprint
    FROM ${vaultBatch(items, (i) => i.v, { day: ["int", (i) => i.day] })}
    CROSS JOIN LATERAL (
      SELECT * FROM derived.vault_day d WHERE d.chain_id = r.chain_id AND d.vault = r.vault
        AND d.day = date '1970-01-01' + r.day OFFSET 0) d`.execute(db);
  return new Map(rows.map((r) => [rowKey(r), r.fingerprint]));
}

export interface RewardWindow {
  id: string;
  multiplier: bigint;
  start: number; // unix seconds
  end: number | null;
}

export async function loadRewards(db: AnyDb, v?: VaultRef): Promise<Map<string, RewardWindow[]>> {
  let q = db
    .selectFrom("registry.reward")
    .select(["id", "chain_id", "vault", "multiplier", "start_datetime", "end_datetime"])
    .orderBy("id");
  if (v) q = q.where("chain_id", "=", v.chainId).where("vault", "=", v.address);
  const out = new Map<string, RewardWindow[]>();
  for (const r of await q.execute()) {
    const key = rowKey(r);
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
 * (snapshots, share transfers, management fees). One query for every vault (from `fromDay` on,
 * when given) or for a list of vaults, each from its own day.
 */
export async function loadDayHashes(
  db: AnyDb,
  schema: string,
  scope:
    | { fromDay?: number | undefined }
    | { vaults: readonly { v: VaultRef; fromDay: number; fromBlock?: number }[] } = {},
): Promise<Map<string, Map<number, string>>> {
  // the rows of one table to hash: all (from `fromDay` on), or per listed vault from its day
  // (and, for tables indexed by block, from its block: a bound of the index scan)
  const rowsOf = (table: string, byBlock: boolean, extra = sql``) => {
    const t = sql.id(schema, table);
    if ("vaults" in scope) {
      const vs = scope.vaults;
      return sql`${vaultBatch(vs, (i) => i.v, {
        from_ts: ["bigint", (i) => i.fromDay * DAY_SECONDS],
        from_block: ["bigint", (i) => i.fromBlock ?? 0],
      })}
        CROSS JOIN LATERAL (
          SELECT * FROM ${t} x WHERE x.chain_id = r.chain_id AND x.vault = r.vault
            AND x.timestamp >= r.from_ts ${byBlock ? sql`AND x.block_number >= r.from_block` : sql``} ${extra}
          OFFSET 0) x`;
    }
    return sql`${t} x WHERE ${
      scope.fromDay != null
        ? sql`x.timestamp >=
      ${scope.fromDay * DAY_SECONDS}`
        : sql`true`
    }
      ${extra}`;
  };
  const { rows } = await sql<{ chain_id: number; vault: string; d: number; h: string }>`
    SELECT chain_id, vault, d, string_agg(part, '|' ORDER BY part) AS h FROM (
      SELECT x.chain_id, x.vault, floor(x.timestamp / ${DAY_SECONDS})::int AS d,
        's' || md5(string_agg(x.id || ':' || x.total_assets || ':' || x.total_supply || ':' ||
          coalesce(x.asset_share_ratio::text, '-')
          || ':' || coalesce(x.asset_usd_price::text, '-') || ':' || x.idle_assets || ':' || x.subaccount_assets
          || ':' || coalesce(x.alt_assets::text, '-') || ':' || coalesce(x.alt_asset_usd_price::text, '-'),
          ',' ORDER BY x.id)) AS part
      FROM ${rowsOf("share_ratio_snapshot", false)} GROUP BY 1, 2, 3
      UNION ALL
      SELECT x.chain_id, x.vault, floor(x.timestamp / ${DAY_SECONDS})::int,
        't' || md5(string_agg(x.id || ':' || x.from_address || ':' || x.to_address || ':' || x.shares, ','
        ORDER BY x.id))
      FROM ${rowsOf("share_transfer", true)} GROUP BY 1, 2, 3
      UNION ALL
      SELECT x.chain_id, x.vault, floor(x.timestamp / ${DAY_SECONDS})::int,
        'f' || md5(string_agg(x.id || ':' || coalesce(x.amount::text, '-'), ',' ORDER BY x.id))
      FROM ${rowsOf("fee_event", false, sql`AND x.kind = 'management_fee_charged'`)} GROUP BY 1, 2, 3
    ) x GROUP BY 1, 2, 3`.execute(db);
  const out = new Map<string, Map<number, string>>();
  for (const r of rows) {
    const key = rowKey(r);
    let m = out.get(key);
    if (!m) {
      m = new Map();
      out.set(key, m);
    }
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
export function chainFingerprints(
  f: FingerprintInput,
  to: number,
  seed?: { day: number; fingerprint: string },
): Map<number, string> {
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

/** First snapshot day per vault: of every indexed vault, or of the listed ones. */
export async function loadFirstDays(
  db: AnyDb,
  schema: string,
  vaults?: readonly VaultRef[],
): Promise<Map<string, number>> {
  const list = vaults
    ? vaultBatch(vaults, (v) => v)
    : sql`(SELECT chain_id, lower(address) AS vault FROM ${sql.id(schema, "vault")}) r`;
  // one index probe per vault on (chain_id, vault, timestamp)
  const { rows } = await sql<{ chain_id: number; vault: string; ts: string | null }>`
    SELECT r.chain_id, r.vault,
      (SELECT s.timestamp FROM ${sql.id(schema, "share_ratio_snapshot")} s WHERE s.chain_id = r.chain_id
      AND s.vault = r.vault ORDER BY s.timestamp LIMIT 1)::text AS ts
    FROM ${list}`.execute(db);
  return new Map(rows.filter((r) => r.ts != null).map((r) => [rowKey(r), dayOf(Number(r.ts))]));
}

/** Stored fingerprints per vault and day. */
export async function loadStoredFingerprints(
  db: AnyDb,
  v?: VaultRef,
  sinceDay?: number,
): Promise<Map<string, Map<number, string>>> {
  let q = db.selectFrom("derived.vault_day").select(["chain_id", "vault", "day", "fingerprint"]);
  if (v) q = q.where("chain_id", "=", v.chainId).where("vault", "=", v.address);
  if (sinceDay != null) q = q.where("day", ">=", dayToDate(sinceDay));
  const out = new Map<string, Map<number, string>>();
  for (const r of await q.execute()) {
    const key = rowKey(r);
    let m = out.get(key);
    if (!m) {
      m = new Map();
      out.set(key, m);
    }
    m.set(dateToDay(r.day), r.fingerprint);
  }
  return out;
}
