/**
 * The operator commands against the devnet's database, checked through the API: a governance-log
 * entry appears in the audit-log route (and goes away), an operator account made by the CLI gets
 * a bearer token (password from stdin), a disabled one does not, and a scoped key made by the
 * keys CLI can write. The list commands on a database without the service's schemas say so and
 * create nothing, and on an empty one print their header and say there is nothing; a recompute
 * reports its progress. The analyst role creates no temporary table and has a statement timeout.
 */
import { execFile, spawn } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { Agent, get as httpGet } from "node:http";
import { createServer } from "node:net";
import { join } from "node:path";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createDb, createPool, migrateToLatest } from "../../db/client.js";
import { dayToDate, today } from "../../db/days.js";
import { REPO_ROOT } from "../../scripts/lib/indexer.js";
import { ensureAnalystRole } from "../../scripts/lib/postgres.js";
import { tsxNode } from "../../scripts/lib/workers.js";
import { type ApiHarness, setupApi } from "../api-harness.js";
import { freePort, freePorts, rows, sleep, until, withDb } from "../helpers.js";

let h: ApiHarness;
const USER = "cli-operator-e2e";

/** Runs a command as `npm run` does; asynchronous, so a slow start does not block vitest's worker. */
function cli(script: string, args: string[], input?: string, env: Record<string, string> = {}) {
  const tsx = join(REPO_ROOT, "node_modules", ".bin", "tsx");
  return new Promise<{ code: number | null; out: string; err: string }>((resolve) => {
    const child = execFile(
      tsx,
      [join("scripts", script), ...args],
      { cwd: REPO_ROOT, env: { ...process.env, DATABASE_URL: h.devnet.dbUrl, ...env }, timeout: 60_000 },
      (e, out, err) => resolve({ code: e ? (typeof e.code === "number" ? e.code : null) : 0, out, err }),
    );
    child.stdin?.end(input);
  });
}

const token = (username: string, password: string) =>
  h.app.request("/api/v1/token", {
    method: "POST",
    body: new URLSearchParams({ username, password }),
    headers: { "content-type": "application/x-www-form-urlencoded" },
  });

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
    const add = await cli("governance-log.ts", [
      "add",
      "--vault",
      v!.address.toUpperCase().replace("0X", "0x"),
      "--chain",
      "1",
      "--category",
      "incident",
      "--text",
      "Oracle replaced",
      "--time",
      at,
      "--author",
      "cli-e2e",
    ]);
    expect(add.err).toBe("");
    expect(add.code).toBe(0);
    const id = /entry ([0-9a-f-]{36})/.exec(add.out)![1]!;
    const log = await h.json<{
      entries: { id: string; category: string; source: string; text: string; author: string; occurred_at: string }[];
    }>(`/api/v1/platform/governance/${v!.address}/audit_log?chain_id=1&category=incident`);
    expect(log.status).toBe(200);
    expect(log.body.entries).toContainEqual(
      expect.objectContaining({
        id: `manual:${id}`,
        category: "incident",
        source: "manual",
        text: "Oracle replaced",
        author: "cli-e2e",
        occurred_at: at,
      }),
    );
    expect((await cli("governance-log.ts", ["list", "--vault", v!.address, "--chain", "1"])).out).toContain(id);

    if (v!.start_datetime) {
      const early = await cli("governance-log.ts", [
        "add",
        "--vault",
        v!.address,
        "--chain",
        "1",
        "--category",
        "note",
        "--text",
        "x",
        "--time",
        "2000-01-01T00:00:00Z",
      ]);
      expect(early.code).toBe(2);
      expect(early.err).toMatch(/before the launch/);
    }
    expect(
      await cli("governance-log.ts", ["add", "--vault", `0x${"9".repeat(40)}`, "--category", "note", "--text", "x"]),
    ).toMatchObject({ code: 1, err: expect.stringMatching(/no vault/) });

    expect((await cli("governance-log.ts", ["remove", id])).code).toBe(0);
    const after = await h.json<{ entries: { id: string }[] }>(
      `/api/v1/platform/governance/${v!.address}/audit_log?chain_id=1&category=incident`,
    );
    expect(after.body.entries.map((e) => e.id)).not.toContain(`manual:${id}`);
  });
});

describe("npm run governance-log on an address registered on two chains", () => {
  it("list shows every chain's entries, each naming its chain; add without --chain is refused", async () => {
    const [twin] = await h.q<{ address: string; chains: number[] }>(
      `SELECT address, array_agg(chain_id ORDER BY chain_id) AS chains FROM registry.vault
       GROUP BY address HAVING count(*) > 1 LIMIT 1`,
    );
    expect(twin!.chains.length).toBeGreaterThan(1);
    const add = (chain: number | null) =>
      cli("governance-log.ts", [
        "add",
        "--vault",
        twin!.address,
        ...(chain == null ? [] : ["--chain", String(chain)]),
        "--category",
        "note",
        "--text",
        `twin ${chain}`,
        "--author",
        "cli-e2e",
      ]);
    const refused = await add(null);
    expect(refused.code).toBe(2);
    const chains = twin!.chains.join(" and ");
    expect(refused.err).toContain(`vault ${twin!.address} is registered on chains ${chains}: say which with --chain`);

    const ids: string[] = [];
    for (const c of twin!.chains) {
      const r = await add(c);
      expect(r.code, r.err).toBe(0);
      ids.push(/entry ([0-9a-f-]{36})/.exec(r.out)![1]!);
    }
    const list = await cli("governance-log.ts", ["list", "--vault", twin!.address]);
    expect(list.code, list.err).toBe(0);
    const lines = list.out.trim().split("\n");
    expect(lines[0]).toBe("id\tchain\toccurred_at\tcategory\tauthor\ttext");
    twin!.chains.forEach((c, i) => {
      expect(lines).toContainEqual(expect.stringMatching(new RegExp(`^${ids[i]}\\t${c}\\t.*\\ttwin ${c}$`)));
    });
    const one = await cli("governance-log.ts", ["list", "--vault", twin!.address, "--chain", String(twin!.chains[0])]);
    expect(one.out).toContain(ids[0]);
    expect(one.out).not.toContain(ids[1]);
    for (const id of ids) expect((await cli("governance-log.ts", ["remove", id])).code).toBe(0);
  });
});

describe("npm run operators", () => {
  it("creates an account whose password gets a bearer token; a disabled account gets none", async () => {
    const pw = "a long operator password";
    const made = await cli(
      "operators.ts",
      ["create", USER, "--scope", "strategy_apy:write", "--password-stdin"],
      `${pw}\n`,
    );
    expect(made.err).toBe("");
    expect(made.code).toBe(0);
    expect(
      await cli("operators.ts", ["create", USER, "--scope", "strategy_apy:write", "--password-stdin"], `${pw}\n`),
    ).toMatchObject({ code: 1, err: expect.stringMatching(/exists already/) });
    const [row] = await h.q<{ password_hash: string; scopes: string[] }>(
      "SELECT password_hash, scopes FROM auth.operator_account WHERE username = $1",
      [USER],
    );
    expect(row!.password_hash).toMatch(/^scrypt\$/);
    expect(row!.password_hash).not.toContain(pw);
    expect(row!.scopes).toEqual(["strategy_apy:write"]);

    const ok = await token(USER, pw);
    expect(ok.status).toBe(200);
    expect(await ok.json()).toMatchObject({ token_type: "bearer", scope: "strategy_apy:write", expires_in: 900 });
    expect((await token(USER, "wrong password!!")).status).toBe(401);

    // a generated password is printed once and works
    const reset = await cli("operators.ts", ["passwd", USER]);
    expect(reset.code).toBe(0);
    const generated = reset.out.trim().split("\n").at(-1)!;
    expect((await token(USER, generated)).status).toBe(200);
    expect((await token(USER, pw)).status).toBe(401);

    expect((await cli("operators.ts", ["disable", USER])).code).toBe(0);
    expect((await token(USER, generated)).status).toBe(401);
    const listed = (await cli("operators.ts", ["list"])).out;
    expect(listed).toMatch(new RegExp(`${USER}\\tstrategy_apy:write\\t.*\\tdisabled`));
    // disabled again: it keeps the time it was first disabled
    expect((await cli("operators.ts", ["disable", USER])).code).toBe(0);
    const since = (out: string) => new RegExp(`${USER}\\t.*\\tdisabled (\\S+)`).exec(out)?.[1];
    expect(since(listed)).toMatch(/Z$/);
    expect(since((await cli("operators.ts", ["list"])).out)).toBe(since(listed));
    expect(await cli("operators.ts", ["enable", "nobody-here"])).toMatchObject({
      code: 1,
      err: expect.stringMatching(/no operator "nobody-here"/),
    });
  });
});

describe("npm run api on a port something else holds", () => {
  it("says which address and what to do, and exits 1", async () => {
    const port = await freePort();
    const holder = createServer();
    await new Promise<void>((r) => holder.listen(port, "127.0.0.1", r));
    try {
      const r = await cli("api.ts", [], undefined, { REDIS_URL: h.redisUrl, PORT: String(port), HOST: "127.0.0.1" });
      expect(r.code).toBe(1);
      expect(r.err).toContain(
        `api failed: cannot listen on 127.0.0.1:${port}: the port is in use (another API process?); set PORT`,
      );
      expect(r.err).not.toMatch(/uncaught|at Server\./);
    } finally {
      holder.close();
    }
  }, 90_000);
});

describe("npm run api stopped while clients keep sending (SIGTERM to its process group)", () => {
  it("answers every request it took, cuts none, and exits within its grace period", async () => {
    const port = await freePorts(1);
    const base = `http://127.0.0.1:${port}`;
    // as `npm run api` runs it: node with tsx's loader
    const api = spawn(...tsxNode("scripts/api.ts"), {
      cwd: REPO_ROOT,
      env: {
        ...process.env,
        DATABASE_URL: h.devnet.dbUrl,
        REDIS_URL: h.redisUrl,
        PORT: String(port),
        RATE_LIMIT_PER_MINUTE: "1000000",
      },
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let log = "";
    for (const s of [api.stdout, api.stderr]) s.on("data", (d: Buffer) => (log += d.toString()));
    const exited = new Promise<number | null>((r) => api.once("exit", (code) => r(code)));
    try {
      await until("the API", 60_000, async () =>
        (await fetch(`${base}/api/v1/ping`).catch(() => null))?.ok ? true : undefined,
      );
      // a client holding a kept-alive connection idle (it does not send again)
      const idle = new Agent({ keepAlive: true });
      await new Promise<void>((resolve, reject) =>
        httpGet(`${base}/api/v1/ping`, { agent: idle }, (res) => res.resume().on("end", resolve)).on("error", reject),
      );
      // eight clients sending one request after another on kept-alive connections
      const statuses = new Map<number, number>();
      const failures = new Map<string, number>();
      let stop = false;
      let termAt = 0;
      let closeAnswers = 0;
      const client = async () => {
        while (!stop) {
          try {
            const res = await fetch(`${base}/api/v1/tokenized_vault`);
            await res.arrayBuffer();
            statuses.set(res.status, (statuses.get(res.status) ?? 0) + 1);
            if (termAt && res.headers.get("connection") === "close") closeAnswers++;
          } catch (err) {
            const code = String((err as { cause?: { code?: string } }).cause?.code ?? err);
            failures.set(code, (failures.get(code) ?? 0) + 1);
            await sleep(20);
          }
        }
      };
      const clients = Array.from({ length: 8 }, client);
      await sleep(1500);
      termAt = Date.now();
      process.kill(-api.pid!, "SIGTERM");
      const code = await Promise.race([exited, sleep(20_000).then(() => "still running")]);
      const tookMs = Date.now() - termAt;
      stop = true;
      await Promise.all(clients);
      idle.destroy();
      expect(code, log).toBe(143);
      // the idle connection closes at the keep-alive timeout (5 s), the grace period is 6 s
      expect(tookMs, log).toBeLessThan(8000);
      expect([...statuses.keys()], log).toEqual([200]);
      // after the close only refused connections: no request cut (reset) or lost mid-answer
      expect(
        [...failures.keys()].filter((c) => c !== "ECONNREFUSED"),
        log,
      ).toEqual([]);
      expect(closeAnswers, "answers after SIGTERM say Connection: close").toBeGreaterThan(0);
      expect(log).not.toMatch(/killing everything now|cleanup "api" failed/);
    } finally {
      if (api.exitCode === null) process.kill(-api.pid!, "SIGKILL");
    }
  }, 120_000);
});

describe("npm run keys -- create --scope", () => {
  it("a key made with a write scope can write; its list line shows the scope", async () => {
    const made = await cli("keys.ts", ["create", "cli-e2e-writer", "--scope", "rewards:write"]);
    expect(made.code).toBe(0);
    const key = made.out.trim().split("\n").at(-1)!;
    expect(key).toMatch(/^vk_[0-9a-f]{12}_[0-9a-f]{40}$/);
    // a reward for an unknown vault: the scope lets the request through to the business rule
    const res = await h.json<{ code: string }>("/api/v1/tokenized_vault/rewards", {
      method: "POST",
      key,
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ vault_address: `0x${"9".repeat(40)}`, text: "x", multiplier: 2 }),
    });
    expect(res.status).toBe(404);
    expect(res.body.code).toBe("vault_not_found");
    // without the scope: 403
    const ro = await h.json<{ code: string }>("/api/v1/tokenized_vault/rewards", {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ vault_address: `0x${"9".repeat(40)}`, text: "x", multiplier: 2 }),
    });
    expect(ro.status).toBe(403);
    expect(ro.body.code).toBe("insufficient_scope");
    expect((await cli("keys.ts", ["list"])).out).toMatch(/cli-e2e-writer\trewards:write/);
    const id = /key ([0-9a-f-]{36})/.exec(made.out)![1]!;
    expect((await cli("keys.ts", ["revoke", id])).code).toBe(0);
    // a key is also named as list shows it, or whole
    for (const named of [(k: string) => `${k.slice(0, 16)}_…`, (k: string) => k]) {
      const another = (await cli("keys.ts", ["create", "cli-e2e-revoked"])).out.trim().split("\n").at(-1)!;
      const revoked = await cli("keys.ts", ["revoke", named(another)]);
      expect(revoked, named(another)).toMatchObject({ code: 0, out: expect.stringContaining("revoked 1 key(s)") });
      expect((await h.json("/api/v1/platform/unrealized_pnl/latest", { key: another })).status).toBe(403);
    }
  });
});

describe("credentials are not readable by analysts", () => {
  it("the analyst role reads registry.write_audit but not auth.api_key, auth.operator_account or auth.api_secret", async () => {
    const { withDb, rows } = await import("../helpers.js");
    await withDb(h.devnet.analystUrl, (c) => rows(c, "SELECT count(*) FROM registry.write_audit"));
    for (const t of ["auth.api_key", "auth.operator_account", "auth.api_secret"]) {
      await expect(withDb(h.devnet.analystUrl, (c) => rows(c, `SELECT * FROM ${t} LIMIT 1`))).rejects.toThrow(
        /permission denied/,
      );
    }
  });
});

describe("read-only commands on a database the service has not set up", () => {
  const FRESH = "ops_cli_e2e_fresh";
  let freshUrl: string;
  beforeAll(async () => {
    await h.q(`DROP DATABASE IF EXISTS ${FRESH} WITH (FORCE)`);
    await h.q(`CREATE DATABASE ${FRESH}`);
    const u = new URL(h.devnet.dbUrl);
    u.pathname = `/${FRESH}`;
    freshUrl = u.toString();
  });
  afterAll(async () => {
    await h?.q(`DROP DATABASE IF EXISTS ${FRESH} WITH (FORCE)`);
  });
  const ours = "SELECT nspname FROM pg_namespace WHERE nspname IN ('auth', 'registry', 'derived')";
  const schemas = () => withDb(freshUrl, (c) => rows<{ nspname: string }>(c, ours));

  it("say which schema is missing and what creates it, exit 1, and migrate nothing", async () => {
    const env = { DATABASE_URL: freshUrl };
    for (const [script, args, schema] of [
      ["keys.ts", ["list"], "auth"],
      ["operators.ts", ["list"], "auth"],
      ["points.ts", ["list"], "registry"],
      ["registry.ts", ["show"], "registry"],
      ["governance-log.ts", ["list", "--vault", `0x${"1".repeat(40)}`], "registry"],
    ] as const) {
      const r = await cli(script, [...args], undefined, env);
      expect(r.code, `${script} ${r.err}`).toBe(1);
      expect(r.err).toContain(`the database has no ${schema} schema yet: start the workers, the API or the demo first`);
      expect(r.out).toBe("");
    }
    expect(await schemas()).toEqual([]);
  });

  it("on the migrated but empty database, print their header and say there is nothing", async () => {
    const db = createDb(createPool(freshUrl, 1, "cli-e2e-migrate"));
    try {
      await migrateToLatest(db);
    } finally {
      await db.destroy();
    }
    const env = { DATABASE_URL: freshUrl };
    const expectations: [string, string[], string, string][] = [
      [
        "keys.ts",
        ["list"],
        "id\tkey\tname\tscopes\tcreated\tstatus",
        "(no API keys yet: npm run keys -- create <name>)",
      ],
      [
        "operators.ts",
        ["list"],
        "username\tscopes\tcreated\tstatus",
        "(no operator accounts yet: npm run operators -- create <username> --scope <scope>)",
      ],
      ["points.ts", ["list"], "id\tcreated\twallet\tpoints\tauthor\treason", "(no manual points entries yet)"],
      [
        "registry.ts",
        ["show"],
        "chain\taddress\tfamily\tstatus\tname",
        "(no vaults in the registry tables yet: npm run registry -- load [<file>])",
      ],
    ];
    for (const [script, args, header, nothing] of expectations) {
      const r = await cli(script, args, undefined, env);
      expect(r.code, `${script} ${r.err}`).toBe(0);
      expect(r.out.trim().split("\n")).toEqual([header, nothing]);
    }
    expect(await cli("governance-log.ts", ["list", "--vault", `0x${"1".repeat(40)}`], undefined, env)).toMatchObject({
      code: 1,
      err: expect.stringMatching(/no vault 0x1{40} in the registry/),
    });
  });

  it("registry load: a relative file from where the command is typed; a file of no vaults is refused", async () => {
    const dir = join(REPO_ROOT, ".data", "cli-e2e-registry");
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const devnetRegistry = JSON.parse(readFileSync(h.devnet.registryFile, "utf8")) as { vaults: unknown[] };
    writeFileSync(join(dir, "one.json"), JSON.stringify({ version: 1, vaults: devnetRegistry.vaults.slice(0, 1) }));
    writeFileSync(join(dir, "none.json"), JSON.stringify({ version: 1, vaults: [] }));
    // npm runs the script in the repository, and says where it was typed in INIT_CWD
    const env = { DATABASE_URL: freshUrl, INIT_CWD: dir };
    const held = async () =>
      (await withDb(freshUrl, (c) => rows<{ n: number }>(c, "SELECT count(*)::int AS n FROM registry.vault")))[0]!.n;
    const one = await cli("registry.ts", ["load", "one.json"], undefined, env);
    expect(one.code, one.err).toBe(0);
    expect(one.out).toContain(`registry loaded from ${join(dir, "one.json")}: 1 vaults`);
    const none = await cli("registry.ts", ["load", "none.json"], undefined, env);
    expect(none.code).toBe(1);
    expect(none.err).toContain(
      `registry: ${join(dir, "none.json")} lists no vault: loading it would remove all 1 vaults from the tables ` +
        "(nothing was changed; --allow-empty loads it anyway)",
    );
    expect(await held()).toBe(1);
    const emptied = await cli("registry.ts", ["load", "none.json", "--allow-empty"], undefined, env);
    expect(emptied.code, emptied.err).toBe(0);
    expect(await held()).toBe(0);
    // on empty tables there is nothing to lose
    expect((await cli("registry.ts", ["load", "none.json"], undefined, env)).code).toBe(0);
    const show = await cli("registry.ts", ["show", "--allow-empty"], undefined, env);
    expect([show.code, show.err]).toEqual([2, expect.stringContaining("show takes no --allow-empty")]);
  });

  it("points list --wallet says there is nothing for that wallet on the devnet's database", async () => {
    const wallet = `0x${"e".repeat(40)}`;
    const r = await cli("points.ts", ["list", "--wallet", wallet]);
    expect(r.code, r.err).toBe(0);
    const header = "id\tcreated\twallet\tpoints\tauthor\treason";
    expect(r.out.trim().split("\n")).toEqual([header, `(no manual points entries for ${wallet} yet)`]);
  });
});

describe("npm run recompute", () => {
  it("reports its progress while the jobs run, then a summary", async () => {
    const [v] = await h.q<{ chain_id: number; vault: string }>(
      "SELECT chain_id, vault FROM derived.vault_metrics ORDER BY chain_id, vault LIMIT 1",
    );
    const from = dayToDate(today() - 2);
    // each vault-day write held open 6 s (the jobs' fault injection), so a progress line falls due
    const r = await cli(
      "recompute.ts",
      ["--vault", v!.vault, "--chain", String(v!.chain_id), "--from", from],
      undefined,
      {
        REDIS_URL: h.redisUrl,
        VAULT_REGISTRY: h.devnet.registryFile,
        JOBS_FAULT_HOLD_MS: "6000",
      },
    );
    expect(r.code, r.err + r.out).toBe(0);
    expect(r.out).toMatch(/recompute: \d+ vault-days in 1 vault-days job\(s\), then the points rollup/);
    expect(r.out).toMatch(/recompute: 0\/1 vault-days jobs done \(\d+\.\d+s\)/);
    expect(r.out).toMatch(/recompute: done, \d+ vault-days in 1 job\(s\) and the points rollup in \d+\.\d+s/);
  }, 120_000);
});

describe("the analyst role", () => {
  // a session may turn default_transaction_read_only off; what it may then create is the question
  const createTemp = (url: string) =>
    withDb(url, async (c) => {
      await c.query("SET default_transaction_read_only = off");
      await c.query("CREATE TEMP TABLE t (x int)");
    });

  it("cannot create temporary tables and has a statement timeout", async () => {
    await expect(createTemp(h.devnet.analystUrl)).rejects.toThrow(/permission denied to create temporary tables/);
    const [t] = await withDb(h.devnet.analystUrl, (c) =>
      rows<{ statement_timeout: string }>(c, "SHOW statement_timeout"),
    );
    expect(t!.statement_timeout).toBe("1min");
  });

  it("other login roles keep the temporary tables they had through PUBLIC", async () => {
    const DB = "ops_analyst_e2e";
    const roles = ["ops_e2e_service", "ops_e2e_analyst"];
    const cleanup = async () => {
      await h.q(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
      for (const r of roles) await h.q(`DROP ROLE IF EXISTS ${r}`);
    };
    await cleanup();
    try {
      await h.q(`CREATE DATABASE ${DB}`);
      await h.q("CREATE ROLE ops_e2e_service LOGIN PASSWORD 'service'");
      const admin = new URL(h.devnet.dbUrl);
      admin.pathname = `/${DB}`;
      const opts = { role: "ops_e2e_analyst", password: "analyst", statementTimeout: "5s" };
      const analystUrl = await ensureAnalystRole(admin.toString(), opts);
      const service = new URL(admin);
      service.username = "ops_e2e_service";
      service.password = "service";
      await createTemp(service.toString());
      await expect(createTemp(analystUrl)).rejects.toThrow(/permission denied to create temporary tables/);
      // idempotent: a second run leaves both as they are
      await ensureAnalystRole(admin.toString(), opts);
      await createTemp(service.toString());
      await expect(createTemp(analystUrl)).rejects.toThrow(/permission denied to create temporary tables/);
      const [t] = await withDb(analystUrl, (c) => rows<{ statement_timeout: string }>(c, "SHOW statement_timeout"));
      expect(t!.statement_timeout).toBe("5s");
      await expect(withDb(analystUrl, (c) => rows(c, "SELECT pg_sleep(6)"))).rejects.toThrow(/statement timeout/);
    } finally {
      await cleanup();
    }
  }, 90_000);

  it("npm run analyst-role as a superuser: what the service's role creates later is readable; others' roles are refused", async () => {
    const DB = "ops_analyst_owner_e2e";
    const [SVC, ROLE, OTHER] = ["ops_e2e_svc", "ops_e2e_owner_analyst", "ops_e2e_other"];
    const cleanup = async () => {
      await h.q(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
      for (const r of [ROLE, OTHER, SVC]) await h.q(`DROP ROLE IF EXISTS ${r}`);
    };
    await cleanup();
    try {
      // the service's role owns the database and its schemas; the superuser runs the command
      await h.q(`CREATE ROLE ${SVC} LOGIN PASSWORD 'service-pass'`);
      await h.q(`CREATE ROLE ${OTHER} LOGIN PASSWORD 'other-pass'`);
      await h.q(`CREATE DATABASE ${DB} OWNER ${SVC}`);
      const admin = new URL(h.devnet.dbUrl);
      admin.pathname = `/${DB}`;
      const as = (user: string, password: string) => {
        const u = new URL(admin);
        u.username = user;
        u.password = password;
        return u.toString();
      };
      await withDb(as(SVC, "service-pass"), (c) =>
        c.query("CREATE SCHEMA indexer; CREATE SCHEMA derived; CREATE VIEW indexer.v AS SELECT 1 AS x"),
      );
      const pw = { ANALYST_PASSWORD: "a-long-enough-secret" };
      const run = (args: string[]) =>
        cli("analyst-role.ts", args, undefined, { DATABASE_URL: admin.toString(), ...pw });
      const made = await run(["--role", ROLE]);
      expect(made.code, made.err).toBe(0);
      // the indexer's view switch drops and re-creates its views; a migration adds a table
      await withDb(as(SVC, "service-pass"), (c) =>
        c.query(
          "DROP VIEW indexer.v; CREATE VIEW indexer.v AS SELECT 2 AS x; CREATE TABLE derived.t2 (y int); INSERT INTO derived.t2 VALUES (3)",
        ),
      );
      const analyst = as(ROLE, pw.ANALYST_PASSWORD);
      expect(await withDb(analyst, (c) => rows(c, "SELECT x FROM indexer.v"))).toEqual([{ x: 2 }]);
      expect(await withDb(analyst, (c) => rows(c, "SELECT y FROM derived.t2"))).toEqual([{ y: 3 }]);

      // roles this command did not make are left alone: the service's own, anyone's
      for (const r of [SVC, OTHER]) {
        const refused = await run(["--role", r]);
        expect(refused.code, r).toBe(1);
        expect(refused.err).toMatch(new RegExp(`role "${r}" exists and .*choose another role|must differ`));
      }
      expect(await withDb(as(OTHER, "other-pass"), (c) => rows(c, "SELECT 1 AS ok"))).toEqual([{ ok: 1 }]);
      await withDb(as(SVC, "service-pass"), (c) => c.query("CREATE TABLE derived.still_writable (z int)"));
      // the analyst role it made is still brought up to date
      expect((await run(["--role", ROLE])).code).toBe(0);
    } finally {
      await cleanup();
    }
  }, 90_000);

  it("npm run analyst-role: makes the role on a new database; reads where it should, and nowhere else", async () => {
    const DB = "ops_analyst_cli_e2e";
    const ROLE = "ops_e2e_cli_analyst";
    const cleanup = async () => {
      await h.q(`DROP DATABASE IF EXISTS ${DB} WITH (FORCE)`);
      await h.q(`DROP ROLE IF EXISTS ${ROLE}`);
    };
    await cleanup();
    try {
      await h.q(`CREATE DATABASE ${DB}`);
      const admin = new URL(h.devnet.dbUrl);
      admin.pathname = `/${DB}`;
      const run = (args: string[], env: Record<string, string>) =>
        cli("analyst-role.ts", args, undefined, { DATABASE_URL: admin.toString(), ...env });
      // refused before anything is done: no password, a short one, a bad role or timeout
      expect(await run(["--role", ROLE], {})).toMatchObject({
        code: 2,
        err: expect.stringMatching(/ANALYST_PASSWORD/),
      });
      const pw = { ANALYST_PASSWORD: "a-long-enough-secret" };
      expect(await run(["--role", ROLE], { ANALYST_PASSWORD: "short" })).toMatchObject({ code: 2 });
      expect(await run(["--role", "Bad-Role"], pw)).toMatchObject({ code: 2, err: expect.stringMatching(/--role/) });
      expect(await run(["--role", ROLE, "--statement-timeout", "soon"], pw)).toMatchObject({ code: 2 });
      expect(await h.q("SELECT 1 FROM pg_roles WHERE rolname = $1", [ROLE])).toEqual([]);

      const made = await run(["--role", ROLE, "--statement-timeout", "5s"], pw);
      expect(made.code, made.err).toBe(0);
      expect(made.out).toContain(`role "${ROLE}" reads indexer, derived, registry, ops; connect as postgresql://`);
      expect(made.out).not.toContain(pw.ANALYST_PASSWORD);
      // tables the owner makes afterwards: readable in the service's schemas, not in auth
      await withDb(admin.toString(), async (c) => {
        await c.query("CREATE TABLE derived.later (x int); INSERT INTO derived.later VALUES (1)");
        await c.query("CREATE SCHEMA auth; CREATE TABLE auth.secret (x int)");
      });
      const analyst = new URL(admin);
      analyst.username = ROLE;
      analyst.password = pw.ANALYST_PASSWORD;
      const url = analyst.toString();
      expect(await withDb(url, (c) => rows(c, "SELECT x FROM derived.later"))).toEqual([{ x: 1 }]);
      await expect(withDb(url, (c) => rows(c, "SELECT x FROM auth.secret"))).rejects.toThrow(/permission denied/);
      await expect(withDb(url, (c) => rows(c, "INSERT INTO derived.later VALUES (2)"))).rejects.toThrow(/read-only/);
      const [t] = await withDb(url, (c) => rows<{ statement_timeout: string }>(c, "SHOW statement_timeout"));
      expect(t!.statement_timeout).toBe("5s");
      // again, with a new password: the old one stops working
      expect((await run(["--role", ROLE], { ANALYST_PASSWORD: "another-long-secret" })).code).toBe(0);
      await expect(withDb(url, (c) => rows(c, "SELECT 1"))).rejects.toThrow(/password authentication failed/);
    } finally {
      await cleanup();
    }
  }, 90_000);
});
