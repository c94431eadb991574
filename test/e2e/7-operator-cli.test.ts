/**
 * The operator commands against the devnet's database, checked through the API: a governance-log
 * entry appears in the audit-log route (and goes away), an operator account made by the CLI gets
 * a bearer token (password from stdin), a disabled one does not, and a scoped key made by the
 * keys CLI can write.
 */
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { REPO_ROOT } from "../../scripts/lib/indexer.js";
import { setupApi, type ApiHarness } from "../api-harness.js";

let h: ApiHarness;
const USER = "cli-operator-e2e";

function cli(script: string, args: string[], input?: string) {
  const r = spawnSync(join(REPO_ROOT, "node_modules", ".bin", "tsx"), [join("scripts", script), ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, DATABASE_URL: h.devnet.dbUrl },
    encoding: "utf8",
    input,
    timeout: 60_000,
  });
  return { code: r.status, out: r.stdout, err: r.stderr };
}

const token = (username: string, password: string) =>
  h.app.request("/api/v1/token", { method: "POST", body: new URLSearchParams({ username, password }), headers: { "content-type": "application/x-www-form-urlencoded" } });

beforeAll(async () => {
  h = await setupApi();
}, 400_000);

afterAll(async () => {
  if (h) {
    await h.db.deleteFrom("auth.operator_account").where("username", "=", USER).execute();
    await h.db.deleteFrom("registry.audit_entry").where("author", "=", "cli-e2e").execute();
  }
  await h?.close();
});

describe("npm run governance-log", () => {
  it("adds an entry the audit-log route serves, lists it, and removes it", async () => {
    const [v] = await h.q<{ chain_id: number; address: string; start_datetime: Date | null }>(
      "SELECT chain_id, address, start_datetime FROM registry.vault WHERE chain_type = 'evm' AND chain_id = 1 ORDER BY address LIMIT 1",
    );
    const at = new Date(Date.now() - 3600_000).toISOString();
    const add = cli("governance-log.ts", ["add", "--vault", v!.address.toUpperCase().replace("0X", "0x"), "--chain", "1", "--category", "incident", "--text", "Oracle replaced", "--time", at, "--author", "cli-e2e"]);
    expect(add.err).toBe("");
    expect(add.code).toBe(0);
    const id = /entry ([0-9a-f-]{36})/.exec(add.out)![1]!;
    const log = await h.json<{ entries: { id: string; category: string; source: string; text: string; author: string; occurred_at: string }[] }>(
      `/api/v1/platform/governance/${v!.address}/audit_log?chain_id=1&category=incident`,
    );
    expect(log.status).toBe(200);
    expect(log.body.entries).toContainEqual(expect.objectContaining({ id: `manual:${id}`, category: "incident", source: "manual", text: "Oracle replaced", author: "cli-e2e", occurred_at: at }));
    expect(cli("governance-log.ts", ["list", "--vault", v!.address, "--chain", "1"]).out).toContain(id);

    if (v!.start_datetime) {
      const early = cli("governance-log.ts", ["add", "--vault", v!.address, "--chain", "1", "--category", "note", "--text", "x", "--time", "2000-01-01T00:00:00Z"]);
      expect(early.code).toBe(2);
      expect(early.err).toMatch(/before the launch/);
    }
    expect(cli("governance-log.ts", ["add", "--vault", "0x" + "9".repeat(40), "--category", "note", "--text", "x"])).toMatchObject({ code: 1, err: expect.stringMatching(/no vault/) });

    expect(cli("governance-log.ts", ["remove", id]).code).toBe(0);
    const after = await h.json<{ entries: { id: string }[] }>(`/api/v1/platform/governance/${v!.address}/audit_log?chain_id=1&category=incident`);
    expect(after.body.entries.map((e) => e.id)).not.toContain(`manual:${id}`);
  });
});

describe("npm run operators", () => {
  it("creates an account whose password gets a bearer token; a disabled account gets none", async () => {
    const pw = "a long operator password";
    const made = cli("operators.ts", ["create", USER, "--scope", "strategy_apy:write", "--password-stdin"], `${pw}\n`);
    expect(made.err).toBe("");
    expect(made.code).toBe(0);
    expect(cli("operators.ts", ["create", USER, "--scope", "strategy_apy:write", "--password-stdin"], `${pw}\n`)).toMatchObject({ code: 1, err: expect.stringMatching(/exists already/) });
    const [row] = await h.q<{ password_hash: string; scopes: string[] }>("SELECT password_hash, scopes FROM auth.operator_account WHERE username = $1", [USER]);
    expect(row!.password_hash).toMatch(/^scrypt\$/);
    expect(row!.password_hash).not.toContain(pw);
    expect(row!.scopes).toEqual(["strategy_apy:write"]);

    const ok = await token(USER, pw);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ token_type: "bearer", scope: "strategy_apy:write", expires_in: 900 });
    expect((await token(USER, "wrong password!!")).status).toBe(401);

    // a generated password is printed once and works
    const reset = cli("operators.ts", ["passwd", USER]);
    expect(reset.code).toBe(0);
    const generated = reset.out.trim().split("\n").at(-1)!;
    expect((await token(USER, generated)).status).toBe(200);
    expect((await token(USER, pw)).status).toBe(401);

    expect(cli("operators.ts", ["disable", USER]).code).toBe(0);
    expect((await token(USER, generated)).status).toBe(401);
    expect(cli("operators.ts", ["list"]).out).toMatch(new RegExp(`${USER}\\tstrategy_apy:write\\t.*\\tdisabled`));
    expect(cli("operators.ts", ["enable", "nobody-here"])).toMatchObject({ code: 1, err: expect.stringMatching(/no operator "nobody-here"/) });
  });
});

describe("npm run keys -- create --scope", () => {
  it("a key made with a write scope can write; its list line shows the scope", async () => {
    const made = cli("keys.ts", ["create", "cli-e2e-writer", "--scope", "rewards:write"]);
    expect(made.code).toBe(0);
    const key = made.out.trim().split("\n").at(-1)!;
    expect(key).toMatch(/^vk_[0-9a-f]{12}_[0-9a-f]{40}$/);
    // a reward for an unknown vault: the scope lets the request through to the business rule
    const res = await h.json<{ code: string }>("/api/v1/tokenized_vault/rewards", {
      method: "POST",
      key,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ vault_address: "0x" + "9".repeat(40), text: "x", multiplier: 2 }),
    });
    expect(res.status).toBe(404);
    expect(res.body.code).toBe("vault_not_found");
    // without the scope: 403
    const ro = await h.json<{ code: string }>("/api/v1/tokenized_vault/rewards", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ vault_address: "0x" + "9".repeat(40), text: "x", multiplier: 2 }),
    });
    expect(ro.status).toBe(403);
    expect(ro.body.code).toBe("insufficient_scope");
    expect(cli("keys.ts", ["list"]).out).toMatch(/cli-e2e-writer\trewards:write/);
    const id = /key ([0-9a-f-]{36})/.exec(made.out)![1]!;
    expect(cli("keys.ts", ["revoke", id]).code).toBe(0);
  });
});

describe("credentials are not readable by analysts", () => {
  it("the analyst role reads registry.write_audit but not auth.api_key, auth.operator_account or auth.api_secret", async () => {
    const { withDb, rows } = await import("../helpers.js");
    await withDb(h.devnet.analystUrl, (c) => rows(c, "SELECT count(*) FROM registry.write_audit"));
    for (const t of ["auth.api_key", "auth.operator_account", "auth.api_secret"]) {
      await expect(withDb(h.devnet.analystUrl, (c) => rows(c, `SELECT * FROM ${t} LIMIT 1`))).rejects.toThrow(/permission denied/);
    }
  });
});
