/**
 * The demo, the indexer and the contracts' compile step refuse bad settings or arguments with a
 * readable message and exit 2, starting nothing. Every case here is refused before anything
 * starts, also without the checks it tests (a bad DEMO_DAYS, a missing registry, --check).
 */
import { execFile } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "..", "..");
const tsx = join(root, "node_modules", ".bin", "tsx");

/** Runs a script without blocking vitest's worker; `undefined` removes a variable. */
function run(script: string, env: Record<string, string | undefined>, args: string[] = []) {
  const full: NodeJS.ProcessEnv = { ...process.env, ...env };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete full[k];
  return new Promise<{ code: number | null; stderr: string; stdout: string }>((resolve) => {
    const opts = { cwd: root, env: full, encoding: "utf8", timeout: 60_000 } as const;
    execFile(tsx, [join(root, script), ...args], opts, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === "number" ? err.code : null) : 0, stdout, stderr });
    });
  });
}

// each case spawns tsx (1–6 s on a busy 2-core machine)
describe("start-up checks", { timeout: 120_000 }, () => {
  it("npm run demo: a variable set to nothing is unset; REDIS_URL is checked with the rest", async () => {
    const empty = await run("scripts/demo.ts", { PORT: "", DEMO_SEED: "", DEMO_DAYS: "10", REDIS_URL: undefined });
    expect(empty.code).toBe(2);
    expect(empty.stderr).toBe("invalid demo configuration:\n  DEMO_DAYS: at least 120 days of history\n");
    const redis = await run("scripts/demo.ts", { DEMO_DAYS: "10", REDIS_URL: "redis://h:notaport" });
    expect(redis.code).toBe(2);
    expect(redis.stderr).toMatch(/\n {2}REDIS_URL: is not a valid URL/);
  });

  it("npm run indexer: a variable set to nothing is unset; a malformed DATABASE_URL is refused by name", async () => {
    const none = "/nonexistent/vaults.json";
    const empty = await run("scripts/indexer.ts", {
      DATABASE_URL: "postgresql://x@127.0.0.1:1/x",
      INDEXER_PORT: "",
      VAULT_REGISTRY: none,
    });
    expect(empty).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/vault registry not found at \/nonexistent/),
    });
    const bad = await run("scripts/indexer.ts", {
      DATABASE_URL: "postgres://u:secret@127.0.0.1:notaport/db",
      VAULT_REGISTRY: none,
    });
    expect(bad.code).toBe(2);
    expect(bad.stderr).toMatch(/^invalid indexer configuration:\n {2}DATABASE_URL: is not a valid URL/);
    expect(bad.stderr).not.toContain("secret");
  });

  it("contracts/compile.ts (postinstall, build:contracts): an unknown flag is refused before compiling", async () => {
    // with --check, nothing would be written even if the flag were let through
    const r = await run("contracts/compile.ts", {}, ["--check", "--chek"]);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain("build:contracts: Unknown option '--chek'");
    expect(r.stderr).toContain("usage: npm run build:contracts [-- --check]");
    expect(r.stderr).not.toMatch(/\n\s+at /);
    expect(r.stdout).toBe("");
    const positional = await run("contracts/compile.ts", {}, ["--check", "check"]);
    expect(positional).toMatchObject({ code: 2, stderr: expect.stringMatching(/Unexpected argument 'check'/) });
  });
});
