/** The commands refuse bad configuration with a readable message and exit code 2, starting nothing. */
import { spawnSync } from "node:child_process";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const root = join(import.meta.dirname, "..");
const tsx = join(root, "node_modules", ".bin", "tsx");

function run(script: string, env: Record<string, string | undefined>) {
  const full: NodeJS.ProcessEnv = { ...process.env, ...env };
  for (const [k, v] of Object.entries(env)) if (v === undefined) delete full[k];
  const r = spawnSync(tsx, [join(root, script)], { cwd: root, env: full, encoding: "utf8", timeout: 60_000 });
  return { code: r.status, stderr: r.stderr };
}

describe("command-line configuration errors", () => {
  it("npm run demo: too short a history", () => {
    const r = run("scripts/demo.ts", { DEMO_DAYS: "10", DEMO_WALLETS: "abc" });
    expect(r.code).toBe(2);
    expect(r.stderr).toMatch(/DEMO_DAYS: at least 120 days of history/);
    expect(r.stderr).toMatch(/DEMO_WALLETS/);
  });

  it("npm run indexer: no database, no registry, nothing to index", () => {
    expect(run("scripts/indexer.ts", { DATABASE_URL: undefined })).toMatchObject({ code: 2, stderr: expect.stringMatching(/DATABASE_URL: required/) });
    expect(run("scripts/indexer.ts", { DATABASE_URL: "postgresql://x@127.0.0.1:1/x", VAULT_REGISTRY: "/nonexistent/vaults.json" })).toMatchObject({
      code: 2,
      stderr: expect.stringMatching(/vault registry not found at \/nonexistent\/vaults.json/),
    });
    expect(
      run("scripts/indexer.ts", { DATABASE_URL: "postgresql://x@127.0.0.1:1/x", VAULT_REGISTRY: join(root, "config", "vaults.json") }),
    ).toMatchObject({ code: 2, stderr: expect.stringMatching(/nothing to index/) });
  });
});
