/**
 * Bad input on every documented operation of both surfaces never makes a 5xx: each path and
 * query parameter, in turn, carries a NUL, a byte that is not UTF-8, a lone surrogate, a very long
 * value and text where a number goes; each body is sent broken, as a JSON value of the wrong type,
 * and with a NUL in every string of the operation's own example; the credentials and every
 * documented header carry long, control, Latin-1 and malformed values. Every refusal is JSON with a
 * `detail`, as the spec's errors are.
 */
import { request as httpRequest } from "node:http";
import type { AddressInfo } from "node:net";
import { serve } from "@hono/node-server";
import { sql } from "kysely";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SCOPE_NAMES } from "../../api/auth/scopes.js";
import { createKey } from "../../api/keys.js";
import { type ApiHarness, setupApi } from "../api-harness.js";

interface Param {
  name: string;
  in: string;
}
interface Operation {
  parameters?: Param[];
  requestBody?: { content?: Record<string, { schema?: Schema; example?: unknown }> };
}
interface Schema {
  $ref?: string;
  type?: string | string[];
  example?: unknown;
  enum?: unknown[];
  pattern?: string;
  properties?: Record<string, Schema>;
  items?: Schema;
  anyOf?: Schema[];
  oneOf?: Schema[];
  allOf?: Schema[];
}
interface Doc {
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, Schema> };
}

const BASES = ["/v1", "/api/v1"] as const;
const METHODS = new Set(["get", "post", "put", "patch", "delete"]);
const ADDRESS = "0x00000000000000000000000000000000000000a1";
/** raw (already percent-encoded) values for one URL parameter */
const BAD_VALUES = ["a%00b", "%00", "%FF%FE", "%C0%80", "%ED%A0%80", "x".repeat(5000), "-1e999", "1.5", "%20"];
/** strings placed in a body: a NUL, a lone surrogate, nothing, something very long */
const BAD_STRINGS = ["\u0000", "a\u0000b", "\ud800", "", "9".repeat(5000)];

let h: ApiHarness;
let key: string;
const docs = new Map<string, Doc>();

beforeAll(async () => {
  h = await setupApi();
  key = (await createKey(h.db, "api-fuzz", [...SCOPE_NAMES])).key;
  for (const base of BASES) {
    const res = await h.app.request(`${base}/openapi.json`);
    docs.set(base, (await res.json()) as Doc);
  }
});

afterAll(async () => {
  await h?.close();
});

/** a value the parameter could take, so that only the parameter under test is bad */
function goodValue(p: Param): string {
  if (p.name === "chain" || p.name === "chain_id") return "1";
  if (/address|vault|owner|wallet|token|pool|user|account|delegate|safe|subaccount/i.test(p.name)) return ADDRESS;
  return "1";
}

function url(base: string, path: string, op: Operation, bad?: { p: Param; value: string }): string {
  const params = op.parameters ?? [];
  let u = base + path;
  for (const p of params.filter((x) => x.in === "path")) {
    u = u.replace(`{${p.name}}`, bad?.p === p ? bad.value : goodValue(p));
  }
  u = u.replaceAll(/\{[^}]+\}/g, ADDRESS);
  if (bad?.p.in === "query") u += `?${encodeURIComponent(bad.p.name)}=${bad.value}`;
  return u;
}

/** the schema's own example, else a value of its shape: every property, each of its type */
function sample(doc: Doc, s: Schema | undefined, depth = 0): unknown {
  if (!s || depth > 8) return null;
  if (s.$ref) return sample(doc, doc.components?.schemas?.[s.$ref.split("/").pop()!], depth + 1);
  if (s.example !== undefined) return s.example;
  if (s.enum?.length) return s.enum[0];
  const alt = s.anyOf ?? s.oneOf ?? s.allOf;
  if (alt?.length) return sample(doc, alt[0], depth + 1);
  const type = Array.isArray(s.type) ? s.type.find((t) => t !== "null") : s.type;
  if (type === "object" || s.properties) {
    const props = Object.entries(s.properties ?? {});
    return Object.fromEntries(props.map(([k, v]) => [k, sample(doc, v, depth + 1)]));
  }
  if (type === "array") return [sample(doc, s.items, depth + 1)];
  if (type === "integer" || type === "number") return 1;
  if (type === "boolean") return true;
  if (type === "string") return s.pattern?.includes("0x") ? ADDRESS : "1";
  return null;
}

function example(doc: Doc, op: Operation): unknown {
  const content = op.requestBody?.content?.["application/json"];
  if (!content) return undefined;
  return content.example ?? sample(doc, content.schema);
}

/** the example with every string, one at a time, replaced by `s` */
function* withEachString(v: unknown, s: string): Generator<unknown> {
  if (typeof v === "string") yield s;
  else if (Array.isArray(v)) {
    for (let i = 0; i < v.length; i++)
      for (const x of withEachString(v[i], s)) yield v.map((y, j) => (j === i ? x : y));
  } else if (v && typeof v === "object") {
    for (const [k, val] of Object.entries(v)) for (const x of withEachString(val, s)) yield { ...v, [k]: x };
  }
}

/** header values the Fetch API lets through: long, control characters, Latin-1, malformed credentials */
const BAD_HEADERS = ["x".repeat(5000), "a\u0001b", "caf\u00e9", " ", "Bearer", "Bearer a.b.c", `vk_${"0".repeat(300)}`];

async function send(
  method: string,
  u: string,
  body?: string | Uint8Array,
  extra: Record<string, string> = {},
): Promise<{ status: number; text: string }> {
  const headers: Record<string, string> = { "x-api-key": key, ...extra };
  if (body !== undefined) headers["content-type"] = "application/json";
  const res = await h.app.request(u, { method: method.toUpperCase(), headers, body });
  return { status: res.status, text: await res.text() };
}

function check(what: string, r: { status: number; text: string }, failures: string[]): void {
  if (r.status >= 500) failures.push(`${what}: ${r.status} ${r.text.slice(0, 200)}`);
  else if (r.status >= 400 && r.status !== 404 && r.status !== 405) {
    let detail: unknown;
    try {
      detail = (JSON.parse(r.text) as { detail?: unknown }).detail;
    } catch {
      detail = undefined;
    }
    if (detail === undefined) failures.push(`${what}: ${r.status} without a JSON detail: ${r.text.slice(0, 200)}`);
  }
}

describe("bad input never makes a 5xx", () => {
  for (const base of BASES) {
    it(`${base}: every path and query parameter`, async () => {
      const failures: string[] = [];
      let sent = 0;
      for (const [path, item] of Object.entries(docs.get(base)!.paths)) {
        for (const [method, op] of Object.entries(item)) {
          if (!METHODS.has(method)) continue;
          const body =
            method === "get" || method === "delete" ? undefined : JSON.stringify(example(docs.get(base)!, op) ?? {});
          for (const p of (op.parameters ?? []).filter((x) => x.in === "path" || x.in === "query")) {
            for (const value of BAD_VALUES) {
              const u = url(base, path, op, { p, value });
              check(`${method.toUpperCase()} ${u.slice(0, 160)}`, await send(method, u, body), failures);
              sent++;
            }
          }
        }
      }
      expect(sent).toBeGreaterThan(50);
      expect(failures).toEqual([]);
    });

    it(`${base}: every body`, async () => {
      const failures: string[] = [];
      let sent = 0;
      for (const [path, item] of Object.entries(docs.get(base)!.paths)) {
        for (const [method, op] of Object.entries(item)) {
          if (!METHODS.has(method) || method === "get" || method === "delete") continue;
          const u = url(base, path, op);
          const what = `${method.toUpperCase()} ${u}`;
          const bodies: (string | Uint8Array)[] = [
            "{",
            "[]",
            "null",
            '"x"',
            "1e999",
            // nested 200,000 deep, within the size limit
            `${"[".repeat(200_000)}${"]".repeat(200_000)}`,
            `{"a":${'{"a":'.repeat(100_000)}1${"}".repeat(100_001)}`,
            '{"a":"\\u0000"}',
            new Uint8Array([0x7b, 0x22, 0x61, 0x22, 0x3a, 0x22, 0xff, 0xfe, 0x22, 0x7d]),
          ];
          const ex = example(docs.get(base)!, op);
          for (const s of BAD_STRINGS) for (const b of withEachString(ex, s)) bodies.push(JSON.stringify(b));
          for (const b of bodies) {
            check(`${what} ${typeof b === "string" ? b.slice(0, 80) : "(bytes)"}`, await send(method, u, b), failures);
            sent++;
          }
        }
      }
      if (base === "/api/v1") expect(sent).toBeGreaterThan(200);
      expect(failures).toEqual([]);
    });
  }
});

describe("bad headers never make a 5xx", () => {
  for (const base of BASES) {
    it(`${base}: credentials and every documented header`, async () => {
      const failures: string[] = [];
      let sent = 0;
      for (const [path, item] of Object.entries(docs.get(base)!.paths)) {
        for (const [method, op] of Object.entries(item)) {
          if (!METHODS.has(method)) continue;
          const u = url(base, path, op);
          const body =
            method === "get" || method === "delete" ? undefined : JSON.stringify(example(docs.get(base)!, op) ?? {});
          const names = [
            "x-api-key",
            "authorization",
            ...(op.parameters ?? []).filter((p) => p.in === "header").map((p) => p.name),
          ];
          for (const name of names) {
            for (const value of BAD_HEADERS) {
              const extra: Record<string, string> = { [name]: value };
              check(
                `${method.toUpperCase()} ${u} ${name}: ${value.slice(0, 20)}`,
                await send(method, u, body, extra),
                failures,
              );
              sent++;
            }
          }
        }
      }
      expect(sent).toBeGreaterThan(20);
      expect(failures).toEqual([]);
    });
  }
});

describe("a NUL that reaches Postgres", () => {
  it("is the request's fault: 422 in the spec's shape, not a 500", async () => {
    // a route whose schema would let NUL through, as the app's error handler sees it
    const app = h.appWith({});
    app.get("/v1/nul-probe", async (c) => {
      await sql`SELECT ${"a\u0000b"}::text`.execute(h.db);
      return c.json({});
    });
    app.get("/v1/nul-probe-jsonb", async (c) => {
      await sql`SELECT ${'{"a":"\\u0000"}'}::jsonb`.execute(h.db);
      return c.json({});
    });
    for (const path of ["/v1/nul-probe", "/v1/nul-probe-jsonb"]) {
      const res = await app.request(path);
      expect(res.status, path).toBe(422);
      const body = (await res.json()) as { detail: { loc: string[]; msg: string; type: string }[] };
      expect(body.detail[0]!.msg).toMatch(/NUL/);
    }
  });

  it("strategist_name with a NUL is refused by validation, naming the field", async () => {
    const res = await send(
      "post",
      "/api/v1/vaults/pending-redemptions",
      JSON.stringify({ strategist_name: "a\u0000" }),
    );
    expect(res.status).toBe(422);
    const body = JSON.parse(res.text) as { detail: { loc: string[]; msg: string }[] };
    expect(body.detail[0]!.loc).toEqual(["body", "strategist_name"]);
    expect(body.detail[0]!.msg).toMatch(/NUL/);
  });
});

describe("request bodies over 1 MiB", () => {
  it("are refused with 413 before they are read, declared or chunked; smaller ones are not", async () => {
    const server = serve({ fetch: h.app.fetch, port: 0, hostname: "127.0.0.1" });
    await new Promise((r) => server.once("listening", r));
    const { port } = server.address() as AddressInfo;
    const path = "/api/v1/vaults/pending-redemptions";
    const big = JSON.stringify({ vault_addresses: ["x".repeat(2 << 20)] });
    const headers = { "content-type": "application/json", "x-api-key": key };
    try {
      // a declared length (fetch sends Content-Length)
      const declared = await fetch(`http://127.0.0.1:${port}${path}`, { method: "POST", headers, body: big });
      expect(declared.status).toBe(413);
      expect(((await declared.json()) as { detail: string }).detail).toMatch(/at most 1048576 bytes/);
      // chunked, no length: counted as it arrives
      const chunked = await new Promise<{ status: number; text: string }>((resolve, reject) => {
        const req = httpRequest(
          { port, host: "127.0.0.1", path, method: "POST", headers: { ...headers, "transfer-encoding": "chunked" } },
          (res) => {
            let text = "";
            res.on("data", (d: Buffer) => (text += d.toString()));
            res.on("end", () => resolve({ status: res.statusCode ?? 0, text }));
          },
        );
        req.on("error", reject);
        for (let i = 0; i < 40; i++) req.write("x".repeat(64 << 10));
        req.end();
      });
      expect(chunked.status).toBe(413);
      expect(JSON.parse(chunked.text).detail).toMatch(/too large/);
      // 900 KiB is within the limit: the route answers it (200, its errors per vault)
      const fine = JSON.stringify({
        vault_addresses: Array.from({ length: 1000 }, (_, i) => `0x${"0".repeat(898)}${i}`),
      });
      expect(fine.length).toBeGreaterThan(880_000);
      const ok = await fetch(`http://127.0.0.1:${port}${path}`, { method: "POST", headers, body: fine });
      expect(ok.status).not.toBe(413);
      expect(ok.status).toBeLessThan(500);
      // in process (app.request: no Content-Length), too
      const inProcess = await send("post", path, big);
      expect(inProcess.status).toBe(413);
    } finally {
      await new Promise((r) => server.close(r));
    }
  });
});
