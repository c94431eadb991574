/**
 * What the two OpenAPI documents say about values: every property a handler can answer null
 * accepts null (a named schema's nullable use is `anyOf: [{$ref}, {type: "null"}]`, never an
 * `allOf` that still asks for the `$ref`), and every chain parameter lists the chain ids its route
 * takes. The documents come from an app with no database, as `/openapi.json` serves them.
 */
import { createRoute, OpenAPIHono, z } from "@hono/zod-openapi";
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { beforeAll, describe, expect, it } from "vitest";
import { CHAIN_IDS, EVM_CHAIN_IDS } from "../../../config/chains.js";
import { createApp } from "../../app.js";
import { type AppDeps, createRouter, type Router } from "../../lib/router.js";
import { registerRoutes } from "../index.js";

type Schema = Record<string, unknown>;
interface Parameter {
  name: string;
  in: string;
  schema: Schema;
}
interface Doc {
  paths: Record<string, Record<string, { parameters?: Parameter[] }>>;
  components: { schemas: Record<string, Schema> };
}

const noDatabase = new Proxy(
  {},
  {
    get(_, prop) {
      throw new Error(`the documents read the database (${String(prop)})`);
    },
  },
) as AppDeps["db"];

const docs = new Map<string, Doc>();
beforeAll(async () => {
  const config = { indexerSchema: "indexer", rpcUrls: new Map<number, string>(), corsOrigins: [] };
  const app = createApp({
    db: noDatabase,
    config: { ...config, rateLimitPerMinute: 600 },
    redis: null,
    now: () => new Date(),
  });
  for (const base of ["/v1", "/api/v1"]) {
    const res = await app.request(`${base}/openapi.json`);
    expect(res.status).toBe(200);
    docs.set(base, (await res.json()) as Doc);
  }
});

/** Every schema object of `node`, with where it is. */
function* schemas(node: unknown, at: string): Generator<[Schema, string]> {
  if (node == null || typeof node !== "object") return;
  if (Array.isArray(node)) {
    for (const [i, x] of node.entries()) yield* schemas(x, `${at}/${i}`);
    return;
  }
  yield [node as Schema, at];
  for (const [k, v] of Object.entries(node)) yield* schemas(v, `${at}/${k}`);
}

const typeHasNull = (s: unknown) => {
  const t = (s as Schema | null)?.type;
  return t === "null" || (Array.isArray(t) && t.includes("null"));
};

/** Does `schema` (of `doc`, `$ref`s resolved against its components) accept `value`? */
function accepts(doc: Doc, schema: unknown, value: unknown): boolean {
  const ajv = new Ajv2020({ strict: false });
  addFormats(ajv);
  ajv.addSchema({ $id: "doc", components: doc.components });
  const local = JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"doc#/components/'));
  return ajv.compile(local)(value) as boolean;
}

/** The schema at a `/`-separated path of the document. */
function at(doc: Doc, path: string): unknown {
  let n: unknown = doc;
  for (const k of path.split("/")) n = (n as Record<string, unknown> | undefined)?.[k];
  return n;
}

describe("nullable properties", () => {
  it("no allOf asks for a named schema and null together (the $ref refuses null), in either document", () => {
    const wrong: string[] = [];
    for (const [base, doc] of docs) {
      for (const [s, where] of schemas(doc, base)) {
        const all = s.allOf as Schema[] | undefined;
        if (all?.some((x) => typeof x.$ref === "string") && all.some(typeHasNull)) wrong.push(where);
      }
    }
    expect(wrong).toEqual([]);
  });

  it("no named component is nullable itself (a nullable use would have made it so for every use)", () => {
    for (const [base, doc] of docs) {
      const nullable = Object.entries(doc.components.schemas).filter(([, s]) => typeHasNull(s));
      expect(
        nullable.map(([name]) => name),
        base,
      ).toEqual([]);
    }
  });

  it("every property the handlers answer null with accepts null, and a value of its named schema", () => {
    const units = { raw: "1500000", amount: 1.5 };
    const strategist = { strategist_name: null, strategist_logo: null, id: "0b5f6f1e-6a3f-4bd4-9f0e-2f1c2d3e4f50" };
    const cases: [string, string, unknown][] = [
      ["/v1", "components/schemas/VaultSubaccountPublic/properties/strategist", strategist],
      ["/api/v1", "components/schemas/VaultSubaccount/properties/strategist", { ...strategist, website_url: null }],
      ["/api/v1", "components/schemas/LendingMarketTransaction/allOf/1/properties/amount", units],
      ["/api/v1", "components/schemas/SwapQuote/properties/fair_out", units],
      ["/api/v1", "components/schemas/SwapCandidate/properties/expected_out", units],
      ["/api/v1", "components/schemas/SwapCandidate/properties/minimum_out", units],
      ["/api/v1", "components/schemas/SwapCandidate/properties/simulation/properties/amount_out", units],
      [
        "/api/v1",
        "components/schemas/SwapCandidate/properties/reason",
        { kind: "k", name: "n", message: "m", data: "0x" },
      ],
      ["/v1", "components/schemas/TokenizedVaultPublic/properties/asset", { address: "0x1", symbol: "A", decimals: 6 }],
      ["/api/v1", "components/schemas/TokenizedVault/properties/asset", { address: "0x1", symbol: "A", decimals: 6 }],
      ["/api/v1", "components/schemas/TokenizedVault/properties/reported_apy", undefined],
      ["/api/v1", "components/schemas/TokenizedVault/properties/instant_redeem_config", undefined],
      ["/api/v1", "components/schemas/TokenizedVault/properties/solana_vault_metadata", undefined],
      ["/api/v1", "components/schemas/TokenizedVault/properties/stellar_vault_metadata", undefined],
      ["/api/v1", "components/schemas/VaultSummary/properties/latest_snapshot", undefined],
    ];
    for (const [base, path, value] of cases) {
      const doc = docs.get(base)!;
      const schema = at(doc, path);
      expect(schema, `${base} ${path}`).toBeDefined();
      expect(accepts(doc, schema, null), `${base} ${path} accepts null`).toBe(true);
      expect(schema, `${base} ${path}`).toMatchObject({ anyOf: [{ $ref: expect.any(String) }, { type: "null" }] });
      if (value !== undefined) expect(accepts(doc, schema, value), `${base} ${path} accepts a value`).toBe(true);
    }
  });

  it("no route schema calls .nullable() on a named schema (use nullableRef)", () => {
    // every `.nullable()` of the routes' request and response schemas, with where it is
    const sites: { where: string; inner: z.ZodType }[] = [];
    const seen = new Set<unknown>();
    const walk = (s: unknown, where: string): void => {
      const def = (s as { _zod?: { def: Record<string, unknown> } } | null)?._zod?.def;
      if (!def || seen.has(s)) return;
      seen.add(s);
      if (def.type === "nullable") sites.push({ where, inner: def.innerType as z.ZodType });
      for (const [k, v] of Object.entries(def)) {
        if (k === "getter" && typeof v === "function") walk(v(), where);
        else if (k === "shape") for (const [f, x] of Object.entries(v as object)) walk(x, `${where}.${f}`);
        else if (Array.isArray(v)) for (const x of v) walk(x, where);
        else walk(v, k === "element" ? `${where}[]` : where);
      }
    };
    const pub = createRouter();
    const inst = createRouter();
    registerRoutes({ pub, inst });
    for (const [name, r] of [
      ["/v1", pub],
      ["/api/v1", inst],
    ] as [string, Router][]) {
      for (const d of r.openAPIRegistry.definitions) {
        if (d.type !== "route") continue;
        const { method, path, request, responses } = d.route;
        const op = `${method.toUpperCase()} ${name}${path}`;
        for (const [k, v] of Object.entries(request ?? {})) {
          const bodies =
            k === "body" ? Object.values((v as { content: Record<string, { schema: unknown }> }).content) : [];
          if (k === "body") for (const c of bodies) walk(c.schema, `${op} body`);
          else walk(v, `${op} ${k}`);
        }
        for (const [status, res] of Object.entries(responses)) {
          const content = (res as { content?: Record<string, { schema: unknown }> }).content ?? {};
          for (const c of Object.values(content)) walk(c.schema, `${op} ${status}`);
        }
      }
    }
    expect(sites.length).toBeGreaterThan(100);
    // which of them are named: the ones a document writes as a $ref
    const probe = new OpenAPIHono();
    const shape = Object.fromEntries(sites.map((s, i) => [`s${i}`, s.inner]));
    const route = createRoute({
      method: "get",
      path: "/probe",
      responses: { 200: { description: "", content: { "application/json": { schema: z.object(shape) } } } },
    });
    probe.openapi(route, (c) => c.json({} as never));
    type Json = { content: Record<string, { schema: { properties: Record<string, Schema> } }> };
    const doc = probe.getOpenAPI31Document({ openapi: "3.1.0", info: { title: "probe", version: "0" } }) as unknown as {
      paths: Record<string, { get: { responses: Record<string, Json> } }>;
    };
    const body = doc.paths["/probe"]!.get.responses["200"]!.content["application/json"]!.schema.properties;
    const named = sites.filter((_, i) => {
      const p = body[`s${i}`] as Schema;
      return typeof p.$ref === "string" || (p.allOf as Schema[] | undefined)?.some((x) => typeof x.$ref === "string");
    });
    expect(named.map((s) => s.where)).toEqual([]);
  });
});

describe("chain parameters", () => {
  it("list the chain ids their route takes: the spec's chain list, or its EVM chains where only those are taken", () => {
    const evmOnly = new Set(["GET /api/v1/revert_reason chain", "GET /api/v1/platform/points/leaderboard chain"]);
    const found: string[] = [];
    for (const [base, doc] of docs) {
      for (const [path, item] of Object.entries(doc.paths)) {
        for (const [method, op] of Object.entries(item)) {
          for (const p of op.parameters ?? []) {
            if (!/^(chain|chain_id|denomination_chain)$/.test(p.name)) continue;
            const what = `${method.toUpperCase()} ${base}${path} ${p.name}`;
            found.push(what);
            expect(p.schema.type, what).toBe("integer");
            expect(p.schema.enum, what).toEqual(evmOnly.has(what) ? EVM_CHAIN_IDS : CHAIN_IDS);
          }
        }
      }
    }
    expect(found).toEqual(
      expect.arrayContaining([...evmOnly, "GET /api/v1/withdrawals/{chain}/{vault_address} chain"]),
    );
    expect(found.length).toBeGreaterThan(30);
  });
});

describe("described figures", () => {
  it("daily_apy is the day's growth compounded over 365 days", () => {
    const s = at(docs.get("/api/v1")!, "components/schemas/HistoricalTimeSeriesPoint/properties/daily_apy") as Schema;
    expect(s.description).toMatch(/compounded over 365 days/);
    expect(s.description).not.toMatch(/simple/);
  });
});
