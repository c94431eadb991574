/**
 * The OpenAPI documents against the running routes, for every operation of both surfaces:
 * - security: each operation's stated `security` is what the router enforces (no credential
 *   refused with 401 exactly when the document requires one; a bad key refused with 403 exactly
 *   when it names the key), with reads open and with API_READS_REQUIRE_KEY=1;
 * - types: the answers on the simulated data validate against the operation's own response
 *   schema (ajv, JSON Schema 2020-12 with formats), so a field served as a string where the
 *   document says number, or a date that is not one, fails here;
 * - examples: every JSON request body has an example, valid against its own schema.
 */
import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { App } from "../../api/app.js";
import { type ApiHarness, setupApi } from "../api-harness.js";

type Security = Record<string, string[]>[];
interface Operation {
  operationId?: string;
  summary?: string;
  description?: string;
  security?: Security;
  responses: Record<string, { content?: Record<string, { schema?: object }>; headers?: Record<string, object> }>;
  requestBody?: { content?: Record<string, { schema?: { $ref?: string; example?: unknown }; example?: unknown }> };
}
interface Doc {
  paths: Record<string, Record<string, Operation>>;
  components?: { schemas?: Record<string, object> };
}
const SURFACES = { "/v1": "public", "/api/v1": "institutional" } as const;
type Base = keyof typeof SURFACES;
const METHODS = new Set(["get", "post", "put", "patch", "delete"]);
const BAD_KEY = `vk_000000000000_${"0".repeat(40)}`;
const SOME_ADDRESS = "0x00000000000000000000000000000000000000a1";

let h: ApiHarness;
let closed: App;
const docs = new Map<string, Doc>();

async function loadDoc(app: App, base: Base): Promise<Doc> {
  const res = await app.request(`${base}/openapi.json`);
  expect(res.status).toBe(200);
  return (await res.json()) as Doc;
}

function operations(doc: Doc): { path: string; method: string; op: Operation }[] {
  const out: { path: string; method: string; op: Operation }[] = [];
  for (const [path, item] of Object.entries(doc.paths)) {
    for (const [method, op] of Object.entries(item)) if (METHODS.has(method)) out.push({ path, method, op });
  }
  return out;
}

/** A URL for the operation with placeholder path parameters (the key check runs before validation). */
const placeholderUrl = (base: Base, path: string) =>
  base + path.replaceAll(/\{chain\}/g, "1").replaceAll(/\{[^}]+\}/g, SOME_ADDRESS);

function request(app: App, method: string, url: string, headers: Record<string, string>) {
  const body = method === "get" || method === "delete" ? undefined : "{}";
  const h2 = body ? { ...headers, "content-type": "application/json" } : headers;
  return app.request(url, { method: method.toUpperCase(), headers: h2, body });
}

const PLATFORM = "contract-test";

beforeAll(async () => {
  h = await setupApi();
  // a strategy APY snapshot, so the list and per-vault answers have items to validate
  const [v] = await h.q<{ chain_id: number; address: string }>(
    "SELECT chain_id, address FROM indexer.vault ORDER BY chain_id, address LIMIT 1",
  );
  await h.db.deleteFrom("registry.strategy_apy_snapshot").where("platform_name", "=", PLATFORM).execute();
  await h.db
    .insertInto("registry.strategy_apy_snapshot")
    .values({
      vault_address: v!.address,
      chain: v!.chain_id,
      platform_name: PLATFORM,
      strategy_type: "lending",
      allocation: 1,
      apy: 0.05,
      points_apy: 0,
      strategist_address: null,
      snapshot_datetime: "2026-01-02T00:00:00Z",
    })
    .execute();
  closed = h.appWith({ readsRequireKey: true });
  for (const base of Object.keys(SURFACES) as Base[]) {
    docs.set(`open${base}`, await loadDoc(h.app, base));
    docs.set(`closed${base}`, await loadDoc(closed, base));
  }
});

afterAll(async () => {
  await h?.db.deleteFrom("registry.strategy_apy_snapshot").where("platform_name", "=", PLATFORM).execute();
  await h?.close();
});

describe("security: every operation as documented", () => {
  for (const setting of ["open", "closed"] as const) {
    for (const base of Object.keys(SURFACES) as Base[]) {
      it(`${SURFACES[base]} surface, reads ${setting}: 401 iff a credential is required, 403 iff a key is named`, async () => {
        const app = setting === "open" ? h.app : closed;
        const ops = operations(docs.get(`${setting}${base}`)!);
        expect(ops.length).toBeGreaterThan(3);
        for (const { path, method, op } of ops) {
          const what = `${method.toUpperCase()} ${base}${path} (reads ${setting})`;
          const security = op.security ?? [];
          const anonymous = security.length === 0 || security.some((s) => Object.keys(s).length === 0);
          const namesKey = security.some((s) => "ApiKeyHeader" in s);
          const url = placeholderUrl(base, path);
          const none = await request(app, method, url, {});
          if (anonymous) expect(none.status, what).not.toBe(401);
          else {
            expect(none.status, what).toBe(401);
            expect(op.responses["401"], `${what} documents its 401`).toBeDefined();
          }
          const bad = await request(app, method, url, { "x-api-key": BAD_KEY });
          if (namesKey) {
            expect(bad.status, what).toBe(403);
            expect(op.responses["403"], `${what} documents its 403`).toBeDefined();
          } else expect(bad.status, what).not.toBe(403);
        }
      });
    }
  }

  it("the public surface never needs a key; the institutional reads need one only when closed", () => {
    for (const setting of ["open", "closed"]) {
      for (const { op } of operations(docs.get(`${setting}/v1`)!)) expect(op.security).toContainEqual({});
    }
    // the reads the spec marks with a key need one whatever the setting
    const marked = ["/subaccounts", "/subaccounts/health_factor", "/subaccounts/summary"];
    const open = operations(docs.get("open/api/v1")!).filter((o) => o.method === "get" && o.path !== "/openapi.json");
    for (const { path, op } of open) {
      if (marked.includes(path)) expect(op.security, path).toEqual([{ ApiKeyHeader: [] }]);
      else expect(op.security ?? [{}], path).toContainEqual({});
    }
    const closedReads = operations(docs.get("closed/api/v1")!).filter((o) => o.method === "get");
    const stillOpen = closedReads.filter((o) => (o.op.security ?? []).some((s) => Object.keys(s).length === 0));
    expect(stillOpen.map((o) => o.path).sort()).toEqual(
      [
        "/ping",
        "/platform/strategist",
        "/platform/strategy_apy",
        "/platform/strategy_apy/{vault_address}",
        "/revert_reason",
        "/platform/lending_pool/loanbook",
        "/platform/lending_pool/subaccounts_loanbook",
        "/integrations/lending_vault/apy",
        "/integrations/perp_relayer_a/check_status",
        "/integrations/perp_relayer_b/check_status",
      ].sort(),
    );
  });
});

interface Sample {
  chain_id: number;
  address: string;
}
let vaults: Sample[] = [];
let wallets: string[] = [];
let txs: { chain_id: number; tx_hash: string }[] = [];
let subaccounts: string[] = [];
let pools: { chain_id: number; vault: string }[] = [];
let lendingVaults: { chain_id: number; vault: string; sub: string }[] = [];
let hashes: string[] = [];

describe("types: every answer validates against its operation's response schema", () => {
  beforeAll(async () => {
    vaults = await h.q<Sample>("SELECT chain_id, address FROM indexer.vault ORDER BY chain_id, address");
    wallets = (
      await h.q<{ wallet: string }>("SELECT wallet FROM derived.points_balance ORDER BY rank_total LIMIT 3")
    ).map((r) => r.wallet);
    subaccounts = (await h.q<{ address: string }>("SELECT DISTINCT address FROM registry.subaccount LIMIT 3")).map(
      (r) => r.address,
    );
    lendingVaults = await h.q(
      `SELECT p.chain_id, p.protocols->'morpho'->'lendingVaults'->>0 AS vault, min(s.address) AS sub
       FROM registry.chain_protocols p JOIN registry.subaccount s ON s.chain_id = p.chain_id GROUP BY 1, 2`,
    );
    expect(lendingVaults.length).toBeGreaterThan(0);
    hashes = (await h.q<{ h: string }>("SELECT core_hash AS h FROM indexer.perp_deposit ORDER BY id LIMIT 4")).map(
      (r) => r.h,
    );
    pools = await h.q("SELECT DISTINCT chain_id, vault FROM indexer.loan ORDER BY chain_id, vault");
    txs = await h.q("SELECT DISTINCT ON (chain_id) chain_id, tx_hash FROM indexer.vault_event ORDER BY chain_id, id");
    expect(vaults.length).toBeGreaterThan(1);
    expect(wallets.length).toBeGreaterThan(0);
  });

  /** Concrete requests for every operation that answers 200 with data (the writes have suites of their own). */
  function samples(path: string, method: string): string[] {
    const per = (f: (v: Sample) => string) => vaults.map(f);
    const table: Record<string, () => string[]> = {
      "get /": () => ["/"],
      "get /ping": () => ["/ping"],
      "get /tokenized_vaults": () => ["/tokenized_vaults", "/tokenized_vaults?status=active&load_snapshots=false"],
      "get /tokenized_vaults/{vault_address}": () =>
        per((v) => `/tokenized_vaults/${v.address}?chain_id=${v.chain_id}`),
      "get /tokenized_vaults/{vault_address}/annualized_apy": () =>
        per((v) => `/tokenized_vaults/${v.address}/annualized_apy?chain_id=${v.chain_id}`),
      "get /points/{user_address}": () => wallets.map((w) => `/points/${w}`),
      "get /tokenized_vault": () => ["/tokenized_vault", "/tokenized_vault?load_snapshots=false"],
      "get /tokenized_vault/{vault_address}": () => per((v) => `/tokenized_vault/${v.address}?chain_id=${v.chain_id}`),
      "get /tokenized_vault/annualized_apy/{vault_address}": () =>
        per((v) => `/tokenized_vault/annualized_apy/${v.address}?chain_id=${v.chain_id}`),
      "get /tokenized_vault/vault_summary/{vault_address}": () =>
        per((v) => `/tokenized_vault/vault_summary/${v.address}?chain_id=${v.chain_id}`),
      "get /tokenized_vault/{vault_address}/historical-timeseries": () =>
        per((v) => `/tokenized_vault/${v.address}/historical-timeseries?chain_id=${v.chain_id}&n_days=400`),
      "get /tokenized_vault/{vault_address}/portfolio_data": () =>
        per((v) => `/tokenized_vault/${v.address}/portfolio_data?chain_id=${v.chain_id}`),
      "get /platform/historical_apy/chart": () =>
        per((v) => `/platform/historical_apy/chart?vault_address=${v.address}&chain_id=${v.chain_id}&days_ago=-1`),
      "get /platform/strategy_apy": () => ["/platform/strategy_apy"],
      "get /platform/strategy_apy/{vault_address}": () => [],
      "get /platform/strategist": () => ["/platform/strategist"],
      "get /platform/unrealized_pnl": () =>
        per((v) => `/platform/unrealized_pnl?vault_address=${v.address}&chain_id=${v.chain_id}&limit=50`).concat(
          per(
            (v) => `/platform/unrealized_pnl?vault_address=${v.address}&chain_id=${v.chain_id}&fields=ratio&limit=50`,
          ),
        ),
      "get /platform/unrealized_pnl/latest": () => ["/platform/unrealized_pnl/latest"],
      "get /platform/vault_history/archived": () => ["/platform/vault_history/archived"],
      "get /platform/vault_history/{vault_address}": () =>
        per((v) => `/platform/vault_history/${v.address}?chain_id=${v.chain_id}&limit=200`).concat(
          per((v) => `/platform/vault_history/${v.address}?chain_id=${v.chain_id}&limit=2`),
        ),
      "get /vaults/{vault_address}/pending-redemptions": () =>
        per((v) => `/vaults/${v.address}/pending-redemptions?chain_id=${v.chain_id}&past_days=30&future_days=30`),
      "post /vaults/pending-redemptions": () => ["/vaults/pending-redemptions"],
      "get /withdrawals/{chain}/{vault_address}": () => per((v) => `/withdrawals/${v.chain_id}/${v.address}`),
      "get /platform/governance/{vault_address}/roles": () =>
        per((v) => `/platform/governance/${v.address}/roles?chain_id=${v.chain_id}`),
      "get /platform/governance/{vault_address}/permissions": () =>
        per((v) => `/platform/governance/${v.address}/permissions?chain_id=${v.chain_id}`),
      "get /platform/governance/{vault_address}/timelocks": () =>
        per((v) => `/platform/governance/${v.address}/timelocks?chain_id=${v.chain_id}&status=all`),
      "get /platform/governance/{vault_address}/audit_log": () =>
        per((v) => `/platform/governance/${v.address}/audit_log?chain_id=${v.chain_id}`),
      "get /platform/points/{user_address}": () => wallets.map((w) => `/platform/points/${w}`),
      "get /platform/points/leaderboard": () => [
        "/platform/points/leaderboard",
        "/platform/points/leaderboard?sortBy=streakDays&perPage=100",
        `/platform/points/leaderboard?wallet_address=${wallets[0]}`,
      ],
      "get /platform/points/daily_streak/status": () =>
        wallets.map((w) => `/platform/points/daily_streak/status?address=${w}`),
      "get /revert_reason": () => txs.map((t) => `/revert_reason?tx_hash=${t.tx_hash}&chain=${t.chain_id}`),
      "get /subaccounts": () => ["/subaccounts"],
      "get /integrations/perp_relayer_a/check_status": () =>
        [...hashes, `0x${"ab".repeat(32)}`].map((x) => `/integrations/perp_relayer_a/check_status?core_hash=${x}`),
      "get /integrations/perp_relayer_b/check_status": () =>
        hashes.map((x) => `/integrations/perp_relayer_b/check_status?core_hash=${x}`),
      "get /integrations/lending_vault/apy": () =>
        lendingVaults.map(
          (l) =>
            `/integrations/lending_vault/apy?vault_address=${l.vault}&subaccount_address=${l.sub}&chain=${l.chain_id}`,
        ),
      "get /platform/lending_pool/loanbook": () =>
        pools.flatMap((p) => [
          `/platform/lending_pool/loanbook?address=${p.vault}&chain=${p.chain_id}`,
          `/platform/lending_pool/loanbook?address=${p.vault}&chain=${p.chain_id}&active=true`,
        ]),
      "get /platform/lending_pool/subaccounts_loanbook": () =>
        pools.map((p) => `/platform/lending_pool/subaccounts_loanbook?address=${p.vault}&chain=${p.chain_id}`),
      "get /subaccounts/health_factor": () => subaccounts.map((a) => `/subaccounts/health_factor?address=${a}`),
      "get /subaccounts/summary": () =>
        subaccounts.flatMap((a) => [
          `/subaccounts/summary?address=${a}`,
          `/subaccounts/summary?address=${a}&denomination_address=USD`,
        ]),
    };
    const f = table[`${method} ${path}`];
    return f ? f() : [];
  }

  /** Strategy APY snapshots of a vault: only where some exist (404 otherwise). */
  async function strategySamples(): Promise<string[]> {
    const rows = await h.q<{ vault: string }>(
      "SELECT DISTINCT vault_address AS vault FROM registry.strategy_apy_snapshot LIMIT 2",
    );
    return rows.map((r) => `/platform/strategy_apy/${r.vault}`);
  }

  for (const base of Object.keys(SURFACES) as Base[]) {
    it(`${SURFACES[base]} surface`, async () => {
      const doc = docs.get(`open${base}`)!;
      const ajv = new Ajv2020({ strict: false, allErrors: true });
      addFormats(ajv);
      ajv.addSchema({ $id: "doc", components: doc.components ?? {} });
      let checked = 0;
      let pagedSeen = false;
      const missing: string[] = [];
      for (const { path, method, op } of operations(doc)) {
        if (path === "/openapi.json" || path === "/docs" || path.startsWith("/docs/")) continue;
        const urls =
          path === "/platform/strategy_apy/{vault_address}" ? await strategySamples() : samples(path, method);
        const ok = op.responses["200"] ?? op.responses["201"];
        if (!urls.length) {
          // writes and the token endpoint are exercised by the 6-api-writes suites
          const read = method === "get" || path === "/vaults/pending-redemptions";
          if (read) missing.push(`${method} ${path}`);
          continue;
        }
        const schema = ok?.content?.["application/json"]?.schema;
        expect(schema, `${method} ${path} documents its 200 body`).toBeDefined();
        const validate = ajv.compile(
          JSON.parse(JSON.stringify(schema).replaceAll('"#/components/', '"doc#/components/')),
        );
        for (const url of urls) {
          const res = await request(h.app, method, base + url, { "x-api-key": h.key });
          const what = `${method.toUpperCase()} ${base}${url}`;
          expect(res.status, what).toBe(200);
          const body: unknown = await res.json();
          const valid = validate(body);
          expect(valid ? [] : validate.errors!.slice(0, 5), what).toEqual([]);
          // the headers the answer carries are the ones its 200 documents (a cursor only on a full page)
          const declared = Object.keys(ok?.headers ?? {}).map((k) => k.toLowerCase());
          expect(res.headers.has("x-vault-chain"), what).toBe(declared.includes("x-vault-chain"));
          if (res.headers.has("x-next-before")) expect(declared, what).toContain("x-next-before");
          if (declared.includes("x-next-before")) pagedSeen ||= res.headers.has("x-next-before");
          // the seeded snapshot: these lists validate with an item in them
          if (path.startsWith("/platform/strategy_apy")) expect((body as unknown[]).length, what).toBeGreaterThan(0);
          checked++;
        }
      }
      expect(missing, "every read route has a sample here").toEqual([]);
      if (base === "/api/v1") expect(pagedSeen, "a full page with its X-Next-Before cursor").toBe(true);
      expect(checked).toBeGreaterThan(5);
    });
  }
});

describe("documents: every operation says what it does", () => {
  for (const base of Object.keys(SURFACES) as Base[]) {
    it(`${SURFACES[base]} surface: a summary and a description`, () => {
      const doc = docs.get(`open${base}`)!;
      const missing = operations(doc)
        .filter(({ op }) => !op.summary?.trim() || !op.description?.trim())
        .map(({ path, method }) => `${method.toUpperCase()} ${base}${path}`);
      expect(missing).toEqual([]);
    });

    it(`${SURFACES[base]} surface: an operationId, unique in the document`, () => {
      const ids = operations(docs.get(`open${base}`)!).map(({ op }) => op.operationId);
      expect(ids.filter((id) => !/^[A-Za-z][0-9A-Za-z_]*$/.test(id ?? ""))).toEqual([]);
      expect(new Set(ids).size).toBe(ids.length);
    });
  }
});

describe("request bodies: every one has an example its schema accepts", () => {
  for (const base of Object.keys(SURFACES) as Base[]) {
    it(`${SURFACES[base]} surface`, () => {
      const doc = docs.get(`open${base}`)!;
      const ajv = new Ajv2020({ strict: false, allErrors: true });
      addFormats(ajv);
      ajv.addSchema({ $id: "doc", components: doc.components ?? {} });
      const problems: string[] = [];
      for (const { path, method, content, type } of operations(doc).flatMap((o) =>
        Object.entries(o.op.requestBody?.content ?? {}).map(([type, content]) => ({ ...o, content, type })),
      )) {
        if (!content?.schema) continue;
        const what = `${method.toUpperCase()} ${base}${path} (${type})`;
        const named = content.schema.$ref?.split("/").pop();
        const example =
          content.example ??
          content.schema.example ??
          (named ? (doc.components?.schemas?.[named] as { example?: unknown } | undefined)?.example : undefined);
        if (example === undefined) {
          problems.push(`${what}: no example`);
          continue;
        }
        const validate = ajv.compile(
          JSON.parse(JSON.stringify(content.schema).replaceAll('"#/components/', '"doc#/components/')),
        );
        if (!validate(example)) problems.push(`${what}: ${JSON.stringify(validate.errors!.slice(0, 3))}`);
      }
      expect(problems).toEqual([]);
    });
  }
});

describe("the multi-chain rule, on every route about one vault", () => {
  it("chain_id or chain picks the chain, the lowest by default, X-Vault-Chain names it; disagreeing ones 422, unknown ones ignored", async () => {
    const doc = docs.get("open/api/v1")!;
    const pub = docs.get("open/v1")!;
    const multi = (
      await h.q<{ address: string; chains: number[] }>(
        "SELECT address, array_agg(chain_id ORDER BY chain_id) AS chains FROM indexer.vault GROUP BY address HAVING count(*) > 1 LIMIT 1",
      )
    )[0]!;
    expect(multi.chains.length).toBe(2);
    const [lowest, other] = multi.chains as [number, number];
    const routes = [
      ...operations(doc).map((o) => ({ ...o, base: "/api/v1" as Base })),
      ...operations(pub).map((o) => ({ ...o, base: "/v1" as Base })),
    ].filter(({ op }) =>
      ((op as { parameters?: { name: string; in: string }[] }).parameters ?? []).some(
        (p) => p.in === "query" && p.name === "chain_id",
      ),
    );
    expect(routes.length).toBeGreaterThanOrEqual(15);
    for (const { path, method, op, base } of routes) {
      const names = ((op as { parameters?: { name: string; in: string }[] }).parameters ?? []).map((p) => p.name);
      expect(names, path).toContain("chain");
      const sample = samplePath(path, method, multi.address);
      const url = (extra: string) => `${base}${sample}${sample.includes("?") ? "&" : "?"}${extra}`.replace(/[?&]$/, "");
      const what = `${method.toUpperCase()} ${base}${path}`;
      const plain = await request(h.app, method, url(""), {});
      expect(plain.status, what).toBe(200);
      expect(plain.headers.get("x-vault-chain"), what).toBe(String(lowest));
      for (const q of [`chain_id=${other}`, `chain=${other}`, `chain_id=${other}&chain=${other}`]) {
        const r = await request(h.app, method, url(q), {});
        expect(r.status, `${what} ${q}`).toBe(200);
        expect(r.headers.get("x-vault-chain"), `${what} ${q}`).toBe(String(other));
      }
      const clash = await request(h.app, method, url(`chain_id=${lowest}&chain=${other}`), {});
      expect(clash.status, what).toBe(422);
      expect(((await clash.json()) as { detail: { loc: string[] }[] }).detail[0]!.loc, what).toEqual([
        "query",
        "chain",
      ]);
      // a parameter the route does not know is ignored, as FastAPI ignores one: the default chain
      const typo = await request(h.app, method, url(`chian=${other}`), {});
      expect(typo.status, what).toBe(200);
      expect(typo.headers.get("x-vault-chain"), what).toBe(String(lowest));
    }
  });
});

/** The operation's path for `address` with its required parameters, without a chain. */
function samplePath(path: string, method: string, address: string): string {
  const fill = path.replaceAll("{vault_address}", address);
  const required: Record<string, string> = {
    "get /platform/unrealized_pnl": `?vault_address=${address}`,
    "get /platform/historical_apy/chart": `?vault_address=${address}`,
  };
  return fill + (required[`${method} ${path}`] ?? "");
}
