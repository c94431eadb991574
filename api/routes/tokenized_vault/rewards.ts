/**
 * POST / DELETE /api/v1/tokenized_vault/rewards: vault rewards (points multipliers). A reward
 * multiplies the holding points of the vault's depositors from `start_datetime` until
 * `end_datetime`; the workers are asked for a fan-out after each change, so the next points
 * computation uses the new multipliers (and recomputes the days the change covers).
 */
import { createRoute, type RouteHandler, z } from "@hono/zod-openapi";
import { type Selectable, sql, type Transaction } from "kysely";
import type { Database, RewardTable } from "../../../db/schema.js";
import { ChainIdBody } from "../../lib/chain.js";
import {
  type AppEnv,
  IdempotencyHeader,
  jsonResponse,
  laxInt,
  laxNumber,
  PgText,
  VaultAddress,
  writeResponses,
} from "../../lib/router.js";
import { normalizeAddress } from "../../lib/vaults.js";
import { InvalidRequest, Refusal, runWrite } from "../../lib/writes.js";
import { requireScope } from "../../middleware/auth.js";

const TAG = ["tokenized vault"];
const Uuid = z.string().uuid("must be a UUID").openapi({ format: "uuid" });
const DateTime = z.iso
  .datetime({ offset: true, error: "must be an ISO 8601 date-time" })
  .openapi({ format: "date-time" });
const keyOrScope = [{ ApiKeyHeader: [] as string[] }];

export const RewardUpsertBody = z
  .object({
    reward_id: Uuid.optional().openapi({ description: "Update this reward; a new id (or none) creates one" }),
    vault_address: VaultAddress,
    chain_id: laxInt(ChainIdBody).optional().openapi({
      description: "Chain of the vault; needed only when the address is deployed on several chains",
    }),
    text: PgText().trim().min(1).max(500),
    multiplier: laxNumber(z.number().min(0).max(1000)).openapi({
      description:
        "Points multiplier (stored with 6 decimals); the multipliers of a vault's rewards in force on a day multiply",
    }),
    // http(s) only: a front end puts it in an <img> or a link, where javascript: or data: is unsafe
    img_url: z
      .url({ protocol: /^https?$/, message: "must be an http(s) URL" })
      .max(2048)
      .nullable()
      .optional(),
    start_datetime: DateTime.optional().openapi({ description: "Default: now (creation); unchanged (update)" }),
    end_datetime: DateTime.nullable()
      .optional()
      .openapi({ description: "Open-ended when null or absent (creation); unchanged when absent (update)" }),
  })
  .openapi("RewardUpsert", {
    example: {
      vault_address: "0x2c622344b5dc29dccc034ca76f123d4479d24122",
      text: "Double points for deposits this month",
      multiplier: 2,
      img_url: "https://app.example.com/rewards/double.png",
      start_datetime: "2026-12-01T00:00:00Z",
      end_datetime: "2027-01-01T00:00:00Z",
    },
  });

export const RewardWrittenSchema = z
  .object({
    id: Uuid,
    tokenizedvault_id: Uuid,
    vault_address: z.string(),
    chain_id: z.number().int(),
    text: z.string(),
    img_url: z.string().nullable(),
    multiplier: z.number(),
    start_datetime: DateTime,
    end_datetime: DateTime.nullable(),
    updated_at: DateTime,
    created_at: DateTime,
    created: z.boolean().openapi({ description: "true when the request created the reward, false when it updated it" }),
  })
  .openapi("RewardWritten");

export const upsertReward = createRoute({
  method: "post",
  path: "/tokenized_vault/rewards",
  tags: TAG,
  summary: "Create or update a vault reward",
  description:
    "Requires an API key with the scope `rewards:write`. Creates a reward (or updates the one with `reward_id`). " +
    "The workers recompute the points of the days the change covers in their next fan-out (queued at " +
    "once).\n\nRefusals (`code`): 404 `vault_not_found`; 409 `reward_vault_mismatch` (the reward belongs to " +
    "another vault); 400 `invalid_window` (end before start).",
  middleware: [requireScope("rewards:write")] as const,
  security: keyOrScope,
  request: {
    headers: IdempotencyHeader,
    body: { required: true, content: { "application/json": { schema: RewardUpsertBody } } },
  },
  responses: {
    200: jsonResponse("The reward as stored", RewardWrittenSchema),
    ...writeResponses({ 400: "`invalid_window`", 404: "`vault_not_found`", 409: "`reward_vault_mismatch`" }),
  },
});

export const deleteReward = createRoute({
  method: "delete",
  path: "/tokenized_vault/rewards",
  tags: TAG,
  summary: "Delete a vault reward",
  description:
    "Requires an API key with the scope `rewards:write`. The reward stops counting for every day (the workers " +
    "recompute the days it covered).\n\nRefusals (`code`): 404 `reward_not_found`.",
  middleware: [requireScope("rewards:write")] as const,
  security: keyOrScope,
  request: {
    headers: IdempotencyHeader,
    body: {
      required: true,
      content: {
        "application/json": {
          schema: z
            .object({ reward_id: Uuid })
            .openapi("RewardDelete", { example: { reward_id: "6f1c2d3e-4b5a-4c6d-8e7f-9a0b1c2d3e4f" } }),
        },
      },
    },
  },
  responses: {
    200: jsonResponse("Deleted", z.object({ deleted: z.literal(true), reward_id: Uuid }).openapi("RewardDeleted")),
    ...writeResponses({ 404: "`reward_not_found`" }),
  },
});

const iso = (d: Date | string | null) => (d == null ? null : new Date(d).toISOString());

function written(r: Selectable<RewardTable>, vaultId: string, created: boolean) {
  return {
    id: r.id,
    tokenizedvault_id: vaultId,
    vault_address: r.vault,
    chain_id: r.chain_id,
    text: r.text,
    img_url: r.img_url,
    multiplier: Number(r.multiplier),
    start_datetime: iso(r.start_datetime)!,
    end_datetime: iso(r.end_datetime),
    updated_at: iso(r.updated_at)!,
    created_at: iso(r.created_at)!,
    created,
  };
}

export const upsertRewardHandler: RouteHandler<typeof upsertReward, AppEnv> = async (c) => {
  const b = c.req.valid("json");
  const address = normalizeAddress(b.vault_address);
  const now = c.var.deps.now();
  let vault: { id: string; chain_id: number } | undefined;
  // the vault: by address, on the chain given or the only chain it is on (looked up in `before`:
  // a retry under the same Idempotency-Key gets its first answer even if the address has been
  // deployed on another chain since)
  const findVault = async () => {
    const vaults = await c.var.deps.db
      .selectFrom("registry.vault")
      .select(["id", "chain_id"])
      .where("address", "=", address)
      .$if(b.chain_id != null, (q) => q.where("chain_id", "=", b.chain_id!))
      .orderBy("chain_id")
      .execute();
    if (vaults.length > 1) {
      throw new InvalidRequest([
        {
          loc: ["body", "chain_id"],
          msg: `The vault is deployed on chains ${vaults.map((v) => v.chain_id).join(", ")}: give chain_id`,
          type: "missing",
        },
      ]);
    }
    vault = vaults[0];
  };
  const upsert = async (trx: Transaction<Database>) => {
    if (!vault)
      throw new Refusal(
        404,
        "vault_not_found",
        `No vault ${b.vault_address}${b.chain_id != null ? ` on chain ${b.chain_id}` : ""}`,
      );
    // Writes naming the same reward_id run one after the other: FOR UPDATE alone locks nothing
    // while the reward does not exist yet, and concurrent creations of one id then collided (500).
    if (b.reward_id)
      await sql`SELECT pg_advisory_xact_lock(hashtextextended(${`registry.reward:${b.reward_id.toLowerCase()}`},
        0))`.execute(trx);
    const prev = b.reward_id
      ? await trx.selectFrom("registry.reward").selectAll().where("id", "=", b.reward_id).forUpdate().executeTakeFirst()
      : undefined;
    if (prev && (prev.vault !== address || prev.chain_id !== vault.chain_id)) {
      throw new Refusal(
        409,
        "reward_vault_mismatch",
        `Reward ${prev.id} belongs to vault ${prev.vault} on chain ${prev.chain_id}`,
      );
    }
    const start = b.start_datetime ? new Date(b.start_datetime) : prev ? new Date(prev.start_datetime) : now;
    const end =
      b.end_datetime !== undefined
        ? b.end_datetime
          ? new Date(b.end_datetime)
          : null
        : prev
          ? prev.end_datetime
            ? new Date(prev.end_datetime)
            : null
          : null;
    if (end && end <= start) throw new Refusal(400, "invalid_window", "end_datetime must be after start_datetime");
    const values = {
      text: b.text,
      img_url: b.img_url ?? (b.img_url === null ? null : (prev?.img_url ?? null)),
      multiplier: String(b.multiplier),
      start_datetime: start,
      end_datetime: end,
    };
    const row = prev
      ? await trx
          .updateTable("registry.reward")
          .set({ ...values, updated_at: now })
          .where("id", "=", prev.id)
          .returningAll()
          .executeTakeFirstOrThrow()
      : await trx
          .insertInto("registry.reward")
          .values({
            ...(b.reward_id ? { id: b.reward_id } : {}),
            chain_id: vault.chain_id,
            vault: address,
            ...values,
            created_at: now,
            updated_at: now,
          })
          .returningAll()
          .executeTakeFirstOrThrow();
    return {
      status: 200 as const,
      body: written(row, vault.id, !prev),
      target: `reward:${row.id}`,
      detail: { vault: address, chain_id: vault.chain_id, multiplier: b.multiplier, created: !prev },
      recompute: true,
    };
  };
  return runWrite(c, "reward.upsert", b, upsert, { before: findVault });
};

export const deleteRewardHandler: RouteHandler<typeof deleteReward, AppEnv> = async (c) => {
  const { reward_id } = c.req.valid("json");
  return runWrite(c, "reward.delete", { reward_id }, async (trx) => {
    const row = await trx
      .deleteFrom("registry.reward")
      .where("id", "=", reward_id)
      .returning(["id", "vault", "chain_id", "multiplier"])
      .executeTakeFirst();
    if (!row) throw new Refusal(404, "reward_not_found", `No reward ${reward_id}`);
    return {
      status: 200,
      body: { deleted: true as const, reward_id },
      target: `reward:${reward_id}`,
      detail: { vault: row.vault, chain_id: row.chain_id, multiplier: Number(row.multiplier) },
      recompute: true,
    };
  });
};
