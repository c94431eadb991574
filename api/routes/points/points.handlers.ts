import type { RouteHandler } from "@hono/zod-openapi";
import type { Context } from "hono";
import { sql } from "kysely";
import { rowKey, vaultKey } from "../../../db/batch.js";
import { today as dayOfTime, dayToDate } from "../../../db/days.js";
import { resolveEnsName } from "../../ens.js";
import { indexer, type ReadDb } from "../../lib/db.js";
import { kept } from "../../lib/kept.js";
import type { AppEnv } from "../../lib/router.js";
import { type Standing, standings } from "../../lib/standings.js";
import type { leaderboard, platformPoints, publicPoints, streakStatus } from "./points.routes.js";

const num = (x: string | number | null | undefined): number => (x == null ? 0 : Number(x));

// ---- vault names (indexer.vault), kept per database and schema for 30 s (`kept`) ------------

interface VaultName {
  name: string;
  asset_symbol: string;
}
const metas = kept<Map<string, VaultName>>(30_000, 100);

function vaultMeta(db: ReadDb, schema: string): Promise<Map<string, VaultName>> {
  return metas.get(db, schema, async () => {
    let rows: { chain_id: number; address: string; name: string; asset_symbol: string }[] = [];
    try {
      rows = await indexer(db, schema)
        .selectFrom("vault")
        .select(["chain_id", "address", "name", "asset_symbol"])
        .execute();
    } catch (e) {
      if ((e as { code?: string })?.code !== "42P01") throw e; // views not published yet: no names
    }
    return new Map(
      rows.map((r) => [
        vaultKey({ chainId: r.chain_id, address: r.address }),
        { name: r.name, asset_symbol: r.asset_symbol },
      ]),
    );
  });
}

// ---- points record -------------------------------------------------------------------------

interface BalanceRow {
  total_points: string;
  referral_earnings: string;
  daily_streak_points: string;
  manual_points: string;
  streak_days: number;
  top_vault: string | null;
  top_vault_chain_id: number | null;
  top_vault_lifetime_deposit: string | null;
}

async function pointsRecord(c: Context<AppEnv>, wallet: string) {
  const { db, config, now } = c.var.deps;
  const t = now();
  const [balance, board, pools, referrals, meta] = await Promise.all([
    // live totals; the rank comes from the standings (ranks are computed on read, reused for POINTS_STANDINGS_MS)
    db
      .selectFrom("derived.points_total")
      .select([
        "total_points",
        "referral_earnings",
        "daily_streak_points",
        "manual_points",
        "streak_days",
        "top_vault",
        "top_vault_chain_id",
        "top_vault_lifetime_deposit",
      ])
      .where("wallet", "=", wallet)
      .executeTakeFirst() as Promise<BalanceRow | undefined>,
    standings(db, config.standingsMs ?? 0, () => c.var.deps.now().getTime()),
    sql<{
      chain_id: number;
      vault: string;
      total_points: string;
      native_amount: string;
      usd_value: string;
      has_reward: boolean;
    }>`
      SELECT p.chain_id, p.vault, p.total_points, p.native_amount, p.usd_value,
             EXISTS (SELECT 1 FROM registry.reward r WHERE r.chain_id = p.chain_id AND lower(r.vault) = p.vault
                       AND r.start_datetime <= ${t} AND (r.end_datetime IS NULL OR r.end_datetime > ${t})) AS has_reward
      FROM derived.points_pool p WHERE p.wallet = ${wallet} ORDER BY p.chain_id, p.vault`
      .execute(db)
      .then((r) => r.rows),
    sql<{ referee: string; total_points: string; usd: string; native: string }>`
      WITH refs AS (
        SELECT referee, total_points FROM derived.points_referral WHERE referrer = ${wallet}
        UNION ALL
        SELECT lower(u.address), 0 FROM registry.points_user u
        WHERE lower(u.referrer) = ${wallet} AND lower(u.address) NOT IN
          (SELECT referee FROM derived.points_referral WHERE referrer = ${wallet})
      )
      SELECT refs.referee, refs.total_points, coalesce(sum(p.usd_value), 0) AS usd,
        coalesce(sum(p.native_amount), 0) AS native
      FROM refs LEFT JOIN derived.points_pool p ON p.wallet = refs.referee
      GROUP BY refs.referee, refs.total_points ORDER BY refs.referee`
      .execute(db)
      .then((r) => r.rows),
    vaultMeta(db, config.indexerSchema),
  ]);

  const chainsOf = new Map<string, number>();
  for (const p of pools) chainsOf.set(p.vault, (chainsOf.get(p.vault) ?? 0) + 1);
  const poolMap: Record<
    string,
    {
      amountDepositedInUsd: number;
      nativeAmountDeposited: number;
      totalPoints: number;
      hasPendingRewards: boolean;
      address: string;
      chainId: number;
      name: string | null;
    }
  > = {};
  for (const p of pools) {
    const key = chainsOf.get(p.vault)! > 1 ? `${p.vault}:${p.chain_id}` : p.vault;
    poolMap[key] = {
      amountDepositedInUsd: num(p.usd_value),
      nativeAmountDeposited: num(p.native_amount),
      totalPoints: num(p.total_points),
      hasPendingRewards: p.has_reward,
      address: p.vault,
      chainId: p.chain_id,
      name: meta.get(rowKey(p))?.name ?? null,
    };
  }
  const refMap: Record<string, { totalPoints: number; amountDepositedInUsd: number; nativeAmountDeposited: number }> =
    {};
  for (const r of referrals)
    refMap[r.referee] = {
      totalPoints: num(r.total_points),
      amountDepositedInUsd: num(r.usd),
      nativeAmountDeposited: num(r.native),
    };

  return {
    totalPoints: num(balance?.total_points),
    referralEarnings: num(balance?.referral_earnings),
    streak: balance?.streak_days ?? 0,
    daily_streak_points: num(balance?.daily_streak_points),
    manual_points: num(balance?.manual_points),
    rank: board.byWallet.get(wallet)?.rank_total ?? null,
    pools: poolMap,
    external: {},
    referrals: refMap,
    topVault:
      balance?.top_vault != null && balance.top_vault_chain_id != null
        ? {
            lifetimeDeposit: num(balance.top_vault_lifetime_deposit),
            address: balance.top_vault,
            chainId: balance.top_vault_chain_id,
          }
        : null,
  };
}

export const publicPointsHandler: RouteHandler<typeof publicPoints, AppEnv> = async (c) => {
  const { user_address } = c.req.valid("param");
  return c.json(await pointsRecord(c, user_address.toLowerCase()), 200);
};

export const platformPointsHandler: RouteHandler<typeof platformPoints, AppEnv> = async (c) => {
  const { user_address } = c.req.valid("param");
  return c.json(await pointsRecord(c, user_address.toLowerCase()), 200);
};

// ---- leaderboard ---------------------------------------------------------------------------

export function streakTooltip(days: number, lastClaimDay: string | null): string {
  const last = lastClaimDay ? `, last claimed ${lastClaimDay}` : "";
  return days > 0 ? `${days}-day streak${last}` : `No active streak${last}`;
}

const ADDRESS = /^0x[0-9a-fA-F]{40}$/;

/**
 * The wallet an `ens_name` names: itself when it is a 0x address, else its ENS address on the
 * chain (api/ens.ts); null when it resolves to nothing (unknown or invalid name, no RPC or
 * resolver for the chain, RPC down), which the leaderboard answers with no items.
 */
async function leaderboardWallet(
  config: Parameters<typeof resolveEnsName>[0],
  chainId: number,
  ensName: string,
): Promise<string | null> {
  const name = ensName.trim();
  if (ADDRESS.test(name)) return name;
  return resolveEnsName(config, chainId, name);
}

export const leaderboardHandler: RouteHandler<typeof leaderboard, AppEnv> = async (c) => {
  const { page, perPage, sortBy, wallet_address, ens_name, chain } = c.req.valid("query");
  const { db, config } = c.var.deps;
  // a single wallet: wallet_address, else ens_name (resolved on `chain`; null: no such wallet)
  const single =
    wallet_address ?? (ens_name !== undefined ? await leaderboardWallet(config, chain, ens_name) : undefined);
  const board = await standings(db, config.standingsMs ?? 0, () => c.var.deps.now().getTime());
  const ranked = sortBy === "streakDays" ? board.byStreak : board.byTotal;
  const rankOf = (s: Standing) => (sortBy === "streakDays" ? s.rank_streak : s.rank_total);
  let rows: Standing[];
  let totalItems: number;
  if (single !== undefined) {
    const hit = single === null ? undefined : board.byWallet.get(single.toLowerCase());
    rows = hit ? [hit] : [];
    totalItems = rows.length;
  } else {
    rows = ranked.slice((page - 1) * perPage, page * perPage);
    totalItems = ranked.length;
  }
  const meta = rows.some((r) => r.top_vault) ? await vaultMeta(db, config.indexerSchema) : new Map<string, VaultName>();
  const items = rows.map((r) => {
    const m =
      r.top_vault && r.top_vault_chain_id != null ? meta.get(`${r.top_vault_chain_id}:${r.top_vault}`) : undefined;
    return {
      rank: rankOf(r),
      userAddress: r.wallet,
      topVault:
        r.top_vault && r.top_vault_chain_id != null
          ? {
              name: m?.name ?? null,
              address: r.top_vault,
              chainId: r.top_vault_chain_id,
              deposit: { amount: num(r.top_vault_lifetime_deposit), asset: m?.asset_symbol ?? null },
            }
          : null,
      streakDays: r.streak_days,
      streakTooltip: streakTooltip(r.streak_days, r.last_claim_day),
      totalPoints: num(r.total_points),
    };
  });
  // a single wallet's answer is one page, whatever `page` asked for
  const shown = single !== undefined ? 1 : page;
  const totalPages = Math.ceil(totalItems / perPage);
  return c.json({ page: shown, perPage, totalItems, totalPages, items }, 200);
};

// ---- daily streak status -------------------------------------------------------------------

export const streakStatusHandler: RouteHandler<typeof streakStatus, AppEnv> = async (c) => {
  const wallet = c.req.valid("query").address.toLowerCase();
  const { db, now } = c.var.deps;
  const t = now();
  const day = dayOfTime(t.getTime());
  const today = dayToDate(day);
  const yesterday = dayToDate(day - 1);
  const r = (
    await sql<{
      registered: boolean;
      active: boolean;
      total_points: string | null;
      last_day: string | null;
      last_streak: number | null;
      last_at: Date | null;
      claimed: string | null;
    }>`
      SELECT EXISTS (SELECT 1 FROM registry.points_user WHERE address = ${wallet}) AS registered,
             EXISTS (SELECT 1 FROM derived.points_pool WHERE wallet = ${wallet} AND shares > 0) AS active,
             (SELECT total_points FROM derived.points_total WHERE wallet = ${wallet}) AS total_points,
             l.day AS last_day, l.streak_days AS last_streak, l.claimed_at AS last_at,
             (SELECT sum(points) FROM registry.streak_claim WHERE address = ${wallet}) AS claimed
      FROM (SELECT 1) one
      LEFT JOIN LATERAL (SELECT day, streak_days, claimed_at FROM registry.streak_claim WHERE address = ${wallet}
        ORDER BY day DESC LIMIT 1) l ON true`.execute(db)
  ).rows[0]!;
  const claimedToday = r.last_day === today;
  // why a claim would be refused now: the claim route's rules, in its order
  const reason = !r.registered
    ? "user_not_found"
    : !r.active
      ? "no_active_positions"
      : claimedToday
        ? "already_claimed"
        : null;
  const nextMidnight = Date.UTC(t.getUTCFullYear(), t.getUTCMonth(), t.getUTCDate() + 1);
  return c.json(
    {
      canClaim: reason == null,
      reason,
      currentPoints: num(r.claimed),
      streakDays: r.last_day != null && r.last_day >= yesterday ? (r.last_streak ?? 0) : 0,
      totalPoints: num(r.total_points),
      timeUntilReset: Math.ceil((nextMidnight - t.getTime()) / 1000),
      lastClaimedAt: r.last_at ? new Date(r.last_at).toISOString() : null,
      hasActivePositions: r.active,
    },
    200,
  );
};
