/**
 * Every write route runs through runWrite: one transaction holding the write, its audit row
 * (registry.write_audit) and, when the client sent an `Idempotency-Key`, the stored answer
 * (registry.idempotency). So a write is never applied without its audit row, and a retry with
 * the same key and body gets the first answer without acting again.
 *
 * A failed business rule is a Refusal (a 4xx with `{detail, code}`): the transaction is rolled
 * back, and the refusal is recorded (audit row, and the stored answer under the key) in a second
 * one. Concurrent requests with the same key are serialized by a transaction-scoped advisory
 * lock on (caller, key); the second one waits and replays the first one's answer. The same key
 * with another body or route answers 422. Stored answers are kept IDEMPOTENCY_TTL_H hours.
 */
import { createHash } from "node:crypto";
import type { Context, TypedResponse } from "hono";
import { type Kysely, sql, type Transaction } from "kysely";
import type { Database } from "../../db/schema.js";
import { type ErrorItem, validationError } from "./errors.js";
import type { AppEnv } from "./router.js";

export const IDEMPOTENCY_TTL_H = 24;
const KEY_RE = /^[\x21-\x7e]{1,255}$/;

export type RefusalStatus = 400 | 403 | 404 | 409 | 503;

export class Refusal extends Error {
  constructor(
    readonly status: RefusalStatus,
    readonly code: string,
    readonly detail: string,
  ) {
    super(detail);
  }
}

/**
 * A request that the data make malformed (a 422 the body's schema could not tell, such as an
 * address deployed on several chains without its chain): thrown from `before`, so that a retry
 * whose first answer is stored under its Idempotency-Key still gets that answer. Not audited, not
 * stored, as no 422 is.
 */
export class InvalidRequest extends Error {
  constructor(readonly items: ErrorItem[]) {
    super(items.map((i) => i.msg).join("; "));
  }
}

export interface WriteResult<B, S extends 200 | 201 = 200 | 201> {
  status: S;
  body: B;
  /** what was written, for the audit row */
  target?: string | null;
  detail?: Record<string, unknown>;
  /** the write changes an input of the derived tables: ask the workers for a fan-out */
  recompute?: boolean;
}

/** JSON with object keys sorted, so the same body hashes the same whatever its key order. */
export function stableJson(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(stableJson).join(",")}]`;
  if (v && typeof v === "object" && !(v instanceof Date)) {
    return `{${Object.keys(v)
      .sort()
      .filter((k) => (v as Record<string, unknown>)[k] !== undefined)
      .map((k) => `${JSON.stringify(k)}:${stableJson((v as Record<string, unknown>)[k])}`)
      .join(",")}}`;
  }
  return JSON.stringify(v) ?? "null";
}

interface Stored {
  request_hash: string;
  status: number;
  body: unknown;
}

async function lockAndFind(trx: Transaction<Database>, principal: string, key: string): Promise<Stored | undefined> {
  // a newline separates them: keys are visible ASCII (no newline), and Postgres text cannot hold NUL
  await sql`SELECT pg_advisory_xact_lock(hashtextextended(${`${principal}\n${key}`}, 0))`.execute(trx);
  return findStored(trx, principal, key);
}

function findStored(db: Kysely<Database>, principal: string, key: string): Promise<Stored | undefined> {
  return db
    .selectFrom("registry.idempotency")
    .select(["request_hash", "status", "body"])
    .where("principal", "=", principal)
    .where("key", "=", key)
    .where("created_at", ">", sql<Date>`now() - make_interval(hours => ${IDEMPOTENCY_TTL_H})`)
    .executeTakeFirst();
}

class Replay extends Error {
  constructor(readonly stored: Stored) {
    super("replay");
  }
}

/**
 * Typed as the route's success answer (so typed handlers accept it); refusals, replays and 422s
 * are the other answers the route declares.
 */
export interface WriteOptions {
  /**
   * Checks that need no database and may be slow (a signature checked over RPC): run before the
   * transaction, so a write connection is not held while they wait, and checks whose answer may
   * change between a request and its retry. A `Refusal` thrown here is answered and audited like
   * one thrown in the transaction; an `InvalidRequest` is a 422. Skipped when an Idempotency-Key
   * already has a stored answer, which is replayed as is.
   */
  before?: () => Promise<void>;
}

export async function runWrite<B, S extends 200 | 201>(
  c: Context<AppEnv>,
  action: string,
  body: unknown,
  fn: (trx: Transaction<Database>) => Promise<WriteResult<B, S>>,
  opts: WriteOptions = {},
): Promise<TypedResponse<B, S, "json">> {
  return (await write(c, action, body, fn, opts)) as unknown as TypedResponse<B, S, "json">;
}

async function write<B, S extends 200 | 201>(
  c: Context<AppEnv>,
  action: string,
  body: unknown,
  fn: (trx: Transaction<Database>) => Promise<WriteResult<B, S>>,
  opts: WriteOptions,
): Promise<Response> {
  const { wdb, requestRecompute } = c.var.deps;
  if (!wdb) return c.json({ detail: "This API process serves reads only", code: "read_only" }, 503);
  const principal = c.var.principal;
  if (!principal) throw new Error(`runWrite(${action}) on a route without credentials`);
  const idemKey = c.req.header("idempotency-key");
  if (idemKey !== undefined && !KEY_RE.test(idemKey)) {
    return validationError(c, [
      {
        loc: ["header", "idempotency-key"],
        msg: "Idempotency-Key must be 1 to 255 visible ASCII characters",
        type: "value_error",
      },
    ]);
  }
  const who = `${principal.kind}:${principal.id}`;
  const hash = createHash("sha256")
    .update(`${c.req.method} ${c.req.path}\n${stableJson(body)}`)
    .digest("hex");
  const audit = (
    trx: Kysely<Database>,
    status: number,
    outcome: "ok" | "refused",
    code: string | null,
    target: string | null,
    detail: Record<string, unknown>,
  ) =>
    trx
      .insertInto("registry.write_audit")
      .values({
        principal_kind: principal.kind,
        principal_id: principal.id,
        action,
        target,
        method: c.req.method,
        path: c.req.path,
        status,
        outcome,
        code,
        request_id: c.var.requestId ?? null,
        idempotency_key: idemKey ?? null,
        detail: JSON.stringify(detail),
      })
      .execute();
  const remember = (trx: Kysely<Database>, status: number, resBody: unknown) =>
    idemKey === undefined
      ? Promise.resolve()
      : trx
          .insertInto("registry.idempotency")
          .values({ principal: who, key: idemKey, request_hash: hash, status, body: JSON.stringify(resBody) })
          .onConflict((oc) =>
            oc
              .columns(["principal", "key"])
              .doUpdateSet({ request_hash: hash, status, body: JSON.stringify(resBody), created_at: sql`now()` }),
          )
          .execute();
  const replay = (s: Stored) => {
    if (s.request_hash !== hash) {
      return validationError(c, [
        {
          loc: ["header", "idempotency-key"],
          msg: "This Idempotency-Key was used with another request (route or body): use a new key",
          type: "value_error",
        },
      ]);
    }
    c.header("Idempotent-Replayed", "true");
    return c.json(s.body as object, s.status as 200);
  };

  try {
    if (opts.before) {
      // an answer stored for this key is replayed without checking again (the check may be slow,
      // or fail now, e.g. an RPC outage); without one, the transaction below looks again under its lock
      const stored = idemKey === undefined ? undefined : await findStored(wdb, who, idemKey);
      if (stored) throw new Replay(stored);
      await opts.before();
    }
    const result = await wdb.transaction().execute(async (trx) => {
      if (idemKey !== undefined) {
        const prev = await lockAndFind(trx, who, idemKey);
        if (prev) throw new Replay(prev);
      }
      const r = await fn(trx);
      await audit(trx, r.status, "ok", null, r.target ?? null, r.detail ?? {});
      await remember(trx, r.status, r.body);
      return r;
    });
    c.set("wrote", true);
    if (result.recompute && requestRecompute) void requestRecompute().catch(() => {});
    return c.json(result.body as object, result.status);
  } catch (err) {
    if (err instanceof Replay) return replay(err.stored);
    if (err instanceof InvalidRequest) return validationError(c, err.items);
    if (!(err instanceof Refusal)) throw err;
    const resBody = { detail: err.detail, code: err.code };
    const prev = await wdb.transaction().execute(async (trx) => {
      if (idemKey !== undefined) {
        const p = await lockAndFind(trx, who, idemKey);
        if (p) return p; // an identical request answered meanwhile: its answer stands
      }
      await audit(trx, err.status, "refused", err.code, null, {});
      // a 5xx (a node or the write pool unavailable) changed nothing and may pass on a retry:
      // not kept, so the retry with the same key acts
      if (err.status < 500) await remember(trx, err.status, resBody);
      return null;
    });
    if (prev) return replay(prev);
    return c.json(resBody, err.status);
  }
}

/** Drops stored answers older than IDEMPOTENCY_TTL_H (the API runs it hourly). */
export async function purgeIdempotency(db: Kysely<Database>): Promise<number> {
  const r = await db
    .deleteFrom("registry.idempotency")
    .where("created_at", "<", sql<Date>`now() - make_interval(hours => ${IDEMPOTENCY_TTL_H})`)
    .executeTakeFirst();
  return Number(r.numDeletedRows);
}
