/**
 * GET /api/v1/integrations/perp_relayer_a/check_status and /perp_relayer_b/check_status: where a
 * perp deposit stands, by its `core_hash`, from the indexed bridge deposits (indexer.perp_deposit)
 * and the core ledger's answers (indexer.perp_core_event): credited, rejected with the reason,
 * pending (deposited, no answer yet) or unknown. Open, as the spec leaves the status checks.
 */
import { createRoute, type RouteHandler, z } from "@hono/zod-openapi";
import { sql } from "kysely";
import { chainProtocols } from "../../lib/protocols.js";
import { type AppEnv, errorResponses, jsonResponse, openReadAuthResponses } from "../../lib/router.js";
import { openRoute } from "../../middleware/auth.js";

const Status = z
  .object({
    core_hash: z.string(),
    relayer: z.enum(["perp_relayer_a", "perp_relayer_b"]),
    status: z.enum(["credited", "rejected", "pending", "unknown"]),
    reason: z.string().nullable().openapi({ description: "The core ledger's reason, when rejected" }),
    deposit: z
      .object({
        chain_id: z.number().int(),
        bridge: z.string(),
        depositor: z.string(),
        token: z.string(),
        amount_raw: z.string(),
        destination: z.enum(["perp", "spot"]),
        block_number: z.number().int(),
        timestamp: z.string().openapi({ format: "date-time" }),
        tx_hash: z.string(),
      })
      .nullable(),
    core: z
      .object({
        chain_id: z.number().int(),
        block_number: z.number().int(),
        timestamp: z.string().openapi({ format: "date-time" }),
        tx_hash: z.string(),
      })
      .nullable()
      .openapi({ description: "The core ledger's credit or rejection" }),
  })
  .openapi("PerpDepositStatus");

const query = z.object({
  core_hash: z
    .string()
    .regex(/^0x[0-9a-fA-F]{64}$/, "must be a 0x-prefixed 32-byte hex hash")
    .openapi({ description: "The deposit's core hash (keccak256(chainId, bridge, depositor, nonce))" }),
});

const common = (relayer: string) => ({
  tags: ["integrations"],
  summary: `Where a deposit through ${relayer} stands on the core side`,
  description:
    "From the indexed bridge deposits and the core ledger's events: `credited` or `rejected` " +
    "(with the ledger's reason) once the core side answered, `pending` while the deposit is on " +
    "the bridge without an answer, `unknown` when no deposit through this relayer's bridge has " +
    "this `core_hash` (not made, made through the other relayer, or not indexed yet). `deposit` " +
    "and `core` carry the events found.",
  ...openRoute,
  request: { query },
  responses: {
    200: jsonResponse("The deposit's status", Status),
    ...openReadAuthResponses,
    ...errorResponses,
  },
});

export const perpRelayerAStatus = createRoute({
  method: "get",
  path: "/integrations/perp_relayer_a/check_status",
  ...common("perp_relayer_a"),
});

export const perpRelayerBStatus = createRoute({
  method: "get",
  path: "/integrations/perp_relayer_b/check_status",
  ...common("perp_relayer_b"),
});

const iso = (unix: string | number) => new Date(Number(unix) * 1000).toISOString();

function handler(relayer: "perp_relayer_a" | "perp_relayer_b"): RouteHandler<typeof perpRelayerAStatus, AppEnv> {
  return async (c) => {
    const { db, config } = c.var.deps;
    const hash = c.req.valid("query").core_hash.toLowerCase();
    // this relayer's bridge on each chain (the catalogue, held 10 s)
    const bridges = [...(await chainProtocols(db)).values()].flatMap((p) =>
      p.perp ? [relayer === "perp_relayer_a" ? p.perp.bridgeA : p.perp.bridgeB] : [],
    );
    const s = config.indexerSchema;
    const read = async <T>(q: Promise<{ rows: T[] }>): Promise<T[]> => {
      try {
        return (await q).rows;
      } catch (err) {
        // before the indexer's views exist: nothing is known yet
        if ((err as { code?: string }).code === "42P01") return [];
        throw err;
      }
    };
    const [deposit] = await read(
      sql<{
        chain_id: number;
        bridge: string;
        depositor: string;
        token: string;
        amount: string;
        destination: number;
        block_number: string;
        timestamp: string;
        tx_hash: string;
      }>`SELECT chain_id, bridge, depositor, token, amount::text, destination, block_number::text, timestamp::text,
         tx_hash
         FROM ${sql.id(s, "perp_deposit")} WHERE core_hash = ${hash} ORDER BY block_number LIMIT 1`.execute(db),
    );
    const [core] = await read(
      sql<{
        chain_id: number;
        kind: string;
        bridge: string | null;
        reason: string | null;
        block_number: string;
        timestamp: string;
        tx_hash: string;
      }>`
        SELECT chain_id, kind, bridge, reason, block_number::text, timestamp::text, tx_hash
        FROM ${sql.id(s, "perp_core_event")} WHERE core_hash = ${hash}
        ORDER BY block_number, log_index LIMIT 1`.execute(db),
    );
    // a deposit through the other relayer's bridge is not this relayer's to report
    const mine = (b: string) => bridges.length === 0 || bridges.includes(b.toLowerCase() as never);
    // a rejection names no bridge: before its deposit is indexed (the bridge chain's indexer behind
    // the core chain's) it is no relayer's to report yet, rather than both relayers'
    const unattributed = core != null && core.bridge == null && deposit == null && bridges.length > 0;
    const other =
      unattributed || (deposit != null && !mine(deposit.bridge)) || (core?.bridge != null && !mine(core.bridge));
    const dep = other ? undefined : deposit;
    const answer = other ? undefined : core;
    const status = answer ? (answer.kind === "credited" ? "credited" : "rejected") : dep ? "pending" : "unknown";
    return c.json(
      {
        core_hash: hash,
        relayer,
        status,
        reason: answer?.kind === "rejected" ? answer.reason : null,
        deposit: dep
          ? {
              chain_id: dep.chain_id,
              bridge: dep.bridge,
              depositor: dep.depositor,
              token: dep.token,
              amount_raw: dep.amount,
              destination: dep.destination === 1 ? ("spot" as const) : ("perp" as const),
              block_number: Number(dep.block_number),
              timestamp: iso(dep.timestamp),
              tx_hash: dep.tx_hash,
            }
          : null,
        core: answer
          ? {
              chain_id: answer.chain_id,
              block_number: Number(answer.block_number),
              timestamp: iso(answer.timestamp),
              tx_hash: answer.tx_hash,
            }
          : null,
      },
      200,
    );
  };
}

export const perpRelayerAStatusHandler = handler("perp_relayer_a");
export const perpRelayerBStatusHandler = handler("perp_relayer_b") as unknown as RouteHandler<
  typeof perpRelayerBStatus,
  AppEnv
>;
