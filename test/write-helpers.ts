/**
 * Helpers of the write-route tests (test/e2e/6-api-writes-*.test.ts): JSON and form requests
 * through an app, the audit rows of a credential, and the cleanup of what a credential wrote.
 */

import type { Selectable } from "kysely";
import type { App } from "../api/app.js";
import type { WriteAuditTable } from "../db/schema.js";
import { type Answer, type ApiHarness, readAnswer } from "./api-harness.js";

export type { Answer };

/** A request with a JSON body (a string is sent as is) and the given headers. */
export async function send<T = unknown>(
  app: App,
  method: string,
  path: string,
  body: unknown,
  headers: Record<string, string> = {},
): Promise<Answer<T>> {
  const res = await app.request(path, {
    method,
    headers: { "content-type": "application/json", ...headers },
    body: typeof body === "string" ? body : JSON.stringify(body),
  });
  return readAnswer<T>(res);
}

/** A form post (application/x-www-form-urlencoded, or multipart/form-data with `multipart`). */
export async function postForm<T = unknown>(
  app: App,
  path: string,
  fields: Record<string, string>,
  multipart = false,
): Promise<Answer<T>> {
  let body: FormData | string;
  const headers: Record<string, string> = {};
  if (multipart) {
    const f = new FormData();
    for (const [k, v] of Object.entries(fields)) f.append(k, v);
    body = f;
  } else {
    body = new URLSearchParams(fields).toString();
    headers["content-type"] = "application/x-www-form-urlencoded";
  }
  return readAnswer<T>(await app.request(path, { method: "POST", headers, body }));
}

export type AuditRow = Omit<Selectable<WriteAuditTable>, "at">;

export const auditOf = (h: ApiHarness, principalId: string) =>
  h.q<AuditRow>(
    "SELECT id, principal_kind, principal_id, action, target, method, path, status, outcome, code, request_id, idempotency_key, detail FROM registry.write_audit WHERE principal_id = $1 ORDER BY id",
    [principalId],
  );

/** The audit rows a credential got since `after` rows (for checking one request at a time). */
export async function newAudits(h: ApiHarness, principalId: string, after: number): Promise<AuditRow[]> {
  return (await auditOf(h, principalId)).slice(after);
}

/** The 422 body of the API (FastAPI style). */
export type Invalid = { detail: { loc: (string | number)[]; msg: string; type: string }[] };
export type Refused = { detail: string; code: string };

/** Deletes the audit rows and stored idempotent answers of these credentials (ids of keys, usernames). */
export async function dropCredentialTraces(h: ApiHarness, keyIds: string[], operators: string[] = []): Promise<void> {
  const ids = [...keyIds, ...operators];
  if (ids.length) await h.db.deleteFrom("registry.write_audit").where("principal_id", "in", ids).execute();
  const principals = [...keyIds.map((k) => `api_key:${k}`), ...operators.map((o) => `operator:${o}`)];
  if (principals.length) await h.db.deleteFrom("registry.idempotency").where("principal", "in", principals).execute();
  if (keyIds.length) await h.db.deleteFrom("auth.api_key").where("id", "in", keyIds).execute();
  if (operators.length) await h.db.deleteFrom("auth.operator_account").where("username", "in", operators).execute();
}
