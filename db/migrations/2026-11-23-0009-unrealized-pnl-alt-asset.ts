/**
 * Unrealized PnL values the second asset a vault holds (the registry's altAsset, e.g. the stETH
 * a tokenizedVaultV2 took as `assetIn`), each asset through its own USD feed (issue 12): three
 * columns show what was counted in `actual_tvl`.
 *
 * - alt_assets: the alt asset held by the vault and its registry subaccounts, alt units.
 * - alt_asset_price: the alt asset's USD price at the snapshot.
 * - alt_assets_in_asset: their value in base-asset units, included in actual_tvl; null when
 *   some is held but a price is missing (then it is left out of actual_tvl).
 *
 * Null for every vault without an alt asset. The rows are recomputed by the workers: the vault
 * metadata the jobs fingerprint now has the alt asset's decimals, so every vault's fingerprints
 * differ and the next fan-out recomputes all history.
 * FROZEN: once landed, never edit this file.
 */
import { type Kysely, sql } from "kysely";

export async function up(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE derived.unrealized_pnl
    ADD COLUMN alt_assets numeric(78,18),
    ADD COLUMN alt_asset_price numeric(78,18),
    ADD COLUMN alt_assets_in_asset numeric(78,18)`.execute(db);
}

export async function down(db: Kysely<unknown>): Promise<void> {
  await sql`ALTER TABLE derived.unrealized_pnl
    DROP COLUMN alt_assets, DROP COLUMN alt_asset_price, DROP COLUMN alt_assets_in_asset`.execute(db);
}
