import type { RouteHandler, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import { dayOf, dayToDate } from "../../../db/days.js";
import { formatFixed, parseFixed, tvlOf } from "../../../db/fixed.js";
import { requestedChain, servedChain } from "../../lib/chain.js";
import type { AppEnv } from "../../lib/router.js";
import { findVault, normalizeAddress, shareDecimalsOf, type VaultBaseRow } from "../../lib/vaults.js";
import { estimatedAprs } from "../subaccounts/subaccounts.lib.js";
import { type Batcher, batcherFor } from "./tokenized_vault.batch.js";
import { latestSnapshot, loadVaults, portfolioCache, vaultDays } from "./tokenized_vault.queries.js";
import type {
  apyInst,
  apyPublic,
  listInst,
  listPublic,
  portfolioInst,
  readInst,
  readPublic,
  summaryInst,
  timeseriesInst,
} from "./tokenized_vault.routes.js";
import type { TimeseriesPointSchema } from "./tokenized_vault.schemas.js";
import { assetDecimals, buildVault, iso, num, toPublic, units } from "./tokenized_vault.shape.js";

/** Vault kinds the annualized APY route serves (the spec's four). */
export const SUPPORTED_APY_KINDS = ["stablecoin", "tokenized_eth", "wrapped_staked_eth", "restaked_eth"] as const;

const notFoundBody = (address: string) => ({ detail: `Vault ${address} not found` });

// ---------------------------------------------------------------------------------------------
// Vault objects

/** A serialized body, with the chain of its vault when it is one vault's. */
interface VaultBody {
  json: string;
  chain: number | null;
}
const bodies = new WeakMap<object, Batcher<VaultBody | null>>();

/**
 * The vault objects as a serialized JSON body (null: no such vault), batched per variant: the
 * list and the single-vault routes are the hot ones.
 */
function vaultBody(
  c: Context<AppEnv>,
  surface: "public" | "inst",
  f: {
    status?: string | undefined;
    address?: string | undefined;
    chain?: number | undefined;
    load_subaccounts: boolean;
    load_snapshots: boolean;
  },
) {
  const single = f.address != null;
  const address = single ? normalizeAddress(f.address!) : undefined;
  const key = JSON.stringify([
    surface,
    f.status ?? null,
    address ?? null,
    f.chain ?? null,
    f.load_subaccounts,
    f.load_snapshots,
  ]);
  const { db } = c.var.deps;
  return batcherFor(bodies, c.var.deps).run(key, async () => {
    const rows = await loadVaults(db, c.var.deps.config.indexerSchema, {
      status: f.status,
      address,
      chain: f.chain,
      loadSubaccounts: f.load_subaccounts,
      loadSnapshots: f.load_snapshots,
      ...(single ? { limit: 1 } : {}),
    });
    // the institutional shape's subaccounts carry their estimated APR (the subaccount list's)
    const subs = surface === "inst" ? rows.flatMap((r) => (r.subaccounts ?? []).map((s) => s.address)) : [];
    const aprOf = await estimatedAprs(db, [...new Set(subs.map((a) => a.toLowerCase()))]);
    const vaults = rows.map((r) => (surface === "public" ? toPublic(buildVault(r)) : buildVault(r, aprOf)));
    if (single) return vaults.length ? { json: JSON.stringify(vaults[0]), chain: vaults[0]!.chain ?? null } : null;
    return { json: JSON.stringify(vaults), chain: null };
  });
}

/** A body serialized once per batch (typed by buildVault/toPublic); the cast stands for the route's 200 type. */
const jsonBody = (c: Context<AppEnv>, body: string) =>
  c.body(body, 200, { "content-type": "application/json" }) as never;

/** One vault's body, with the chain it is on in `X-Vault-Chain` (its `chain` field says the same). */
const vaultJson = (c: Context<AppEnv>, body: VaultBody) => {
  if (body.chain != null) servedChain(c, body.chain);
  return jsonBody(c, body.json);
};

export const listPublicHandler: RouteHandler<typeof listPublic, AppEnv> = async (c) => {
  const q = c.req.valid("query");
  return jsonBody(c, (await vaultBody(c, "public", q))!.json);
};

export const listInstHandler: RouteHandler<typeof listInst, AppEnv> = async (c) => {
  const q = c.req.valid("query");
  return jsonBody(c, (await vaultBody(c, "inst", q))!.json);
};

export const readPublicHandler: RouteHandler<typeof readPublic, AppEnv> = async (c) => {
  const { vault_address } = c.req.valid("param");
  const q = c.req.valid("query");
  const body = await vaultBody(c, "public", { ...q, chain: requestedChain(q), address: vault_address });
  return body == null ? c.json(notFoundBody(vault_address), 404) : vaultJson(c, body);
};

export const readInstHandler: RouteHandler<typeof readInst, AppEnv> = async (c) => {
  const { vault_address } = c.req.valid("param");
  const q = c.req.valid("query");
  const body = await vaultBody(c, "inst", { ...q, chain: requestedChain(q), address: vault_address });
  return body == null ? c.json(notFoundBody(vault_address), 404) : vaultJson(c, body);
};

// ---------------------------------------------------------------------------------------------
// Annualized APY

function annualizedApy(v: VaultBaseRow) {
  return {
    vault_address: v.address,
    chain: v.chain_id,
    kind: v.kind!,
    liquidAPY7Day: v.liquid_apy_7d,
    liquidAPY30Day: v.liquid_apy_30d,
    liquid_apy_7_day: v.liquid_apy_7d,
    liquid_apy_30_day: v.liquid_apy_30d,
    historical_apy: v.historical_apy ?? {},
    historical_compound_apy: v.historical_compound_apy ?? {},
    gross_apy: v.gross_apy ?? {},
    gross_compound_apy: v.gross_compound_apy ?? {},
    as_of_day: v.as_of_day,
    apy_computed_at: iso(v.apy_computed_at),
    share_ratio_snapshot_at: iso(v.share_ratio_snapshot_at),
  };
}

const isSupported = (kind: string | null) => kind != null && (SUPPORTED_APY_KINDS as readonly string[]).includes(kind);
const unsupported = (v: VaultBaseRow) => ({
  detail:
    `Annualized APY is not supported for vault ${v.address} (kind: ${v.kind ?? "none"}, family: ${v.family}); ` +
    `supported kinds: ${SUPPORTED_APY_KINDS.join(", ")}`,
  kind: v.kind,
  supported_kinds: [...SUPPORTED_APY_KINDS],
});

export const apyPublicHandler: RouteHandler<typeof apyPublic, AppEnv> = async (c) => {
  const { vault_address } = c.req.valid("param");
  const v = await findVault(
    c.var.deps.db,
    c.var.deps.config.indexerSchema,
    vault_address,
    requestedChain(c.req.valid("query")),
  );
  if (!v) return c.json(notFoundBody(vault_address), 404);
  servedChain(c, v.chain_id);
  if (!isSupported(v.kind)) return c.json(unsupported(v), 404);
  return c.json(annualizedApy(v), 200);
};

export const apyInstHandler: RouteHandler<typeof apyInst, AppEnv> = async (c) => {
  const { vault_address } = c.req.valid("param");
  const v = await findVault(
    c.var.deps.db,
    c.var.deps.config.indexerSchema,
    vault_address,
    requestedChain(c.req.valid("query")),
  );
  if (!v) return c.json(notFoundBody(vault_address), 404);
  servedChain(c, v.chain_id);
  if (!isSupported(v.kind)) return c.json(unsupported(v), 404);
  return c.json(annualizedApy(v), 200);
};

// ---------------------------------------------------------------------------------------------
// Summary, time series, portfolio data

export const summaryInstHandler: RouteHandler<typeof summaryInst, AppEnv> = async (c) => {
  const { vault_address } = c.req.valid("param");
  const { db, config } = c.var.deps;
  const v = await findVault(db, c.var.deps.config.indexerSchema, vault_address, requestedChain(c.req.valid("query")));
  if (!v) return c.json(notFoundBody(vault_address), 404);
  servedChain(c, v.chain_id);
  const dec = assetDecimals(v.attributes);
  let snap: Awaited<ReturnType<typeof latestSnapshot>>;
  if (v.chain_id > 0) {
    try {
      snap = await latestSnapshot(db, config.indexerSchema, v.chain_id, v.address);
    } catch (err) {
      // the indexer's views are not published yet (first start): no snapshot to show
      if ((err as { code?: string }).code !== "42P01") throw err;
      snap = undefined;
    }
  }
  const ret = v.returns ?? {};
  const asset = v.attributes?.asset as { symbol?: unknown } | undefined;
  return c.json(
    {
      address: v.address,
      chain: v.chain_id,
      id: v.id,
      name: v.name,
      symbol: v.symbol,
      type: typeof v.attributes?.internal_type === "string" ? (v.attributes.internal_type as string) : v.family,
      public_type: typeof v.attributes?.public_type === "string" ? (v.attributes.public_type as string) : null,
      kind: v.kind,
      status: v.status,
      asset_symbol: typeof asset?.symbol === "string" ? asset.symbol : null,
      latest_snapshot: snap
        ? {
            snapshot_id: snap.id,
            snapshot_datetime: new Date(Number(snap.timestamp) * 1000).toISOString(),
            block_id: Number(snap.block_number),
            total_assets: units(snap.total_assets, dec)!,
            total_assets_raw: snap.total_assets,
            total_shares: units(snap.total_supply, shareDecimalsOf(v))!,
            total_shares_raw: snap.total_supply,
            asset_share_ratio: num(snap.asset_share_ratio),
            underlying_price: num(snap.asset_usd_price),
            // derived.vault_day's formula (db/fixed.ts)
            tvl:
              snap.asset_usd_price == null
                ? null
                : Number(formatFixed(tvlOf(BigInt(snap.total_assets), parseFixed(snap.asset_usd_price), dec))),
          }
        : null,
      returns: { "1": ret["1"] ?? null, "7": ret["7"] ?? null, "30": ret["30"] ?? null },
      as_of_day: v.as_of_day,
    },
    200,
  );
};

export const timeseriesInstHandler: RouteHandler<typeof timeseriesInst, AppEnv> = async (c) => {
  const { vault_address } = c.req.valid("param");
  const q = c.req.valid("query");
  const { db, now } = c.var.deps;
  const v = await findVault(db, c.var.deps.config.indexerSchema, vault_address, requestedChain(q));
  if (!v) return c.json(notFoundBody(vault_address), 404);
  servedChain(c, v.chain_id);
  const today = dayOf(now().getTime() / 1000);
  const first = today - q.n_days + 1;
  const dec = assetDecimals(v.attributes);
  const rows = await vaultDays(db, v.chain_id, v.address, dayToDate(first), dayToDate(today));
  const byDay = new Map(rows.map((r) => [r.day, r]));
  const data: Record<string, z.infer<typeof TimeseriesPointSchema>> = {};
  for (let d = first; d <= today; d++) {
    const key = dayToDate(d);
    const r = byDay.get(key);
    data[key] =
      r && !r.missing
        ? {
            tvl: num(r.tvl),
            daily_apy: r.daily_apy,
            daily_pnl: num(r.daily_pnl),
            share_price: num(r.share_price),
            total_assets: units(r.total_assets, dec),
            total_shares: units(r.total_shares, shareDecimalsOf(v)),
            asset_share_ratio: num(r.asset_share_ratio),
            missing: false,
          }
        : {
            tvl: null,
            daily_apy: null,
            daily_pnl: null,
            share_price: null,
            total_assets: null,
            total_shares: null,
            asset_share_ratio: null,
            missing: true,
          };
  }
  return c.json({ data, trailing_apy: v.historical_apy ?? {}, chain_id: v.chain_id }, 200);
};

export const portfolioInstHandler: RouteHandler<typeof portfolioInst, AppEnv> = async (c) => {
  const { vault_address } = c.req.valid("param");
  const { db } = c.var.deps;
  const v = await findVault(db, c.var.deps.config.indexerSchema, vault_address, requestedChain(c.req.valid("query")));
  if (!v) return c.json(notFoundBody(vault_address), 404);
  servedChain(c, v.chain_id);
  const rows = await portfolioCache(db, v.chain_id, v.address);
  return c.json(Object.fromEntries(rows.map((r) => [r.subaccount, r.data])), 200);
};
