/**
 * Writes derived.points_index, derived.points_vault, derived.points_position and
 * derived.points_deposit (their only writer), inside the vault-days job's transaction: a batch
 * of vaults' ranges of days, one statement or COPY per table for the whole batch. The points
 * views (docs/metrics.md, "Points") compute balances, pools, referrals and ranks from these.
 */
import { sql } from "kysely";
import type pg from "pg";
import { rowKey, type VaultRef, vaultBatch, vaultKey } from "../../db/batch.js";
import { onClient } from "../../db/client.js";
import { copyInto } from "../../db/copy.js";
import { DAY_SECONDS, dayToDate } from "../../db/days.js";
import { formatDecimals, formatFixed } from "../../db/fixed.js";
import { type BalanceChange, cumLookup, INDEX_DECIMALS, type IndexDay, settlePositions } from "./compute.js";

/** One vault's points over days from..to, as computed. */
export interface PointsRange {
  vault: VaultRef;
  from: number;
  to: number;
  assetDecimals: number;
  /** the block of the last snapshot before the range (0 without one) */
  fromBlock: number;
  /** the index from the vault's first day to its last indexed day */
  index: readonly IndexDay[];
  /** balance changes in the range, sorted by wallet then day */
  changes: readonly BalanceChange[];
}

const formatIndex = (v: bigint) => formatDecimals(v, INDEX_DECIMALS);
const fixedOrNull = (v: bigint | null) => (v == null ? null : formatFixed(v));

/**
 * The index rows from each range's first day on (the index is cumulative: later days are
 * rewritten with it) and each vault's last index day in points_vault.
 */
export async function replaceIndex(client: pg.PoolClient, ranges: readonly PointsRange[], now: string): Promise<void> {
  const db = onClient(client);
  await sql`
    DELETE FROM derived.points_index t
    USING ${vaultBatch(ranges, (r) => r.vault, { from_day: ["date", (r) => dayToDate(r.from)] })}
    WHERE t.chain_id = r.chain_id AND t.vault = r.vault AND t.day >= r.from_day`.execute(db);
  await copyInto(
    client,
    "derived.points_index",
    [
      "chain_id",
      "vault",
      "day",
      "asset_decimals",
      "ratio",
      "price",
      "multiplier",
      "points_per_share",
      "cum_points_per_share",
    ],
    (function* () {
      for (const r of ranges)
        for (const i of r.index)
          if (i.day >= r.from)
            yield {
              chain_id: r.vault.chainId,
              vault: r.vault.address,
              day: dayToDate(i.day),
              asset_decimals: r.assetDecimals,
              ratio: fixedOrNull(i.pricing.ratio),
              price: fixedOrNull(i.pricing.price),
              multiplier: formatFixed(i.pricing.multiplier),
              points_per_share: formatIndex(i.pointsPerShare),
              cum_points_per_share: formatIndex(i.cum),
            };
    })(),
  );
  const last = ranges.flatMap((r) => (r.index.length > 0 ? [{ r, i: r.index.at(-1)! }] : []));
  await sql`
    INSERT INTO derived.points_vault (chain_id, vault, day, asset_decimals, ratio, price, cum_points_per_share,
      computed_at)
    SELECT chain_id, vault, day, asset_decimals, ratio, price, cum, ${now}::timestamptz
    FROM ${vaultBatch(last, (x) => x.r.vault, {
      day: ["date", (x) => dayToDate(x.i.day)],
      asset_decimals: ["int", (x) => x.r.assetDecimals],
      ratio: ["numeric", (x) => fixedOrNull(x.i.pricing.ratio)],
      price: ["numeric", (x) => fixedOrNull(x.i.pricing.price)],
      cum: ["numeric", (x) => formatIndex(x.i.cum)],
    })}
    ON CONFLICT (chain_id, vault) DO UPDATE SET day = excluded.day, asset_decimals = excluded.asset_decimals,
      ratio = excluded.ratio, price = excluded.price, cum_points_per_share = excluded.cum_points_per_share,
      computed_at = excluded.computed_at`.execute(db);
}

/**
 * Position rows and lifetime deposits. The position rows rewritten are those of every wallet
 * whose rows depend on a range: the wallets that moved in it and those with rows on or after
 * its first day (their base and settled points depend on the index from there on). Their rows
 * are rewritten whole, settled by the pure `settlePositions`; on an ordinary day that is only the
 * wallets that moved. Rows are written with COPY after a DELETE by key (no join whose plan
 * depends on the statistics of a table being refilled). Returns the position rows written.
 */
export async function replacePositions(
  client: pg.PoolClient,
  ranges: readonly PointsRange[],
  indexerSchema: string,
): Promise<number> {
  const db = onClient(client);
  const byKey = new Map(ranges.map((r) => [vaultKey(r.vault), r]));
  const later = await sql<{ chain_id: number; vault: string; wallet: string }>`
    SELECT DISTINCT r.chain_id, r.vault, p.wallet
    FROM ${vaultBatch(ranges, (r) => r.vault, { from_day: ["date", (r) => dayToDate(r.from)] })}
    CROSS JOIN LATERAL (
      SELECT p.wallet FROM derived.points_position p
      WHERE p.chain_id = r.chain_id AND p.vault = r.vault AND p.day >= r.from_day OFFSET 0) p`.execute(db);
  const walletsOf = new Map(ranges.map((r) => [vaultKey(r.vault), new Set(r.changes.map((x) => x.wallet))]));
  for (const r of later.rows) walletsOf.get(rowKey(r))!.add(r.wallet);
  const pairs = [...walletsOf].flatMap(([key, ws]) => [...ws].sort().map((w) => ({ r: byKey.get(key)!, w })));
  const walletBatch = (alias: string) => vaultBatch(pairs, (p) => p.r.vault, { wallet: ["text", (p) => p.w] }, alias);
  // the wallets' stored rows, removed in the same statement
  const stored = await sql<{
    chain_id: number;
    vault: string;
    wallet: string;
    d: number;
    shares: string;
    share_seconds: string;
  }>`
    DELETE FROM derived.points_position p USING ${walletBatch("r")}
    WHERE p.chain_id = r.chain_id AND p.vault = r.vault AND p.wallet = r.wallet
    RETURNING p.chain_id, p.vault, p.wallet, (p.day - date '1970-01-01') AS d, p.shares::text AS shares,
      p.day_share_seconds::text AS share_seconds`.execute(db);
  // each wallet's rows in day order: stored ones before the range, the range's, stored ones after
  type Change = Pick<BalanceChange, "day" | "shares" | "shareSeconds">;
  const rowsByWallet = new Map<string, Change[]>();
  const push = (key: string, w: string, r: Change) => {
    const k = `${key}|${w}`;
    const list = rowsByWallet.get(k);
    if (list) list.push(r);
    else rowsByWallet.set(k, [r]);
  };
  const storedRows = stored.rows.map((r) => ({
    key: rowKey(r),
    w: r.wallet,
    day: r.d,
    shares: BigInt(r.shares),
    shareSeconds: BigInt(r.share_seconds),
  }));
  storedRows.sort((a, b) => (a.key < b.key ? -1 : a.key > b.key ? 1 : a.w < b.w ? -1 : a.w > b.w ? 1 : a.day - b.day));
  for (const r of storedRows) if (r.day < byKey.get(r.key)!.from) push(r.key, r.w, r);
  for (const r of ranges) for (const x of r.changes) push(vaultKey(r.vault), x.wallet, x);
  for (const r of storedRows) if (r.day > byKey.get(r.key)!.to) push(r.key, r.w, r);
  const cumAt = new Map(ranges.map((r) => [vaultKey(r.vault), cumLookup(r.index)]));
  let positionRows = 0;
  await copyInto(
    client,
    "derived.points_position",
    [
      "chain_id",
      "vault",
      "wallet",
      "day",
      "shares",
      "day_share_seconds",
      "next_day",
      "base_points",
      "points",
      "settled_points",
    ],
    (function* () {
      for (const [k, rows] of rowsByWallet) {
        const [key, w] = k.split("|") as [string, string];
        const v = byKey.get(key)!.vault;
        for (const r of settlePositions(rows, cumAt.get(key)!)) {
          positionRows++;
          yield {
            chain_id: v.chainId,
            vault: v.address,
            wallet: w,
            day: dayToDate(r.day),
            shares: r.shares,
            day_share_seconds: r.shareSeconds,
            next_day: r.nextDay == null ? null : dayToDate(r.nextDay),
            base_points: formatFixed(r.basePoints),
            points: fixedOrNull(r.points),
            settled_points: formatFixed(r.settledPoints),
          };
        }
      }
    })(),
  );

  // ---- lifetime deposits of the wallets whose deposits may have changed: those rewritten
  // above, receivers of deposits in a range, and stored last deposits in it ----
  // (the indexer stores addresses in lower case: src/vaults.ts)
  const events = sql.id(indexerSchema, "vault_event");
  const snapshots = sql.id(indexerSchema, "share_ratio_snapshot");
  const vaults = sql.id(indexerSchema, "vault");
  // a deposit in the vault's asset counts its amount; one in another asset (tokenizedVaultV2's
  // second asset) what the vault credited for it in its asset: the shares minted at the share
  // price of the deposit's block (its flow snapshot), raw asset units
  const deposits = await sql<{
    chain_id: number;
    vault: string;
    wallet: string;
    total: string | null;
    last_day: string | null;
  }>`
    WITH r AS (
      SELECT * FROM ${vaultBatch(ranges, (r) => r.vault, {
        from_ts: ["bigint", (r) => r.from * DAY_SECONDS],
        from_block: ["bigint", (r) => r.fromBlock],
        from_day: ["date", (r) => dayToDate(r.from)],
        decimals: ["int", (r) => r.assetDecimals],
      })}
    ), w AS (
      SELECT * FROM ${walletBatch("w")}
      UNION SELECT r.chain_id, r.vault, e.receiver FROM r CROSS JOIN LATERAL (
        SELECT e.receiver FROM ${events} e
        WHERE e.chain_id = r.chain_id AND e.vault = r.vault AND e.block_number >= r.from_block
          AND e.timestamp >= r.from_ts AND e.kind = 'deposit' OFFSET 0) e
      UNION SELECT r.chain_id, r.vault, d.wallet FROM r CROSS JOIN LATERAL (
        SELECT d.wallet FROM derived.points_deposit d
        WHERE d.chain_id = r.chain_id AND d.vault = r.vault AND d.last_deposit_day >= r.from_day OFFSET 0) d
    )
    SELECT w.chain_id, w.vault, w.wallet, trunc(t.total * power(10::numeric, -r.decimals), 18)::text AS total,
           (date '1970-01-01' + floor(t.last_ts / 86400)::int)::text AS last_day
    FROM w JOIN r ON r.chain_id = w.chain_id AND r.vault = w.vault
    CROSS JOIN LATERAL (
      SELECT sum(CASE WHEN e.asset = va.asset THEN e.assets ELSE trunc(e.shares * s.asset_share_ratio) END) AS total,
             max(e.timestamp) AS last_ts
      FROM ${events} e
      JOIN ${vaults} va ON va.chain_id = e.chain_id AND va.address = e.vault
      LEFT JOIN ${snapshots} s ON s.id = e.snapshot_id
      WHERE e.receiver = w.wallet AND e.chain_id = w.chain_id AND e.vault = w.vault AND e.kind = 'deposit'
    ) t`.execute(db);
  const written = vaultBatch(deposits.rows, (r) => ({ chainId: r.chain_id, address: r.vault }), {
    wallet: ["text", (r) => r.wallet],
  });
  await sql`
    DELETE FROM derived.points_deposit d
    USING ${written}
    WHERE d.chain_id = r.chain_id AND d.vault = r.vault AND d.wallet = r.wallet`.execute(db);
  await copyInto(
    client,
    "derived.points_deposit",
    ["chain_id", "vault", "wallet", "lifetime_deposit", "last_deposit_day"],
    deposits.rows.flatMap((r) =>
      r.total == null
        ? []
        : [
            {
              chain_id: r.chain_id,
              vault: r.vault,
              wallet: r.wallet,
              lifetime_deposit: r.total,
              last_deposit_day: r.last_day,
            },
          ],
    ),
  );
  return positionRows;
}
