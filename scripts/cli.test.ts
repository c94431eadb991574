/** The commands refuse bad configuration with a readable message and exit code 2, starting nothing. */
import { execFile } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { failureLine } from "./lib/cli.js";

const root = join(import.meta.dirname, "..");
const tsx = join(root, "node_modules", ".bin", "tsx");

/** The command's exit code and output; async, so a slow start does not block vitest's worker. */
function run(script: string, env: Record<string, string | undefined>, args: string[] = []) {
  const full: NodeJS.ProcessEnv = { ...process.env, ...env };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete full[k];
  return spawnOutput(script, full, args);
}

function spawnOutput(script: string, env: NodeJS.ProcessEnv, args: string[]) {
  return new Promise<{ code: number | null; stderr: string; stdout: string }>((resolve) => {
    const opts = { cwd: root, env, encoding: "utf8", timeout: 60_000 } as const;
    execFile(tsx, [join(root, script), ...args], opts, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === "number" ? err.code : null) : 0, stdout, stderr });
    });
  });
}

const SERVICES = ["workers", "api", "indexer", "queues-dashboard", "demo", "relayer"];
const TOOLS = ["keys", "operators", "points", "governance-log", "registry", "vaults", "indexer-groups"];
/** Every npm script that runs a file of scripts/, as [npm script name, file]. */
const COMMANDS = Object.entries(
  (JSON.parse(readFileSync(join(root, "package.json"), "utf8")) as { scripts: Record<string, string> }).scripts,
)
  .map(([name, cmd]) => [name, /scripts\/([\w-]+\.ts)$/.exec(cmd)?.[1]] as const)
  .filter((x): x is readonly [string, string] => x[1] !== undefined);

/** Runs `check` on every item, two at a time: each is a Node process loading the service's modules. */
async function inPairs<T>(items: readonly T[], check: (item: T, i: number) => Promise<void>) {
  let next = 0;
  const lane = async () => {
    for (let i = next++; i < items.length; i = next++) await check(items[i]!, i);
  };
  await Promise.all([lane(), lane()]);
}

describe("--help and unknown options", { timeout: 300_000 }, () => {
  // settings every command would refuse, and a database nobody answers on: --help looks at neither
  const bad = { DATABASE_URL: "mysql://x", REDIS_URL: "http://x", DEMO_DAYS: "10", QUEUES_DASHBOARD_PORT: "99999" };

  it("covers every command of package.json", () => {
    expect(COMMANDS.map(([name]) => name)).toEqual(
      expect.arrayContaining([...SERVICES, ...TOOLS, "recompute", "bench:api", "indexer-prune"]),
    );
  });

  it("--help (or -h) prints the usage and what the command does, exit 0, whatever the settings", async () => {
    await inPairs(COMMANDS, async ([name, file], i) => {
      const r = await run(`scripts/${file}`, bad, [i % 2 ? "-h" : "--help"]);
      expect(r.code, `${name}: ${r.stderr}`).toBe(0);
      expect(r.stdout).toMatch(new RegExp(`^usage: npm run ${name} `));
      expect(r.stdout.split("\n").length, name).toBeGreaterThan(5);
      expect(r.stderr, name).toBe("");
    });
  });

  it("an unknown option is refused with the usage and a pointer to --help, exit 2", async () => {
    await inPairs(COMMANDS, async ([name, file]) => {
      const r = await run(`scripts/${file}`, bad, ["--frobnicate"]);
      expect(r.code, `${name}: ${r.stderr}`).toBe(2);
      expect(r.stderr).toContain(`${name}: Unknown option '--frobnicate'`);
      expect(r.stderr).toMatch(new RegExp(`\\nusage: npm run ${name} `));
      expect(r.stderr).toContain(`(npm run ${name} -- --help for more)`);
      expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
    });
  });

  it("an option that takes one value, given twice, is refused; a repeatable one is not", async () => {
    const wallet = "0x00000000000000000000000000000000000000aa";
    const twice = await run("scripts/points.ts", bad, [
      "add",
      ...["--wallet", wallet, "--points", "1", "--reason", "r", "--points", "2"],
    ]);
    expect(twice.code, twice.stderr).toBe(2);
    expect(twice.stderr).toContain("points: --points is given more than once");
    expect(twice.stderr).toMatch(/\nusage: npm run points /);
    // --scope may be repeated: refused further on, by the database setting, not as a duplicate
    const scopes = await run("scripts/keys.ts", bad, ["create", "k", "--scope", "a", "--scope", "b"]);
    expect(scopes.stderr).not.toContain("more than once");
    expect(scopes.code).toBeGreaterThan(0);
  });

  it("the services take no arguments; the tools refuse unknown commands", async () => {
    await inPairs(SERVICES, async (name) => {
      const r = await run(`scripts/${name}.ts`, bad, ["start"]);
      expect(r, name).toMatchObject({ code: 2, stderr: expect.stringMatching(/Unexpected argument 'start'/) });
    });
    await inPairs(TOOLS, async (name) => {
      const r = await run(`scripts/${name}.ts`, bad, ["frobnicate"]);
      expect(r, name).toMatchObject({ code: 2, stderr: expect.stringMatching(/unknown command "frobnicate"/) });
    });
  });
});

// each case spawns tsx, up to 10 s or so while the devnet's tests load the same 2-core machine
describe("command-line configuration errors", { timeout: 300_000 }, () => {
  it("npm run demo: too short a history", async () => {
    const r = await run("scripts/demo.ts", { DEMO_DAYS: "10", DEMO_WALLETS: "abc" });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/DEMO_DAYS: at least 120 days of history/);
    expect(r.stderr).toMatch(/DEMO_WALLETS/);
  });

  it("npm run indexer: no database, no registry, nothing to index", async () => {
    expect(await run("scripts/indexer.ts", { DATABASE_URL: undefined })).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/DATABASE_URL: required/),
    });
    expect(
      await run("scripts/indexer.ts", {
        DATABASE_URL: "postgresql://x@127.0.0.1:1/x",
        VAULT_REGISTRY: "/nonexistent/vaults.json",
      }),
    ).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/vault registry not found at \/nonexistent\/vaults.json/),
    });
    expect(
      await run("scripts/indexer.ts", {
        DATABASE_URL: "postgresql://x@127.0.0.1:1/x",
        VAULT_REGISTRY: join(root, "config", "vaults.json"),
      }),
    ).toMatchObject({ code: 2, stderr: expect.stringMatching(/nothing to index/) });
  });

  it("indexer groups: a bad group name is refused, naming the setting", async () => {
    expect(
      await run("scripts/indexer.ts", { DATABASE_URL: "postgresql://x@127.0.0.1:1/x", INDEXER_GROUP: "Group-1" }),
    ).toMatchObject({ code: 2, stderr: expect.stringMatching(/INDEXER_GROUP: a group name/) });
    const url = { DATABASE_URL: "postgresql://x@127.0.0.1:1/x" };
    expect(await run("scripts/indexer-groups.ts", url, ["remove"])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/remove needs the group's name/),
    });
    expect(await run("scripts/indexer-groups.ts", url, ["remove", "B"])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/"B" is not a group name/),
    });
    expect(await run("scripts/indexer-groups.ts", url, ["list", "--views", "x;y"])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/--views "x;y" is not a schema name/),
    });
  });

  it("the relayer refuses a bad delay, key or missing RPC, naming the setting", async () => {
    const r = await run("scripts/relayer.ts", {
      RELAYER_DELAY_S: "soon",
      RELAYER_PRIVATE_KEY: "0x12",
      PERP_CORE_LEDGER: "0x0000000000000000000000000000000000000001",
      PERP_BRIDGES_8453: "0x0000000000000000000000000000000000000002",
      CORE_CHAIN_ID: "1",
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/RELAYER_DELAY_S/);
    expect(r.stderr).toMatch(/RELAYER_PRIVATE_KEY/);
    const key = `0x${"11".repeat(32)}`;
    const missing = await run("scripts/relayer.ts", {
      RELAYER_PRIVATE_KEY: key,
      PERP_CORE_LEDGER: "0x0000000000000000000000000000000000000001",
      PERP_BRIDGES_8453: "0x0000000000000000000000000000000000000002",
      CORE_CHAIN_ID: "1",
      PONDER_RPC_URL_1: undefined,
      PONDER_RPC_URL_8453: undefined,
    });
    expect(missing.code).toBe(2);
    expect(missing.stderr).toMatch(/PONDER_RPC_URL_1: required/);
    expect(missing.stderr).toMatch(/PONDER_RPC_URL_8453: required/);
    // the refusal names the command and shows its usage, as every command's does
    expect(missing.stderr).toMatch(/^relayer: invalid relayer configuration:/);
    expect(missing.stderr).toContain("usage: npm run relayer");
    // a chain id outside the catalogue is a typo, not a chain missing its RPC
    const typo = await run("scripts/relayer.ts", {
      RELAYER_PRIVATE_KEY: key,
      PERP_CORE_LEDGER: "0x0000000000000000000000000000000000000001",
      PERP_BRIDGES_84530: "0x0000000000000000000000000000000000000002",
      CORE_CHAIN_ID: "11",
    });
    expect(typo.code).toBe(2);
    expect(typo.stderr).toMatch(/CORE_CHAIN_ID: 11 is not an EVM chain of the catalogue/);
    expect(typo.stderr).toMatch(/PERP_BRIDGES_84530: 84530 is not an EVM chain of the catalogue/);
    expect(typo.stderr).not.toMatch(/PONDER_RPC_URL_(11|84530)/);
  });

  it("npm run workers: bad settings are all listed", async () => {
    const r = await run("scripts/workers.ts", {
      DATABASE_URL: "mysql://x",
      REDIS_URL: "http://x",
      WORKER_CONCURRENCY: "0",
      POINTS_REFERRAL_SHARE: "1.5",
    });
    expect(r.code).toBe(2);
    for (const v of ["DATABASE_URL", "REDIS_URL", "WORKER_CONCURRENCY", "POINTS_REFERRAL_SHARE"])
      expect(r.stderr).toMatch(new RegExp(v));
  });

  it("npm run recompute: bad arguments", async () => {
    const db = { DATABASE_URL: "postgresql://x@127.0.0.1:1/x" };
    expect(await run("scripts/recompute.ts", db)).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/give --vault <address> or --all/),
    });
    expect(await run("scripts/recompute.ts", db, ["--vault", "0x12"])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/not a 0x-prefixed 20-byte address/),
    });
    expect(await run("scripts/recompute.ts", db, ["--all", "--from", "2026-02-30"])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/--from: not a calendar date/),
    });
    expect(
      await run("scripts/recompute.ts", db, ["--all", "--from", "2026-03-02", "--to", "2026-03-01"]),
    ).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/--from is after --to/),
    });
    expect(await run("scripts/recompute.ts", db, ["--all", "--frobnicate"])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/frobnicate/),
    });
  });

  it("npm run queues-dashboard: a public host without a password, a bad port, a Redis nobody answers on", async () => {
    const r = await run("scripts/queues-dashboard.ts", {
      QUEUES_DASHBOARD_HOST: "0.0.0.0",
      QUEUES_DASHBOARD_PORT: "99999",
      QUEUES_DASHBOARD_PASSWORD: undefined,
    });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/QUEUES_DASHBOARD_HOST: a host other than loopback needs QUEUES_DASHBOARD_PASSWORD/);
    expect(r.stderr).toMatch(/QUEUES_DASHBOARD_PORT/);
    expect(r.stderr).toMatch(/^queues-dashboard: /);
    expect(r.stderr).toContain("usage: npm run queues-dashboard");
    expect(await run("scripts/queues-dashboard.ts", { QUEUES_DASHBOARD_PASSWORD: "short" })).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/at least 12 characters/),
    });
    const down = await run("scripts/queues-dashboard.ts", { REDIS_URL: "redis://127.0.0.1:1" });
    expect(down.code).toBe(1);
    expect(down.stderr).toMatch(/queues-dashboard failed: .*127\.0\.0\.1:1/);
  });

  it("npm run points: bad arguments", async () => {
    const db = { DATABASE_URL: "postgresql://x@127.0.0.1:1/x" };
    expect(await run("scripts/points.ts", db, ["give"])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/unknown command "give"/),
    });
    expect(
      await run("scripts/points.ts", db, [
        "add",
        "--wallet",
        `0x${"1".repeat(40)}`,
        "--points",
        "1e5",
        "--reason",
        "x",
      ]),
    ).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/--points: "1e5" is not a decimal number/),
    });
    const add = (points: string, more: string[] = []) =>
      run("scripts/points.ts", db, ["add", "--wallet", `0x${"1".repeat(40)}`, points, "--reason", "x", ...more]);
    // sums past numeric(78,18) would be the rollup's overflow: refused here, before connecting
    expect(await add(`--points=${"9".repeat(31)}`)).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/up to 30 digits and 18 decimals/),
    });
    for (const zero of ["0", "--points=-0.000"])
      expect(await add(zero.startsWith("--") ? zero : `--points=${zero}`)).toMatchObject({
        code: 2,
        stderr: expect.stringMatching(/--points: 0 changes nothing/),
      });
    expect(await run("scripts/points.ts", db, ["list", "--wallet", ""])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/--wallet: "" is not/),
    });
    expect(await add("--points=-5", ["--author", "  "])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/--author is empty/),
    });
    // text that would break the tab-separated lists, or too long: refused, like governance-log's
    const wallet = `0x${"1".repeat(40)}`;
    const texts: [string[], RegExp][] = [
      [["points.ts", "add", "--wallet", wallet, "--points", "1", "--reason", "bonus\tcampaign"], /--reason holds/],
      [["points.ts", "add", "--wallet", wallet, "--points", "1", "--reason", "x".repeat(501)], /--reason is longer/],
      [
        ["points.ts", "add", "--wallet", wallet, "--points", "1", "--reason", "x", "--author", "a\nb"],
        /--author holds/,
      ],
      [["keys.ts", "create", "ops\nbot"], /the key's name holds a control character/],
      [["keys.ts", "create", "k".repeat(101)], /the key's name is longer than 100 characters/],
      [
        ["governance-log.ts", "add", "--vault", wallet, "--category", "note", "--text", "a\u0007b"],
        /--text holds a control character .*\(line breaks are allowed\)/,
      ],
    ];
    await inPairs(texts, async ([[script, ...args], message]) => {
      const r = await run(`scripts/${script}`, db, args);
      expect(r.stderr).toMatch(message);
      expect(r.code, r.stderr).toBe(2);
    });
    expect(await run("scripts/points.ts", { DATABASE_URL: undefined }, ["list"])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/DATABASE_URL must be set/),
    });
    // a URL pg cannot read is refused by name, as the services refuse it (never echoed)
    for (const script of ["points", "keys", "indexer-prune", "vaults"]) {
      const args =
        script === "vaults"
          ? ["remove", "--chain", "1", "--address", `0x${"2".repeat(40)}`]
          : script === "indexer-prune"
            ? []
            : ["list"];
      const bad = await run(`scripts/${script}.ts`, { DATABASE_URL: "postgres://u:p#w@[bad/x" }, args);
      expect(bad.stderr, script).toMatch(/DATABASE_URL is not a valid URL/);
      expect(bad.stderr, script).not.toContain("p#w");
      expect(bad.code, script).toBeGreaterThan(0);
    }
  });

  it("npm run vaults add: a PONDER_RPC_URL that is not http(s) is refused before any call", async () => {
    const args = ["add", "--chain", "1", "--address", `0x${"2".repeat(40)}`, "--registry", "config/vaults.json"];
    for (const url of ["foo", "ws://127.0.0.1:8545"]) {
      expect(await run("scripts/vaults.ts", { PONDER_RPC_URL_1: url }, args)).toMatchObject({
        code: 2,
        stderr: expect.stringContaining(`PONDER_RPC_URL_1: "${url}" is not an http(s) URL`),
      });
    }
  });

  it("a database nobody answers on: the tools name DATABASE_URL (never its password), exit 1", async () => {
    const db = {
      DATABASE_URL: "postgresql://someone:s3cret@127.0.0.1:9/vaults",
      ANALYST_PASSWORD: "long-enough-password",
    };
    const calls: [string, string[]][] = [
      ["keys", ["list"]],
      ["keys", ["create", "someone"]],
      ["points", ["list"]],
      ["points", ["add", "--wallet", `0x${"1".repeat(40)}`, "--points", "1", "--reason", "x"]],
      ["operators", ["list"]],
      ["governance-log", ["list", "--vault", `0x${"2".repeat(40)}`]],
      ["registry", ["show"]],
      ["indexer-prune", []],
      ["indexer-groups", ["list"]],
      ["analyst-role", []],
    ];
    await inPairs(calls, async ([name, args]) => {
      const r = await run(`scripts/${name}.ts`, db, args);
      const what = `${name} ${args.join(" ")}: ${r.stderr}`;
      expect(r.code, what).toBe(1);
      expect(r.stderr, what).toMatch(
        new RegExp(`^${name}: the database \\(DATABASE_URL, 127\\.0\\.0\\.1:9/vaults\\) is not usable: .*ECONNREFUSED`),
      );
      expect(r.stderr, what).not.toContain("s3cret");
      expect(r.stderr, what).not.toMatch(/\n\s+at /);
    });
  });

  it("a refused connection is the database's only when it is to the database's port", () => {
    const was = process.env.DATABASE_URL;
    process.env.DATABASE_URL = "postgresql://u:pw@db.internal:6543/vaults";
    try {
      const refused = (port: number) =>
        Object.assign(new Error(`connect ECONNREFUSED 10.0.0.1:${port}`), { code: "ECONNREFUSED", port });
      expect(failureLine("keys", refused(6543))).toBe(
        "keys: the database (DATABASE_URL, db.internal:6543/vaults) is not usable: connect ECONNREFUSED 10.0.0.1:6543",
      );
      // an RPC's, wrapped as fetch wraps it
      const rpc = new TypeError("fetch failed", { cause: refused(8545) });
      expect(failureLine("vaults", rpc)).toBe("vaults failed: fetch failed (connect ECONNREFUSED 10.0.0.1:8545)");
      const login = Object.assign(new Error('password authentication failed for user "u"'), { code: "28P01" });
      expect(failureLine("points", new Error("migration failed: x", { cause: login }))).toMatch(
        /^points: the database \(DATABASE_URL, db\.internal:6543\/vaults\) is not usable/,
      );
      expect(failureLine("points", new Error("duplicate key"))).toBe("points failed: duplicate key");
      delete process.env.DATABASE_URL;
      expect(failureLine("keys", refused(6543))).toMatch(/^keys failed: /);
    } finally {
      if (was === undefined) delete process.env.DATABASE_URL;
      else process.env.DATABASE_URL = was;
    }
  });

  it("npm run operators / governance-log / keys: bad arguments", async () => {
    const db = { DATABASE_URL: "postgresql://x@127.0.0.1:1/x" };
    expect(await run("scripts/operators.ts", db, ["grant", "alice"])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/unknown command "grant"/),
    });
    expect(await run("scripts/operators.ts", db, ["create", "Al"])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/username "Al" must be 3 to 64 characters/),
    });
    expect(await run("scripts/operators.ts", db, ["create", "alice"])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/create needs at least one --scope/),
    });
    expect(await run("scripts/operators.ts", db, ["create", "alice", "--scope", "everything"])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/"everything" is not a scope \(known: points:write/),
    });
    expect(await run("scripts/operators.ts", db, ["disable", "alice", "--scope", "rewards:write"])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/disable takes no --scope/),
    });
    expect(
      await run("scripts/governance-log.ts", db, [
        "add",
        "--vault",
        `0x${"1".repeat(40)}`,
        "--category",
        "Incident!",
        "--text",
        "x",
      ]),
    ).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/--category: "Incident!" must be 1 to 40 lower-case letters/),
    });
    expect(
      await run("scripts/governance-log.ts", db, [
        "add",
        "--vault",
        `0x${"1".repeat(40)}`,
        "--category",
        "note",
        "--text",
        "x",
        "--time",
        "yesterday",
      ]),
    ).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/--time: "yesterday" is not an ISO 8601 date-time/),
    });
    // a day the calendar lacks is refused, not stored as the day Date.parse rolls it over to
    for (const time of ["2026-09-31T10:00:00Z", "2026-10-01T24:00:00Z"]) {
      const add = ["add", "--vault", `0x${"1".repeat(40)}`, "--category", "note", "--text", "x", "--time", time];
      expect(await run("scripts/governance-log.ts", db, add)).toMatchObject({
        code: 2,
        stderr: expect.stringMatching(new RegExp(`--time: "${time}" is not an ISO 8601 date-time`)),
      });
    }
    // a chain id is an int4 in the tables: beyond it is a usage error, not the database's
    expect(
      await run("scripts/governance-log.ts", db, ["list", "--vault", `0x${"1".repeat(40)}`, "--chain", "9999999999"]),
    ).toMatchObject({ code: 2, stderr: expect.stringMatching(/--chain: "9999999999" is not a chain id/) });
    const future = ["add", "--vault", `0x${"1".repeat(40)}`, "--category", "note", "--text", "x"];
    expect(await run("scripts/governance-log.ts", db, [...future, "--time", "2099-01-01T00:00:00Z"])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/--time 2099-01-01T00:00:00.000Z is in the future/),
    });
    for (const t of ["0", "0s", "00min"]) {
      expect(
        await run("scripts/analyst-role.ts", { ...db, ANALYST_PASSWORD: "x".repeat(12) }, ["--statement-timeout", t]),
      ).toMatchObject({ code: 2, stderr: expect.stringMatching(/give more than 0/) });
    }
    expect(await run("scripts/governance-log.ts", db, ["remove", "42"])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/remove needs the entry id/),
    });
    expect(await run("scripts/governance-log.ts", db, ["list"])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/--vault <address> is required/),
    });
    expect(await run("scripts/keys.ts", db, ["create", "partner", "--scope", "admin"])).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/"admin" is not a scope/),
    });
  });
});
