/**
 * Points routes through the real app, checked against the derived points tables and the
 * registry: the points record (public and institutional), the leaderboard (pages, sort orders,
 * a single wallet) and the daily streak status (with a fixed clock), plus 422 and the open-read key policy.
 */
import { createPublicClient, getAbiItem, http } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { TokenizedVaultV2Abi } from "../../abis/TokenizedVaultV2Abi.js";
import { type App, createApp } from "../../api/app.js";
import { createReadDb } from "../../api/lib/db.js";
import { standings } from "../../api/lib/standings.js";
import { loadRegistry } from "../../config/registry.js";
import { type ApiHarness, setupApi } from "../api-harness.js";

let h: ApiHarness;
let read: ReturnType<typeof createReadDb>;
let clock = new Date("2026-11-22T10:00:00Z");
let clocked: App;

interface Balance {
  wallet: string;
  total_points: string;
  referral_earnings: string;
  daily_streak_points: string;
  manual_points: string;
  streak_days: number;
  last_claim_day: string | null;
  rank_total: number;
  rank_streak: number;
  top_vault: string | null;
  top_vault_chain_id: number | null;
  top_vault_lifetime_deposit: string | null;
}
interface Pool {
  wallet: string;
  chain_id: number;
  vault: string;
  total_points: string;
  shares: string;
  native_amount: string;
  usd_value: string;
}
type Record_ = {
  totalPoints: number;
  referralEarnings: number;
  streak: number;
  daily_streak_points: number;
  manual_points: number;
  rank: number | null;
  pools: Record<
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
  >;
  external: Record<string, unknown>;
  referrals: Record<string, { totalPoints: number; amountDepositedInUsd: number; nativeAmountDeposited: number }>;
  topVault: { lifetimeDeposit: number; address: string; chainId: number } | null;
};

const TEST = "points-test";
const fresh = (n: number) => `0x${n.toString(16).padStart(4, "0")}${"7e57".repeat(9)}`;
/** wallets of the devnet not touched by earlier test files' registry rows */
let free: string[] = [];
const registered: string[] = [];
const rewardIds: string[] = [];

const balanceOf = async (w: string) =>
  (await h.q<Balance>("SELECT * FROM derived.points_balance WHERE wallet = $1", [w]))[0];
const poolsOf = (w: string) =>
  h.q<Pool>(
    "SELECT wallet, chain_id, vault, total_points::text, shares::text, native_amount::text, usd_value::text FROM derived.points_pool WHERE wallet = $1",
    [w],
  );
const upper = (a: string) => `0x${a.slice(2).toUpperCase()}`;

beforeAll(async () => {
  h = await setupApi();
  free = (
    await h.q<{ wallet: string }>(
      `SELECT b.wallet FROM derived.points_balance b
       WHERE NOT EXISTS (SELECT 1 FROM registry.points_user u WHERE u.address = b.wallet OR u.referrer = b.wallet)
         AND NOT EXISTS (SELECT 1 FROM derived.points_referral r WHERE r.referrer = b.wallet OR r.referee = b.wallet)
         AND EXISTS (SELECT 1 FROM derived.points_pool p WHERE p.wallet = b.wallet AND p.shares > 0)
       ORDER BY b.rank_total`,
    )
  ).map((r) => r.wallet);
  expect(free.length).toBeGreaterThanOrEqual(5);
  read = createReadDb(h.devnet.dbUrl, 2);
  clocked = createApp({
    db: read.db,
    config: { indexerSchema: "indexer", rpcUrls: new Map(), corsOrigins: [], rateLimitPerMinute: 1_000_000 },
    redis: null,
    now: () => clock,
  });
}, 400_000);

afterAll(async () => {
  if (h) {
    if (registered.length) {
      await h.db.deleteFrom("registry.streak_claim").where("address", "in", registered).execute();
      // referees first (they reference their referrer)
      await h.db
        .deleteFrom("registry.points_user")
        .where("address", "in", registered)
        .where("referrer", "is not", null)
        .execute();
      await h.db.deleteFrom("registry.points_user").where("address", "in", registered).execute();
    }
    if (rewardIds.length) await h.db.deleteFrom("registry.reward").where("id", "in", rewardIds).execute();
  }
  await read?.destroy();
  await h?.close();
});

async function register(address: string, referrer: string | null = null) {
  await h.db
    .insertInto("registry.points_user")
    // registered three weeks ago: the referrer has earned from the referee's positions since
    .values({ address, referrer, chain_id: 1, registered_at: new Date(Date.now() - 21 * 86_400_000).toISOString() })
    .execute();
  registered.push(address);
}

const getClocked = async <T>(path: string, key: string | null = h.key) => {
  const res = await clocked.request(path, { headers: key ? { "x-api-key": key } : {} });
  return { status: res.status, body: (await res.json()) as T };
};

describe("points record: /v1/points/{user_address} and /api/v1/platform/points/{user_address}", () => {
  it("equals derived.points_balance / points_pool for a ranked wallet, on both surfaces", async () => {
    const w = free[0]!;
    const b = (await balanceOf(w))!;
    const pools = await poolsOf(w);
    expect(pools.length).toBeGreaterThan(0);
    const pub = await h.json<Record_>(`/v1/points/${w}`, { key: null });
    expect(pub.status).toBe(200);
    const inst = await h.json<Record_>(`/api/v1/platform/points/${w}`);
    expect(inst.status).toBe(200);
    expect(inst.body).toEqual(pub.body);
    const r = pub.body;
    expect(r).toMatchObject({
      totalPoints: Number(b.total_points),
      referralEarnings: Number(b.referral_earnings),
      streak: b.streak_days,
      daily_streak_points: Number(b.daily_streak_points),
      manual_points: Number(b.manual_points),
      rank: b.rank_total,
      external: {},
      referrals: {},
      topVault: {
        lifetimeDeposit: Number(b.top_vault_lifetime_deposit),
        address: b.top_vault,
        chainId: b.top_vault_chain_id,
      },
    });
    expect(Object.keys(r.pools)).toHaveLength(pools.length);
    const names = new Map(
      (
        await h.q<{ chain_id: number; address: string; name: string }>(
          "SELECT chain_id, address, name FROM indexer.vault",
        )
      ).map((v) => [`${v.chain_id}:${v.address}`, v.name]),
    );
    for (const p of pools) {
      const multi = pools.filter((x) => x.vault === p.vault).length > 1;
      const entry = r.pools[multi ? `${p.vault}:${p.chain_id}` : p.vault]!;
      expect(entry).toEqual({
        amountDepositedInUsd: Number(p.usd_value),
        nativeAmountDeposited: Number(p.native_amount),
        totalPoints: Number(p.total_points),
        hasPendingRewards: expect.any(Boolean),
        address: p.vault,
        chainId: p.chain_id,
        name: names.get(`${p.chain_id}:${p.vault}`),
      });
    }
  });

  it("lifetime deposits in the vault's asset: a second-asset deposit counts what the vault credited", async () => {
    // from the chain: a deposit in the vault's asset is its amount; one in its second asset the
    // shares minted at the block's share price (getTotalAssets / totalSupply)
    let alt = 0;
    let rawDiffers = 0;
    for (const v of loadRegistry(h.devnet.registryFile).evm.filter((x) => x.family === "tokenizedVaultV2")) {
      const chain = h.devnet.chains.find((c) => c.chainId === v.chainId)!;
      const client = createPublicClient({ transport: http(chain.rpcUrl) });
      const logs = await client.getLogs({
        address: v.address,
        event: getAbiItem({ abi: TokenizedVaultV2Abi, name: "Deposit" }),
        fromBlock: 0n,
      });
      const credited = new Map<string, bigint>();
      const raw = new Map<string, bigint>();
      for (const l of logs) {
        const { assetIn, amountIn, shares, receiverAddr } = l.args as Required<typeof l.args>;
        const at = { address: v.address, abi: TokenizedVaultV2Abi, blockNumber: l.blockNumber } as const;
        let value = amountIn;
        if (assetIn.toLowerCase() !== v.asset.address) {
          alt++;
          const [ta, ts] = await Promise.all([
            client.readContract({ ...at, functionName: "getTotalAssets" }),
            client.readContract({ ...at, functionName: "totalSupply" }),
          ]);
          value = (shares * ta) / ts;
        }
        const w = receiverAddr.toLowerCase();
        credited.set(w, (credited.get(w) ?? 0n) + value);
        raw.set(w, (raw.get(w) ?? 0n) + amountIn);
      }
      const stored = new Map(
        (
          await h.q<{ wallet: string; amount: string }>(
            "SELECT wallet, lifetime_deposit::text AS amount FROM derived.points_deposit WHERE chain_id = $1 AND vault = $2",
            [v.chainId, v.address],
          )
        ).map((r) => [r.wallet, Number(r.amount)]),
      );
      const unit = 10 ** v.asset.decimals;
      for (const [w, total] of credited) {
        // the snapshot's ratio has 18 decimals: a raw unit or so apart per deposit at most
        const want = Number(total) / unit;
        expect(Math.abs(stored.get(w)! - want), `${v.address} ${w}`).toBeLessThanOrEqual(1e-9 * Math.max(1, want));
        if (raw.get(w) !== total) rawDiffers++;
      }
    }
    expect(alt).toBeGreaterThan(0);
    expect(rawDiffers).toBeGreaterThan(0); // the plain sum of amounts would be wrong for these
  });

  it("topVault: the vault of the largest lifetime deposit in USD, not in asset units", async () => {
    const deposits = await h.q<{ wallet: string; chain_id: number; vault: string; amount: string; usd: string | null }>(
      `SELECT d.wallet, d.chain_id, d.vault, d.lifetime_deposit::text AS amount, (d.lifetime_deposit * pv.price)::text AS usd
         FROM derived.points_deposit d
         LEFT JOIN derived.points_vault pv ON pv.chain_id = d.chain_id AND pv.vault = d.vault
        WHERE d.lifetime_deposit > 0`,
    );
    const byWallet = new Map<string, typeof deposits>();
    for (const d of deposits) byWallet.set(d.wallet, [...(byWallet.get(d.wallet) ?? []), d]);
    const top = new Map(
      (
        await h.q<{ wallet: string; chain_id: number; vault: string }>(
          "SELECT wallet, top_vault_chain_id AS chain_id, top_vault AS vault FROM derived.points_total WHERE top_vault IS NOT NULL",
        )
      ).map((t) => [t.wallet, `${t.chain_id}:${t.vault}`]),
    );
    let differs = 0;
    for (const [wallet, list] of byWallet) {
      const usd = (d: (typeof list)[number]) => (d.usd == null ? -1 : Number(d.usd));
      const best = list.reduce((a, b) => (usd(b) > usd(a) ? b : a));
      expect(top.get(wallet), wallet).toBe(`${best.chain_id}:${best.vault}`);
      const byUnits = list.reduce((a, b) => (Number(b.amount) > Number(a.amount) ? b : a));
      if (byUnits !== best) differs++;
    }
    // the demo's wallets hold USDC and ETH vaults: the two orders disagree for some of them
    expect(differs).toBeGreaterThan(0);
    const [w] = [...byWallet.keys()];
    const r = await h.json<Record_>(`/v1/points/${w}`);
    expect(`${r.body.topVault!.chainId}:${r.body.topVault!.address}`).toBe(top.get(w!));
  });

  it("hasPendingRewards: true while a reward of the vault is in force", async () => {
    const w = free[1]!;
    const pools = await poolsOf(w);
    const target = pools[0]!;
    const keyOf = (p: Pool) =>
      pools.filter((x) => x.vault === p.vault).length > 1 ? `${p.vault}:${p.chain_id}` : p.vault;
    const now = Date.now();
    const ins = await h.db
      .insertInto("registry.reward")
      .values([
        {
          chain_id: target.chain_id,
          vault: target.vault,
          text: `${TEST} active`,
          multiplier: "1.5",
          start_datetime: new Date(now - 86_400_000),
          end_datetime: new Date(now + 86_400_000),
        },
        ...pools.slice(1).map((p) => ({
          chain_id: p.chain_id,
          vault: p.vault,
          text: `${TEST} expired`,
          multiplier: "2",
          start_datetime: new Date(now - 10 * 86_400_000),
          end_datetime: new Date(now - 86_400_000),
        })),
      ])
      .returning("id")
      .execute();
    rewardIds.push(...ins.map((x) => x.id));
    const active = await h.q<{ chain_id: number; vault: string }>(
      "SELECT DISTINCT chain_id, vault FROM registry.reward WHERE start_datetime <= now() AND (end_datetime IS NULL OR end_datetime > now())",
    );
    const r = await h.json<Record_>(`/v1/points/${w}`, { key: null });
    expect(r.body.pools[keyOf(target)]!.hasPendingRewards).toBe(true);
    for (const p of pools)
      expect(r.body.pools[keyOf(p)]!.hasPendingRewards).toBe(
        active.some((a) => a.chain_id === p.chain_id && a.vault === p.vault),
      );
  });

  it("referrals: every registered referee, with what the referrer earned and the referee's current positions", async () => {
    const [referrer, referee, idle] = [free[2]!, free[3]!, fresh(1)];
    await register(referrer);
    await register(referee, referrer);
    await register(idle, referrer);
    // what the referrer earned from the referee since its registration (a view over positions and the index)
    const [earned] = await h.q<{ t: string }>(
      "SELECT total_points::text AS t FROM derived.points_referral WHERE referrer = $1 AND referee = $2",
      [referrer, referee],
    );
    expect(Number(earned!.t)).toBeGreaterThan(0);
    const [fromLedger] = await h.q<{ t: string }>(
      "SELECT coalesce(sum(points), 0)::text AS t FROM derived.points_ledger WHERE wallet = $1 AND ref = $2 AND source = 'referral'",
      [referrer, referee],
    );
    expect(Number(fromLedger!.t)).toBe(Number(earned!.t));
    const r = await h.json<Record_>(`/api/v1/platform/points/${upper(referrer)}`);
    expect(r.status).toBe(200);
    expect(r.body.referrals).toEqual({
      [referee]: {
        totalPoints: Number(earned!.t),
        amountDepositedInUsd: expect.any(Number),
        nativeAmountDeposited: expect.any(Number),
      },
      [idle]: { totalPoints: 0, amountDepositedInUsd: 0, nativeAmountDeposited: 0 },
    });
    const [sums] = await h.q<{ usd: string; native: string }>(
      "SELECT sum(usd_value)::text AS usd, sum(native_amount)::text AS native FROM derived.points_pool WHERE wallet = $1",
      [referee],
    );
    expect(r.body.referrals[referee]!.amountDepositedInUsd).toBe(Number(sums!.usd));
    expect(r.body.referrals[referee]!.nativeAmountDeposited).toBe(Number(sums!.native));
  });

  it("addresses are case-insensitive; an unknown wallet gets a zero record with rank null", async () => {
    const w = free[0]!;
    const lower = await h.json<Record_>(`/v1/points/${w}`, { key: null });
    const up = await h.json<Record_>(`/v1/points/${upper(w)}`, { key: null });
    expect(up.body).toEqual(lower.body);
    const r = await h.json<Record_>(`/v1/points/${fresh(2)}`, { key: null });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      totalPoints: 0,
      referralEarnings: 0,
      streak: 0,
      daily_streak_points: 0,
      manual_points: 0,
      rank: null,
      pools: {},
      external: {},
      referrals: {},
      topVault: null,
    });
  });

  it("422 for a malformed address (loc ends in user_address); the institutional route needs a key", async () => {
    for (const bad of ["0x1234", "not-an-address", `0x${"g".repeat(40)}`, `${"a".repeat(40)}`]) {
      for (const [path, key] of [
        [`/v1/points/${bad}`, null],
        [`/api/v1/platform/points/${bad}`, undefined],
      ] as const) {
        const r = await h.json<{ detail: { loc: string[]; type: string }[] }>(path, { key });
        expect(r.status, path).toBe(422);
        expect(r.body.detail[0]!.loc).toEqual(["path", "user_address"]);
      }
    }
    const w = free[0]!;
    await h.expectOpenRead(`/api/v1/platform/points/${w}`);
  });
});

describe("GET /api/v1/platform/points/leaderboard", () => {
  type Item = {
    rank: number;
    userAddress: string;
    topVault: {
      name: string | null;
      address: string;
      chainId: number;
      deposit: { amount: number; asset: string | null };
    } | null;
    streakDays: number;
    streakTooltip: string;
    totalPoints: number;
  };
  type Board = { page: number; perPage: number; totalItems: number; totalPages: number; items: Item[] };
  const vaults = async () =>
    new Map(
      (
        await h.q<{ chain_id: number; address: string; name: string; asset_symbol: string }>(
          "SELECT chain_id, address, name, asset_symbol FROM indexer.vault",
        )
      ).map((v) => [`${v.chain_id}:${v.address}`, v]),
    );
  const itemOf = (b: Balance, rank: number, meta: Map<string, { name: string; asset_symbol: string }>): Item => ({
    rank,
    userAddress: b.wallet,
    topVault: b.top_vault
      ? {
          name: meta.get(`${b.top_vault_chain_id}:${b.top_vault}`)!.name,
          address: b.top_vault,
          chainId: b.top_vault_chain_id!,
          deposit: {
            amount: Number(b.top_vault_lifetime_deposit),
            asset: meta.get(`${b.top_vault_chain_id}:${b.top_vault}`)!.asset_symbol,
          },
        }
      : null,
    streakDays: b.streak_days,
    streakTooltip: expect.any(String) as unknown as string,
    totalPoints: Number(b.total_points),
  });

  it("default: page 1 of 10 by total points, equal to the ranks of derived.points_balance", async () => {
    const all = await h.q<Balance>("SELECT * FROM derived.points_balance ORDER BY rank_total");
    const meta = await vaults();
    const r = await h.json<Board>("/api/v1/platform/points/leaderboard");
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      page: 1,
      perPage: 10,
      totalItems: all.length,
      totalPages: Math.ceil(all.length / 10),
    });
    expect(r.body.items).toEqual(all.slice(0, 10).map((b) => itemOf(b, b.rank_total, meta)));
    const pts = r.body.items.map((i) => i.totalPoints);
    expect([...pts].sort((a, b) => b - a)).toEqual(pts);
  });

  it("pages and perPage; a page past the end is empty", async () => {
    const all = await h.q<Balance>("SELECT * FROM derived.points_balance ORDER BY rank_total");
    const meta = await vaults();
    const r = await h.json<Board>("/api/v1/platform/points/leaderboard?page=3&perPage=7");
    expect(r.body).toMatchObject({
      page: 3,
      perPage: 7,
      totalItems: all.length,
      totalPages: Math.ceil(all.length / 7),
    });
    expect(r.body.items).toEqual(all.slice(14, 21).map((b) => itemOf(b, b.rank_total, meta)));
    const past = await h.json<Board>(
      `/api/v1/platform/points/leaderboard?page=${Math.ceil(all.length / 100) + 1}&perPage=100`,
    );
    expect(past.status).toBe(200);
    expect(past.body.items).toEqual([]);
    expect(past.body.totalItems).toBe(all.length);
  });

  it("sortBy=streakDays orders by rank_streak", async () => {
    const all = await h.q<Balance>("SELECT * FROM derived.points_balance ORDER BY rank_streak");
    const meta = await vaults();
    const r = await h.json<Board>("/api/v1/platform/points/leaderboard?sortBy=streakDays&perPage=100");
    expect(r.body.items).toEqual(all.slice(0, 100).map((b) => itemOf(b, b.rank_streak, meta)));
    for (const i of r.body.items)
      expect(i.streakTooltip).toEqual(
        i.streakDays > 0
          ? expect.stringMatching(new RegExp(`^${i.streakDays}-day streak`))
          : expect.stringMatching(/^No active streak/),
      );
  });

  it("wallet_address (case-insensitive) or an ens_name that is an address: only that wallet, with its rank", async () => {
    const b = (await balanceOf(free[0]!))!;
    const meta = await vaults();
    for (const q of [
      `wallet_address=${upper(b.wallet)}`,
      `ens_name=${b.wallet}`,
      `wallet_address=${b.wallet}&page=4`,
    ]) {
      const r = await h.json<Board>(`/api/v1/platform/points/leaderboard?${q}`);
      expect(r.status, q).toBe(200);
      expect(r.body.totalItems).toBe(1);
      expect(r.body.totalPages).toBe(1);
      expect(r.body.page, q).toBe(1); // one page, whatever page asked for
      expect(r.body.items).toEqual([itemOf(b, b.rank_total, meta)]);
    }
    const s = await h.json<Board>(`/api/v1/platform/points/leaderboard?wallet_address=${b.wallet}&sortBy=streakDays`);
    expect(s.body.items[0]!.rank).toBe(b.rank_streak);
    for (const q of [`wallet_address=${fresh(3)}`, "ens_name=someone.eth", "ens_name=someone.eth&chain=8453"]) {
      const r = await h.json<Board>(`/api/v1/platform/points/leaderboard?${q}`);
      expect(r.status, q).toBe(200);
      expect(r.body).toMatchObject({ totalItems: 0, totalPages: 0, items: [] });
    }
  });

  it("422 for every malformed parameter; open without a key, 403 with a bad one", async () => {
    for (const [q, field] of [
      ["page=0", "page"],
      ["page=x", "page"],
      ["perPage=0", "perPage"],
      ["perPage=101", "perPage"],
      ["sortBy=points", "sortBy"],
      ["wallet_address=0x12", "wallet_address"],
      ["chain=12345", "chain"],
      ["chain=abc", "chain"],
      // a non-EVM chain of the catalogue has no ENS to ask
      ["chain=0", "chain"],
      ["chain=-1", "chain"],
    ] as const) {
      const r = await h.json<{ detail: { loc: string[] }[] }>(`/api/v1/platform/points/leaderboard?${q}`);
      expect(r.status, q).toBe(422);
      expect(r.body.detail[0]!.loc).toEqual(["query", field]);
    }
    await h.expectOpenRead("/api/v1/platform/points/leaderboard");
  });
});

describe("GET /api/v1/platform/points/daily_streak/status", () => {
  type Status = {
    canClaim: boolean;
    reason: string | null;
    currentPoints: number;
    streakDays: number;
    totalPoints: number;
    timeUntilReset: number;
    lastClaimedAt: string | null;
    hasActivePositions: boolean;
  };
  const status = (a: string) => getClocked<Status>(`/api/v1/platform/points/daily_streak/status?address=${a}`);

  it("registered + active position + no claim today = can claim; a claim today closes it until UTC midnight", async () => {
    const w = free[4]!;
    const b = (await balanceOf(w))!;
    clock = new Date("2026-11-22T10:00:00Z");
    // not registered yet
    let r = await status(w);
    expect(r.status).toBe(200);
    expect(r.body).toEqual({
      canClaim: false,
      reason: "user_not_found",
      currentPoints: 0,
      streakDays: 0,
      totalPoints: Number(b.total_points),
      timeUntilReset: 14 * 3600,
      lastClaimedAt: null,
      hasActivePositions: true,
    });

    if (!registered.includes(w)) await register(w);
    r = await status(upper(w));
    expect(r.body.canClaim).toBe(true);

    await h.db
      .insertInto("registry.streak_claim")
      .values({ address: w, day: "2026-11-21", streak_days: 3, points: "10", claimed_at: "2026-11-21T09:15:00Z" })
      .execute();
    r = await status(w);
    expect(r.body).toMatchObject({
      canClaim: true,
      reason: null,
      streakDays: 3,
      currentPoints: 10,
      lastClaimedAt: "2026-11-21T09:15:00.000Z",
    });

    await h.db
      .insertInto("registry.streak_claim")
      .values({ address: w, day: "2026-11-22", streak_days: 4, points: "12.5", claimed_at: "2026-11-22T08:00:00Z" })
      .execute();
    r = await status(w);
    expect(r.body).toMatchObject({
      canClaim: false,
      reason: "already_claimed",
      streakDays: 4,
      currentPoints: 22.5,
      lastClaimedAt: "2026-11-22T08:00:00.000Z",
      hasActivePositions: true,
    });
    const [sum] = await h.q<{ s: string }>(
      "SELECT sum(points)::text AS s FROM registry.streak_claim WHERE address = $1",
      [w],
    );
    expect(r.body.currentPoints).toBe(Number(sum!.s));

    // next day: can claim again, the streak still counts (claimed yesterday)
    clock = new Date("2026-11-23T23:00:00Z");
    r = await status(w);
    expect(r.body).toMatchObject({ canClaim: true, streakDays: 4, timeUntilReset: 3600 });
    // two days later the streak is broken
    clock = new Date("2026-11-24T00:00:00.500Z");
    r = await status(w);
    expect(r.body).toMatchObject({ canClaim: true, streakDays: 0, timeUntilReset: 86400 });
  });

  it("no active position, or not registered: cannot claim", async () => {
    clock = new Date("2026-11-22T10:00:00Z");
    const idle = fresh(4);
    await register(idle);
    let r = await status(idle);
    expect(r.body).toEqual({
      canClaim: false,
      reason: "no_active_positions",
      currentPoints: 0,
      streakDays: 0,
      totalPoints: 0,
      timeUntilReset: 14 * 3600,
      lastClaimedAt: null,
      hasActivePositions: false,
    });
    r = await status(fresh(5));
    expect(r.body).toMatchObject({
      canClaim: false,
      reason: "user_not_found",
      hasActivePositions: false,
      lastClaimedAt: null,
    });
  });

  it("the harness app (real clock) answers too; 422 for a missing or malformed address; the key policy", async () => {
    const r = await h.json<Status>(`/api/v1/platform/points/daily_streak/status?address=${free[0]}`);
    expect(r.status).toBe(200);
    expect(r.body.timeUntilReset).toBeGreaterThan(0);
    expect(r.body.timeUntilReset).toBeLessThanOrEqual(86400);
    for (const q of ["", "?address=", "?address=0xabc", "?addr=0x0000000000000000000000000000000000000001"]) {
      const bad = await h.json<{ detail: { loc: string[] }[] }>(`/api/v1/platform/points/daily_streak/status${q}`);
      expect(bad.status, q).toBe(422);
      expect(bad.body.detail[0]!.loc).toEqual(["query", "address"]);
    }
    await h.expectOpenRead(`/api/v1/platform/points/daily_streak/status?address=${free[0]}`);
  });

  it("the claim and register POSTs are served and need the points:write scope (test/e2e/6-api-writes-points.test.ts tests them)", async () => {
    for (const path of ["/api/v1/platform/points/daily_streak/claim", "/api/v1/platform/points/register"]) {
      const r = await h.json<{ code: string }>(path, {
        method: "POST",
        body: "{}",
        headers: { "content-type": "application/json" },
      });
      expect(r.status, path).toBe(403);
      expect(r.body.code, path).toBe("insufficient_scope");
    }
  });
});

describe("points standings (ranks) age", () => {
  it("never served POINTS_STANDINGS_MS old or older on the app's clock: refreshed ahead past half, awaited past the whole", async () => {
    const own = createReadDb(h.devnet.dbUrl, 1);
    try {
      let t = 1_000_000;
      const clock = () => t;
      const ttl = 1000;
      const at = async (ms: number) => {
        t = ms;
        const s = await standings(own.db, ttl, clock);
        expect(t - s.loadedAt, `at ${ms}`).toBeLessThan(ttl);
        expect(s.loadedAt).toBeLessThanOrEqual(t);
        return s;
      };
      const first = await at(1_000_000);
      expect(first.loadedAt).toBe(1_000_000);
      expect(first.byTotal.length).toBeGreaterThan(0);
      expect(await at(1_000_400)).toBe(first); // young: reused
      expect(await at(1_000_600)).toBe(first); // past half: still served, a reload starts
      // the reload under way is served once done (however long the database takes under load)
      let ahead = first;
      for (let i = 0; i < 100 && ahead === first; i++) {
        await new Promise((r) => setTimeout(r, 50));
        ahead = await at(1_000_700);
      }
      expect(ahead).not.toBe(first);
      expect(ahead.loadedAt).toBe(1_000_600);
      // a quiet spell (no request for far longer than the TTL): the next caller waits for fresh ranks
      const late = await at(1_024 * 60_000);
      expect(late.loadedAt).toBe(1_024 * 60_000);
    } finally {
      await own.destroy();
    }
  });
});
