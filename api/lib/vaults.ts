/**
 * The vault set and finding one vault in it: every route about one vault resolves its
 * `{vault_address}` (and chain) here, so they agree on what exists. The set is the registry's
 * vaults (with an operator's metadata) plus every vault the indexer knows that the registry does
 * not hold yet (with what the chain says).
 */
import { type RawBuilder, type Selectable, sql } from "kysely";
import type { RegistryVaultTable, VaultMetricsTable } from "../../db/schema.js";
import { pickChain } from "./chain.js";
import type { ReadDb } from "./db.js";
import { kept } from "./kept.js";

/** EVM addresses are stored lower-case; other chains' addresses are matched exactly. */
export function normalizeAddress(a: string): string {
  return /^0x[0-9a-fA-F]+$/.test(a) ? a.toLowerCase() : a;
}

/** Postgres: a relation or schema that does not exist yet (first start, before the indexer). */
export function isMissingRelation(err: unknown): boolean {
  const code = (err as { code?: string })?.code;
  return code === "42P01" || code === "3F000";
}

type Nullable<T> = { [K in keyof T]: T[K] | null };

/** registry.vault joined with its derived.vault_metrics row (metrics columns null without one). */
export interface VaultBaseRow
  extends Omit<Selectable<RegistryVaultTable>, "strategist_id">,
    Nullable<
      Pick<
        Selectable<VaultMetricsTable>,
        | "as_of_day"
        | "tvl"
        | "historical_apy"
        | "historical_compound_apy"
        | "gross_apy"
        | "gross_compound_apy"
        | "pnl_per_share"
        | "daily_pnl_per_share"
        | "returns"
        | "liquid_apy_7d"
        | "liquid_apy_30d"
        | "max_drawdown"
        | "max_daily_drawdown"
        | "apy_computed_at"
        | "share_ratio_snapshot_at"
        | "cached_at"
      >
    > {
  /**
   * Decimals of the share token as the indexer read them (indexer.vault.decimals: an erc4626
   * vault's own decimals(), which an OpenZeppelin decimals offset makes larger than its
   * asset's); null for a vault the indexer does not hold. See shareDecimalsOf.
   */
  share_decimals: number | null;
  /** the indexer's `lagDuration()` of a lendingPool or tokenizedVaultV2 (seconds, as text); else null */
  lag_duration: string | null;
}

/** The share token's decimals: the indexer's, else (not indexed) the asset's, else 18. */
export function shareDecimalsOf(v: Pick<VaultBaseRow, "share_decimals" | "attributes">): number {
  if (v.share_decimals != null) return v.share_decimals;
  const d = (v.attributes?.asset as { decimals?: unknown } | undefined)?.decimals;
  return Number.isInteger(d) ? (d as number) : 18;
}

export const BASE_COLUMNS = sql`rv.id, rv.chain_id, rv.address, rv.family, rv.kind, rv.name, rv.symbol, rv.status,
  rv.chain_type,
  rv.start_datetime, rv.attributes, rv.updated_at, rv.share_decimals, rv.lag_duration::text AS lag_duration,
  m.as_of_day, m.tvl::text AS tvl, m.historical_apy, m.historical_compound_apy, m.gross_apy, m.gross_compound_apy,
  m.pnl_per_share, m.daily_pnl_per_share, m.returns, m.liquid_apy_7d, m.liquid_apy_30d, m.max_drawdown,
  m.max_daily_drawdown, m.apy_computed_at, m.share_ratio_snapshot_at, m.cached_at`;

export const METRICS_JOIN = sql`LEFT JOIN derived.vault_metrics m ON m.chain_id = rv.chain_id AND m.vault = rv.address`;

export interface VaultFilter {
  status?: string | undefined;
  address?: string | undefined;
  chain?: number | undefined;
}

export function where(f: VaultFilter): RawBuilder<unknown> {
  const parts: RawBuilder<unknown>[] = [sql`TRUE`];
  if (f.status != null) parts.push(sql`rv.status = ${f.status}`);
  if (f.address != null) parts.push(sql`rv.address = ${normalizeAddress(f.address)}`);
  if (f.chain != null) parts.push(sql`rv.chain_id = ${f.chain}`);
  return sql.join(parts, sql` AND `);
}

/**
 * The vault set, as `registry.vault`'s columns: every vault of the registry (EVM or not, with the
 * metadata an operator gave), plus every vault the indexer knows that the registry tables do not
 * hold yet, with what the chain says (name, symbol, family, kind, asset). So an indexed vault is
 * served whether or not `npm run registry -- load` has run.
 */
export function vaultSet(indexerSchema: string | null): RawBuilder<unknown> {
  if (indexerSchema == null) {
    return sql`(SELECT *, NULL::integer AS share_decimals, NULL::numeric AS lag_duration FROM registry.vault)`;
  }
  const iv = sql.id(indexerSchema, "vault");
  return sql`(
    SELECT r.id, r.chain_id, r.address, r.family, r.kind, r.name, r.symbol, r.status, r.chain_type, r.strategist_id,
           r.start_datetime, r.attributes, r.updated_at, x.decimals AS share_decimals, x.lag_duration
    FROM registry.vault r
    LEFT JOIN ${iv} x ON x.chain_id = r.chain_id AND x.address = r.address
    UNION ALL
    SELECT md5('vault:' || v.chain_id || ':' || v.address)::uuid, v.chain_id, v.address, v.family, v.kind, v.name,
           v.symbol, 'active', 'evm', NULL::uuid, NULL::timestamptz,
           jsonb_build_object('asset', jsonb_build_object('address', v.asset, 'symbol', v.asset_symbol,
             'decimals', v.asset_decimals))
           || CASE WHEN v.alt_asset IS NULL THEN '{}'::jsonb
                   ELSE jsonb_build_object('alt_asset', jsonb_build_object('address', v.alt_asset,
                          'symbol', v.alt_asset_symbol, 'decimals', v.alt_asset_decimals)) END,
           now(), v.decimals, v.lag_duration
    FROM ${iv} v
    WHERE NOT EXISTS (SELECT 1 FROM registry.vault r WHERE r.chain_id = v.chain_id AND r.address = v.address)
  )`;
}

/** Runs `q` over the vault set; before the indexer's views exist (first start), over the registry alone. */
export async function overVaultSet<R>(indexerSchema: string, q: (from: RawBuilder<unknown>) => Promise<R>): Promise<R> {
  try {
    return await q(vaultSet(indexerSchema));
  } catch (err) {
    if (!isMissingRelation(err)) throw err;
    return q(vaultSet(null));
  }
}

/** One vault of the vault set (and its latest metrics) by address, optionally on one chain. */
export async function findVault(
  db: ReadDb,
  indexerSchema: string,
  address: string,
  chain?: number,
): Promise<VaultBaseRow | undefined> {
  const q = (from: RawBuilder<unknown>) => sql<VaultBaseRow>`
    SELECT ${BASE_COLUMNS}
    FROM ${from} rv
    ${METRICS_JOIN}
    WHERE ${where({ address, chain })}
    ORDER BY rv.chain_id
    LIMIT 1`;
  return overVaultSet(indexerSchema, async (from) => (await q(from).execute(db)).rows[0]);
}

// ---- the chains of an address, from a directory of the vault set held in memory -------------

const DIR_TTL_MS = 10_000;
const directories = kept<Map<string, number[]>>(DIR_TTL_MS, 100);

async function loadDirectory(db: ReadDb, indexerSchema: string): Promise<Map<string, number[]>> {
  const rows = await overVaultSet(
    indexerSchema,
    async (from) =>
      (
        await sql<{ chain_id: number; address: string }>`
        SELECT chain_id, address FROM ${from} rv ORDER BY chain_id`.execute(db)
      ).rows,
  );
  const byAddress = new Map<string, number[]>();
  for (const r of rows) byAddress.set(r.address, [...(byAddress.get(r.address) ?? []), r.chain_id]);
  return byAddress;
}

/**
 * The chains on which `address` is a vault of the set (ascending), from a directory of the set
 * kept for 10 s (`kept`): the routes that only need the chain pay no query. An address missing
 * from it is looked up again before the answer is "none", so a new vault is never unknown for long.
 */
export async function vaultChains(db: ReadDb, indexerSchema: string, address: string): Promise<number[]> {
  const a = normalizeAddress(address);
  const load = () => loadDirectory(db, indexerSchema);
  const hit = (await directories.get(db, indexerSchema, load)).get(a);
  if (hit) return hit;
  return (await directories.fresh(db, indexerSchema, load, 1000)).get(a) ?? [];
}

/**
 * The chain of the vault a request names: `requested` when the address is a vault there, else
 * (none requested) the lowest chain it is a vault on; undefined when it is none (a 404).
 */
export async function findVaultChain(
  db: ReadDb,
  indexerSchema: string,
  address: string,
  requested: number | undefined,
): Promise<number | undefined> {
  return pickChain(await vaultChains(db, indexerSchema, address), requested);
}
