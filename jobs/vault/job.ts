/**
 * The vault-days job: recomputes one vault's daily rows, APY rows, unrealized PnL records and
 * points (its points-per-share index and the position rows of wallets whose balance changed)
 * for the days from..to. Inputs are read in one REPEATABLE READ snapshot (so the stored
 * fingerprints describe exactly the data used); outputs replace the range's rows in one
 * transaction, so a job killed at any point leaves the old rows or the new ones, never a mix,
 * and a retry writes the same rows.
 */
import type pg from "pg";
import { sql } from "kysely";
import { copyRows } from "../lib/copy.js";
import { dateToDay, dayToDate, endOfDay, DAY_SECONDS } from "../lib/days.js";
import { formatDecimals, formatFixed } from "../lib/fixed.js";
import {
  balanceChanges,
  computeIndex,
  cumLookup,
  INDEX_DECIMALS,
  settlePositions,
  type BalanceChange,
  type DayPricing,
  type IndexDay,
  type PointsRules,
} from "../points/compute.js";
import {
  chainFingerprints,
  loadBalances,
  loadDayHashes,
  loadFees,
  loadRewards,
  loadFirstDay,
  loadPositionBalances,
  loadSnapshotsFrom,
  loadStoredDays,
  loadTransfers,
  loadVaults,
  multiplierOn,
  vaultKey,
  type Db,
  type VaultRef,
} from "../repo.js";
import { computeVaultDays, type SnapshotIn } from "./compute.js";

export interface VaultDaysContext {
  db: Db;
  pool: pg.Pool;
  indexerSchema: string;
  registryPath?: string | undefined;
  rules: PointsRules;
  /** fault injection for tests: keep the write transaction open this long before COMMIT */
  faultHoldMs?: number;
}

export interface VaultDaysResult {
  days: number;
  apyRows: number;
  pnlRows: number;
  indexRows: number;
  positionRows: number;
}

const ZERO = "0x0000000000000000000000000000000000000000";

/** Part of every fingerprint: "index" names the points rule (per-share index, migration 0007). */
export const rulesKey = (r: PointsRules) => `index:${r.pointsPerUsdPerDay}:${r.referralShare}`;

const formatIndex = (v: bigint) => formatDecimals(v, INDEX_DECIMALS);

/** sp and price carried to each day from..to (the last snapshot at or before the day's end). */
function pricingByDay(snapshots: readonly SnapshotIn[], from: number, to: number): Map<number, { ratio: bigint | null; price: bigint | null }> {
  const out = new Map<number, { ratio: bigint | null; price: bigint | null }>();
  let k = 0;
  let cur: SnapshotIn | undefined;
  for (let d = from; d <= to; d++) {
    const end = endOfDay(d);
    while (k < snapshots.length && snapshots[k]!.timestamp < end) cur = snapshots[k++]!;
    out.set(d, { ratio: cur?.ratio ?? null, price: cur?.price ?? null });
  }
  return out;
}

export async function runVaultDays(ctx: VaultDaysContext, v: VaultRef, from: number, to: number): Promise<VaultDaysResult> {
  const beforeTs = endOfDay(to);
  // ---- read, in one consistent snapshot ----
  const input = await ctx.db
    .transaction()
    .setIsolationLevel("repeatable read")
    .execute(async (trx) => {
      await sql`SET TRANSACTION READ ONLY`.execute(trx);
      const meta = (await loadVaults(trx, ctx.indexerSchema, ctx.registryPath)).find((m) => m.chainId === v.chainId && m.address === v.address);
      if (!meta) return null;
      // The index is cumulative: when days after `to` are already indexed (a recompute of a
      // past range), they are rewritten too, from the same snapshot.
      const last = await trx.selectFrom("derived.points_vault").select("day").where("chain_id", "=", v.chainId).where("vault", "=", v.address).executeTakeFirst();
      const lastDay = Math.max(to, last ? dateToDay(last.day) : to);
      // A range after the vault's first day continues from what its stored rows say of the days
      // before it (their fingerprints matched: their inputs did not change): the last snapshot
      // of each day from derived.vault_day, the movers' balances from derived.points_position.
      // Without those rows (a first run, rows missing) it reads the indexed history.
      const firstDay = await loadFirstDay(trx, ctx.indexerSchema, v);
      const continues = firstDay != null && from > firstDay;
      const stored = continues ? await loadStoredDays(trx, v, firstDay, from) : null;
      const snapshots = stored
        ? [...stored, ...(await loadSnapshotsFrom(trx, ctx.indexerSchema, v, from * DAY_SECONDS, endOfDay(lastDay), false))]
        : await loadSnapshotsFrom(trx, ctx.indexerSchema, v, from * DAY_SECONDS, endOfDay(lastDay));
      const fees = await loadFees(trx, ctx.indexerSchema, v, beforeTs);
      const transfers = await loadTransfers(trx, ctx.indexerSchema, v, from * DAY_SECONDS, beforeTs);
      // After the first day only the start balances of the wallets that move matter (the others'
      // rows are stored); from the first day on, every holder's.
      const movers = continues ? [...new Set(transfers.flatMap((t) => [t.from, t.to]))] : undefined;
      const startBalances = stored
        ? await loadPositionBalances(trx, v, movers!, from)
        : await loadBalances(trx, ctx.indexerSchema, v, from * DAY_SECONDS, movers);
      const rewards = (await loadRewards(trx, v)).get(vaultKey(v));
      const seedRow = await trx
        .selectFrom("derived.vault_day")
        .select("fingerprint")
        .where("chain_id", "=", v.chainId)
        .where("vault", "=", v.address)
        .where("day", "=", dayToDate(from - 1))
        .executeTakeFirst();
      const seed = seedRow ? { day: from - 1, fingerprint: seedRow.fingerprint } : undefined;
      const dayHashes = (await loadDayHashes(trx, ctx.indexerSchema, v, seed ? from : undefined)).get(vaultKey(v)) ?? new Map();
      return { meta, lastDay, snapshots, fees, startBalances, transfers, rewards, dayHashes, seed };
    });
  const empty = { days: 0, apyRows: 0, pnlRows: 0, indexRows: 0, positionRows: 0 };
  if (!input) return empty;
  const { meta, lastDay } = input;
  const snapshots = input.snapshots.filter((s) => s.timestamp < beforeTs);
  if (snapshots.length === 0) return empty;

  // ---- compute (pure) ----
  const out = computeVaultDays(meta, snapshots, input.fees, from, to);
  const firstDay = out.firstDay!;
  const fps = chainFingerprints(
    { meta, firstDay, dayHashes: input.dayHashes, rewards: input.rewards, rulesKey: rulesKey(ctx.rules) },
    to,
    input.seed,
  );
  const pricing = pricingByDay(input.snapshots, firstDay, lastDay);
  const index = computeIndex(firstDay, lastDay, meta.assetDecimals, (d): DayPricing => ({ ...pricing.get(d)!, multiplier: multiplierOn(input.rewards, d) }), ctx.rules);
  // Positions start on the first index day: holdings from before it (it earns nothing then)
  // are recorded on that day, so they exist whatever range a job starts from.
  const excluded = new Set([ZERO, v.address]);
  let changes: BalanceChange[];
  if (from <= firstDay) {
    const start = new Map(input.startBalances);
    for (const t of input.transfers) {
      if (t.day >= firstDay) break;
      if (!excluded.has(t.from)) start.set(t.from, (start.get(t.from) ?? 0n) - t.shares);
      if (!excluded.has(t.to)) start.set(t.to, (start.get(t.to) ?? 0n) + t.shares);
    }
    changes = firstDay <= to ? balanceChanges(start, input.transfers.filter((t) => t.day >= firstDay), excluded, firstDay, to, true) : [];
  } else changes = balanceChanges(input.startBalances, input.transfers, excluded, from, to);

  // ---- write, in one transaction ----
  let positionRows = 0;
  const client = await ctx.pool.connect();
  // pg-pool drops its idle error listener while a client is checked out: without one, a
  // connection ended by the server mid-job would be an uncaught error instead of a failed job.
  const onError = () => {};
  client.on("error", onError);
  try {
    await client.query("BEGIN");
    // One writer per vault: a vault's position rows depend on each other (settled points sum
    // over a wallet's rows), so two jobs of one vault (a recompute during a fan-out's run) take
    // turns, and each sees the other's committed rows.
    await client.query("SELECT pg_advisory_xact_lock(hashtext('derived.vault_days'), hashtext($1))", [`${v.chainId}:${v.address}`]);
    const args = [v.chainId, v.address, dayToDate(from), dayToDate(to)];
    const range = "chain_id = $1 AND vault = $2 AND day BETWEEN $3::date AND $4::date";
    await client.query(`DELETE FROM derived.vault_day WHERE ${range}`, args);
    await client.query(`DELETE FROM derived.vault_apy WHERE ${range}`, args);
    await client.query(`DELETE FROM derived.unrealized_pnl WHERE ${range}`, args);
    const now = new Date().toISOString();
    await copyRows(
      client,
      "derived.vault_day",
      ["chain_id", "vault", "day", "missing", "snapshot_id", "snapshot_timestamp", "block_number", "share_price", "total_assets", "total_shares", "asset_share_ratio", "asset_usd_price", "tvl", "daily_apy", "daily_pnl", "fees_charged", "gross_daily_apy", "fingerprint", "computed_at"],
      out.days.map((d) => [
        v.chainId, v.address, dayToDate(d.day), d.missing, d.snapshotId, d.snapshotTimestamp, d.blockNumber, d.sharePrice, d.totalAssets,
        d.totalShares, d.assetShareRatio, d.assetUsdPrice, d.tvl, d.dailyApy, d.dailyPnl, d.feesCharged, d.grossDailyApy, fps.get(d.day)!, now,
      ]),
    );
    await copyRows(
      client,
      "derived.vault_apy",
      ["chain_id", "vault", "day", "horizon", "span_days", "simple_apy", "compound_apy", "gross_simple_apy", "gross_compound_apy", "pnl_per_share", "daily_pnl_per_share", "computed_at"],
      out.apy.map((a) => [v.chainId, v.address, dayToDate(a.day), a.horizon, a.spanDays, a.simpleApy, a.compoundApy, a.grossSimpleApy, a.grossCompoundApy, a.pnlPerShare, a.dailyPnlPerShare, now]),
    );
    await copyRows(
      client,
      "derived.unrealized_pnl",
      ["chain_id", "vault", "snapshot_id", "day", "timestamp", "block_number", "vault_name", "strategist_name", "reference_asset", "asset_price", "tvl_on_vault", "actual_tvl", "current_redeem_ratio", "adjusted_redeem_ratio", "unrealized_pnl", "unrealized_pnl_in_asset", "computed_at"],
      out.pnl.map((p) => [
        v.chainId, v.address, p.snapshotId, dayToDate(p.day), p.timestamp, p.blockNumber, p.vaultName, p.strategistName, p.referenceAsset, p.assetPrice,
        p.tvlOnVault, p.actualTvl, p.currentRedeemRatio, p.adjustedRedeemRatio, p.unrealizedPnl, p.unrealizedPnlInAsset, now,
      ]),
    );
    positionRows = await writePoints(client, v, meta.assetDecimals, from, to, index, changes, now, ctx.indexerSchema);
    if (ctx.faultHoldMs) await new Promise((r) => setTimeout(r, ctx.faultHoldMs));
    await client.query("COMMIT");
  } catch (err) {
    await client.query("ROLLBACK").catch(() => {});
    throw err;
  } finally {
    client.off("error", onError);
    client.release();
  }
  return { days: out.days.length, apyRows: out.apy.length, pnlRows: out.pnl.length, indexRows: index.filter((i) => i.day >= from).length, positionRows };
}

/**
 * Points of the range, inside the job's write transaction: the index from `from` on, then the
 * position rows of every wallet whose rows depend on the range: the wallets that moved in it and
 * those with rows on or after `from` (their base and settled points depend on the index from
 * `from` on). Their rows are rewritten whole, settled by the pure `settlePositions`; on an
 * ordinary day that is only the wallets that moved. Rows are written with COPY after a DELETE by
 * key (no join whose plan depends on the statistics of a table that is being refilled).
 */
async function writePoints(
  client: pg.PoolClient,
  v: VaultRef,
  assetDecimals: number,
  from: number,
  to: number,
  index: IndexDay[],
  changes: BalanceChange[],
  now: string,
  indexerSchema: string,
): Promise<number> {
  const vk = [v.chainId, v.address];
  const written = index.filter((i) => i.day >= from);
  await client.query("DELETE FROM derived.points_index WHERE chain_id = $1 AND vault = $2 AND day >= $3::date", [...vk, dayToDate(from)]);
  await copyRows(
    client,
    "derived.points_index",
    ["chain_id", "vault", "day", "asset_decimals", "ratio", "price", "multiplier", "points_per_share", "cum_points_per_share"],
    written.map((i) => [
      v.chainId, v.address, dayToDate(i.day), assetDecimals, i.pricing.ratio == null ? null : formatFixed(i.pricing.ratio),
      i.pricing.price == null ? null : formatFixed(i.pricing.price), formatFixed(i.pricing.multiplier), formatIndex(i.pointsPerShare), formatIndex(i.cum),
    ]),
  );
  const lastIndex = index.at(-1);
  if (lastIndex) {
    await client.query(
      `INSERT INTO derived.points_vault (chain_id, vault, day, asset_decimals, ratio, price, cum_points_per_share, computed_at)
       VALUES ($1, $2, $3::date, $4, $5, $6, $7, $8)
       ON CONFLICT (chain_id, vault) DO UPDATE SET day = excluded.day, asset_decimals = excluded.asset_decimals, ratio = excluded.ratio,
         price = excluded.price, cum_points_per_share = excluded.cum_points_per_share, computed_at = excluded.computed_at`,
      [
        ...vk, dayToDate(lastIndex.day), assetDecimals, lastIndex.pricing.ratio == null ? null : formatFixed(lastIndex.pricing.ratio),
        lastIndex.pricing.price == null ? null : formatFixed(lastIndex.pricing.price), formatIndex(lastIndex.cum), now,
      ],
    );
  }
  const cumAt = cumLookup(index);

  // ---- positions ----
  const later = await client.query<{ wallet: string }>("SELECT DISTINCT wallet FROM derived.points_position WHERE chain_id = $1 AND vault = $2 AND day >= $3::date", [
    ...vk,
    dayToDate(from),
  ]);
  const wallets = [...new Set([...changes.map((c) => c.wallet), ...later.rows.map((r) => r.wallet)])].sort();
  const stored = await client.query<{ wallet: string; day: string; shares: string }>(
    "SELECT wallet, day::text AS day, shares::text AS shares FROM derived.points_position WHERE chain_id = $1 AND vault = $2 AND wallet = ANY($3::text[]) ORDER BY wallet, day",
    [...vk, wallets],
  );
  // each wallet's rows in day order: stored ones before the range, the range's, stored ones after
  const rowsOf = new Map<string, { day: number; shares: bigint }[]>();
  const push = (w: string, r: { day: number; shares: bigint }) => {
    const list = rowsOf.get(w);
    if (list) list.push(r);
    else rowsOf.set(w, [r]);
  };
  const after: [string, { day: number; shares: bigint }][] = [];
  for (const r of stored.rows) {
    const day = dateToDay(r.day);
    if (day < from) push(r.wallet, { day, shares: BigInt(r.shares) });
    else if (day > to) after.push([r.wallet, { day, shares: BigInt(r.shares) }]);
  }
  for (const c of changes) push(c.wallet, { day: c.day, shares: c.shares });
  for (const [w, r] of after) push(w, r);
  await client.query("DELETE FROM derived.points_position WHERE chain_id = $1 AND vault = $2 AND wallet = ANY($3::text[])", [...vk, wallets]);
  let positionRows = 0;
  await copyRows(
    client,
    "derived.points_position",
    ["chain_id", "vault", "wallet", "day", "shares", "next_day", "base_points", "points", "settled_points"],
    (function* () {
      for (const [w, rows] of rowsOf) {
        for (const r of settlePositions(rows, cumAt)) {
          positionRows++;
          yield [
            v.chainId, v.address, w, dayToDate(r.day), r.shares, r.nextDay == null ? null : dayToDate(r.nextDay), formatFixed(r.basePoints),
            r.points == null ? null : formatFixed(r.points), formatFixed(r.settledPoints),
          ];
        }
      }
    })(),
  );

  // ---- lifetime deposits of the wallets whose deposits may have changed: those rewritten
  // above, receivers of deposits in the range, and stored last deposits in it ----
  const events = `"${indexerSchema.replace(/"/g, '""')}"."vault_event"`;
  const recent = await client.query<{ wallet: string }>(
    `SELECT DISTINCT lower(receiver) AS wallet FROM ${events} WHERE chain_id = $1 AND vault = $2 AND kind = 'deposit' AND timestamp >= $3
     UNION SELECT wallet FROM derived.points_deposit WHERE chain_id = $1 AND vault = $2 AND last_deposit_day >= $4::date`,
    [...vk, from * DAY_SECONDS, dayToDate(from)],
  );
  const depositors = [...new Set([...wallets, ...recent.rows.map((r) => r.wallet)])];
  const totals = await client.query<{ wallet: string; total: string; last_day: string }>(
    `SELECT lower(receiver) AS wallet, trunc(sum(assets) * power(10::numeric, -$3::int), 18)::text AS total,
            (date '1970-01-01' + floor(max(timestamp) / 86400)::int)::text AS last_day
     FROM ${events} WHERE chain_id = $1 AND vault = $2 AND kind = 'deposit' AND lower(receiver) = ANY($4::text[]) GROUP BY 1`,
    [...vk, assetDecimals, depositors],
  );
  await client.query("DELETE FROM derived.points_deposit WHERE chain_id = $1 AND vault = $2 AND wallet = ANY($3::text[])", [...vk, depositors]);
  await copyRows(
    client,
    "derived.points_deposit",
    ["chain_id", "vault", "wallet", "lifetime_deposit", "last_deposit_day"],
    totals.rows.map((r) => [v.chainId, v.address, r.wallet, r.total, r.last_day]),
  );
  return positionRows;
}
