/**
 * Builds the spec's vault object from the rows of tokenized_vault.queries.ts: registry columns, registry
 * `attributes` (the optional descriptive fields, with the spec's defaults), derived metrics and
 * the per-vault aggregates. Display figures become JSON numbers; raw amounts are converted to
 * human units from their exact decimal strings.
 */
import { createHash } from "node:crypto";
import { getChain } from "../../../config/chains.js";
import { shareDecimalsOf } from "../../lib/vaults.js";
import type { SnapshotJson, SubaccountJson, VaultRow } from "./tokenized_vault.queries.js";
import type { TokenizedVault, TokenizedVaultPublic } from "./tokenized_vault.schemas.js";

/** A raw integer amount (decimal string) in units of `decimals`, as the nearest double to its exact value. */
export function units(raw: string | null | undefined, decimals: number): number | null {
  if (raw == null) return null;
  const m = /^(-)?(\d+)(?:\.(\d+))?$/.exec(raw.trim());
  if (!m) return null;
  if (m[3] != null || decimals <= 0) return Number(raw) / 10 ** Math.max(0, decimals);
  const digits = m[2]!.padStart(decimals + 1, "0");
  return Number(`${m[1] ?? ""}${digits.slice(0, digits.length - decimals)}.${digits.slice(digits.length - decimals)}`);
}

export const num = (x: string | number | null | undefined): number | null => (x == null ? null : Number(x));

export function iso(x: Date | string | null | undefined): string | null {
  if (x == null) return null;
  const d = x instanceof Date ? x : new Date(x);
  return Number.isNaN(d.getTime()) ? null : d.toISOString();
}

const uuids = new Map<string, string>();

/** A deterministic UUID (version 3 layout: MD5 of a namespaced name); memoized, ids repeat across requests. */
export function uuidFrom(name: string): string {
  const hit = uuids.get(name);
  if (hit) return hit;
  const h = createHash("md5").update(`vault-yield-service:${name}`).digest();
  h[6] = (h[6]! & 0x0f) | 0x30;
  h[8] = (h[8]! & 0x3f) | 0x80;
  const x = h.toString("hex");
  const id = `${x.slice(0, 8)}-${x.slice(8, 12)}-${x.slice(12, 16)}-${x.slice(16, 20)}-${x.slice(20)}`;
  if (uuids.size >= 100_000) uuids.clear();
  uuids.set(name, id);
  return id;
}

// Typed reads of the registry attributes: a value of the wrong type counts as absent.
type Attrs = Record<string, unknown>;
const str = (a: Attrs, k: string): string | null => (typeof a[k] === "string" ? (a[k] as string) : null);
const numA = (a: Attrs, k: string): number | null =>
  typeof a[k] === "number" && Number.isFinite(a[k]) ? (a[k] as number) : null;
const intA = (a: Attrs, k: string): number | null => (Number.isInteger(a[k]) ? (a[k] as number) : null);
const boolA = (a: Attrs, k: string): boolean | null => (typeof a[k] === "boolean" ? (a[k] as boolean) : null);
const objA = (a: Attrs, k: string): Record<string, unknown> | null =>
  a[k] != null && typeof a[k] === "object" && !Array.isArray(a[k]) ? (a[k] as Record<string, unknown>) : null;
const arrA = (a: Attrs, k: string): unknown[] | null => (Array.isArray(a[k]) ? (a[k] as unknown[]) : null);
const dateA = (a: Attrs, k: string): string | null =>
  iso(typeof a[k] === "string" || typeof a[k] === "number" ? new Date(a[k] as string) : null);
const objects = (a: Attrs, k: string) =>
  (arrA(a, k) ?? []).filter(
    (x): x is Record<string, unknown> => x != null && typeof x === "object" && !Array.isArray(x),
  );
const ratio = (a: Attrs, k: string, def: number) => {
  const v = numA(a, k);
  return v != null && v <= 1 ? v : def;
};

/** Decimals of the vault's asset (share decimals: shareDecimalsOf, api/lib/vaults.ts). */
export function assetDecimals(attributes: Attrs): number {
  const d = objA(attributes, "asset")?.decimals;
  return Number.isInteger(d) ? (d as number) : 18;
}

export function snapshotItem(s: SnapshotJson, decimals: number, shareDecimals: number) {
  const [id, ts, block, ta, tsh, r, price, tvl] = s;
  return {
    total_assets: units(ta, decimals),
    total_shares: units(tsh, shareDecimals),
    asset_share_ratio: num(r),
    underlying_price: num(price),
    tvl: num(tvl),
    snapshot_datetime: new Date(Number(ts) * 1000).toISOString(),
    block_id: Number(block),
    id: uuidFrom(`snapshot:${id}`),
  };
}

function strategist(id: string | null, name: string | null, logo: string | null, web: string | null) {
  return id == null ? null : { strategist_name: name, strategist_logo: logo, website_url: web, id };
}

function subaccount(s: SubaccountJson, aprOf: ReadonlyMap<string, number | null>) {
  return {
    address: s.address,
    internal_name: s.internal_name,
    friendly_name: s.friendly_name,
    chains: [{ chain_id: s.chain_id, name: getChain(s.chain_id)?.name ?? null }],
    status: s.status,
    subaccount_type: s.subaccount_type,
    min_health_factor: num(s.min_health_factor),
    estimated_apr: aprOf.get(s.address.toLowerCase()) ?? null,
    id: s.id,
    strategist: strategist(s.s_id, s.s_name, s.s_logo, s.s_web),
  };
}

const withIds = (o: Record<string, unknown> | null, kind: string, vaultId: string) =>
  o == null
    ? null
    : { ...o, id: typeof o.id === "string" ? o.id : uuidFrom(`${kind}:${vaultId}`), tokenized_vault_id: vaultId };

/** The institutional vault object. */
export function buildVault(r: VaultRow, aprOf: ReadonlyMap<string, number | null> = new Map()): TokenizedVault {
  const a: Attrs = r.attributes ?? {};
  const dec = assetDecimals(a);
  const rep = objA(a, "reported_apy");
  const s = strategist(r.s_id, r.s_name, r.s_logo, r.s_web);
  return {
    address: r.address,
    yield_distributor: str(a, "yield_distributor"),
    chain: r.chain_id,
    description: str(a, "description"),
    internal_type: str(a, "internal_type") ?? r.family,
    public_type: str(a, "public_type"),
    is_featured: boolA(a, "is_featured") ?? false,
    is_visible: boolA(a, "is_visible") ?? true,
    weekly_performance_fee_bps: numA(a, "weekly_performance_fee_bps"),
    platform_fee_override: objA(a, "platform_fee_override") ?? {},
    start_datetime: iso(r.start_datetime) ?? dateA(a, "start_datetime"),
    vault_name: r.name,
    reserve_target: ratio(a, "reserve_target", 0.05),
    reserve_tolerance: ratio(a, "reserve_tolerance", 0.01),
    withdrawal_alert_threshold: numA(a, "withdrawal_alert_threshold"),
    withdrawal_alert_channels: str(a, "withdrawal_alert_channels"),
    status: r.status ?? "active",
    is_charge_fees_manual: boolA(a, "is_charge_fees_manual") ?? false,
    receipt_token_symbol: str(a, "receipt_token_symbol") ?? r.symbol,
    enable_external_assets_update: boolA(a, "enable_external_assets_update") ?? false,
    is_distributor_fee_wrapper: boolA(a, "is_distributor_fee_wrapper"),
    vault_logo_url: str(a, "vault_logo_url"),
    risk: str(a, "risk"),
    max_daily_drawdown: r.max_daily_drawdown,
    chain_type: r.chain_type ?? "evm",
    enabled_historical_price_horizons:
      arrA(a, "enabled_historical_price_horizons")?.filter((x): x is number => Number.isInteger(x)) ?? null,
    is_spotlighted: boolA(a, "is_spotlighted"),
    show_cap_filled: boolA(a, "show_cap_filled"),
    withdrawal_only: boolA(a, "withdrawal_only"),
    historical_apy: r.historical_apy ?? {},
    historical_compound_apy: r.historical_compound_apy ?? {},
    default_apy_horizon: intA(a, "default_apy_horizon"),
    iat_traders: arrA(a, "iat_traders")?.filter((x): x is string => typeof x === "string") ?? null,
    withdrawal_margin_seconds: intA(a, "withdrawal_margin_seconds"),
    management_fee_waived_until_date: dateA(a, "management_fee_waived_until_date"),
    management_fee_waived_until_tvl: numA(a, "management_fee_waived_until_tvl"),
    performance_fee_waived_until_date: dateA(a, "performance_fee_waived_until_date"),
    performance_fee_waived_until_tvl: numA(a, "performance_fee_waived_until_tvl"),
    nav_base_asset_token_id: str(a, "nav_base_asset_token_id"),
    nav_pricing_overrides: objA(a, "nav_pricing_overrides"),
    apy_override: objA(a, "apy_override"),
    max_drawdown: r.max_drawdown,
    latest_reported_tvl: numA(a, "latest_reported_tvl"),
    campaign_apy: numA(a, "campaign_apy"),
    metrics_last_updated: iso(r.cached_at),
    id: r.id,
    view_type: str(a, "view_type"),
    tvl: num(r.tvl),
    pnl_per_share: r.pnl_per_share ?? {},
    daily_pnl_per_share: r.daily_pnl_per_share ?? {},
    cached_at: iso(r.cached_at),
    freshness: {
      apy_computed_at: iso(r.apy_computed_at),
      share_ratio_snapshot_at: iso(r.share_ratio_snapshot_at),
      cached_at: iso(r.cached_at),
    },
    solana_vault_metadata: withIds(
      objA(a, "solana_vault_metadata"),
      "solana_vault_metadata",
      r.id,
    ) as TokenizedVault["solana_vault_metadata"],
    stellar_vault_metadata: withIds(
      objA(a, "stellar_vault_metadata"),
      "stellar_vault_metadata",
      r.id,
    ) as TokenizedVault["stellar_vault_metadata"],
    instant_redeem_config: withIds(
      objA(a, "instant_redeem_config"),
      "instant_redeem_config",
      r.id,
    ) as TokenizedVault["instant_redeem_config"],
    rewards: r.rewards.map((w) => ({
      id: w.id,
      tokenizedvault_id: r.id,
      text: w.text,
      img_url: w.img_url,
      multiplier: Number(w.multiplier),
      start_datetime: iso(w.start_datetime)!,
      updated_at: iso(w.updated_at)!,
      created_at: iso(w.created_at)!,
    })),
    reported_apy:
      rep == null
        ? null
        : {
            apy: numA(rep, "apy"),
            underlying_apy: numA(rep, "underlying_apy"),
            liquid_apy: numA(rep, "liquid_apy"),
            rewards_compounded: numA(rep, "rewards_compounded"),
            rewards_claimable: numA(rep, "rewards_claimable"),
            points_apy: numA(rep, "points_apy"),
            explainer: str(rep, "explainer"),
            id: str(rep, "id") ?? uuidFrom(`reported_apy:${r.id}`),
            tokenized_vault_id: r.id,
            updated_at: dateA(rep, "updated_at") ?? iso(r.updated_at),
            created_at: dateA(rep, "created_at"),
          },
    receipt_token_integrations: objects(a, "receipt_token_integrations"),
    composability_integrations: objects(a, "composability_integrations"),
    hardcoded_strategists: s ? [s] : [],
    subaccounts: (r.subaccounts ?? []).map((s) => subaccount(s, aprOf)),
    operators: r.operators.map((o) => ({ address: o.address, operator_type: o.operator_type })),
    eoa_operators:
      r.subaccounts == null
        ? []
        : r.operators
            .filter((o) => o.operator_type === "eoa")
            .map((o) => ({ address: o.address, id: o.id, name: o.name })),
    historical_snapshots: (r.snapshots ?? []).map((x) => snapshotItem(x, dec, shareDecimalsOf(r))),
    // the chain's, as the indexer read it; else what the registry's metadata says
    lagDuration: r.lag_duration != null ? Number(r.lag_duration) : (intA(a, "lagDuration") ?? intA(a, "lag_duration")),
    asset: token(objA(a, "asset")),
    deposit_assets: [token(objA(a, "asset")), token(objA(a, "alt_asset"))].filter((t) => t != null),
  };
}

/** A token of the registry attributes ({address, symbol, decimals}), or null when incomplete. */
function token(o: Record<string, unknown> | null): { address: string; symbol: string; decimals: number } | null {
  if (o == null || typeof o.address !== "string" || typeof o.symbol !== "string" || !Number.isInteger(o.decimals))
    return null;
  return { address: o.address, symbol: o.symbol, decimals: o.decimals as number };
}

/**
 * Fields of the institutional shape that the public one omits (fee waivers, nav, alerts, freshness, chain metadata,
 * operators).
 */
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
] as const;

const publicStrategist = (s: { strategist_name: string | null; strategist_logo: string | null; id: string } | null) =>
  s == null ? null : { strategist_name: s.strategist_name, strategist_logo: s.strategist_logo, id: s.id };

export function toPublic(v: TokenizedVault): TokenizedVaultPublic {
  const out: Record<string, unknown> = { ...v };
  for (const k of INSTITUTIONAL_ONLY) delete out[k];
  out.hardcoded_strategists = v.hardcoded_strategists.map(publicStrategist);
  out.subaccounts = v.subaccounts.map((s) => ({ address: s.address, strategist: publicStrategist(s.strategist) }));
  return out as TokenizedVaultPublic;
}
