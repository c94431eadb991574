/**
 * Operator accounts and bearer tokens (issue 5): POST /api/v1/token (OAuth 2.0 password flow,
 * form fields) and POST /api/v1/platform/strategy_apy with the token or an API key: wrong
 * password, disabled account, a token without the scope, an expired or forged token; the
 * snapshots and audit rows written; 422 bodies; the OpenAPI document's security schemes and
 * write routes.
 */
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createOperator, updateOperator } from "../../api/auth/operators.js";
import { SCOPE_NAMES } from "../../api/auth/scopes.js";
import { ACCOUNT_CACHE_MS, ensureTokenSecret, issueToken } from "../../api/auth/tokens.js";
import { createKey, KEY_CACHE_MS, revokeKey } from "../../api/keys.js";
import { type ApiHarness, setupApi } from "../api-harness.js";
import {
  auditOf,
  dropCredentialTraces,
  type Invalid,
  newAudits,
  postForm,
  type Refused,
  send,
} from "../write-helpers.js";

const TOKEN = "/api/v1/token";
const APY = "/api/v1/platform/strategy_apy";
const PASSWORD = "correct horse battery staple";

let h: ApiHarness;
let apyKey: { id: string; key: string };
const keyIds: string[] = [];
const operators: string[] = [];
const snapshotIds = new Set<string>();
let vaults: { chain_id: number; address: string; strategist: string | null }[];

type Token = { access_token: string; token_type: string; expires_in: number; scope: string };
type Snapshot = {
  id: string;
  vault_address: string;
  chain: number;
  platform_name: string;
  strategy_type: string;
  allocation: number;
  apy: number;
  points_apy: number;
  strategist_address: string | null;
  snapshot_datetime: string;
};

async function operator(name: string, scopes: string[]): Promise<string> {
  const username = `w6-${name}-${Date.now()}`;
  await createOperator(h.db, username, PASSWORD, scopes);
  operators.push(username);
  return username;
}
const token = (fields: Record<string, string>, multipart = false) =>
  postForm<Token & Refused & Invalid>(h.app, TOKEN, fields, multipart);
const bearer = async (username: string) => {
  const r = await token({ username, password: PASSWORD });
  expect(r.status, JSON.stringify(r.body)).toBe(200);
  return r.body.access_token;
};
const snapshot = (i = 0, extra: Record<string, unknown> = {}) => ({
  vault_address: vaults[i]!.address,
  chain: vaults[i]!.chain_id,
  platform_name: "w6 platform",
  strategy_type: "lending",
  allocation: 0.25,
  apy: 0.071,
  points_apy: 0.004,
  ...extra,
});
const postApy = async (body: unknown, headers: Record<string, string>) => {
  const r = await send<Snapshot[] & Refused & Invalid>(h.app, "POST", APY, body, headers);
  if (r.status === 201) for (const s of r.body) snapshotIds.add(s.id);
  return r;
};
const snapshotCount = async () =>
  (await h.q<{ n: number }>("SELECT count(*)::int AS n FROM registry.strategy_apy_snapshot"))[0]!.n;

beforeAll(async () => {
  h = await setupApi();
  apyKey = await createKey(h.db, "w6-apy", ["strategy_apy:write"]);
  keyIds.push(apyKey.id);
  vaults = await h.q(
    `SELECT v.chain_id, v.address, s.address AS strategist FROM registry.vault v LEFT JOIN registry.strategist s ON s.id = v.strategist_id
     WHERE v.chain_id > 0 ORDER BY v.chain_id, v.address`,
  );
  expect(vaults.length).toBeGreaterThanOrEqual(2);
}, 600_000);

afterAll(async () => {
  if (h) {
    if (snapshotIds.size)
      await h.db
        .deleteFrom("registry.strategy_apy_snapshot")
        .where("id", "in", [...snapshotIds])
        .execute();
    await dropCredentialTraces(h, keyIds, operators);
  }
  await h?.close();
});

describe("POST /api/v1/token (OAuth 2.0 password flow)", () => {
  it("an operator's username and password (urlencoded or multipart form) give a bearer token with the account's scopes", async () => {
    const u = await operator("apy", ["strategy_apy:write"]);
    for (const multipart of [false, true]) {
      const r = await token({ username: u, password: PASSWORD, grant_type: "password" }, multipart);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body).toEqual({
        access_token: expect.stringMatching(/^[\w-]+\.[\w-]+\.[\w-]+$/),
        token_type: "bearer",
        expires_in: 900,
        scope: "strategy_apy:write",
      });
      expect(r.res.headers.get("cache-control")).toBe("no-store");
    }
  });

  it("`scope` narrows the token to some of the account's scopes; a scope the account lacks is 400 invalid_scope", async () => {
    const u = await operator("two", ["strategy_apy:write", "rewards:write"]);
    const all = await token({ username: u, password: PASSWORD });
    expect(all.body.scope.split(" ").sort()).toEqual(["rewards:write", "strategy_apy:write"]);
    const narrow = await token({ username: u, password: PASSWORD, scope: "rewards:write" });
    expect(narrow.body.scope).toBe("rewards:write");
    // the narrowed token cannot store APY snapshots
    const r = await postApy([snapshot()], { authorization: `Bearer ${narrow.body.access_token}` });
    expect(r.status).toBe(403);
    expect(r.body.code).toBe("insufficient_scope");
    const wide = await token({ username: u, password: PASSWORD, scope: "rewards:write points:write" });
    expect(wide.status).toBe(400);
    expect(wide.body).toEqual({ detail: expect.stringContaining("points:write"), code: "invalid_scope" });
  });

  it("wrong password, unknown user, disabled account: 401 with WWW-Authenticate, the same answer for each", async () => {
    const u = await operator("off", ["strategy_apy:write"]);
    const wrong = await token({ username: u, password: `${PASSWORD}!` });
    const unknown = await token({ username: `${u}-nobody`, password: PASSWORD });
    const nul = await token({ username: `${u}\u0000`, password: PASSWORD }); // no name holds NUL
    await updateOperator(h.db, u, { disabled: true });
    const disabled = await token({ username: u, password: PASSWORD });
    for (const r of [wrong, unknown, nul, disabled]) {
      expect(r.status).toBe(401);
      expect(r.body).toEqual({ detail: "Incorrect username or password" });
      expect(r.res.headers.get("www-authenticate")).toBe("Bearer");
    }
    // enabled again, it works again
    await updateOperator(h.db, u, { disabled: false });
    expect((await token({ username: u, password: PASSWORD })).status).toBe(200);
  });

  it("a username's 11th failed attempt in 300 s is 429 with Retry-After; other names and good logins are not held", async () => {
    const u = await operator("guess", ["strategy_apy:write"]);
    const other = await operator("guess2", ["strategy_apy:write"]);
    for (let i = 0; i < 5; i++) expect((await token({ username: u, password: PASSWORD })).status).toBe(200);
    for (let i = 0; i < 10; i++) expect((await token({ username: u, password: `wrong-${i}` })).status).toBe(401);
    const held = await token({ username: u, password: PASSWORD });
    expect(held.status).toBe(429);
    expect(held.body.detail).toMatch(/Too many login attempts for this username: 10 per 300 s/);
    expect(Number(held.res.headers.get("retry-after"))).toBeGreaterThan(0);
    expect((await token({ username: other, password: `${PASSWORD}!` })).status).toBe(401);
    expect((await token({ username: other, password: PASSWORD })).status).toBe(200);
  });

  it("400 unsupported_grant_type; 422 for missing fields or a JSON body", async () => {
    const u = await operator("grant", ["strategy_apy:write"]);
    const grant = await token({ username: u, password: PASSWORD, grant_type: "client_credentials" });
    expect(grant.status).toBe(400);
    expect(grant.body.code).toBe("unsupported_grant_type");
    const noPassword = await token({ username: u });
    expect(noPassword.status).toBe(422);
    expect(noPassword.body.detail).toEqual([{ loc: ["body", "password"], msg: "Field required", type: "missing" }]);
    const none = await token({});
    expect(none.body.detail.map((d) => d.loc)).toEqual([
      ["body", "username"],
      ["body", "password"],
    ]);
    const json = await send<Invalid>(h.app, "POST", TOKEN, { username: u, password: PASSWORD });
    expect(json.status).toBe(422);
    expect(json.body.detail[0]!.loc[0]).toBe("body");
    // the answer asks for a form, the body this route takes, not for JSON
    expect(json.body.detail[0]!.msg).toMatch(/form body.*x-www-form-urlencoded/);
    const bare = await h.app.request(TOKEN, { method: "POST", body: `username=${u}&password=${PASSWORD}` });
    expect(bare.status).toBe(422);
    expect(((await bare.json()) as Invalid).detail[0]!.msg).toMatch(/form body/);
    // a content type with parameters is still a form
    const withCharset = await h.app.request(TOKEN, {
      method: "POST",
      headers: { "content-type": "application/x-www-form-urlencoded; charset=utf-8" },
      body: `username=${encodeURIComponent(u)}&password=${encodeURIComponent(PASSWORD)}`,
    });
    expect(withCharset.status).toBe(200);
  });
});

describe("POST /api/v1/platform/strategy_apy with a bearer token or an API key", () => {
  it("a bearer token with strategy_apy:write stores the snapshots (201, as read), audited as the operator", async () => {
    const u = await operator("writer", ["strategy_apy:write"]);
    const t = await bearer(u);
    const n0 = await snapshotCount();
    const body = [
      snapshot(0),
      snapshot(1, {
        vault_address: vaults[1]!.address.toUpperCase().replace("0X", "0x"),
        allocation: 0.75,
        apy: -0.01,
      }),
    ];
    const r = await postApy(body, { authorization: `Bearer ${t}` });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body).toHaveLength(2);
    expect(r.body.map((s) => ({ ...s, id: "", snapshot_datetime: "" }))).toEqual([
      { ...snapshot(0), strategist_address: vaults[0]!.strategist, id: "", snapshot_datetime: "" },
      {
        ...snapshot(1, { allocation: 0.75, apy: -0.01 }),
        strategist_address: vaults[1]!.strategist,
        id: "",
        snapshot_datetime: "",
      },
    ]);
    expect(r.body[0]!.snapshot_datetime).toBe(r.body[1]!.snapshot_datetime);
    expect(await snapshotCount()).toBe(n0 + 2);
    const stored = await h.q<{ id: string; vault_address: string; allocation: number }>(
      "SELECT id::text, vault_address, allocation FROM registry.strategy_apy_snapshot WHERE id = ANY($1::uuid[]) ORDER BY allocation",
      [r.body.map((s) => s.id)],
    );
    expect(stored).toEqual([
      { id: r.body[0]!.id, vault_address: vaults[0]!.address, allocation: 0.25 },
      { id: r.body[1]!.id, vault_address: vaults[1]!.address, allocation: 0.75 },
    ]);
    const audits = await auditOf(h, u);
    expect(audits).toEqual([
      expect.objectContaining({
        principal_kind: "operator",
        principal_id: u,
        action: "strategy_apy.create",
        target: `${vaults[0]!.chain_id}:${vaults[0]!.address},${vaults[1]!.chain_id}:${vaults[1]!.address}`,
        method: "POST",
        path: APY,
        status: 201,
        outcome: "ok",
        code: null,
        detail: { snapshots: 2, ids: r.body.map((s) => s.id) },
      }),
    ]);
    // and the read route serves them
    const list = await h.json<Snapshot[]>(APY, { key: null });
    expect(list.body.map((s) => s.id)).toEqual(expect.arrayContaining(r.body.map((s) => s.id)));
  });

  it("an API key with strategy_apy:write works too (audited as the key)", async () => {
    const before = (await auditOf(h, apyKey.id)).length;
    const r = await postApy([snapshot(0, { platform_name: "w6 via key" })], { "x-api-key": apyKey.key });
    expect(r.status).toBe(201);
    expect(
      (await newAudits(h, apyKey.id, before)).map((a) => [a.principal_kind, a.action, a.status, a.outcome]),
    ).toEqual([["api_key", "strategy_apy.create", 201, "ok"]]);
  });

  it("numbers written as text are read as FastAPI (pydantic) reads them", async () => {
    const lax = snapshot(0, { chain: String(vaults[0]!.chain_id), apy: "0.05", allocation: " 1e-1 ", points_apy: "0" });
    const r = await postApy([{ ...lax, platform_name: "w6 as text" }], { "x-api-key": apyKey.key });
    expect(r.status).toBe(201);
    expect(r.body).toEqual([
      expect.objectContaining({ chain: vaults[0]!.chain_id, apy: 0.05, allocation: 0.1, points_apy: 0 }),
    ]);
  });

  it("a token lacking the scope 403 insufficient_scope; expired, forged, malformed or no token 401 invalid_token", async () => {
    const n0 = await snapshotCount();
    const rewardsOnly = await operator("rewards", ["rewards:write"]);
    const noScope = await postApy([snapshot()], { authorization: `Bearer ${await bearer(rewardsOnly)}` });
    expect(noScope.status).toBe(403);
    expect(noScope.body).toEqual({ detail: expect.stringContaining("strategy_apy:write"), code: "insufficient_scope" });

    const u = await operator("expired", ["strategy_apy:write"]);
    const secret = await ensureTokenSecret(h.db);
    const nowS = Math.floor(Date.now() / 1000);
    const expired = (await issueToken(secret, u, ["strategy_apy:write"], 900, nowS - 3600)).access_token;
    const r = await postApy([snapshot()], { authorization: `Bearer ${expired}` });
    expect(r.status).toBe(401);
    expect(r.body).toEqual({ detail: "Bearer token expired", code: "invalid_token" });
    expect(r.res.headers.get("www-authenticate")).toMatch(/^Bearer error="invalid_token"/);
    // the same claims, valid now, work: only the expiry differed
    const valid = (await issueToken(secret, u, ["strategy_apy:write"], 900, nowS)).access_token;
    expect((await postApy([snapshot()], { authorization: `Bearer ${valid}` })).status).toBe(201);

    const forgedKey = (
      await issueToken("not-the-deployment-secret-but-long-enough-0123456789", u, ["strategy_apy:write"], 900, nowS)
    ).access_token;
    const [hdr, payload, sig] = valid.split(".");
    const tampered = `${hdr}.${payload}.${sig!.slice(0, -2)}${sig!.endsWith("AA") ? "BB" : "AA"}`;
    const scopeRaised = (await issueToken(secret, rewardsOnly, ["rewards:write"], 900, nowS)).access_token.split(".");
    const liedScope = `${scopeRaised[0]}.${Buffer.from(JSON.stringify({ ...JSON.parse(Buffer.from(scopeRaised[1]!, "base64url").toString()), scope: "strategy_apy:write" })).toString("base64url")}.${scopeRaised[2]}`;
    for (const [what, auth] of [
      ["another secret", `Bearer ${forgedKey}`],
      ["tampered signature", `Bearer ${tampered}`],
      ["payload edited to add the scope", `Bearer ${liedScope}`],
      ["not a JWT", "Bearer not-a-token"],
      ["not Bearer", `Basic ${Buffer.from(`${u}:${PASSWORD}`).toString("base64")}`],
    ] as const) {
      const x = await postApy([snapshot()], { authorization: auth });
      expect(x.status, what).toBe(401);
      expect(x.body.code, what).toBe("invalid_token");
      expect(x.res.headers.get("www-authenticate"), what).toMatch(/^Bearer/);
    }
    const none = await postApy([snapshot()], {});
    expect(none.status).toBe(401);
    expect(none.res.headers.get("www-authenticate")).toBe("Bearer");
    expect(await snapshotCount()).toBe(n0 + 1);
  });

  it("the token of an account disabled after it was issued stops working (401)", async () => {
    const u = await operator("later-off", ["strategy_apy:write"]);
    const t = await bearer(u);
    await updateOperator(h.db, u, { disabled: true });
    const r = await postApy([snapshot()], { authorization: `Bearer ${t}` });
    expect(r.status).toBe(401);
    expect(r.body).toEqual({ detail: "Operator account disabled", code: "invalid_token" });
  });

  it("a scope taken from the account after the token was issued stops working within the account cache time (403)", async () => {
    const u = await operator("scope-gone", ["strategy_apy:write", "rewards:write"]);
    const t = await bearer(u);
    const ok = await postApy([snapshot()], { authorization: `Bearer ${t}` });
    expect(ok.status, JSON.stringify(ok.body)).toBe(201);
    await updateOperator(h.db, u, { scopes: ["rewards:write"] });
    await new Promise((r) => setTimeout(r, ACCOUNT_CACHE_MS + 100));
    const r = await postApy([snapshot()], { authorization: `Bearer ${t}` });
    expect(r.status).toBe(403);
    expect(r.body.code).toBe("insufficient_scope");
  });

  it("a password change ends the tokens issued before it (401 revoked); a token taken afterwards works", async () => {
    const u = await operator("new-password", ["strategy_apy:write"]);
    const old = await bearer(u);
    expect((await postApy([snapshot()], { authorization: `Bearer ${old}` })).status).toBe(201);
    await new Promise((r) => setTimeout(r, 1100)); // tokens of the change's own second stay valid
    await updateOperator(h.db, u, { password: `${PASSWORD}-2` });
    await new Promise((r) => setTimeout(r, ACCOUNT_CACHE_MS + 100));
    const r = await postApy([snapshot()], { authorization: `Bearer ${old}` });
    expect(r.status).toBe(401);
    expect(r.body).toEqual({ detail: expect.stringMatching(/password changed/), code: "invalid_token" });
    const fresh = await token({ username: u, password: `${PASSWORD}-2` });
    expect(fresh.status).toBe(200);
    expect((await postApy([snapshot()], { authorization: `Bearer ${fresh.body.access_token}` })).status).toBe(201);
  });

  it("API keys: none 401, without the scope 403 insufficient_scope, revoked 403", async () => {
    const n0 = await snapshotCount();
    for (const key of [h.key]) {
      const r = await postApy([snapshot()], { "x-api-key": key });
      expect(r.status).toBe(403);
      expect(r.body.code).toBe("insufficient_scope");
    }
    expect((await postApy([snapshot()], { "x-api-key": h.revokedKey })).status).toBe(403);
    expect(await snapshotCount()).toBe(n0);
  });

  it("a key revoked while in steady use is refused within KEY_CACHE_MS", async () => {
    // requests every 200 ms keep the key re-read in the background: none of them waits on the
    // table, and none past KEY_CACHE_MS after the revocation gets through
    const k = await createKey(h.db, "w6-steady", ["strategy_apy:write"]);
    keyIds.push(k.id);
    const sent: { at: number; status: number }[] = [];
    const until = async (t: number) => {
      while (Date.now() < t) {
        const at = Date.now();
        sent.push({ at, status: (await postApy([snapshot()], { "x-api-key": k.key })).status });
        await new Promise((r) => setTimeout(r, 200));
      }
    };
    await until(Date.now() + 1500);
    expect(sent.every((s) => s.status === 201)).toBe(true);
    const revokedAt = Date.now();
    expect(await revokeKey(h.db, k.id)).toBe(1);
    await until(revokedAt + KEY_CACHE_MS + 600);
    const late = sent.filter((s) => s.at > revokedAt + KEY_CACHE_MS);
    expect(late.length).toBeGreaterThan(0);
    expect(late.every((s) => s.status === 403)).toBe(true);
  });

  it("a key's scopes are stored once each; revoking by a 36-digit non-id is no match, not a database error", async () => {
    const k = await createKey(h.db, "w6-dup-scopes", ["points:write", "points:write", "strategy_apy:write"]);
    const [row] = await h.q<{ scopes: string[] }>("SELECT scopes FROM auth.api_key WHERE id = $1", [k.id]);
    expect(row!.scopes).toEqual(["points:write", "strategy_apy:write"]);
    expect(await revokeKey(h.db, "0".repeat(36))).toBe(0);
    expect(await revokeKey(h.db, k.id)).toBe(1);
  });

  it("a non-EVM vault of the registry takes snapshots too (its chain id is 0 or below, its address keeps its case)", async () => {
    const [found] = await h.q<{ chain_id: number; address: string }>(
      "SELECT chain_id, address FROM registry.vault WHERE chain_id <= 0 ORDER BY chain_id DESC LIMIT 1",
    );
    expect(found).toBeDefined(); // the devnet's registry has a Solana vault
    const v = found!;
    const r = await postApy([{ ...snapshot(), vault_address: v.address, chain: v.chain_id }], {
      "x-api-key": apyKey.key,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(201);
    expect(r.body[0]).toMatchObject({ vault_address: v.address, chain: v.chain_id });
    const other = await postApy([{ ...snapshot(), vault_address: v.address, chain: v.chain_id - 1 }], {
      "x-api-key": apyKey.key,
    });
    expect(other.status).toBe(404);
    expect(other.body.code).toBe("vault_not_found");
  });

  it("a snapshot naming a vault not in the registry: 404 vault_not_found and none of the array is stored (audited as refused)", async () => {
    const n0 = await snapshotCount();
    const before = (await auditOf(h, apyKey.id)).length;
    const r = await postApy(
      [snapshot(0), snapshot(0, { vault_address: `0x${"ef".repeat(20)}` }), snapshot(0, { chain: 424242 })],
      { "x-api-key": apyKey.key },
    );
    expect(r.status).toBe(404);
    expect(r.body.code).toBe("vault_not_found");
    expect(r.body.detail).toContain(`0x${"ef".repeat(20)}`);
    expect(await snapshotCount()).toBe(n0);
    expect((await newAudits(h, apyKey.id, before)).map((a) => [a.status, a.outcome, a.code])).toEqual([
      [404, "refused", "vault_not_found"],
    ]);
  });

  it("422 with FastAPI bodies: not an array, an empty array, a missing or mistyped field (loc names the item and field)", async () => {
    const n0 = await snapshotCount();
    const k = { "x-api-key": apyKey.key };
    const obj = await postApy(snapshot(), k);
    expect(obj.status).toBe(422);
    expect(obj.body.detail[0]!.loc).toEqual(["body"]);
    const empty = await postApy([], k);
    expect(empty.status).toBe(422);
    expect(empty.body.detail[0]).toMatchObject({ loc: ["body"], type: "too_short" });
    const cases: [unknown[], (string | number)[]][] = [
      [
        [snapshot(), { ...snapshot(), apy: undefined }],
        ["body", 1, "apy"],
      ],
      [[{ ...snapshot(), allocation: "lots" }], ["body", 0, "allocation"]],
      [[{ ...snapshot(), apy: "0x10" }], ["body", 0, "apy"]],
      [[{ ...snapshot(), chain: 1.5 }], ["body", 0, "chain"]],
      [[{ ...snapshot(), chain: "1.5" }], ["body", 0, "chain"]],
      [[{ ...snapshot(), platform_name: "" }], ["body", 0, "platform_name"]],
      [[{ ...snapshot(), vault_address: "0x!!" }], ["body", 0, "vault_address"]],
    ];
    for (const [body, loc] of cases) {
      const r = await postApy(body, k);
      expect(r.status, JSON.stringify(loc)).toBe(422);
      expect(r.body.detail, JSON.stringify(loc)).toEqual(
        expect.arrayContaining([expect.objectContaining({ loc, msg: expect.any(String), type: expect.any(String) })]),
      );
    }
    expect(await snapshotCount()).toBe(n0);
  });
});

describe("the OpenAPI document (/api/v1/openapi.json)", () => {
  type Op = {
    security?: Record<string, string[]>[];
    parameters?: { name: string; in: string }[];
    requestBody?: { content: Record<string, unknown> };
    responses: Record<string, unknown>;
  };
  type Doc = {
    components: { securitySchemes: Record<string, Record<string, unknown>> };
    paths: Record<string, Record<string, Op>>;
  };
  let doc: Doc;
  beforeAll(async () => {
    const r = await h.json<Doc>("/api/v1/openapi.json", { key: null });
    expect(r.status, JSON.stringify(r.body).slice(0, 300)).toBe(200);
    doc = r.body;
  });

  it("lists the ApiKeyHeader and OAuth2Password security schemes (password flow at /api/v1/token, every scope)", () => {
    expect(doc.components.securitySchemes.ApiKeyHeader).toMatchObject({
      type: "apiKey",
      in: "header",
      name: "x-api-key",
    });
    const oauth = doc.components.securitySchemes.OAuth2Password as {
      type: string;
      flows: { password: { tokenUrl: string; scopes: Record<string, string> } };
    };
    expect(oauth.type).toBe("oauth2");
    expect(oauth.flows.password.tokenUrl).toBe("/api/v1/token");
    expect(Object.keys(oauth.flows.password.scopes).sort()).toEqual([...SCOPE_NAMES].sort());
  });

  it("lists the write routes with their security, the Idempotency-Key header and their answers", () => {
    const writes: [string, string, Record<string, string[]>[]][] = [
      ["/platform/points/register", "post", [{ ApiKeyHeader: [] }]],
      ["/platform/points/daily_streak/claim", "post", [{ ApiKeyHeader: [] }]],
      ["/tokenized_vault/rewards", "post", [{ ApiKeyHeader: [] }]],
      ["/tokenized_vault/rewards", "delete", [{ ApiKeyHeader: [] }]],
      ["/platform/strategy_apy", "post", [{ ApiKeyHeader: [] }, { OAuth2Password: ["strategy_apy:write"] }]],
    ];
    for (const [path, method, security] of writes) {
      const op = doc.paths[path]?.[method];
      expect(op, `${method} ${path}`).toBeDefined();
      expect(op!.security, `${method} ${path}`).toEqual(security);
      expect(
        op!.parameters?.some((p) => p.in === "header" && p.name.toLowerCase() === "idempotency-key"),
        `${method} ${path}`,
      ).toBe(true);
      for (const s of ["401", "403", "422"]) expect(Object.keys(op!.responses), `${method} ${path}`).toContain(s);
    }
    const tokenOp = doc.paths["/token"]?.post;
    expect(tokenOp).toBeDefined();
    expect(Object.keys(tokenOp!.requestBody!.content)).toEqual(
      expect.arrayContaining(["application/x-www-form-urlencoded", "multipart/form-data"]),
    );
    expect(Object.keys(tokenOp!.responses)).toEqual(expect.arrayContaining(["200", "400", "401", "422"]));
  });
});
