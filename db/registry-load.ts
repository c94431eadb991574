/**
 * Loads the vault registry file into the `registry` tables the API serves: vaults (with their
 * descriptive metadata), strategists, subaccounts, operators and each chain's protocols. Idempotent (upserts by natural
 * keys); entries no longer in the file are removed. One transaction.
 */

import { type Kysely, sql } from "kysely";
import { getChain } from "../config/chains.js";
import type { Registry } from "../config/registry.js";
import { vaultKey } from "./batch.js";
import type { Database } from "./schema.js";

export interface LoadSummary {
  vaults: number;
  strategists: number;
  subaccounts: number;
  operators: number;
}

const EVM_VAULT_COLUMNS = [
  "family",
  "kind",
  "name",
  "symbol",
  "status",
  "strategist_id",
  "start_datetime",
  "attributes",
] as const;
const NON_EVM_VAULT_COLUMNS = ["family", "name", "symbol", "status", "chain_type", "attributes"] as const;

/**
 * The condition of an upsert's update: some of `columns` differ from the proposed row. A load of
 * an unchanged file then rewrites nothing, and `updated_at` says when an entry last changed.
 */
function changed(table: string, columns: readonly string[]) {
  const row = (prefix: string) => sql.join(columns.map((c) => sql.ref(`${prefix}.${c}`)));
  return sql<boolean>`(${row(table)}) IS DISTINCT FROM (${row("excluded")})`;
}

export async function loadRegistryData(db: Kysely<Database>, reg: Registry): Promise<LoadSummary> {
  return db.transaction().execute(async (trx) => {
    const strategistIds = new Map<string, string>();
    const upsertStrategist = async (name: string, address: string | null) => {
      if (strategistIds.has(name)) return strategistIds.get(name)!;
      const r = await trx
        .insertInto("registry.strategist")
        .values({ name, address, logo_url: null, website_url: null })
        .onConflict((oc) =>
          oc
            .column("name")
            .doUpdateSet({ address: (eb) => eb.fn.coalesce("excluded.address", "registry.strategist.address") }),
        )
        .returning("id")
        .executeTakeFirstOrThrow();
      strategistIds.set(name, r.id);
      return r.id;
    };
    const keep: string[] = [];
    let subaccounts = 0;
    let operators = 0;
    for (const v of reg.evm) {
      const strategistId = v.strategist?.name
        ? await upsertStrategist(v.strategist.name, v.strategist.address ?? null)
        : null;
      const attributes = {
        ...v.metadata,
        asset: v.asset,
        ...(v.altAsset ? { alt_asset: v.altAsset } : {}),
        ...(v.receiptToken ? { receipt_token: v.receiptToken } : {}),
        ...(v.publicType ? { public_type: v.publicType } : {}),
      };
      await trx
        .insertInto("registry.vault")
        .values({
          chain_id: v.chainId,
          address: v.address,
          family: v.family,
          kind: v.kind,
          name: v.name,
          symbol: v.symbol,
          status: v.status,
          chain_type: "evm",
          strategist_id: strategistId,
          start_datetime: v.startTimestamp ? new Date(v.startTimestamp * 1000) : null,
          attributes: JSON.stringify(attributes),
        })
        .onConflict((oc) =>
          oc
            .columns(["chain_id", "address"])
            .doUpdateSet((eb) => ({
              family: eb.ref("excluded.family"),
              kind: eb.ref("excluded.kind"),
              name: eb.ref("excluded.name"),
              symbol: eb.ref("excluded.symbol"),
              status: eb.ref("excluded.status"),
              strategist_id: eb.ref("excluded.strategist_id"),
              start_datetime: eb.ref("excluded.start_datetime"),
              attributes: eb.ref("excluded.attributes"),
              updated_at: sql`now()`,
            }))
            .where(changed("vault", [...EVM_VAULT_COLUMNS])),
        )
        .execute();
      keep.push(vaultKey(v));
      await trx
        .deleteFrom("registry.subaccount")
        .where("chain_id", "=", v.chainId)
        .where("vault", "=", v.address)
        .where("address", "not in", v.subaccounts.length ? v.subaccounts : [""])
        .execute();
      const settings = new Map(Object.entries(v.subaccountSettings).map(([a, x]) => [a.toLowerCase(), x]));
      for (const [i, sub] of v.subaccounts.entries()) {
        const set = settings.get(sub);
        await trx
          .insertInto("registry.subaccount")
          .values({
            chain_id: v.chainId,
            vault: v.address,
            address: sub,
            internal_name: set?.internalName ?? `${v.symbol}-sub-${i + 1}`,
            friendly_name: set?.friendlyName ?? `${v.name} subaccount ${i + 1}`,
            status: "active",
            subaccount_type: set?.type ?? "strategy",
            strategist_id: strategistId,
            min_health_factor: set?.minHealthFactor == null ? null : String(set.minHealthFactor),
            funding: [...new Set(set?.funding ?? [])].sort(),
          })
          .onConflict((oc) =>
            oc.columns(["chain_id", "vault", "address"]).doUpdateSet((eb) => ({
              strategist_id: eb.ref("excluded.strategist_id"),
              internal_name: eb.ref("excluded.internal_name"),
              friendly_name: eb.ref("excluded.friendly_name"),
              subaccount_type: eb.ref("excluded.subaccount_type"),
              min_health_factor: eb.ref("excluded.min_health_factor"),
              funding: eb.ref("excluded.funding"),
            })),
          )
          .execute();
        subaccounts++;
      }
      const ops: { address: string; type: "eoa" | "subaccount"; name: string }[] = [
        ...(v.operator ? [{ address: v.operator, type: "eoa" as const, name: "operator" }] : []),
        ...v.subaccounts.map((s, i) => ({ address: s, type: "subaccount" as const, name: `subaccount ${i + 1}` })),
      ];
      await trx
        .deleteFrom("registry.operator")
        .where("chain_id", "=", v.chainId)
        .where("vault", "=", v.address)
        .where("address", "not in", ops.length ? ops.map((o) => o.address) : [""])
        .execute();
      for (const o of ops) {
        await trx
          .insertInto("registry.operator")
          .values({ chain_id: v.chainId, vault: v.address, address: o.address, operator_type: o.type, name: o.name })
          .onConflict((oc) =>
            oc.columns(["chain_id", "vault", "address"]).doUpdateSet((eb) => ({
              operator_type: eb.ref("excluded.operator_type"),
              name: eb.ref("excluded.name"),
            })),
          )
          .execute();
        operators++;
      }
    }
    for (const v of reg.nonEvm) {
      const { chainId, address, family, name, symbol, status, metadata, ...rest } = v as typeof v & {
        metadata?: Record<string, unknown>;
      };
      await trx
        .insertInto("registry.vault")
        .values({
          chain_id: chainId,
          address: String(address),
          family: String(family),
          kind: null,
          name: String(name),
          symbol: String(symbol),
          status: String(status ?? "active"),
          chain_type: getChain(chainId)?.slug ?? "non-evm",
          strategist_id: null,
          start_datetime: null,
          attributes: JSON.stringify({ ...rest, ...(metadata ?? {}) }),
        })
        .onConflict((oc) =>
          oc
            .columns(["chain_id", "address"])
            .doUpdateSet((eb) => ({
              family: eb.ref("excluded.family"),
              name: eb.ref("excluded.name"),
              symbol: eb.ref("excluded.symbol"),
              status: eb.ref("excluded.status"),
              chain_type: eb.ref("excluded.chain_type"),
              attributes: eb.ref("excluded.attributes"),
              updated_at: sql`now()`,
            }))
            .where(changed("vault", [...NON_EVM_VAULT_COLUMNS])),
        )
        .execute();
      keep.push(vaultKey({ chainId, address }));
    }
    await sql`DELETE FROM registry.vault WHERE NOT (chain_id::text || ':' || lower(address) = ANY(${keep}))`.execute(
      trx,
    );
    // each chain's protocols entry, as the file has it now
    const chains = [...reg.protocols.keys()];
    await trx
      .deleteFrom("registry.chain_protocols")
      .where("chain_id", "not in", chains.length ? chains : [0])
      .execute();
    for (const [chainId, p] of reg.protocols) {
      await trx
        .insertInto("registry.chain_protocols")
        .values({ chain_id: chainId, protocols: JSON.stringify(p), updated_at: sql`now()` })
        .onConflict((oc) =>
          oc
            .column("chain_id")
            .doUpdateSet((eb) => ({
              protocols: eb.ref("excluded.protocols"),
              updated_at: eb.ref("excluded.updated_at"),
            }))
            .where(changed("chain_protocols", ["protocols"])),
        )
        .execute();
    }
    return { vaults: keep.length, strategists: strategistIds.size, subaccounts, operators };
  });
}
