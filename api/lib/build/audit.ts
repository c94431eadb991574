/**
 * The one writer of registry.build_audit, and the frame every builder route runs in: it resolves
 * nothing itself, it runs the builder, records what was built or refused (who asked, for which
 * subaccount, the request and the answer) and only then answers. A built transaction is never
 * handed out without its audit row: a process without the write side answers 503. Every answer
 * says where its time went in a `Server-Timing` header (`timing.ts`).
 */
import { createHash, randomUUID } from "node:crypto";
import type { RouteConfig, RouteHandler } from "@hono/zod-openapi";
import type { Context, MiddlewareHandler } from "hono";
import { HTTPException } from "hono/http-exception";
import type { Insertable, Kysely } from "kysely";
import type { ZodError } from "zod";
import type { BuildAuditTable, Database } from "../../../db/schema.js";
import { ChainIdBody } from "../chain.js";
import { validationError, validationItems } from "../errors.js";
import type { AppEnv, Router } from "../router.js";
import { recordBuild } from "./metrics.js";
import { BuildRefusal, errMessage, serviceFault } from "./refusal.js";
import { BuildTimings } from "./timing.js";

export interface BuildAnswer<B> {
  chainId: number;
  subaccount: string;
  /** the answer, its `build_id` filled in by `runBuild` */
  body: (buildId: string) => B;
}

interface Row {
  id: string;
  action: string;
  chain_id: number | null;
  subaccount: string | null;
  status: number;
  outcome: "built" | "refused";
  code: string | null;
  request: unknown;
  /** the answer as JSON text */
  answer: string;
}

type AuditInsert = Insertable<BuildAuditTable>;

/**
 * Group commit: the rows of builds answering at the same time go to Postgres in one INSERT (one
 * statement, one commit), and each build still answers only once its own row is committed. A
 * row arriving while `MAX_IN_FLIGHT` inserts run waits for the next one; at low load every row is
 * its own insert at once. A batch that fails is retried row by row, so a bad row fails only the
 * build it belongs to.
 */
export class AuditWriter {
  static readonly MAX_BATCH = 100;
  static readonly MAX_IN_FLIGHT = 1;
  private queue: { row: AuditInsert; done: (err?: unknown) => void }[] = [];
  private inFlight = 0;

  constructor(private readonly db: Kysely<Database>) {}

  write(row: AuditInsert): Promise<void> {
    return new Promise((resolve, reject) => {
      this.queue.push({ row, done: (err) => (err === undefined ? resolve() : reject(err)) });
      if (this.inFlight < AuditWriter.MAX_IN_FLIGHT) void this.drain();
    });
  }

  private async drain(): Promise<void> {
    this.inFlight++;
    try {
      while (this.queue.length > 0) {
        const batch = this.queue.splice(0, AuditWriter.MAX_BATCH);
        try {
          await this.insert(batch.map((p) => p.row));
          for (const p of batch) p.done();
        } catch (err) {
          if (batch.length === 1) batch[0]!.done(err);
          else
            await Promise.all(
              batch.map((p) =>
                this.insert([p.row]).then(
                  () => p.done(),
                  (e: unknown) => p.done(e ?? err),
                ),
              ),
            );
        }
      }
    } finally {
      this.inFlight--;
    }
  }

  private async insert(rows: AuditInsert[]): Promise<void> {
    await this.db.insertInto("registry.build_audit").values(rows).execute();
  }
}

/**
 * JSON text Postgres's jsonb takes: JSON.stringify escapes NUL and lone surrogates, which jsonb
 * refuses, so a request carrying one would lose its audit row. They are recorded as U+FFFD.
 */
const jsonb = (json: string) => json.replace(/(?<!\\)((?:\\\\)*)\\u(?:0000|d[89a-f][0-9a-f]{2})/gi, "$1\\ufffd");
/** Text Postgres takes (no NUL). */
const text = (v: string) => v.replaceAll("\0", "\ufffd");

/**
 * The most JSON text a row keeps of a request and of an answer. A request the schema refused can
 * be as long as the body limit lets it (1 MiB), and its 422 longer; past the bound a row keeps
 * the text's length, its SHA-256 and its first `AUDIT_PREFIX_CHARS` characters. A built answer
 * and the request it was built from stay far below.
 */
export const AUDIT_MAX_CHARS = { request: 16 * 1024, answer: 64 * 1024 } as const;
export const AUDIT_PREFIX_CHARS = 8 * 1024;

/** `json` itself, or, over `max` characters, what identifies it (valid JSON either way). */
export function boundedJson(json: string, max: number): string {
  if (json.length <= max) return json;
  const sha256 = createHash("sha256").update(json).digest("hex");
  return JSON.stringify({ truncated: true, chars: json.length, sha256, prefix: json.slice(0, AUDIT_PREFIX_CHARS) });
}

const writers = new WeakMap<Kysely<Database>, AuditWriter>();

async function record(c: Context<AppEnv>, row: Row): Promise<void> {
  const wdb = c.var.deps.wdb;
  const p = c.var.principal;
  if (!wdb || !p) throw new BuildRefusal(503, "read_only", "This API process has no write side: builds are disabled");
  let writer = writers.get(wdb);
  if (!writer) {
    writer = new AuditWriter(wdb);
    writers.set(wdb, writer);
  }
  await writer.write({
    id: row.id,
    at: new Date(), // when the build answered, not the batch's commit
    principal_kind: p.kind,
    principal_id: p.id,
    action: row.action,
    path: text(c.req.path),
    chain_id: row.chain_id,
    subaccount: row.subaccount == null ? null : text(row.subaccount.toLowerCase()),
    status: row.status,
    outcome: row.outcome,
    code: row.code,
    request_id: c.var.requestId ?? null,
    request: jsonb(boundedJson(JSON.stringify(row.request), AUDIT_MAX_CHARS.request)),
    answer: jsonb(boundedJson(row.answer, AUDIT_MAX_CHARS.answer)),
  });
}

/** A chain as a metrics label: a configured chain's id, else `other` (any number may be asked for). */
function chainLabel(c: Context<AppEnv>, chain: number | null | undefined): string {
  if (chain == null) return "";
  return c.var.deps.config.rpcUrls.has(chain) ? String(chain) : "other";
}

/**
 * Runs `build` for the route `action` and answers: 200 with the payload, or the refusal's status
 * and body. Both are recorded first.
 */
export async function runBuild<B>(
  c: Context<AppEnv>,
  action: string,
  request: { chain?: number; address?: string } & Record<string, unknown>,
  build: () => Promise<BuildAnswer<B>>,
) {
  const timings = new BuildTimings();
  if (c.var.receivedAt !== undefined) timings.since("before", c.var.receivedAt);
  const answerWith = <R>(respond: () => R, chain: number | null, refusal: BuildRefusal | null) => {
    c.header("server-timing", timings.header());
    const outcome = refusal ? "refused" : "built";
    recordBuild(action, chainLabel(c, chain), outcome, refusal?.code ?? null, timings.durations());
    return respond();
  };
  let answer: BuildAnswer<B>;
  try {
    answer = await timings.run(build);
  } catch (err) {
    // the service's own fault: recorded, then answered (500) and logged by the app's error handler
    const fault = !(err instanceof BuildRefusal) && serviceFault(err);
    // the answer says what failed in a line; the log keeps the error
    if (!fault && !(err instanceof BuildRefusal))
      c.var.log?.warn({ err, reqId: c.var.requestId }, `${action}: chain failed`);
    const refusal =
      err instanceof BuildRefusal
        ? err
        : new BuildRefusal(503, "chain_unavailable", `The chain did not answer as expected: ${errMessage(err)}`);
    const [status, code] = fault ? [500, "build_failed"] : [refusal.status, refusal.code];
    if (code !== "read_only") {
      const recorded = timings.add("audit", () =>
        record(c, {
          id: randomUUID(),
          action,
          chain_id: request.chain ?? null,
          subaccount: request.address ?? null,
          status,
          outcome: "refused",
          code,
          request,
          answer: JSON.stringify(fault ? { detail: "Internal Server Error" } : refusal.body()),
        }),
      );
      // a fault's own error is what the answer is about, not the audit's
      await (fault ? recorded.catch(() => {}) : recorded);
    }
    if (fault) {
      recordBuild(action, chainLabel(c, request.chain), "refused", code, timings.durations());
      throw err;
    }
    return answerWith(() => refusal.respond(c), request.chain ?? null, refusal);
  }
  const id = randomUUID();
  // serialised once, for the audit row and the answer
  const body = JSON.stringify(answer.body(id));
  try {
    await timings.add("audit", () =>
      record(c, {
        id,
        action,
        chain_id: answer.chainId,
        subaccount: answer.subaccount,
        status: 200,
        outcome: "built",
        code: null,
        request,
        answer: body,
      }),
    );
  } catch (err) {
    if (err instanceof BuildRefusal) return answerWith(() => err.respond(c), answer.chainId, err);
    throw err;
  }
  return answerWith(
    () => c.body(body, 200, { "content-type": "application/json" }) as unknown as JsonOk,
    answer.chainId,
    null,
  );
}

/** The type `c.json(payload, 200)` has, which the routes' handlers are checked against. */
type JsonOk = ReturnType<(c: Context<AppEnv>) => ReturnType<typeof c.json<never, 200>>>;

/**
 * Registers builder route `route` (action `action`) with its audit: the validation hook records
 * a body that fails the route's schema, and a middleware on its path, put there first, one its
 * JSON validator refuses before any schema runs (not JSON, or not sent as JSON). A body the
 * HTTP layer refuses before the key is checked (over 1 MiB, nested too deep:
 * api/middleware/body-limit.ts) names nobody, and is not recorded.
 */
export function registerBuilder<R extends RouteConfig & { getRoutingPath(): string }>(
  r: Router,
  route: R,
  handler: RouteHandler<R, AppEnv>,
  action: string,
): void {
  r.use(route.getRoutingPath(), auditedBody(action));
  r.openapi(route as never, handler as never, auditedValidation(action) as never);
}

/** A 422 of a builder route, recorded like any other refusal (code `validation_error`). */
async function recordValidation(
  c: Context<AppEnv>,
  action: string,
  row: Pick<Row, "chain_id" | "subaccount" | "request" | "answer">,
): Promise<void> {
  try {
    await record(c, { id: randomUUID(), action, status: 422, outcome: "refused", code: "validation_error", ...row });
  } catch (err) {
    if (!(err instanceof BuildRefusal)) throw err;
    // no write side: the 422 stands, nothing was built
  }
  recordBuild(action, chainLabel(c, row.chain_id), "refused", "validation_error", {});
}

/** After the route: its JSON validator's refusal (400 or 415, answered as a 422) is recorded. */
function auditedBody(action: string): MiddlewareHandler<AppEnv> {
  return async (c, next) => {
    await next();
    const err = c.error;
    if (!(err instanceof HTTPException) || (err.status !== 400 && err.status !== 415)) return;
    if (!c.var.principal) return; // refused before the key was checked: nobody to name
    const params = c.req.param() as Record<string, string>;
    await recordValidation(c, action, {
      chain_id: null,
      subaccount: params.address ?? null,
      request: { ...params, json: null },
      answer: await c.res.clone().text(),
    });
  };
}

/**
 * The validation hook of a builder route: a malformed request is refused with the usual 422
 * body and recorded (the raw input as the request).
 */
function auditedValidation(action: string) {
  return async (result: { success: boolean; error?: ZodError; target: string; data?: unknown }, c: Context<AppEnv>) => {
    if (result.success || !result.error) return undefined;
    const items = validationItems(result.error, result.target);
    const input = result.data as Record<string, unknown> | undefined;
    const params = c.req.param() as Record<string, string>;
    const c0 = result.target === "json" ? input?.chain : undefined;
    // the audit row's chain_id column takes what a body's chain id may be
    const chain = ChainIdBody.safeParse(c0).success ? (c0 as number) : null;
    await recordValidation(c, action, {
      chain_id: chain,
      subaccount: params.address ?? null,
      request: { ...params, [result.target]: input ?? null },
      answer: JSON.stringify({ detail: items }),
    });
    return validationError(c, items);
  };
}
