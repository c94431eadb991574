/**
 * The vault routes through the real app: vault list and vault by address (public and
 * institutional shapes), annualized APY, vault summary, historical time series, cached portfolio
 * data and the deprecated APY chart. Every figure is checked against the registry, indexed and
 * derived tables; every malformed parameter answers 422 with its `loc`, unknown vaults 404,
 * institutional reads open without a key and 403 with a bad one (401 when reads are closed).
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadRegistry } from "../../config/registry.js";
import { loadRegistryData } from "../../db/registry-load.js";
import { type ApiHarness, setupApi } from "../api-harness.js";

let h: ApiHarness;
beforeAll(async () => {
  h = await setupApi();
  registry = await h.q<RegistryVault>(
    "SELECT id, chain_id, address, family, kind, name, symbol, status, chain_type, strategist_id, start_datetime, attributes, updated_at FROM registry.vault ORDER BY chain_id, address",
  );
  metrics = new Map(
    (await h.q<Metrics>("SELECT * FROM derived.vault_metrics")).map((m) => [`${m.chain_id}:${m.vault}`, m]),
  );
  lags = new Map(
    (
      await h.q<{ chain_id: number; address: string; lag: string | null }>(
        "SELECT chain_id, address, lag_duration::text AS lag FROM indexer.vault",
      )
    ).map((r) => [`${r.chain_id}:${r.address}`, r.lag == null ? null : Number(r.lag)]),
  );
  expect([...lags.values()].filter((x) => x != null && x > 0).length).toBeGreaterThan(0);
}, 400_000);
afterAll(async () => h?.close());

interface RegistryVault {
  id: string;
  chain_id: number;
  address: string;
  family: string;
  kind: string | null;
  name: string;
  symbol: string;
  status: string;
  chain_type: string;
  strategist_id: string | null;
  start_datetime: Date | null;
  attributes: Record<string, unknown> & { asset?: { decimals: number; symbol: string } };
  updated_at: Date;
}
interface Metrics {
  chain_id: number;
  vault: string;
  as_of_day: string;
  first_day: string;
  tvl: string | null;
  historical_apy: Record<string, number>;
  historical_compound_apy: Record<string, number>;
  gross_apy: Record<string, number>;
  gross_compound_apy: Record<string, number>;
  pnl_per_share: Record<string, number>;
  daily_pnl_per_share: Record<string, number>;
  returns: Record<string, number>;
  liquid_apy_7d: number | null;
  liquid_apy_30d: number | null;
  max_drawdown: number | null;
  max_daily_drawdown: number | null;
  apy_computed_at: Date;
  share_ratio_snapshot_at: Date | null;
  cached_at: Date;
}
interface DayRow {
  day: string;
  missing: boolean;
  snapshot_id: string | null;
  snapshot_timestamp: string | null;
  block_number: string | null;
  total_assets: string | null;
  total_shares: string | null;
  asset_share_ratio: string | null;
  share_price: string | null;
  asset_usd_price: string | null;
  tvl: string | null;
  daily_apy: number | null;
  daily_pnl: string | null;
}
type Json = Record<string, unknown>;
type Vault = Json & { address: string; chain: number; id: string };

let registry: RegistryVault[];
let metrics: Map<string, Metrics>;
/** indexer.vault's lag_duration by chain:address */
let lags: Map<string, number | null>;

const evm = () => registry.filter((v) => v.chain_id > 0);
const nonEvm = () => registry.find((v) => v.chain_id <= 0)!;
const byKind = (kind: string) => registry.find((v) => v.kind === kind)!;
const metricsOf = (v: RegistryVault) => metrics.get(`${v.chain_id}:${v.address}`)!;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/;

/** A raw integer in units of `decimals`, independently of the API's helper (exact decimal string, then Number). */
function human(raw: string, decimals: number): number {
  const neg = raw.startsWith("-");
  const digits = (neg ? raw.slice(1) : raw).padStart(decimals + 1, "0");
  return Number(
    `${neg ? "-" : ""}${digits.slice(0, digits.length - decimals)}.${digits.slice(digits.length - decimals)}`,
  );
}
const n = (x: string | null) => (x == null ? null : Number(x));
const dayNum = (d: string) => Date.parse(`${d}T00:00:00Z`) / 86_400_000;
const dayStr = (d: number) => new Date(d * 86_400_000).toISOString().slice(0, 10);
const todayNum = () => Math.floor(Date.now() / 86_400_000);

async function days(v: RegistryVault): Promise<DayRow[]> {
  return h.q<DayRow>(
    `SELECT day, missing, snapshot_id, snapshot_timestamp::text, block_number::text, total_assets::text, total_shares::text,
            asset_share_ratio::text, share_price::text, asset_usd_price::text, tvl::text, daily_apy, daily_pnl::text
     FROM derived.vault_day WHERE chain_id = $1 AND vault = $2 ORDER BY day`,
    [v.chain_id, v.address],
  );
}

async function expect422(path: string, field: string, init: { key?: string | null } = {}) {
  const r = await h.json<{ detail: { loc: (string | number)[]; msg: string; type: string }[] }>(path, init);
  expect(r.status, path).toBe(422);
  expect(Array.isArray(r.body.detail), path).toBe(true);
  expect(
    r.body.detail.some((d) => d.loc[d.loc.length - 1] === field),
    `${path}: ${JSON.stringify(r.body)}`,
  ).toBe(true);
  return r.body.detail.find((d) => d.loc[d.loc.length - 1] === field)!;
}

async function expect404(path: string, init: { key?: string | null } = {}) {
  const r = await h.json<{ detail: string }>(path, init);
  expect(r.status, path).toBe(404);
  expect(typeof r.body.detail, path).toBe("string");
  return r.body;
}

/** The route's key policy: an open read (api/middleware/auth.ts readKey). */
const expectAuth = (path: string) => h.expectOpenRead(path);

const INSTITUTIONAL_ONLY = [
  "withdrawal_alert_threshold",
  "withdrawal_alert_channels",
  "management_fee_waived_until_date",
  "management_fee_waived_until_tvl",
  "performance_fee_waived_until_date",
  "performance_fee_waived_until_tvl",
  "nav_base_asset_token_id",
  "nav_pricing_overrides",
  "freshness",
  "solana_vault_metadata",
  "stellar_vault_metadata",
  "operators",
];

/** Every field of the spec's vault table (institutional shape), plus `lagDuration`. */
const SPEC_FIELDS = [
  "address",
  "yield_distributor",
  "chain",
  "description",
  "internal_type",
  "public_type",
  "is_featured",
  "is_visible",
  "weekly_performance_fee_bps",
  "platform_fee_override",
  "start_datetime",
  "vault_name",
  "reserve_target",
  "reserve_tolerance",
  "withdrawal_alert_threshold",
  "withdrawal_alert_channels",
  "status",
  "is_charge_fees_manual",
  "receipt_token_symbol",
  "enable_external_assets_update",
  "is_distributor_fee_wrapper",
  "vault_logo_url",
  "risk",
  "max_daily_drawdown",
  "chain_type",
  "enabled_historical_price_horizons",
  "is_spotlighted",
  "show_cap_filled",
  "withdrawal_only",
  "historical_apy",
  "historical_compound_apy",
  "default_apy_horizon",
  "iat_traders",
  "withdrawal_margin_seconds",
  "management_fee_waived_until_date",
  "management_fee_waived_until_tvl",
  "performance_fee_waived_until_date",
  "performance_fee_waived_until_tvl",
  "nav_base_asset_token_id",
  "nav_pricing_overrides",
  "apy_override",
  "max_drawdown",
  "latest_reported_tvl",
  "campaign_apy",
  "metrics_last_updated",
  "id",
  "view_type",
  "tvl",
  "pnl_per_share",
  "daily_pnl_per_share",
  "cached_at",
  "freshness",
  "solana_vault_metadata",
  "stellar_vault_metadata",
  "instant_redeem_config",
  "rewards",
  "reported_apy",
  "receipt_token_integrations",
  "hardcoded_strategists",
  "subaccounts",
  "operators",
  "composability_integrations",
  "historical_snapshots",
  "eoa_operators",
  "lagDuration",
];

/** The registry- and metrics-backed fields of a vault object. */
async function checkVault(
  item: Vault,
  v: RegistryVault,
  shape: "public" | "inst",
  opts: { subaccounts: boolean; snapshots: boolean },
) {
  const a = v.attributes;
  expect(item.address).toBe(v.address);
  expect(item.chain).toBe(v.chain_id);
  expect(item.id).toBe(v.id);
  expect(item.vault_name).toBe(v.name);
  expect(item.status).toBe(v.status);
  expect(item.chain_type).toBe(v.chain_type);
  expect(item.internal_type).toBe(v.family);
  expect(item.description).toBe(a.description ?? null);
  expect(item.public_type).toBe(a.public_type ?? null);
  expect(item.risk).toBe(a.risk ?? null);
  expect(item.vault_logo_url).toBe(a.vault_logo_url ?? null);
  expect(item.is_featured).toBe(a.is_featured ?? false);
  expect(item.is_visible).toBe(a.is_visible ?? true);
  expect(item.reserve_target).toBe(a.reserve_target ?? 0.05);
  expect(item.reserve_tolerance).toBe(a.reserve_tolerance ?? 0.01);
  expect(item.platform_fee_override).toEqual(a.platform_fee_override ?? {});
  expect(item.default_apy_horizon).toBe(a.default_apy_horizon ?? null);
  expect(item.weekly_performance_fee_bps).toBe(a.weekly_performance_fee_bps ?? null);
  expect(item.is_charge_fees_manual).toBe(false);
  expect(item.enable_external_assets_update).toBe(false);
  // the chain's lagDuration() as indexed; a vault the indexer does not hold (non-EVM) has none
  expect(item.lagDuration).toBe(lags.has(`${v.chain_id}:${v.address}`) ? lags.get(`${v.chain_id}:${v.address}`) : null);
  expect(item.start_datetime).toBe(v.start_datetime ? v.start_datetime.toISOString() : null);
  const m = metrics.get(`${v.chain_id}:${v.address}`);
  if (m) {
    expect(item.tvl).toBe(Number(m.tvl));
    expect(item.historical_apy).toEqual(m.historical_apy);
    expect(item.historical_compound_apy).toEqual(m.historical_compound_apy);
    expect(item.pnl_per_share).toEqual(m.pnl_per_share);
    expect(item.daily_pnl_per_share).toEqual(m.daily_pnl_per_share);
    expect(item.max_drawdown).toBe(m.max_drawdown);
    expect(item.max_daily_drawdown).toBe(m.max_daily_drawdown);
    expect(item.cached_at).toBe(m.cached_at.toISOString());
    expect(item.metrics_last_updated).toBe(m.cached_at.toISOString());
    if (shape === "inst") {
      expect(item.freshness).toEqual({
        apy_computed_at: m.apy_computed_at.toISOString(),
        share_ratio_snapshot_at: m.share_ratio_snapshot_at?.toISOString() ?? null,
        cached_at: m.cached_at.toISOString(),
      });
    }
  } else {
    expect(item.tvl).toBeNull();
    expect(item.historical_apy).toEqual({});
    expect(item.max_drawdown).toBeNull();
  }
  // reported APY from the registry attributes, with ids
  const rep = a.reported_apy as Json | undefined;
  if (rep) {
    expect(item.reported_apy).toMatchObject({
      apy: rep.apy,
      underlying_apy: rep.underlying_apy,
      liquid_apy: rep.liquid_apy,
      explainer: rep.explainer,
      tokenized_vault_id: v.id,
    });
    expect((item.reported_apy as Json).id).toMatch(UUID);
  } else expect(item.reported_apy).toBeNull();

  // strategist, subaccounts, operators
  const strategists = await h.q<{ id: string; name: string; logo_url: string | null; website_url: string | null }>(
    "SELECT id, name, logo_url, website_url FROM registry.strategist WHERE id = $1",
    [v.strategist_id],
  );
  expect(item.hardcoded_strategists).toEqual(
    strategists.map((s) =>
      shape === "inst"
        ? { strategist_name: s.name, strategist_logo: s.logo_url, website_url: s.website_url, id: s.id }
        : { strategist_name: s.name, strategist_logo: s.logo_url, id: s.id },
    ),
  );
  const subs = await h.q<{
    id: string;
    address: string;
    internal_name: string;
    friendly_name: string;
    status: string;
    subaccount_type: string;
    min: number | null;
    s_id: string | null;
    s_name: string | null;
    s_logo: string | null;
    s_web: string | null;
  }>(
    `SELECT sa.id, sa.address, sa.internal_name, sa.friendly_name, sa.status, sa.subaccount_type,
       sa.min_health_factor::float8 AS min, s.id AS s_id, s.name AS s_name, s.logo_url AS s_logo, s.website_url AS s_web
     FROM registry.subaccount sa LEFT JOIN registry.strategist s ON s.id = sa.strategist_id WHERE sa.chain_id = $1 AND sa.vault = $2 ORDER BY sa.address`,
    [v.chain_id, v.address],
  );
  const ops = await h.q<{ id: string; address: string; operator_type: string; name: string | null }>(
    "SELECT id, address, operator_type, name FROM registry.operator WHERE chain_id = $1 AND vault = $2",
    [v.chain_id, v.address],
  );
  if (!opts.subaccounts) {
    expect(item.subaccounts).toEqual([]);
    expect(item.eoa_operators).toEqual([]);
  } else {
    const pubStrat = (s: (typeof subs)[number]) =>
      s.s_id ? { strategist_name: s.s_name, strategist_logo: s.s_logo, id: s.s_id } : null;
    // the subaccount list's estimated APRs: the vault's subaccount items give the same
    const listed = await h.json<{ address: string; estimated_apr: number | null }[]>("/api/v1/subaccounts");
    const aprs = new Map(listed.body.map((x) => [x.address, x.estimated_apr]));
    if (shape === "public")
      expect(item.subaccounts).toEqual(subs.map((s) => ({ address: s.address, strategist: pubStrat(s) })));
    else
      expect(item.subaccounts).toEqual(
        subs.map((s) => ({
          address: s.address,
          internal_name: s.internal_name,
          friendly_name: s.friendly_name,
          chains: [{ chain_id: v.chain_id, name: expect.any(String) }],
          status: s.status,
          subaccount_type: s.subaccount_type,
          min_health_factor: s.min,
          estimated_apr: aprs.get(s.address) ?? null,
          id: s.id,
          strategist: s.s_id
            ? { strategist_name: s.s_name, strategist_logo: s.s_logo, website_url: s.s_web, id: s.s_id }
            : null,
        })),
      );
    const eoa = ops
      .filter((o) => o.operator_type === "eoa")
      .map((o) => ({ address: o.address, id: o.id, name: o.name }));
    expect(item.eoa_operators).toEqual(expect.arrayContaining(eoa));
    expect((item.eoa_operators as unknown[]).length).toBe(eoa.length);
  }
  if (shape === "inst") {
    const all = ops.map((o) => ({ address: o.address, operator_type: o.operator_type }));
    expect(item.operators).toEqual(expect.arrayContaining(all));
    expect((item.operators as unknown[]).length).toBe(all.length);
  }

  // historical snapshots: the days with a snapshot, in human units
  const snaps = item.historical_snapshots as Json[];
  if (!opts.snapshots) expect(snaps).toEqual([]);
  else {
    const dec = a.asset?.decimals ?? 18;
    const want = (await days(v)).filter((d) => !d.missing && d.snapshot_id != null);
    expect(snaps.length).toBe(want.length);
    want.forEach((d, i) => {
      const s = snaps[i]!;
      expect(s).toMatchObject({
        total_assets: human(d.total_assets!, dec),
        total_shares: human(d.total_shares!, dec),
        asset_share_ratio: n(d.asset_share_ratio),
        underlying_price: n(d.asset_usd_price),
        tvl: n(d.tvl),
        snapshot_datetime: new Date(Number(d.snapshot_timestamp) * 1000).toISOString(),
        block_id: Number(d.block_number),
      });
      expect(s.id).toMatch(UUID);
    });
    expect(new Set(snaps.map((s) => s.id)).size).toBe(snaps.length);
  }
}

describe("vault list", () => {
  it("public /v1/tokenized_vaults: every registry vault, by chain then address, public shape, figures from the tables", async () => {
    const r = await h.json<Vault[]>("/v1/tokenized_vaults", { key: null });
    expect(r.status).toBe(200);
    expect(r.body.map((v) => `${v.chain}:${v.address}`)).toEqual(registry.map((v) => `${v.chain_id}:${v.address}`));
    expect(registry.length).toBeGreaterThanOrEqual(5);
    for (const [i, item] of r.body.entries()) {
      for (const k of INSTITUTIONAL_ONLY) expect(item, k).not.toHaveProperty(k);
      for (const k of SPEC_FIELDS.filter((f) => !INSTITUTIONAL_ONLY.includes(f))) expect(item, k).toHaveProperty(k);
      await checkVault(item, registry[i]!, "public", { subaccounts: true, snapshots: true });
    }
    // the EVM vaults have indexed history, subaccounts and an operator
    for (const item of r.body.filter((v) => v.chain > 0)) {
      expect((item.historical_snapshots as unknown[]).length).toBeGreaterThan(20);
      expect((item.subaccounts as unknown[]).length).toBeGreaterThan(0);
      expect((item.eoa_operators as unknown[]).length).toBe(1);
      expect(typeof item.tvl).toBe("number");
      expect(item.tvl as number).toBeGreaterThan(0);
    }
  });

  it("the non-EVM vault is listed with registry data only", async () => {
    const v = nonEvm();
    const r = await h.json<Vault[]>("/v1/tokenized_vaults", { key: null });
    const item = r.body.find((x) => x.address === v.address)!;
    expect(item).toMatchObject({
      chain: v.chain_id,
      chain_type: v.chain_type,
      tvl: null,
      historical_apy: {},
      historical_snapshots: [],
      subaccounts: [],
      rewards: [],
      description: v.attributes.description,
    });
    expect(item.chain_type).not.toBe("evm");
  });

  it("load_subaccounts and load_snapshots (every accepted spelling) leave their arrays empty", async () => {
    for (const [subs, snaps] of [
      ["false", "false"],
      ["0", "no"],
      ["off", "False"],
    ]) {
      const r = await h.json<Vault[]>(`/v1/tokenized_vaults?load_subaccounts=${subs}&load_snapshots=${snaps}`, {
        key: null,
      });
      expect(r.status).toBe(200);
      expect(r.body.map((v) => `${v.chain}:${v.address}`)).toEqual(registry.map((v) => `${v.chain_id}:${v.address}`));
      for (const [i, item] of r.body.entries())
        await checkVault(item, registry[i]!, "public", { subaccounts: false, snapshots: false });
    }
    const only = await h.json<Vault[]>("/v1/tokenized_vaults?load_snapshots=false", { key: null });
    expect(only.body.map((v) => `${v.chain}:${v.address}`)).toEqual(registry.map((v) => `${v.chain_id}:${v.address}`));
    for (const [i, item] of only.body.entries())
      await checkVault(item, registry[i]!, "public", { subaccounts: true, snapshots: false });
  });

  it("status filters on the registry status", async () => {
    const active = await h.json<Vault[]>("/v1/tokenized_vaults?status=active&load_snapshots=false", { key: null });
    expect(active.body.map((v) => v.address)).toEqual(
      registry.filter((v) => v.status === "active").map((v) => v.address),
    );
    const target = evm()[0]!;
    await h.db
      .updateTable("registry.vault")
      .set({ status: "closed" })
      .where("chain_id", "=", target.chain_id)
      .where("address", "=", target.address)
      .execute();
    try {
      const closed = await h.json<Vault[]>("/v1/tokenized_vaults?status=closed", { key: null });
      expect(closed.status).toBe(200);
      expect(closed.body.map((v) => `${v.chain}:${v.address}`)).toEqual([`${target.chain_id}:${target.address}`]);
      expect(closed.body[0]!.status).toBe("closed");
      const active2 = await h.json<Vault[]>("/api/v1/tokenized_vault?status=active&load_snapshots=false");
      expect(active2.body.map((v) => `${v.chain}:${v.address}`)).not.toContain(`${target.chain_id}:${target.address}`);
      expect(active2.body.length).toBe(registry.length - 1);
    } finally {
      await h.db
        .updateTable("registry.vault")
        .set({ status: target.status })
        .where("chain_id", "=", target.chain_id)
        .where("address", "=", target.address)
        .execute();
    }
  });

  it("malformed list parameters answer 422 naming the field", async () => {
    // the public list filters on the spec's two values; the institutional one on every status
    const e = await expect422("/v1/tokenized_vaults?status=migrated", "status");
    expect([e.loc, e.type]).toEqual([["query", "status"], "enum"]);
    const target = evm()[0]!;
    const setStatus = (status: string) =>
      h.db
        .updateTable("registry.vault")
        .set({ status })
        .where("chain_id", "=", target.chain_id)
        .where("address", "=", target.address)
        .execute();
    await setStatus("migrated");
    try {
      const migrated = await h.json<{ chain: number; address: string; status: string }[]>(
        "/api/v1/tokenized_vault?status=migrated&load_snapshots=false",
      );
      expect(migrated.status).toBe(200);
      expect(migrated.body.map((v) => [v.chain, v.address, v.status])).toEqual([
        [target.chain_id, target.address, "migrated"],
      ]);
    } finally {
      await setStatus(target.status);
    }
    for (const base of ["/v1/tokenized_vaults", "/api/v1/tokenized_vault"]) {
      expect((await expect422(`${base}?status=`, "status")).loc).toEqual(["query", "status"]);
      expect((await expect422(`${base}?load_subaccounts=maybe`, "load_subaccounts")).loc).toEqual([
        "query",
        "load_subaccounts",
      ]);
      expect((await expect422(`${base}?load_snapshots=2`, "load_snapshots")).loc).toEqual(["query", "load_snapshots"]);
    }
  });

  it("institutional /api/v1/tokenized_vault: the full shape, operators, freshness and chain metadata", async () => {
    await expectAuth("/api/v1/tokenized_vault");
    const r = await h.json<Vault[]>("/api/v1/tokenized_vault");
    expect(r.status).toBe(200);
    expect(r.body.map((v) => `${v.chain}:${v.address}`)).toEqual(registry.map((v) => `${v.chain_id}:${v.address}`));
    for (const [i, item] of r.body.entries()) {
      for (const k of SPEC_FIELDS) expect(item, k).toHaveProperty(k);
      await checkVault(item, registry[i]!, "inst", { subaccounts: true, snapshots: true });
    }
    // what the registry gives them, not a null: the leveraged subaccounts' minimum (their
    // estimated APRs are checked against the series in 5-api-portfolio)
    const subs = r.body.flatMap((v) => v.subaccounts as { min_health_factor: number | null }[]);
    expect(subs.filter((s) => s.min_health_factor === 1.15).length).toBe(2);
    const sol = r.body.find((x) => x.chain <= 0)!;
    const meta = nonEvm().attributes.solana_vault_metadata as Json;
    expect(sol.solana_vault_metadata).toMatchObject({ ...meta, tokenized_vault_id: sol.id });
    expect((sol.solana_vault_metadata as Json).id).toMatch(UUID);
    expect(sol.stellar_vault_metadata).toBeNull();
    for (const item of r.body.filter((v) => v.chain > 0))
      expect((item.operators as { operator_type: string }[]).map((o) => o.operator_type).sort()).toEqual([
        "eoa",
        "subaccount",
        "subaccount",
      ]);
  });
});

describe("vault by address", () => {
  it("matches EVM addresses case-insensitively and equals the list item", async () => {
    const list = (await h.json<Vault[]>("/v1/tokenized_vaults", { key: null })).body;
    for (const v of evm()) {
      const upper = `0x${v.address.slice(2).toUpperCase()}`;
      const r = await h.json<Vault>(`/v1/tokenized_vaults/${upper}?chain=${v.chain_id}`, { key: null });
      expect(r.status).toBe(200);
      expect(r.body).toEqual(list.find((x) => x.chain === v.chain_id && x.address === v.address));
      await checkVault(r.body, v, "public", { subaccounts: true, snapshots: true });
      const inst = await h.json<Vault>(
        `/api/v1/tokenized_vault/${upper}?chain=${v.chain_id}&load_snapshots=false&load_subaccounts=false`,
      );
      expect(inst.status).toBe(200);
      await checkVault(inst.body, v, "inst", { subaccounts: false, snapshots: false });
    }
  });

  it("an address deployed on several chains: `chain` selects, the lowest chain id by default", async () => {
    const counts = new Map<string, RegistryVault[]>();
    for (const v of registry) counts.set(v.address, [...(counts.get(v.address) ?? []), v]);
    const shared = [...counts.values()].find((l) => l.length > 1);
    expect(shared, "the devnet deploys the same addresses on both chains").toBeDefined();
    const lowest = [...shared!].sort((a, b) => a.chain_id - b.chain_id)[0]!;
    const def = await h.json<Vault>(`/v1/tokenized_vaults/${lowest.address}?load_snapshots=false`, { key: null });
    expect(def.body.chain).toBe(lowest.chain_id);
    for (const v of shared!) {
      const r = await h.json<Vault>(`/v1/tokenized_vaults/${v.address}?chain=${v.chain_id}&load_snapshots=false`, {
        key: null,
      });
      expect(r.body).toMatchObject({ chain: v.chain_id, id: v.id });
    }
    await expect404(`/v1/tokenized_vaults/${lowest.address}?chain=10`, { key: null });
    expect((await expect422(`/v1/tokenized_vaults/${lowest.address}?chain=abc`, "chain")).loc).toEqual([
      "query",
      "chain",
    ]);
  });

  it("non-EVM addresses match exactly; unknown addresses 404; malformed ones 422", async () => {
    const v = nonEvm();
    const r = await h.json<Vault>(`/v1/tokenized_vaults/${v.address}`, { key: null });
    expect(r.status).toBe(200);
    await checkVault(r.body, v, "public", { subaccounts: true, snapshots: true });
    const inst = await h.json<Vault>(`/api/v1/tokenized_vault/${v.address}`);
    expect(inst.body.solana_vault_metadata).toMatchObject({ deposit_token_symbol: "USDC", tokenized_vault_id: v.id });
    await expect404(`/v1/tokenized_vaults/${v.address.toLowerCase()}`, { key: null });
    const nf = await expect404("/v1/tokenized_vaults/0x00000000000000000000000000000000000000aa", { key: null });
    expect(nf.detail).toMatch(/not found/i);
    await expect404("/api/v1/tokenized_vault/0x00000000000000000000000000000000000000aa");
    for (const base of ["/v1/tokenized_vaults", "/api/v1/tokenized_vault"]) {
      expect((await expect422(`${base}/not-an-address!`, "vault_address")).loc).toEqual(["path", "vault_address"]);
      expect((await expect422(`${base}/${"a".repeat(129)}`, "vault_address")).loc).toEqual(["path", "vault_address"]);
      // 0x is no base58 (no 0 there): meant as EVM hex, and not that
      for (const bad of ["0xzz", `0x${"a".repeat(39)}`, `0X${"a".repeat(40)}`]) {
        const d = await expect422(`${base}/${bad}`, "vault_address");
        expect(d.msg, bad).toMatch(/0x-prefixed 20-byte hex address/);
        expect(d.type, bad).toBe("string_pattern_mismatch"); // as a wallet's address is refused
      }
      expect(
        (await expect422(`${base}/${evm()[0]!.address}?load_subaccounts=yes please`, "load_subaccounts")).loc,
      ).toEqual(["query", "load_subaccounts"]);
      expect((await expect422(`${base}/${evm()[0]!.address}?load_snapshots=nope`, "load_snapshots")).loc).toEqual([
        "query",
        "load_snapshots",
      ]);
    }
    await expectAuth(`/api/v1/tokenized_vault/${evm()[0]!.address}`);
  });

  it("rewards of the vault appear on it with the spec's fields", async () => {
    const v = byKind("stablecoin");
    const [row] = await h.q<{ id: string; created_at: Date; updated_at: Date }>(
      "INSERT INTO registry.reward (chain_id, vault, text, img_url, multiplier, start_datetime) VALUES ($1, $2, 'Double points', 'https://example.invalid/r.png', 2.5, '2026-01-02T03:04:05Z') RETURNING id, created_at, updated_at",
      [v.chain_id, v.address],
    );
    try {
      for (const path of [
        `/v1/tokenized_vaults/${v.address}?chain=${v.chain_id}&load_snapshots=false`,
        `/api/v1/tokenized_vault/${v.address}?chain=${v.chain_id}&load_snapshots=false`,
      ]) {
        const r = await h.json<Vault>(path);
        expect(r.body.rewards).toEqual([
          {
            id: row!.id,
            tokenizedvault_id: v.id,
            text: "Double points",
            img_url: "https://example.invalid/r.png",
            multiplier: 2.5,
            start_datetime: "2026-01-02T03:04:05.000Z",
            updated_at: row!.updated_at.toISOString(),
            created_at: row!.created_at.toISOString(),
          },
        ]);
      }
      const other = await h.json<Vault>(
        `/v1/tokenized_vaults/${v.address}?chain=${registry.find((x) => x.address === v.address && x.chain_id !== v.chain_id)?.chain_id ?? v.chain_id}&load_snapshots=false`,
        { key: null },
      );
      if (other.body.chain !== v.chain_id) expect(other.body.rewards).toEqual([]);
    } finally {
      await h.q("DELETE FROM registry.reward WHERE id = $1", [row!.id]);
    }
  });
});

describe("annualized APY", () => {
  it("both surfaces serve the derived figures for the four supported kinds, legacy fields equal to the new ones", async () => {
    const kinds = ["stablecoin", "tokenized_eth", "wrapped_staked_eth", "restaked_eth"];
    expect(
      evm()
        .map((v) => v.kind)
        .sort(),
    ).toEqual([...kinds].sort());
    for (const v of evm()) {
      const m = metricsOf(v);
      for (const path of [
        `/v1/tokenized_vaults/${v.address}/annualized_apy?chain=${v.chain_id}`,
        `/api/v1/tokenized_vault/annualized_apy/${v.address.toUpperCase().replace("0X", "0x")}?chain=${v.chain_id}`,
      ]) {
        const r = await h.json<Json>(path, path.startsWith("/v1") ? { key: null } : {});
        expect(r.status, path).toBe(200);
        expect(r.body).toEqual({
          vault_address: v.address,
          chain: v.chain_id,
          kind: v.kind,
          liquidAPY7Day: m.liquid_apy_7d,
          liquidAPY30Day: m.liquid_apy_30d,
          liquid_apy_7_day: m.liquid_apy_7d,
          liquid_apy_30_day: m.liquid_apy_30d,
          historical_apy: m.historical_apy,
          historical_compound_apy: m.historical_compound_apy,
          gross_apy: m.gross_apy,
          gross_compound_apy: m.gross_compound_apy,
          as_of_day: m.as_of_day,
          apy_computed_at: m.apy_computed_at.toISOString(),
          share_ratio_snapshot_at: m.share_ratio_snapshot_at?.toISOString() ?? null,
        });
        // liquid APY is the compound APY of its horizon
        expect(r.body.liquidAPY7Day).toBe(m.historical_compound_apy["7"] ?? null);
        expect(typeof r.body.liquidAPY7Day).toBe("number");
      }
    }
  });

  it("a known vault of an unsupported kind answers 404 with the kind; unknown vaults 404; bad addresses 422", async () => {
    const v = nonEvm();
    for (const [path, init] of [
      [`/v1/tokenized_vaults/${v.address}/annualized_apy`, { key: null }],
      [`/api/v1/tokenized_vault/annualized_apy/${v.address}`, {}],
    ] as const) {
      const r = await h.json<{ detail: string; kind: string | null; supported_kinds: string[] }>(path, init);
      expect(r.status).toBe(404);
      expect(r.body.detail).toMatch(/not supported/);
      expect(r.body.kind).toBeNull();
      expect(r.body.supported_kinds.sort()).toEqual([
        "restaked_eth",
        "stablecoin",
        "tokenized_eth",
        "wrapped_staked_eth",
      ]);
    }
    await expect404("/v1/tokenized_vaults/0x00000000000000000000000000000000000000aa/annualized_apy", { key: null });
    await expect404("/api/v1/tokenized_vault/annualized_apy/0x00000000000000000000000000000000000000aa");
    expect(
      (await expect422("/v1/tokenized_vaults/bad$addr/annualized_apy", "vault_address", { key: null })).loc,
    ).toEqual(["path", "vault_address"]);
    expect((await expect422("/api/v1/tokenized_vault/annualized_apy/bad$addr", "vault_address")).loc).toEqual([
      "path",
      "vault_address",
    ]);
    await expectAuth(`/api/v1/tokenized_vault/annualized_apy/${evm()[0]!.address}`);
  });

  it("the OpenAPI documents flag the legacy liquid APY fields and the load flags as deprecated", async () => {
    for (const base of ["/v1", "/api/v1"]) {
      const doc = (
        await h.json<{
          paths: Record<
            string,
            Record<string, { deprecated?: boolean; parameters?: { name: string; deprecated?: boolean }[] }>
          >;
          components: { schemas: Record<string, { properties: Record<string, { deprecated?: boolean }> }> };
        }>(`${base}/openapi.json`, { key: null })
      ).body;
      const apy = doc.components.schemas.AnnualizedApy!.properties;
      expect(apy.liquid_apy_7_day!.deprecated).toBe(true);
      expect(apy.liquid_apy_30_day!.deprecated).toBe(true);
      expect(apy.liquidAPY7Day!.deprecated).toBeUndefined();
      const list = doc.paths[base === "/v1" ? "/tokenized_vaults" : "/tokenized_vault"]!.get!;
      expect(list.parameters!.find((p) => p.name === "load_snapshots")!.deprecated).toBe(true);
      expect(list.parameters!.find((p) => p.name === "load_subaccounts")!.deprecated).toBe(true);
    }
    const pub = (
      await h.json<{ components: { schemas: Record<string, { properties: Record<string, unknown> }> } }>(
        "/v1/openapi.json",
        { key: null },
      )
    ).body;
    for (const k of INSTITUTIONAL_ONLY)
      expect(pub.components.schemas.TokenizedVaultPublic!.properties).not.toHaveProperty(k);
  });
});

describe("vault summary", () => {
  it("name, type, chain, the newest indexed snapshot and the 1/7/30-day returns", async () => {
    for (const v of evm()) {
      const r = await h.json<Json & { latest_snapshot: Json; returns: Json }>(
        `/api/v1/tokenized_vault/vault_summary/${v.address}?chain=${v.chain_id}`,
      );
      expect(r.status).toBe(200);
      const m = metricsOf(v);
      expect(r.body).toMatchObject({
        address: v.address,
        chain: v.chain_id,
        id: v.id,
        name: v.name,
        symbol: v.symbol,
        type: v.family,
        kind: v.kind,
        status: v.status,
        as_of_day: m.as_of_day,
        public_type: v.attributes.public_type ?? null,
        asset_symbol: v.attributes.asset!.symbol,
      });
      expect(r.body.returns).toEqual({
        "1": m.returns["1"] ?? null,
        "7": m.returns["7"] ?? null,
        "30": m.returns["30"] ?? null,
      });
      expect(typeof r.body.returns["1"]).toBe("number");
      const [s] = await h.q<{
        id: string;
        timestamp: string;
        block_number: string;
        total_assets: string;
        total_supply: string;
        asset_share_ratio: string | null;
        asset_usd_price: string | null;
        tvl: string | null;
      }>(
        `SELECT s.id, s.timestamp::text, s.block_number::text, s.total_assets::text, s.total_supply::text, s.asset_share_ratio::text, s.asset_usd_price::text,
                trunc(s.total_assets * s.asset_usd_price / power(10::numeric, v.asset_decimals), 18)::text AS tvl
         FROM indexer.share_ratio_snapshot s JOIN indexer.vault v ON v.chain_id = s.chain_id AND v.address = s.vault
         WHERE s.chain_id = $1 AND s.vault = $2 ORDER BY s.timestamp DESC, s.block_number DESC, s.id DESC LIMIT 1`,
        [v.chain_id, v.address],
      );
      const dec = v.attributes.asset!.decimals;
      expect(r.body.latest_snapshot).toMatchObject({
        snapshot_id: s!.id,
        snapshot_datetime: new Date(Number(s!.timestamp) * 1000).toISOString(),
        block_id: Number(s!.block_number),
        total_assets: human(s!.total_assets, dec),
        total_assets_raw: s!.total_assets,
        total_shares: human(s!.total_supply, dec),
        total_shares_raw: s!.total_supply,
        asset_share_ratio: n(s!.asset_share_ratio),
        underlying_price: n(s!.asset_usd_price),
      });
      expect(r.body.latest_snapshot.tvl as number).toBeCloseTo(Number(s!.tvl), 6);
      // the derived day of that snapshot carries the same TVL
      const [d] = await h.q<{ tvl: string }>(
        "SELECT tvl::text FROM derived.vault_day WHERE chain_id = $1 AND vault = $2 AND snapshot_id = $3",
        [v.chain_id, v.address, s!.id],
      );
      if (d) expect(r.body.latest_snapshot.tvl).toBe(Number(d.tvl));
    }
  });

  it("the non-EVM vault has no snapshot or returns; unknown 404; bad input 422; key required", async () => {
    const v = nonEvm();
    const r = await h.json<Json>(`/api/v1/tokenized_vault/vault_summary/${v.address}`);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({
      address: v.address,
      chain: v.chain_id,
      name: v.name,
      type: v.family,
      latest_snapshot: null,
      returns: { "1": null, "7": null, "30": null },
    });
    await expect404("/api/v1/tokenized_vault/vault_summary/0x00000000000000000000000000000000000000aa");
    expect((await expect422("/api/v1/tokenized_vault/vault_summary/%20", "vault_address")).loc).toEqual([
      "path",
      "vault_address",
    ]);
    expect(
      (await expect422(`/api/v1/tokenized_vault/vault_summary/${evm()[0]!.address}?chain=1.5`, "chain")).loc,
    ).toEqual(["query", "chain"]);
    await expectAuth(`/api/v1/tokenized_vault/vault_summary/${evm()[0]!.address}`);
  });
});

describe("historical time series", () => {
  type Point = {
    tvl: number | null;
    daily_apy: number | null;
    daily_pnl: number | null;
    share_price: number | null;
    total_assets: number | null;
    total_shares: number | null;
    asset_share_ratio: number | null;
    missing: boolean;
  };
  const NULLS = {
    tvl: null,
    daily_apy: null,
    daily_pnl: null,
    share_price: null,
    total_assets: null,
    total_shares: null,
    asset_share_ratio: null,
    missing: true,
  };

  it("one point per day for the last n_days days up to today, equal to derived.vault_day; trailing_apy = historical_apy", async () => {
    for (const v of evm()) {
      const rows = new Map((await days(v)).map((d) => [d.day, d]));
      const dec = v.attributes.asset!.decimals;
      for (const nDays of [1, 10, 45]) {
        const r = await h.json<{ data: Record<string, Point>; trailing_apy: Record<string, number> }>(
          `/api/v1/tokenized_vault/${v.address}/historical-timeseries?n_days=${nDays}&chain=${v.chain_id}`,
        );
        expect(r.status).toBe(200);
        const today = todayNum();
        const keys = Array.from({ length: nDays }, (_, i) => dayStr(today - nDays + 1 + i));
        expect(Object.keys(r.body.data)).toEqual(keys);
        for (const k of keys) {
          const d = rows.get(k);
          if (!d || d.missing) expect(r.body.data[k], k).toEqual(NULLS);
          else
            expect(r.body.data[k], k).toEqual({
              tvl: n(d.tvl),
              daily_apy: d.daily_apy,
              daily_pnl: n(d.daily_pnl),
              share_price: n(d.share_price),
              total_assets: human(d.total_assets!, dec),
              total_shares: human(d.total_shares!, dec),
              asset_share_ratio: n(d.asset_share_ratio),
              missing: false,
            });
        }
        expect(r.body.trailing_apy).toEqual(metricsOf(v).historical_apy);
      }
      // 45 days reach before the vault's history: those days are missing
      const long = await h.json<{ data: Record<string, Point> }>(
        `/api/v1/tokenized_vault/${v.address}/historical-timeseries?n_days=45&chain=${v.chain_id}`,
      );
      expect(Object.values(long.body.data)[0]).toEqual(NULLS);
      expect(Object.values(long.body.data).filter((p) => !p.missing).length).toBeGreaterThan(20);
    }
  });

  it("n_days defaults to 30; the non-EVM vault gives missing days", async () => {
    const v = evm()[0]!;
    const r = await h.json<{ data: Record<string, Point> }>(
      `/api/v1/tokenized_vault/${v.address}/historical-timeseries`,
    );
    expect(Object.keys(r.body.data).length).toBe(30);
    expect(Object.keys(r.body.data).at(-1)).toBe(dayStr(todayNum()));
    const s = await h.json<{ data: Record<string, Point>; trailing_apy: Json }>(
      `/api/v1/tokenized_vault/${nonEvm().address}/historical-timeseries?n_days=3`,
    );
    expect(s.status).toBe(200);
    expect(Object.values(s.body.data)).toEqual([NULLS, NULLS, NULLS]);
    expect(s.body.trailing_apy).toEqual({});
  });

  it("bad n_days answers 422 at [query, n_days]; unknown vault 404; key required", async () => {
    const base = `/api/v1/tokenized_vault/${evm()[0]!.address}/historical-timeseries`;
    for (const bad of ["0", "-3", "abc", "1.5", "", "1e999", "1e1", "0x10"]) {
      const e = await expect422(`${base}?n_days=${bad}`, "n_days");
      expect(e.loc).toEqual(["query", "n_days"]);
    }
    await expect404("/api/v1/tokenized_vault/0x00000000000000000000000000000000000000aa/historical-timeseries");
    await expectAuth(base);
  });
});

describe("portfolio data", () => {
  it("an empty map without cached data, else subaccount -> cached object", async () => {
    const v = evm()[0]!;
    const path = `/api/v1/tokenized_vault/${v.address}/portfolio_data?chain=${v.chain_id}`;
    await h.q("DELETE FROM registry.portfolio_cache WHERE chain_id = $1 AND vault = $2", [v.chain_id, v.address]);
    const empty = await h.json<Json>(path);
    expect(empty.status).toBe(200);
    expect(empty.body).toEqual({});
    const subs = await h.q<{ address: string }>(
      "SELECT address FROM registry.subaccount WHERE chain_id = $1 AND vault = $2 ORDER BY address",
      [v.chain_id, v.address],
    );
    const data = (i: number) => ({
      positions: [
        {
          id: `p${i}`,
          chain: "eth",
          name: "Lending",
          logo_url: "",
          site_url: "",
          has_supported_portfolio: true,
          portfolio_item_list: [],
        },
      ],
      app_positions: [],
      tokens: [
        {
          id: "0xabc",
          chain: "eth",
          symbol: "USDC",
          decimals: 6,
          amount: 12.5 + i,
          raw_amount: 12500000,
          price: 1,
          is_core: true,
        },
      ],
    });
    try {
      for (const [i, s] of subs.entries())
        await h.q("INSERT INTO registry.portfolio_cache (chain_id, vault, subaccount, data) VALUES ($1, $2, $3, $4)", [
          v.chain_id,
          v.address,
          s.address,
          JSON.stringify(data(i)),
        ]);
      const r = await h.json<Json>(path);
      expect(r.body).toEqual(Object.fromEntries(subs.map((s, i) => [s.address, data(i)])));
      // another vault's cache is not mixed in
      const other = evm().find((x) => x.chain_id !== v.chain_id || x.address !== v.address)!;
      expect(
        (await h.json<Json>(`/api/v1/tokenized_vault/${other.address}/portfolio_data?chain=${other.chain_id}`)).body,
      ).toEqual({});
    } finally {
      await h.q("DELETE FROM registry.portfolio_cache WHERE chain_id = $1 AND vault = $2", [v.chain_id, v.address]);
    }
    await expect404("/api/v1/tokenized_vault/0x00000000000000000000000000000000000000aa/portfolio_data");
    expect((await expect422("/api/v1/tokenized_vault/x%2Fy/portfolio_data", "vault_address")).loc).toEqual([
      "path",
      "vault_address",
    ]);
    await expectAuth(path);
  });
});

describe("historical APY chart (deprecated)", () => {
  type Chart = {
    data: { labels: string[]; values: number[] };
    average_apy: number;
    status: number;
    error: string | null;
  };

  /**
   * The chart recomputed from derived.vault_day ratios: simple APY over `p` days, missing days
   * carried, a day without supply without sp; smoothed over the days with a value, the day
   * before the window included.
   */
  async function expected(v: RegistryVault, p: number, daysAgo: number, smoothing: boolean) {
    const rows = await days(v);
    const sp = new Map<number, number>();
    let last: number | null = null;
    for (let d = dayNum(rows[0]!.day), i = 0; d <= dayNum(rows.at(-1)!.day); d++) {
      const r = rows[i] && dayNum(rows[i]!.day) === d ? rows[i++] : undefined;
      if (r && !r.missing)
        last = r.asset_share_ratio != null && Number(r.asset_share_ratio) > 0 ? Number(r.asset_share_ratio) : null;
      if (last != null) sp.set(d, last);
    }
    const asOf = dayNum(metricsOf(v).as_of_day);
    const firstValid = Math.min(...sp.keys());
    const from = Math.max(daysAgo < 0 ? firstValid + p : asOf - daysAgo + 1, firstValid + p);
    const apyAt = (d: number) =>
      sp.has(d) && sp.has(d - p) ? ((sp.get(d)! / sp.get(d - p)! - 1) * 365) / p : undefined;
    const raw: { day: number; value: number }[] = [];
    for (let d = from; d <= asOf; d++) {
      const value = apyAt(d);
      if (value !== undefined) raw.push({ day: d, value });
    }
    const smoothed = (x: { day: number; value: number }) => {
      const near = [apyAt(x.day - 1), x.value, apyAt(x.day + 1)].filter((y) => y !== undefined);
      return { day: x.day, value: near.reduce((s, y) => s + y, 0) / near.length };
    };
    const pts = smoothing ? raw.map((x, i) => (i === raw.length - 1 ? x : smoothed(x))) : raw;
    return { labels: pts.map((x) => dayStr(x.day)), values: pts.map((x) => x.value), firstValid, asOf };
  }

  it("one point per day, each the trailing simple APY; the last equals historical_apy[period]", async () => {
    for (const v of evm()) {
      const m = metricsOf(v);
      for (const [query, p, daysAgo, smoothing] of [
        ["", 7, 30, true],
        ["&apply_smoothing=false", 7, 30, false],
        ["&days_ago=-1&averaging_period_in_days=2", 2, -1, true],
        ["&days_ago=5&averaging_period_in_days=7&apply_smoothing=0", 7, 5, false],
        ["&days_ago=0", 7, 0, true],
      ] as const) {
        const r = await h.json<Chart>(
          `/api/v1/platform/historical_apy/chart?vault_address=${v.address.toUpperCase().replace("0X", "0x")}&chain=${v.chain_id}${query}`,
        );
        expect(r.status).toBe(200);
        const want = await expected(v, p, daysAgo, smoothing);
        expect(r.body.status).toBe(200);
        expect(r.body.error).toBeNull();
        expect(r.body.data.labels).toEqual(want.labels);
        expect(r.body.data.values.length).toBe(want.values.length);
        r.body.data.values.forEach((x, i) => {
          expect(x).toBeCloseTo(want.values[i]!, 12);
        });
        const mean = want.values.length ? want.values.reduce((s, x) => s + x, 0) / want.values.length : 0;
        expect(r.body.average_apy).toBeCloseTo(mean, 12);
        if (daysAgo === 0) expect(r.body.data.labels).toEqual([]);
        if (daysAgo === -1) expect(r.body.data.labels[0]).toBe(dayStr(want.firstValid + p));
        if (daysAgo > 0) {
          expect(r.body.data.labels.at(-1)).toBe(m.as_of_day);
          expect(r.body.data.values.at(-1)).toBe(m.historical_apy[String(p)]);
          // consecutive calendar days
          r.body.data.labels.forEach((l, i) => {
            if (i > 0) expect(dayNum(l) - dayNum(r.body.data.labels[i - 1]!)).toBe(1);
          });
        }
        if (daysAgo === -1 && m.historical_apy[String(p)] != null)
          expect(r.body.data.values.at(-1)).toBe(m.historical_apy[String(p)]);
      }
      // a horizon longer than the history: no points
      const long = await h.json<Chart>(
        `/api/v1/platform/historical_apy/chart?vault_address=${v.address}&chain=${v.chain_id}&averaging_period_in_days=365`,
      );
      expect(long.body).toEqual({
        data: { labels: [], values: [] },
        average_apy: 0,
        status: 200,
        error: null,
        chain_id: v.chain_id,
      });
    }
  });

  it("422 for averaging_period_in_days < 2, days_ago < -1, a missing vault_address and bad booleans; 404 unknown; key required", async () => {
    const v = evm()[0]!;
    const base = `/api/v1/platform/historical_apy/chart?vault_address=${v.address}`;
    expect((await expect422(`${base}&averaging_period_in_days=1`, "averaging_period_in_days")).loc).toEqual([
      "query",
      "averaging_period_in_days",
    ]);
    expect((await expect422(`${base}&averaging_period_in_days=two`, "averaging_period_in_days")).loc).toEqual([
      "query",
      "averaging_period_in_days",
    ]);
    expect((await expect422(`${base}&days_ago=-2`, "days_ago")).loc).toEqual(["query", "days_ago"]);
    expect((await expect422(`${base}&days_ago=1.5`, "days_ago")).loc).toEqual(["query", "days_ago"]);
    // an empty value is malformed, not 0 (an empty chart), as are forms JavaScript reads as numbers
    for (const bad of ["", "1e1", "0x10", "+"]) {
      expect((await expect422(`${base}&days_ago=${bad}`, "days_ago")).type).toBe("int_parsing");
    }
    expect((await expect422(`${base}&apply_smoothing=maybe`, "apply_smoothing")).loc).toEqual([
      "query",
      "apply_smoothing",
    ]);
    const missing = await expect422("/api/v1/platform/historical_apy/chart", "vault_address");
    expect(missing).toMatchObject({ loc: ["query", "vault_address"], type: "missing" });
    await expect404("/api/v1/platform/historical_apy/chart?vault_address=0x00000000000000000000000000000000000000aa");
    const sol = await h.json<Chart>(`/api/v1/platform/historical_apy/chart?vault_address=${nonEvm().address}`);
    expect(sol.body).toEqual({
      data: { labels: [], values: [] },
      average_apy: 0,
      status: 200,
      error: null,
      chain_id: nonEvm().chain_id,
    });
    await expectAuth(base);
    const doc = (
      await h.json<{ paths: Record<string, Record<string, { deprecated?: boolean }>> }>("/api/v1/openapi.json", {
        key: null,
      })
    ).body;
    expect(doc.paths["/platform/historical_apy/chart"]!.get!.deprecated).toBe(true);
  });
});

describe("concurrency", () => {
  it("concurrent identical reads are all answered, each with the full body", async () => {
    const v = evm()[0]!;
    const paths = [`/v1/tokenized_vaults`, `/v1/tokenized_vaults/${v.address}?chain=${v.chain_id}`];
    const single = await Promise.all(paths.map((p) => h.json<unknown>(p, { key: null })));
    const many = await Promise.all(Array.from({ length: 40 }, (_, i) => h.json<unknown>(paths[i % 2]!, { key: null })));
    for (const [i, r] of many.entries()) {
      expect(r.status).toBe(200);
      expect(r.body).toEqual(single[i % 2]!.body);
    }
  });

  it("a write is seen by the next read (nothing is cached across requests)", async () => {
    const v = evm()[0]!;
    const path = `/v1/tokenized_vaults/${v.address}?chain=${v.chain_id}&load_snapshots=false`;
    const before = await h.json<Vault>(path, { key: null });
    await h.db
      .updateTable("registry.vault")
      .set({ name: "Renamed for the test" })
      .where("chain_id", "=", v.chain_id)
      .where("address", "=", v.address)
      .execute();
    try {
      // with concurrent readers in flight
      const [, after] = await Promise.all([h.json<Vault>(path, { key: null }), h.json<Vault>(path, { key: null })]);
      const again = await h.json<Vault>(path, { key: null });
      expect(again.body.vault_name).toBe("Renamed for the test");
      expect(after.body.vault_name).toBe("Renamed for the test");
    } finally {
      await h.db
        .updateTable("registry.vault")
        .set({ name: v.name })
        .where("chain_id", "=", v.chain_id)
        .where("address", "=", v.address)
        .execute();
    }
    expect(before.body.vault_name).toBe(v.name);
  });
});

describe("one vault set", () => {
  it("a vault the indexer knows is served without registry metadata, with what the chain says", async () => {
    const v = evm().find((x) => x.family === "tokenizedVaultV2")!;
    const [iv] = await h.q<{ name: string; symbol: string; kind: string; asset: string; asset_symbol: string }>(
      "SELECT name, symbol, kind, asset, asset_symbol FROM indexer.vault WHERE chain_id = $1 AND address = $2",
      [v.chain_id, v.address],
    );
    expect(iv).toBeDefined();
    await h.q("DELETE FROM registry.vault WHERE chain_id = $1 AND address = $2", [v.chain_id, v.address]);
    try {
      const paths = [
        `/api/v1/tokenized_vault/${v.address}?chain_id=${v.chain_id}&load_snapshots=false`,
        `/v1/tokenized_vaults/${v.address}?chain_id=${v.chain_id}&load_snapshots=false`,
      ];
      for (const path of paths) {
        const r = await h.json<Vault & { asset: { address: string; symbol: string } }>(path, { key: null });
        expect(r.status, path).toBe(200);
        expect(r.body).toMatchObject({
          address: v.address,
          chain: v.chain_id,
          vault_name: iv!.name,
          internal_type: v.family,
        });
        expect(r.body.asset).toMatchObject({ address: iv!.asset, symbol: iv!.asset_symbol });
        expect(r.body.id).toMatch(UUID);
      }
      const list = await h.json<Vault[]>("/api/v1/tokenized_vault?load_snapshots=false", { key: null });
      expect(list.body.filter((x) => x.address === v.address && x.chain === v.chain_id)).toHaveLength(1);
      const apy = await h.json<{ chain: number }>(
        `/api/v1/tokenized_vault/annualized_apy/${v.address}?chain_id=${v.chain_id}`,
      );
      expect(apy.status).toBe(200);
      expect(apy.body.chain).toBe(v.chain_id);
    } finally {
      await loadRegistryData(h.db, loadRegistry(h.devnet.registryFile));
    }
    const back = await h.json<Vault>(
      `/api/v1/tokenized_vault/${v.address}?chain_id=${v.chain_id}&load_snapshots=false`,
    );
    expect(back.body.vault_name).toBe(v.name);
  });
});

describe("loading the registry file again (npm run indexer's start, npm run registry -- load)", () => {
  it("rewrites no unchanged entry: a vault's updated_at says when its entry last changed", async () => {
    const stamps = async () =>
      new Map(
        (
          await h.q<{ k: string; u: Date }>(
            `SELECT chain_id || ':' || address AS k, updated_at AS u FROM registry.vault
             UNION ALL SELECT 'protocols:' || chain_id, updated_at FROM registry.chain_protocols`,
          )
        ).map((r) => [r.k, r.u.getTime()]),
      );
    const reg = loadRegistry(h.devnet.registryFile);
    await loadRegistryData(h.db, reg);
    const first = await stamps();
    expect(first.size).toBeGreaterThan(2);
    await loadRegistryData(h.db, reg);
    expect(await stamps()).toEqual(first);
    // one vault renamed: its stamp alone moves
    const v = reg.evm[0]!;
    try {
      await loadRegistryData(h.db, {
        ...reg,
        evm: reg.evm.map((x) => (x === v ? { ...x, name: `${x.name} (r)` } : x)),
      });
      const after = await stamps();
      const moved = [...after].filter(([k, u]) => first.get(k) !== u).map(([k]) => k);
      expect(moved).toEqual([`${v.chainId}:${v.address}`]);
    } finally {
      await loadRegistryData(h.db, reg);
    }
  });
});
