/**
 * Platform analytics, redemptions and withdrawals through the real app over the devnet: every
 * route's answer is checked against the tables it reads (indexer views, derived and registry
 * tables), plus its 422, 404 and API-key cases.
 */
import { toFunctionSelector } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { buildSummary, type PendingGroup } from "../../api/routes/vaults/redemptions.js";
import { type ApiHarness, setupApi } from "../api-harness.js";
import { parseExact, rpcCall } from "../helpers.js";

let h: ApiHarness;
const API = "/api/v1";
const PLATFORM = "e2e-platform-test";
const UNKNOWN = "0x00000000000000000000000000000000000000e2";

interface VaultRow {
  chain_id: number;
  address: string;
  family: string;
  decimals: number;
  asset_decimals: number;
}
let vaults: VaultRow[] = [];
/** an address indexed on two chains (the devnet deploys one), if any */
let multi: string | null = null;
let lending: VaultRow;
let v2: VaultRow;

type Detail = { detail: { loc: (string | number)[]; msg: string; type: string }[] };
const iso = (unix: string | number) => new Date(Number(unix) * 1000).toISOString();
const upper = (a: string) => `0x${a.slice(2).toUpperCase()}`;
const today = () => new Date().toISOString().slice(0, 10);
const addDays = (d: string, n: number) =>
  new Date(Date.parse(`${d}T00:00:00Z`) + n * 86_400_000).toISOString().slice(0, 10);

async function expect422(path: string, field: string | number, init: RequestInit = {}) {
  const r = await h.json<Detail>(path, init);
  expect(r.status, `${path} should answer 422`).toBe(422);
  expect(r.body.detail.length).toBeGreaterThan(0);
  expect(
    r.body.detail.some((d) => d.loc[d.loc.length - 1] === field),
    `${path}: loc ending in ${field}: ${JSON.stringify(r.body)}`,
  ).toBe(true);
}

/** The route's key policy: an open read (api/middleware/auth.ts readKey). */
const expectAuth = (path: string, init: RequestInit = {}) => h.expectOpenRead(path, init);

beforeAll(async () => {
  h = await setupApi();
  vaults = await h.q<VaultRow>(
    "SELECT chain_id, address, family, decimals, asset_decimals FROM indexer.vault ORDER BY chain_id, address",
  );
  multi =
    (
      await h.q<{ address: string }>(
        "SELECT address FROM indexer.vault GROUP BY address HAVING count(*) > 1 ORDER BY address LIMIT 1",
      )
    )[0]?.address ?? null;
  lending = vaults.find((v) => v.family === "lendingPool")!;
  v2 = vaults.find((v) => v.family === "tokenizedVaultV2")!;
  await h.db.deleteFrom("registry.strategy_apy_snapshot").where("platform_name", "=", PLATFORM).execute();
  await h.db
    .insertInto("registry.strategy_apy_snapshot")
    .values([
      {
        vault_address: lending.address,
        chain: lending.chain_id,
        platform_name: PLATFORM,
        strategy_type: "lending",
        allocation: 0.6,
        apy: 0.081,
        points_apy: 0.01,
        strategist_address: "0x7d2d0056351c654fa667b96cdaf48a2388c20f04",
        snapshot_datetime: "2026-01-02T00:00:00Z",
      },
      {
        vault_address: lending.address,
        chain: lending.chain_id,
        platform_name: PLATFORM,
        strategy_type: "basis",
        allocation: 0.4,
        apy: 0.125,
        points_apy: 0,
        strategist_address: null,
        snapshot_datetime: "2026-01-03T12:00:00Z",
      },
      {
        vault_address: v2.address,
        chain: v2.chain_id,
        platform_name: PLATFORM,
        strategy_type: "staking",
        allocation: 1,
        apy: 0.04,
        points_apy: 0.02,
        strategist_address: null,
        snapshot_datetime: "2026-01-01T00:00:00Z",
      },
    ])
    .execute();
}, 400_000);

afterAll(async () => {
  await h?.db.deleteFrom("registry.strategy_apy_snapshot").where("platform_name", "=", PLATFORM).execute();
  await h?.close();
});

describe("strategy APY snapshots (no key)", () => {
  interface Snap {
    vault_address: string;
    chain: number;
    platform_name: string;
    strategy_type: string;
    allocation: number;
    apy: number;
    points_apy: number;
    strategist_address: string | null;
    snapshot_datetime: string;
    id: string;
  }

  it("GET /platform/strategy_apy: every snapshot, newest first, the read shape", async () => {
    const r = await h.json<Snap[]>(`${API}/platform/strategy_apy`, { key: null });
    expect(r.status).toBe(200);
    const rows = await h.q<{ id: string }>(
      "SELECT id FROM registry.strategy_apy_snapshot ORDER BY snapshot_datetime DESC, id",
    );
    expect(r.body.map((s) => s.id)).toEqual(rows.map((x) => x.id));
    const mine = r.body.filter((s) => s.platform_name === PLATFORM);
    expect(mine.map((s) => s.snapshot_datetime)).toEqual([
      "2026-01-03T12:00:00.000Z",
      "2026-01-02T00:00:00.000Z",
      "2026-01-01T00:00:00.000Z",
    ]);
    expect(Object.keys(mine[0]!).sort()).toEqual([
      "allocation",
      "apy",
      "chain",
      "id",
      "platform_name",
      "points_apy",
      "snapshot_datetime",
      "strategist_address",
      "strategy_type",
      "vault_address",
    ]);
    expect(mine[1]).toMatchObject({
      vault_address: lending.address,
      chain: lending.chain_id,
      strategy_type: "lending",
      allocation: 0.6,
      apy: 0.081,
      points_apy: 0.01,
      strategist_address: "0x7d2d0056351c654fa667b96cdaf48a2388c20f04",
    });
  });

  it("GET /platform/strategy_apy/{vault_address}: the vault's snapshots, address case-insensitive", async () => {
    const r = await h.json<Snap[]>(`${API}/platform/strategy_apy/${upper(lending.address)}`, { key: null });
    expect(r.status).toBe(200);
    const rows = await h.q<{ id: string }>(
      "SELECT id FROM registry.strategy_apy_snapshot WHERE lower(vault_address) = $1 ORDER BY snapshot_datetime DESC, id",
      [lending.address],
    );
    expect(r.body.map((s) => s.id)).toEqual(rows.map((x) => x.id));
    expect(r.body.filter((s) => s.platform_name === PLATFORM).map((s) => s.strategy_type)).toEqual([
      "basis",
      "lending",
    ]);
    expect(r.body.every((s) => s.vault_address === lending.address)).toBe(true);
  });

  it("a known vault without snapshots gives [], an unknown one 404, a malformed one 422", async () => {
    // a vault of the registry without snapshots (the non-EVM one of the devnet, or an indexed one)
    const known = await h.q<{ address: string }>(
      "SELECT address FROM registry.vault rv WHERE NOT EXISTS (SELECT 1 FROM registry.strategy_apy_snapshot s WHERE lower(s.vault_address) = lower(rv.address)) ORDER BY chain_type = 'evm', address LIMIT 1",
    );
    expect(known.length).toBe(1);
    const empty = await h.json<unknown[]>(`${API}/platform/strategy_apy/${known[0]!.address}`, { key: null });
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual([]);
    const nf = await h.json<{ detail: string }>(`${API}/platform/strategy_apy/${UNKNOWN}`, { key: null });
    expect(nf.status).toBe(404);
    expect(typeof nf.body.detail).toBe("string");
    await expect422(`${API}/platform/strategy_apy/not-an-address!`, "vault_address");
  });
});

describe("strategists (no key)", () => {
  it("GET /platform/strategist: ordered by name, offset and limit", async () => {
    const rows = await h.q<{ id: string; name: string; logo_url: string | null; website_url: string | null }>(
      "SELECT id, name, logo_url, website_url FROM registry.strategist ORDER BY name, id",
    );
    expect(rows.length).toBeGreaterThanOrEqual(2);
    const r = await h.json<
      { strategist_name: string; strategist_logo: string | null; website_url: string | null; id: string }[]
    >(`${API}/platform/strategist`, { key: null });
    expect(r.status).toBe(200);
    expect(r.body).toEqual(
      rows.map((x) => ({ strategist_name: x.name, strategist_logo: x.logo_url, website_url: x.website_url, id: x.id })),
    );
    const page = await h.json<{ id: string }[]>(`${API}/platform/strategist?offset=1&limit=1`, { key: null });
    expect(page.body.map((x) => x.id)).toEqual([rows[1]!.id]);
    expect((await h.json<unknown[]>(`${API}/platform/strategist?offset=${rows.length}`, { key: null })).body).toEqual(
      [],
    );
  });

  it("422 on a malformed offset or limit", async () => {
    for (const qs of ["limit=0", "limit=1001", "limit=abc", "limit=1.5"])
      await expect422(`${API}/platform/strategist?${qs}`, "limit");
    // an empty offset is malformed, not 0
    for (const qs of ["offset=-1", "offset=x", "offset=", "offset=1e1"])
      await expect422(`${API}/platform/strategist?${qs}`, "offset");
  });
});

describe("unrealized PnL", () => {
  interface Pnl {
    timestamp: string;
    chain_id: number;
    vault_name: string;
    vault_address: string;
    strategist_name: string | null;
    reference_asset: string;
    asset_price: number | null;
    tvl_on_vault: number;
    current_redeem_ratio: number | null;
    actual_tvl: number;
    adjusted_redeem_ratio: number | null;
    unrealized_pnl: number | null;
    unrealized_pnl_in_asset: number;
  }
  interface PnlRow {
    chain_id: number;
    vault: string;
    timestamp: string;
    vault_name: string;
    strategist_name: string | null;
    reference_asset: string;
    asset_price: string | null;
    tvl_on_vault: string;
    actual_tvl: string;
    current_redeem_ratio: string | null;
    adjusted_redeem_ratio: string | null;
    unrealized_pnl: string | null;
    unrealized_pnl_in_asset: string;
  }
  const n = (v: string | null) => (v == null ? null : Number(v));
  const expected = (r: PnlRow): Pnl => ({
    timestamp: iso(r.timestamp),
    chain_id: r.chain_id,
    vault_name: r.vault_name,
    vault_address: r.vault,
    strategist_name: r.strategist_name,
    reference_asset: r.reference_asset,
    asset_price: n(r.asset_price),
    tvl_on_vault: Number(r.tvl_on_vault),
    current_redeem_ratio: n(r.current_redeem_ratio),
    actual_tvl: Number(r.actual_tvl),
    adjusted_redeem_ratio: n(r.adjusted_redeem_ratio),
    unrealized_pnl: n(r.unrealized_pnl),
    unrealized_pnl_in_asset: Number(r.unrealized_pnl_in_asset),
  });
  const rowsOf = (where: string, params: unknown[]) =>
    h.q<PnlRow>(
      `SELECT chain_id, vault, timestamp::text, vault_name, strategist_name, reference_asset, asset_price::text, tvl_on_vault::text, actual_tvl::text,
              current_redeem_ratio::text, adjusted_redeem_ratio::text, unrealized_pnl::text, unrealized_pnl_in_asset::text
       FROM derived.unrealized_pnl WHERE ${where} ORDER BY timestamp DESC, block_number DESC, chain_id, snapshot_id DESC`,
      params,
    );

  it("full records of one vault on one chain, newest first, equal to derived.unrealized_pnl", async () => {
    const rows = await rowsOf("chain_id = $1 AND vault = $2", [lending.chain_id, lending.address]);
    expect(rows.length).toBeGreaterThan(10);
    const r = await h.json<Pnl[]>(
      `${API}/platform/unrealized_pnl?vault_address=${upper(lending.address)}&chain_id=${lending.chain_id}`,
    );
    expect(r.status).toBe(200);
    expect(r.body).toEqual(rows.map(expected));
  });

  it("without chain_id, an address on several chains serves its lowest chain (records and points name it)", async () => {
    const a = multi ?? lending.address;
    const lowest = Math.min(...vaults.filter((v) => v.address === a).map((v) => v.chain_id));
    const rows = await rowsOf("chain_id = $1 AND vault = $2", [lowest, a]);
    const r = await h.json<Pnl[]>(`${API}/platform/unrealized_pnl?vault_address=${a}`);
    expect(r.res.headers.get("x-vault-chain")).toBe(String(lowest));
    expect(r.body).toEqual(rows.map(expected));
    const ratio = await h.json<{ chain_id: number }[]>(
      `${API}/platform/unrealized_pnl?vault_address=${a}&fields=ratio&limit=5`,
    );
    expect(ratio.body.map((x) => x.chain_id)).toEqual(rows.slice(0, 5).map(() => lowest));
  });

  it("limit, and inclusive start_date / end_date (dates and date-times)", async () => {
    const base = `${API}/platform/unrealized_pnl?vault_address=${v2.address}&chain_id=${v2.chain_id}`;
    const all = await rowsOf("chain_id = $1 AND vault = $2", [v2.chain_id, v2.address]);
    expect((await h.json<Pnl[]>(`${base}&limit=5`)).body).toEqual(all.slice(0, 5).map(expected));
    const day = iso(all[Math.floor(all.length / 2)]!.timestamp).slice(0, 10);
    const t0 = Date.parse(`${day}T00:00:00Z`) / 1000;
    const inDay = all.filter((x) => Number(x.timestamp) >= t0 && Number(x.timestamp) <= t0 + 86_399);
    expect(inDay.length).toBeGreaterThan(0);
    expect((await h.json<Pnl[]>(`${base}&start_date=${day}&end_date=${day}`)).body).toEqual(inDay.map(expected));
    // a date-time bound is inclusive to the second
    const pivot = all[3]!;
    const from = await h.json<Pnl[]>(`${base}&start_date=${encodeURIComponent(iso(pivot.timestamp))}`);
    expect(from.body).toEqual(all.filter((x) => Number(x.timestamp) >= Number(pivot.timestamp)).map(expected));
    const until = await h.json<Pnl[]>(
      `${base}&end_date=${encodeURIComponent(iso(pivot.timestamp).replace("Z", "+00:00"))}&limit=2`,
    );
    expect(until.body).toEqual(
      all
        .filter((x) => Number(x.timestamp) <= Number(pivot.timestamp))
        .slice(0, 2)
        .map(expected),
    );
  });

  it("fields=ratio: slim points with collateral_ratio = actual_tvl / tvl_on_vault", async () => {
    const rows = await rowsOf("chain_id = $1 AND vault = $2", [lending.chain_id, lending.address]);
    const r = await h.json<
      {
        timestamp: string;
        current_redeem_ratio: number | null;
        adjusted_redeem_ratio: number | null;
        collateral_ratio: number | null;
      }[]
    >(
      `${API}/platform/unrealized_pnl?vault_address=${lending.address}&chain_id=${lending.chain_id}&fields=ratio&limit=20`,
    );
    expect(r.status).toBe(200);
    expect(r.body.length).toBe(Math.min(20, rows.length));
    r.body.forEach((p, i) => {
      const x = rows[i]!;
      expect(Object.keys(p).sort()).toEqual([
        "adjusted_redeem_ratio",
        "chain_id",
        "collateral_ratio",
        "current_redeem_ratio",
        "timestamp",
      ]);
      expect(p.timestamp).toBe(iso(x.timestamp));
      expect(p.current_redeem_ratio).toBe(n(x.current_redeem_ratio));
      expect(p.adjusted_redeem_ratio).toBe(n(x.adjusted_redeem_ratio));
      if (Number(x.tvl_on_vault) === 0) expect(p.collateral_ratio).toBeNull();
      else expect(p.collateral_ratio).toBeCloseTo(Number(x.actual_tvl) / Number(x.tvl_on_vault), 12);
    });
  });

  it("GET /platform/unrealized_pnl/latest: the newest record of every vault", async () => {
    const rows = await h.q<PnlRow>(
      `SELECT DISTINCT ON (chain_id, vault) chain_id, vault, timestamp::text, vault_name, strategist_name, reference_asset, asset_price::text, tvl_on_vault::text, actual_tvl::text,
              current_redeem_ratio::text, adjusted_redeem_ratio::text, unrealized_pnl::text, unrealized_pnl_in_asset::text
       FROM derived.unrealized_pnl ORDER BY chain_id, vault, timestamp DESC, block_number DESC, snapshot_id DESC`,
    );
    expect(rows.length).toBe(vaults.length);
    const r = await h.json<Pnl[]>(`${API}/platform/unrealized_pnl/latest`);
    expect(r.status).toBe(200);
    expect(r.body).toEqual(rows.map(expected));
  });

  it("422 on malformed parameters, 404 on an unknown vault", async () => {
    const base = `${API}/platform/unrealized_pnl`;
    await expect422(base, "vault_address");
    await expect422(`${base}?vault_address=${lending.address}&limit=0`, "limit");
    await expect422(`${base}?vault_address=${lending.address}&limit=x`, "limit");
    await expect422(`${base}?vault_address=${lending.address}&start_date=yesterday`, "start_date");
    await expect422(`${base}?vault_address=${lending.address}&end_date=2026-02-30`, "end_date");
    await expect422(`${base}?vault_address=${lending.address}&end_date=2026-01-01T24:00:00`, "end_date");
    await expect422(`${base}?vault_address=${lending.address}&fields=all`, "fields");
    await expect422(`${base}?vault_address=${lending.address}&chain_id=123456789`, "chain_id");
    await expect422(`${base}?vault_address=${lending.address}&start_date=2026-01-02&end_date=2026-01-01`, "start_date");
    await expect422(
      `${base}?vault_address=${lending.address}&start_date=2026-01-01T12:00:01Z&end_date=2026-01-01T12:00:00Z`,
      "start_date",
    );
    expect(
      (await h.json(`${base}?vault_address=${lending.address}&start_date=2026-01-01T12:00:00Z&end_date=2026-01-01`))
        .status,
    ).toBe(200);
    const nf = await h.json<{ detail: string }>(`${base}?vault_address=${UNKNOWN}`);
    expect(nf.status).toBe(404);
    expect(nf.body.detail).toMatch(/not found/);
  });

  it("needs a valid key", async () => {
    await expectAuth(`${API}/platform/unrealized_pnl?vault_address=${lending.address}`);
    await expectAuth(`${API}/platform/unrealized_pnl/latest`);
  });
});

describe("vault history", () => {
  interface Rec {
    timestamp: string;
    type: string;
    wallet: string;
    pool: string;
    chain_id: number;
    amount_raw: string;
    transaction_hash: string;
    block_number: number;
    log_index: number;
    amount: string | null;
    asset_address: string;
    asset_symbol: string | null;
    asset_decimals: number | null;
  }
  interface EvRow {
    chain_id: number;
    vault: string;
    kind: string;
    owner: string;
    receiver: string;
    sender: string;
    assets: string;
    tx_hash: string;
    block_number: string;
    timestamp: string;
    asset: string;
    log_index: number;
  }
  // every vault's tokens: its base asset (indexer.vault) and its second asset (registry attributes)
  let tokens = new Map<string, { symbol: string; decimals: number }>();
  beforeAll(async () => {
    const rows = await h.q<{ chain_id: number; vault: string; token: string; symbol: string; decimals: number }>(
      `SELECT chain_id, address AS vault, asset AS token, asset_symbol AS symbol, asset_decimals AS decimals FROM indexer.vault
       UNION ALL
       SELECT chain_id, address, lower(attributes->'alt_asset'->>'address'), attributes->'alt_asset'->>'symbol',
              (attributes->'alt_asset'->>'decimals')::int
       FROM registry.vault WHERE attributes ? 'alt_asset'`,
    );
    tokens = new Map(
      rows.map((r) => [`${r.chain_id}:${r.vault}:${r.token}`, { symbol: r.symbol, decimals: r.decimals }]),
    );
    expect(rows.some((r) => r.symbol === "stETH")).toBe(true);
  });
  const whole = (raw: string, d: number) => {
    const v = BigInt(raw);
    const frac = (v % 10n ** BigInt(d)).toString().padStart(d, "0").replace(/0+$/, "");
    return `${v / 10n ** BigInt(d)}${frac ? `.${frac}` : ""}`;
  };
  const expected = (e: EvRow): Rec => {
    const t = tokens.get(`${e.chain_id}:${e.vault}:${e.asset}`);
    return {
      timestamp: iso(e.timestamp),
      type: e.kind,
      wallet: e.owner,
      pool: e.vault,
      chain_id: e.chain_id,
      amount_raw: e.assets,
      amount: t ? whole(e.assets, t.decimals) : null,
      transaction_hash: e.tx_hash,
      block_number: Number(e.block_number),
      log_index: e.log_index,
      asset_address: e.asset,
      asset_symbol: t?.symbol ?? null,
      asset_decimals: t?.decimals ?? null,
    };
  };
  // (ordered by the table's numeric block number, not the selected text of it: "990" > "1114")
  const events = (where: string, params: unknown[], order = "vault_event.block_number DESC, log_index DESC") =>
    h.q<EvRow>(
      `SELECT chain_id, vault, kind, owner, receiver, sender, assets::text, tx_hash, block_number::text, timestamp::text, asset, log_index
       FROM indexer.vault_event WHERE ${where} ORDER BY ${order}`,
      params,
    );

  it("GET /platform/vault_history/archived: the backfilled vaults, lower-cased, distinct, sorted", async () => {
    const rows = await h.q<{ v: string }>("SELECT DISTINCT lower(vault) AS v FROM ops.vault_backfill ORDER BY 1");
    expect(rows.length).toBeGreaterThan(0);
    const r = await h.json<string[]>(`${API}/platform/vault_history/archived`);
    expect(r.status).toBe(200);
    expect(r.body).toEqual(rows.map((x) => x.v));
    await expectAuth(`${API}/platform/vault_history/archived`);
  });

  it("records of a vault on a chain, newest first, equal to indexer.vault_event", async () => {
    const rows = await events("chain_id = $1 AND vault = $2", [lending.chain_id, lending.address]);
    expect(rows.length).toBeGreaterThan(10);
    const r = await h.json<Rec[]>(
      `${API}/platform/vault_history/${upper(lending.address)}?chain_id=${lending.chain_id}`,
    );
    expect(r.status).toBe(200);
    expect(r.body).toEqual(rows.slice(0, 5000).map(expected));
    expect(new Set(r.body.map((x) => x.type))).toEqual(new Set(["deposit", "withdraw"]));
  });

  it("without chain_id the address's lowest chain; `chain` is the same parameter", async () => {
    const a = multi ?? v2.address;
    const lowest = Math.min(...vaults.filter((v) => v.address === a).map((v) => v.chain_id));
    const rows = await events("chain_id = $1 AND vault = $2", [lowest, a]);
    const r = await h.json<Rec[]>(`${API}/platform/vault_history/${a}`);
    expect(r.res.headers.get("x-vault-chain")).toBe(String(lowest));
    expect(r.body).toEqual(rows.slice(0, 5000).map(expected));
    const lim = await h.json<Rec[]>(`${API}/platform/vault_history/${a}?limit=7`);
    expect(lim.body).toEqual(rows.slice(0, 7).map(expected));
    const other = vaults.find((v) => v.address === a && v.chain_id !== lowest);
    if (other) {
      const viaChain = await h.json<Rec[]>(`${API}/platform/vault_history/${a}?chain=${other.chain_id}&limit=7`);
      expect(viaChain.res.headers.get("x-vault-chain")).toBe(String(other.chain_id));
      expect(viaChain.body.every((x) => x.chain_id === other.chain_id)).toBe(true);
    }
  });

  it("pages older records with the X-Next-Before cursor, to the first event", async () => {
    const rows = await events("chain_id = $1 AND vault = $2", [v2.chain_id, v2.address]);
    expect(rows.length).toBeGreaterThan(40);
    const seen: Rec[] = [];
    let url = `${API}/platform/vault_history/${v2.address}?chain_id=${v2.chain_id}&limit=17`;
    for (let page = 0; page < 1000; page++) {
      const r = await h.json<Rec[]>(url);
      expect(r.status).toBe(200);
      seen.push(...r.body);
      const next = r.res.headers.get("x-next-before");
      if (r.body.length < 17) expect(next).toBeNull();
      if (!next) break;
      const last = r.body.at(-1)!;
      expect(next).toBe(`${last.block_number}:${last.log_index}`);
      url = `${API}/platform/vault_history/${v2.address}?chain_id=${v2.chain_id}&limit=17&before=${next}`;
    }
    expect(seen).toEqual(rows.map(expected));
    // a bare block number: events of earlier blocks only
    const mid = rows[Math.floor(rows.length / 2)]!;
    const older = await h.json<Rec[]>(
      `${API}/platform/vault_history/${v2.address}?chain_id=${v2.chain_id}&before=${mid.block_number}`,
    );
    expect(older.body).toEqual(rows.filter((e) => BigInt(e.block_number) < BigInt(mid.block_number)).map(expected));
  });

  it("type, wallet (case-insensitive: holder, receiver or depositor) and limit filters", async () => {
    const w = await events("chain_id = $1 AND vault = $2", [v2.chain_id, v2.address]);
    const withdraws = w.filter((e) => e.kind === "withdraw");
    const r = await h.json<Rec[]>(`${API}/platform/vault_history/${v2.address}?chain_id=${v2.chain_id}&type=withdraw`);
    expect(r.body).toEqual(withdraws.map(expected));
    const wallet = w.find((e) => e.kind === "deposit")!.owner;
    const mine = w.filter(
      (e) => e.owner === wallet || e.receiver === wallet || (e.kind === "deposit" && e.sender === wallet),
    );
    const byWallet = await h.json<Rec[]>(
      `${API}/platform/vault_history/${v2.address}?chain_id=${v2.chain_id}&wallet=${upper(wallet)}`,
    );
    expect(byWallet.body).toEqual(mine.map(expected));
    const three = await h.json<Rec[]>(
      `${API}/platform/vault_history/${v2.address}?chain_id=${v2.chain_id}&type=deposit&limit=3`,
    );
    expect(three.body).toEqual(
      w
        .filter((e) => e.kind === "deposit")
        .slice(0, 3)
        .map(expected),
    );
  });

  it("422 on malformed parameters, 404 on an unknown vault or a chain it is not on", async () => {
    const base = `${API}/platform/vault_history/${lending.address}`;
    for (const qs of ["limit=0", "limit=5001", "limit=abc"]) await expect422(`${base}?${qs}`, "limit");
    await expect422(`${base}?type=transfer`, "type");
    await expect422(`${base}?wallet=0x1234`, "wallet");
    await expect422(`${base}?chain_id=999999999`, "chain_id");
    await expect422(`${base}?chain_id=eth`, "chain_id");
    await expect422(`${base}?before=yesterday`, "before");
    // a log index past a Postgres integer (it was a 500: out of range in the comparison)
    for (const cur of ["1:2147483648", "1:9999999999"]) await expect422(`${base}?before=${cur}`, "before");
    expect((await h.json<unknown[]>(`${base}?before=1:2147483647`)).status).toBe(200);
    // a parameter the route does not know is ignored, as FastAPI does (a cache buster, say)
    const extra = await h.json<unknown[]>(`${base}?strategist=x&limit=3`);
    expect(extra.status).toBe(200);
    expect(extra.body).toEqual((await h.json<unknown[]>(`${base}?limit=3`)).body);
    await expect422(`${API}/platform/vault_history/bad%20address`, "vault_address");
    expect((await h.json(`${API}/platform/vault_history/${UNKNOWN}`)).status).toBe(404);
    const absent = [1, 8453, 42161].find(
      (c) => !vaults.some((v) => v.chain_id === c && v.address === lending.address),
    )!;
    expect((await h.json(`${base}?chain_id=${absent}`)).status).toBe(404);
    await expectAuth(base);
  });
});

interface Bucket {
  count: number;
  assets: number;
  assets_raw: string;
  shares: number;
  shares_raw: string;
}
interface Summary {
  vault: {
    address: string;
    name: string;
    symbol: string;
    chain_id: number;
    family: string;
    strategist_name: string | null;
  };
  asset: { address: string; symbol: string; decimals: number };
  window: { today: string; past_days: number; future_days: number; from: string; to: string };
  liquidity: { available: number; available_raw: string; as_of: string | null };
  summary: {
    total_pending: number;
    total_pending_raw: string;
    total_pending_shares_raw: string;
    pending_count: number;
    pending_to_liquidity_ratio: number | null;
    is_liquidity_sufficient: boolean;
    shortfall_raw: string;
    next_redemption_date: string | null;
    is_overdue: boolean;
    overdue: Bucket;
    due: Bucket;
    unscheduled: Bucket;
    outside_window: Bucket;
  };
  redemptions_by_date: (Bucket & {
    date: string;
    days_until_due: number;
    is_overdue: boolean;
    assets_estimated: boolean;
  })[];
  idle_balances: {
    total_raw: string;
    wallets: { address: string; wallet_type: string; amount_raw: string }[];
    subaccounts: { addresses: string[]; amount_raw: string };
  };
}

/**
 * The pending requests of a vault per due date, from the tables: a lendingPool's claimable date;
 * a tokenizedVaultV2's, the UTC day of the request's time plus the vault's lagDuration(), read
 * from the chain.
 */
async function pendingGroups(v: VaultRow) {
  const rows = await h.q<{ claimable: string | null; ts: string; shares: string; assets: string }>(
    `SELECT r.claimable_date AS claimable, r.timestamp::text AS ts, r.shares::text AS shares,
            (CASE WHEN r.assets IS NULL THEN trunc(r.shares * v.asset_share_ratio) ELSE r.assets - coalesce(r.fee, 0) END)::text AS assets
     FROM indexer.withdrawal_request r JOIN indexer.vault v ON v.chain_id = r.chain_id AND v.address = r.vault
     WHERE r.chain_id = $1 AND r.vault = $2 AND r.status = 'requested'`,
    [v.chain_id, v.address],
  );
  let lag: number | null = null;
  if (v.family === "tokenizedVaultV2") {
    const url = h.devnet.chains.find((c) => c.chainId === v.chain_id)!.rpcUrl;
    const data = toFunctionSelector("lagDuration()");
    lag = Number(await rpcCall<string>(url, "eth_call", [{ to: v.address, data }, "latest"]));
    expect(lag).toBeGreaterThan(0);
  }
  const groups = new Map<string | null, { d: string | null; n: number; shares: string; assets: string }>();
  for (const r of rows) {
    const d = r.claimable ?? (lag == null ? null : new Date((Number(r.ts) + lag) * 1000).toISOString().slice(0, 10));
    const g = groups.get(d) ?? { d, n: 0, shares: "0", assets: "0" };
    g.n++;
    g.shares = (BigInt(g.shares) + BigInt(r.shares)).toString();
    g.assets = (BigInt(g.assets) + BigInt(r.assets)).toString();
    groups.set(d, g);
  }
  return [...groups.values()].sort((a, b) => (a.d ?? "~").localeCompare(b.d ?? "~"));
}

async function checkSummary(s: Summary, v: VaultRow, pastDays: number, futureDays: number) {
  const t = today();
  const from = addDays(t, -pastDays);
  const to = addDays(t, futureDays);
  expect(s.vault).toMatchObject({ address: v.address, chain_id: v.chain_id, family: v.family });
  expect(s.window).toEqual({ today: t, past_days: pastDays, future_days: futureDays, from, to });
  const groups = await pendingGroups(v);
  const sum = (gs: typeof groups, f: "assets" | "shares") => gs.reduce((a, g) => a + BigInt(g[f]), 0n).toString();
  const count = (gs: typeof groups) => gs.reduce((a, g) => a + g.n, 0);
  expect(s.summary.pending_count).toBe(count(groups));
  expect(s.summary.total_pending_raw).toBe(sum(groups, "assets"));
  expect(s.summary.total_pending_shares_raw).toBe(sum(groups, "shares"));
  expect(s.summary.total_pending).toBeCloseTo(Number(sum(groups, "assets")) / 10 ** v.asset_decimals, 6);
  const overdue = groups.filter((g) => g.d != null && g.d >= from && g.d < t);
  const due = groups.filter((g) => g.d != null && g.d >= t && g.d <= to);
  const unscheduled = groups.filter((g) => g.d == null);
  expect(s.summary.overdue).toMatchObject({
    count: count(overdue),
    assets_raw: sum(overdue, "assets"),
    shares_raw: sum(overdue, "shares"),
  });
  expect(s.summary.due).toMatchObject({
    count: count(due),
    assets_raw: sum(due, "assets"),
    shares_raw: sum(due, "shares"),
  });
  expect(s.summary.unscheduled).toMatchObject({ count: count(unscheduled), assets_raw: sum(unscheduled, "assets") });
  expect(s.summary.is_overdue).toBe(overdue.length > 0);
  expect(s.summary.next_redemption_date).toBe(groups.find((g) => g.d != null && g.d >= t)?.d ?? null);
  const dated = [...overdue, ...due].sort((a, b) => a.d!.localeCompare(b.d!));
  expect(s.redemptions_by_date.map((e) => e.date)).toEqual(dated.map((g) => g.d));
  for (const e of s.redemptions_by_date) {
    const g = groups.find((x) => x.d === e.date)!;
    expect(e).toMatchObject({ count: g.n, assets_raw: g.assets, shares_raw: g.shares, is_overdue: e.date < t });
  }
  const [snap] = await h.q<{ idle: string; sub: string; reserved: string; ts: string }>(
    "SELECT idle_assets::text AS idle, subaccount_assets::text AS sub, reserved_assets::text AS reserved, timestamp::text AS ts FROM indexer.share_ratio_snapshot WHERE chain_id = $1 AND vault = $2 ORDER BY timestamp DESC, block_number DESC, id DESC LIMIT 1",
    [v.chain_id, v.address],
  );
  // what it holds less what it owes already (fees, processed claims not yet claimed)
  const avail = BigInt(snap!.idle) - BigInt(snap!.reserved);
  expect(avail).toBeGreaterThan(0n);
  expect(s.liquidity).toMatchObject({
    available_raw: avail.toString(),
    held_raw: snap!.idle,
    reserved_raw: snap!.reserved,
  });
  expect(s.liquidity.as_of).toBe(iso(snap!.ts));
  expect(s.idle_balances.total_raw).toBe((BigInt(snap!.idle) + BigInt(snap!.sub)).toString());
  expect(s.idle_balances.subaccounts.amount_raw).toBe(snap!.sub);
  const subs = await h.q<{ address: string }>(
    "SELECT address FROM registry.subaccount WHERE chain_id = $1 AND vault = $2 ORDER BY address",
    [v.chain_id, v.address],
  );
  expect(s.idle_balances.subaccounts.addresses).toEqual(subs.map((x) => x.address));
  const pending = BigInt(s.summary.total_pending_raw);
  expect(s.summary.is_liquidity_sufficient).toBe(avail >= pending);
  expect(s.summary.shortfall_raw).toBe((pending > avail ? pending - avail : 0n).toString());
}

describe("pending redemptions", () => {
  it("GET /vaults/{vault}/pending-redemptions of a lending pool: totals, buckets and dates from the tables", async () => {
    const r = await h.json<Summary>(
      `${API}/vaults/${upper(lending.address)}/pending-redemptions?chain_id=${lending.chain_id}`,
    );
    expect(r.status).toBe(200);
    await checkSummary(r.body, lending, 7, 14);
    const wide = await h.json<Summary>(
      `${API}/vaults/${lending.address}/pending-redemptions?chain_id=${lending.chain_id}&past_days=30&future_days=30`,
    );
    await checkSummary(wide.body, lending, 30, 30);
    // the pool has requests waiting, dated within the wide window: the checks above compared some
    expect(wide.body.summary.pending_count).toBeGreaterThan(0);
    expect(wide.body.redemptions_by_date.length).toBeGreaterThan(0);
  });

  it("a tokenizedVaultV2: each request due once the vault's lag has passed, priced at the latest share price", async () => {
    const r = await h.json<Summary>(
      `${API}/vaults/${v2.address}/pending-redemptions?chain_id=${v2.chain_id}&past_days=3&future_days=5`,
    );
    expect(r.status).toBe(200);
    await checkSummary(r.body, v2, 3, 5);
    // every request is dated (its vault's lagDuration() is known): none is left unscheduled
    expect(r.body.summary.pending_count).toBeGreaterThan(0);
    expect(r.body.summary.unscheduled.count).toBe(0);
    expect(r.body.redemptions_by_date.length).toBeGreaterThan(0);
    expect(r.body.redemptions_by_date.every((e) => e.assets_estimated)).toBe(true);
    // the withdrawal queue dates them alike
    const q = await h.json<{ pending_withdrawals: { date: string }[] }>(
      `${API}/withdrawals/${v2.chain_id}/${v2.address}`,
    );
    const dates = [...new Set(q.body.pending_withdrawals.map((p) => p.date))].sort();
    expect(dates).toEqual((await pendingGroups(v2)).map((g) => g.d));
    // the dated list keeps the spec's types: a date and an integer, never "unscheduled" and null
    for (const e of r.body.redemptions_by_date) {
      expect(e.date).toMatch(/^\d{4}-\d{2}-\d{2}$/);
      expect(Number.isInteger(e.days_until_due)).toBe(true);
    }
  });

  it("without chain_id an address on several chains serves the lowest chain id", async () => {
    // the devnet deploys the same addresses on both chains
    expect(multi).not.toBeNull();
    const r = await h.json<Summary>(`${API}/vaults/${multi}/pending-redemptions`);
    expect(r.status).toBe(200);
    expect(r.body.vault.chain_id).toBe(Math.min(...vaults.filter((v) => v.address === multi).map((v) => v.chain_id)));
  });

  it("422 on malformed parameters, 404 on unknown or non-indexed vaults, key required", async () => {
    const base = `${API}/vaults/${lending.address}/pending-redemptions`;
    for (const qs of ["past_days=0", "past_days=31", "past_days=x"]) await expect422(`${base}?${qs}`, "past_days");
    for (const qs of ["future_days=0", "future_days=31"]) await expect422(`${base}?${qs}`, "future_days");
    await expect422(`${base}?chain_id=77777`, "chain_id");
    expect((await h.json(`${API}/vaults/${UNKNOWN}/pending-redemptions`)).status).toBe(404);
    const [nonEvm] = await h.q<{ address: string }>(
      "SELECT address FROM registry.vault WHERE chain_type <> 'evm' LIMIT 1",
    );
    expect(nonEvm).toBeDefined();
    const r = await h.json<{ detail: string }>(`${API}/vaults/${nonEvm!.address}/pending-redemptions`);
    expect(r.status).toBe(404);
    expect(r.body.detail).toMatch(/is in the registry but not indexed \(a non-EVM chain\)/);
    await expectAuth(base);
  });
});

describe("pending redemption buckets (synthetic requests, fixed clock)", () => {
  it("overdue within the look-back, due within the look-ahead, outside the window, unscheduled; liquidity", () => {
    const v = {
      chain_id: 1,
      address: "0xv",
      family: "lendingPool",
      name: "V",
      symbol: "V",
      decimals: 6,
      asset: "0xa",
      asset_symbol: "USDC",
      asset_decimals: 6,
      strategist_name: null,
    };
    const g = (d: string | null, n: number, assets: string): PendingGroup => ({
      chain_id: 1,
      vault: "0xv",
      claimable_date: d,
      n,
      assets,
      shares: assets,
      estimated: d == null,
    });
    const groups = [
      g("2026-02-01", 1, "1000000"),
      g("2026-03-05", 2, "2000000"),
      g("2026-03-09", 1, "500000"),
      g("2026-03-10", 1, "250000"),
      g("2026-03-20", 3, "3000000"),
      g("2026-04-30", 1, "7000000"),
      g(null, 2, "1500000"),
    ];
    const liq = {
      chain_id: 1,
      vault: "0xv",
      idle_assets: "4000000",
      subaccount_assets: "1000000",
      reserved_assets: "500000",
      timestamp: "1773100000",
    };
    const s = buildSummary(v, groups, liq, ["0xs"], new Date("2026-03-10T15:00:00Z"), { pastDays: 7, futureDays: 14 });
    expect(s.window).toEqual({
      today: "2026-03-10",
      past_days: 7,
      future_days: 14,
      from: "2026-03-03",
      to: "2026-03-24",
    });
    expect(s.summary).toMatchObject({
      total_pending: 15.25,
      total_pending_raw: "15250000",
      pending_count: 11,
      pending_to_liquidity_ratio: 15.25 / 3.5,
      is_liquidity_sufficient: false,
      shortfall: 11.75,
      shortfall_raw: "11750000",
      next_redemption_date: "2026-03-10",
      is_overdue: true,
    });
    expect(s.summary.overdue).toMatchObject({ count: 3, assets_raw: "2500000", assets: 2.5 });
    expect(s.summary.due).toMatchObject({ count: 4, assets_raw: "3250000" });
    expect(s.summary.outside_window).toMatchObject({ count: 2, assets_raw: "8000000" });
    expect(s.summary.unscheduled).toMatchObject({ count: 2, assets_raw: "1500000" });
    expect(s.redemptions_by_date.map((e) => [e.date, e.days_until_due, e.is_overdue, e.count])).toEqual([
      ["2026-03-05", -5, true, 2],
      ["2026-03-09", -1, true, 1],
      ["2026-03-10", 0, false, 1],
      ["2026-03-20", 10, false, 3],
    ]);
    // the vault holds 4 and owes 0.5 of it already (fees, unclaimed processed claims)
    expect(s.liquidity).toEqual({
      available: 3.5,
      available_raw: "3500000",
      held: 4,
      held_raw: "4000000",
      reserved: 0.5,
      reserved_raw: "500000",
      as_of: new Date(1773100000 * 1000).toISOString(),
    });
    const owing = buildSummary(
      v,
      groups,
      { ...liq, reserved_assets: "4000001" },
      ["0xs"],
      new Date("2026-03-10T15:00:00Z"),
      {
        pastDays: 7,
        futureDays: 14,
      },
    );
    expect(owing.liquidity).toMatchObject({ available: 0, available_raw: "0", reserved_raw: "4000001" });
    expect(owing.summary).toMatchObject({ pending_to_liquidity_ratio: null, shortfall_raw: "15250000" });
    expect(s.idle_balances).toEqual({
      total: 5,
      total_raw: "5000000",
      wallets: [{ address: "0xv", wallet_type: "vault", amount: 4, amount_raw: "4000000" }],
      subaccounts: { addresses: ["0xs"], amount: 1, amount_raw: "1000000" },
    });
    const empty = buildSummary(v, [], null, [], new Date("2026-03-10T00:00:00Z"), { pastDays: 1, futureDays: 1 });
    expect(empty.summary).toMatchObject({
      total_pending: 0,
      pending_count: 0,
      pending_to_liquidity_ratio: null,
      is_liquidity_sufficient: true,
      shortfall: 0,
      next_redemption_date: null,
      is_overdue: false,
    });
    expect(empty.liquidity).toEqual({
      available: 0,
      available_raw: "0",
      held: 0,
      held_raw: "0",
      reserved: 0,
      reserved_raw: "0",
      as_of: null,
    });
    expect(empty.redemptions_by_date).toEqual([]);
  });
});

describe("POST /vaults/pending-redemptions", () => {
  type Batch = {
    data: Summary[];
    total_requested: number;
    errors: { address: string; reason: string }[];
    total_successful: number;
  };
  const post = (body: unknown, init: RequestInit & { key?: string | null } = {}) =>
    h.json<Batch>(`${API}/vaults/pending-redemptions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: typeof body === "string" ? body : JSON.stringify(body),
      ...init,
    });

  it("an empty object: every indexed vault", async () => {
    const r = await post({});
    expect(r.status).toBe(200);
    expect(r.body.data.map((s) => `${s.vault.chain_id}:${s.vault.address}`)).toEqual(
      vaults.map((v) => `${v.chain_id}:${v.address}`),
    );
    expect(r.body).toMatchObject({ total_requested: vaults.length, total_successful: vaults.length, errors: [] });
    // null fields, as a client serialises an unset optional: the same as absent
    const nulls = await post({ vault_addresses: null, strategist_name: null });
    expect(nulls.status, JSON.stringify(nulls.body)).toBe(200);
    expect(nulls.body.data.length).toBe(vaults.length);
    await checkSummary(
      r.body.data.find((s) => s.vault.address === lending.address && s.vault.chain_id === lending.chain_id)!,
      lending,
      7,
      14,
    );
  });

  it("by address: each processed on its own; unknown, malformed and non-EVM addresses go to errors", async () => {
    const [nonEvm] = await h.q<{ address: string }>(
      "SELECT address FROM registry.vault WHERE chain_type <> 'evm' LIMIT 1",
    );
    const list = [
      upper(v2.address),
      UNKNOWN,
      "definitely-not",
      ...(nonEvm ? [nonEvm.address] : []),
      v2.address,
      // a NUL no table can hold is one more address in errors, not a failed request
      "bad\u0000addr",
    ];
    const r = await post({ vault_addresses: list });
    expect(r.status).toBe(200);
    const deployments = vaults.filter((v) => v.address === v2.address);
    expect(r.body.data.map((s) => s.vault.address)).toEqual(deployments.map((v) => v.address));
    expect(r.body.errors.map((e) => e.address)).toEqual([
      UNKNOWN,
      "definitely-not",
      ...(nonEvm ? [nonEvm.address] : []),
      "bad\u0000addr",
    ]);
    expect(r.body.errors.at(-1)!.reason).toMatch(/not a valid EVM address/);
    expect(r.body.errors[0]!.reason).toMatch(/not found/);
    expect(r.body.errors[1]!.reason).toMatch(/not a valid EVM address/);
    if (nonEvm) expect(r.body.errors[2]!.reason).toMatch(/not an EVM vault/);
    expect(r.body.total_successful).toBe(r.body.data.length);
    expect(r.body.total_requested).toBe(r.body.data.length + r.body.errors.length);
    await checkSummary(r.body.data[0]!, deployments[0]!, 7, 14);
  });

  it("by strategist (case-insensitive), alone or with addresses", async () => {
    const rows = await h.q<{ chain_id: number; address: string; name: string }>(
      `SELECT v.chain_id, v.address, s.name FROM indexer.vault v JOIN registry.vault rv ON rv.chain_id = v.chain_id AND rv.address = v.address
       JOIN registry.strategist s ON s.id = rv.strategist_id ORDER BY v.chain_id, v.address`,
    );
    const name = rows[0]!.name;
    const theirs = rows.filter((x) => x.name === name);
    const r = await post({ strategist_name: name.toUpperCase() });
    expect(r.status).toBe(200);
    expect(r.body.data.map((s) => `${s.vault.chain_id}:${s.vault.address}`)).toEqual(
      theirs.map((v) => `${v.chain_id}:${v.address}`),
    );
    expect(r.body.data.every((s) => s.vault.strategist_name === name)).toBe(true);
    const other = rows.find((x) => x.name !== name);
    if (other) {
      const both = await post({ strategist_name: name, vault_addresses: [theirs[0]!.address, other.address] });
      expect(both.body.data.every((s) => s.vault.strategist_name === name)).toBe(true);
      expect(
        both.body.errors.some((e) => e.address === other.address && /not managed by strategist/.test(e.reason)),
      ).toBe(true);
    }
    const nf = await post({ strategist_name: "No Such Strategist" });
    expect(nf.status).toBe(404);
  });

  it("422 when the body is not JSON or has the wrong types; key required", async () => {
    await expect422(`${API}/vaults/pending-redemptions`, "vault_addresses", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ vault_addresses: "0xabc" }),
    });
    await expect422(`${API}/vaults/pending-redemptions`, 0, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ vault_addresses: [42] }),
    });
    await expect422(`${API}/vaults/pending-redemptions`, "strategist_name", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ strategist_name: 7 }),
    });
    const bad = await post("{not json");
    expect(bad.status).toBe(422);
    const arr = await post([lending.address]);
    expect(arr.status).toBe(422);
    await expectAuth(`${API}/vaults/pending-redemptions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: "{}",
    });
    // a misspelt filter is refused, never read as "every vault"
    const typo = await h.json<{ detail: { loc: string[]; type: string }[] }>(`${API}/vaults/pending-redemptions`, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ strategist: "Anyone" }),
    });
    expect(typo.status).toBe(422);
    expect(typo.body.detail).toEqual([
      expect.objectContaining({ loc: ["body", "strategist"], type: "extra_forbidden" }),
    ]);
  });
});

describe("withdrawal queue", () => {
  interface Queue {
    chain_id: number;
    vault: string;
    family: string;
    symbol: string;
    queue: { head: number; tail: number; length: number };
    pending_count: number;
    total_withdrawals_raw_amount: string;
    normalized_total_withdrawals_amount: string;
    total_assets: string | null;
    normalized_total_assets: string | null;
    pending_withdrawals: {
      id: string;
      date: string;
      amount_raw: string;
      normalized_amount: string;
      vault_percentage: string | null;
      vault: string;
      receiver: string;
      owner: string;
      queue_position: number | null;
      amount_estimated: boolean;
    }[];
    recent_processed: {
      id: string;
      amount_raw: string;
      processed_at: string | null;
      processed_tx_hash: string | null;
    }[];
  }
  const fmt = (raw: string, d: number) => {
    const v = BigInt(raw);
    const s = (v % 10n ** BigInt(d)).toString().padStart(d, "0").replace(/0+$/, "");
    return `${v / 10n ** BigInt(d)}${s ? `.${s}` : ""}`;
  };

  for (const which of ["lendingPool", "tokenizedVaultV2"] as const) {
    it(`GET /withdrawals/{chain}/{vault} of a ${which}: pending in processing order, processed newest first`, async () => {
      const v = which === "lendingPool" ? lending : v2;
      const res = await h.req(`${API}/withdrawals/${v.chain_id}/${upper(v.address)}`);
      expect(res.status).toBe(200);
      // raw amounts are exact JSON numbers (the spec's type), read here digit for digit
      const exact = parseExact<Queue>(await res.text(), ["total_withdrawals_raw_amount", "amount_raw"]);
      expect(exact.notNumbers).toEqual([]);
      const r = { body: exact.body };
      const [vr] = await h.q<{ head: number; tail: number; total_assets: string | null; asset_symbol: string }>(
        "SELECT withdrawal_queue_head AS head, withdrawal_queue_tail AS tail, total_assets::text AS total_assets, asset_symbol FROM indexer.vault WHERE chain_id = $1 AND address = $2",
        [v.chain_id, v.address],
      );
      expect(r.body).toMatchObject({
        chain_id: v.chain_id,
        vault: v.address,
        family: which,
        symbol: vr!.asset_symbol,
        total_assets: vr!.total_assets,
      });
      expect(r.body.queue).toEqual({ head: vr!.head, tail: vr!.tail, length: vr!.tail - vr!.head });
      const pend = await h.q<{ id: string; amount: string; claimable_date: string | null; receiver: string }>(
        `SELECT r.id, (CASE WHEN r.assets IS NULL THEN trunc(r.shares * v.asset_share_ratio) ELSE r.assets - coalesce(r.fee, 0) END)::text AS amount, r.claimable_date, r.receiver
         FROM indexer.withdrawal_request r JOIN indexer.vault v ON v.chain_id = r.chain_id AND v.address = r.vault
         WHERE r.chain_id = $1 AND r.vault = $2 AND r.status = 'requested' ORDER BY r.claimable_date NULLS LAST, r.id`,
        [v.chain_id, v.address],
      );
      expect(r.body.pending_count).toBe(pend.length);
      // requests wait in both families' queues on the devnet, and some were processed
      expect(pend.length).toBeGreaterThan(0);
      const total = pend.reduce((a, p) => a + BigInt(p.amount), 0n).toString();
      expect(r.body.total_withdrawals_raw_amount).toBe(total);
      expect(r.body.normalized_total_withdrawals_amount).toBe(fmt(total, v.asset_decimals));
      expect(r.body.pending_withdrawals.map((p) => [p.id, p.amount_raw, p.receiver])).toEqual(
        pend.map((p) => [p.id, p.amount, p.receiver]),
      );
      r.body.pending_withdrawals.forEach((p, i) => {
        expect(p.queue_position).toBe(which === "tokenizedVaultV2" ? i + 1 : null);
        expect(p.amount_estimated).toBe(which === "tokenizedVaultV2");
        expect(p.normalized_amount).toBe(fmt(p.amount_raw, v.asset_decimals));
        if (vr!.total_assets && BigInt(vr!.total_assets) > 0n)
          expect(Number(p.vault_percentage)).toBeCloseTo((Number(p.amount_raw) / Number(vr!.total_assets)) * 100, 4);
      });
      if (which === "tokenizedVaultV2") expect(pend.length).toBe(vr!.tail - vr!.head);
      const done = await h.q<{ id: string; amount: string }>(
        "SELECT id, processed_assets::text AS amount FROM indexer.withdrawal_request WHERE chain_id = $1 AND vault = $2 AND status = 'processed' ORDER BY processed_timestamp DESC, processed_block_number DESC, id DESC LIMIT 100",
        [v.chain_id, v.address],
      );
      expect(done.length).toBeGreaterThan(0);
      expect(r.body.recent_processed.map((p) => [p.id, p.amount_raw])).toEqual(done.map((d) => [d.id, d.amount]));
      const few = await h.json<Queue>(`${API}/withdrawals/${v.chain_id}/${v.address}?limit=2`);
      // the limit bounds the processed history only: a queue cut short would not add up to its totals
      expect(few.body.pending_withdrawals.length).toBe(pend.length);
      expect(few.body.recent_processed.length).toBe(Math.min(2, done.length));
      expect(few.body.pending_count).toBe(pend.length);
    });
  }

  it("422 on an unknown chain or malformed limit, 404 on an unknown vault, key required", async () => {
    await expect422(`${API}/withdrawals/mainnet/${lending.address}`, "chain");
    await expect422(`${API}/withdrawals/31337/${lending.address}`, "chain");
    await expect422(`${API}/withdrawals/${lending.chain_id}/${lending.address}?limit=0`, "limit");
    await expect422(`${API}/withdrawals/${lending.chain_id}/${lending.address}?limit=1001`, "limit");
    expect((await h.json(`${API}/withdrawals/${lending.chain_id}/${UNKNOWN}`)).status).toBe(404);
    expect((await h.json(`${API}/withdrawals/42161/${lending.address}`)).status).toBe(404);
    // a vault of the registry the indexer does not follow: known, worded as pending-redemptions does
    const [nonEvm] = await h.q<{ address: string; chain_id: number }>(
      "SELECT address, chain_id FROM registry.vault WHERE chain_type <> 'evm' LIMIT 1",
    );
    const r = await h.json<{ detail: string }>(`${API}/withdrawals/${nonEvm!.chain_id}/${nonEvm!.address}`);
    expect(r.status).toBe(404);
    expect(r.body.detail).toMatch(/is in the registry but not indexed \(a non-EVM chain\): no withdrawal queue/);
    await expectAuth(`${API}/withdrawals/${lending.chain_id}/${lending.address}`);
  });
});

describe("OpenAPI", () => {
  it("documents every platform route, with the key policy where it applies", async () => {
    const doc = (
      await h.json<{
        paths: Record<string, Record<string, { security?: unknown[]; responses: Record<string, unknown> }>>;
      }>(`${API}/openapi.json`, { key: null })
    ).body;
    const open = ["/platform/strategy_apy", "/platform/strategy_apy/{vault_address}", "/platform/strategist"];
    const keyed: [string, string][] = [
      ["get", "/platform/unrealized_pnl"],
      ["get", "/platform/unrealized_pnl/latest"],
      ["get", "/platform/vault_history/archived"],
      ["get", "/platform/vault_history/{vault_address}"],
      ["get", "/vaults/{vault_address}/pending-redemptions"],
      ["post", "/vaults/pending-redemptions"],
      ["get", "/withdrawals/{chain}/{vault_address}"],
    ];
    // every read is open (a key is optional, checked when sent), whatever the route
    for (const p of open) {
      expect(doc.paths[p]?.get, p).toBeDefined();
      expect(doc.paths[p]!.get!.security).toEqual([{}, { ApiKeyHeader: [] }]);
    }
    for (const [m, p] of keyed) {
      const op = doc.paths[p]?.[m];
      expect(op, `${m} ${p}`).toBeDefined();
      expect(op!.security).toEqual([{}, { ApiKeyHeader: [] }]);
      expect(Object.keys(op!.responses)).toEqual(expect.arrayContaining(["200", "403", "422"]));
    }
    // with API_READS_REQUIRE_KEY=1 the document says what the routes then enforce
    const closed = await h.appWith({ readsRequireKey: true }).request(`${API}/openapi.json`);
    const cdoc = (await closed.json()) as typeof doc;
    for (const p of open) expect(cdoc.paths[p]!.get!.security).toEqual([{}, { ApiKeyHeader: [] }]);
    for (const [m, p] of keyed) {
      expect(cdoc.paths[p]![m]!.security, `${m} ${p}`).toEqual([{ ApiKeyHeader: [] }]);
      expect(Object.keys(cdoc.paths[p]![m]!.responses)).toEqual(expect.arrayContaining(["200", "401", "403", "422"]));
    }
    // strategy APY create takes the key or an operator's bearer token
    expect(doc.paths["/platform/strategy_apy"]!.post!.security).toEqual([
      { ApiKeyHeader: [] },
      { OAuth2Password: ["strategy_apy:write"] },
    ]);
  });
});
