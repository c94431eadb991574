/**
 * `npm run test:e2e`: the end-to-end files, the `e2e` project's on their shared devnet and the
 * `solo` project's on chains and a Postgres of their own (vitest.config.ts), as two vitest runs
 * beside each other: each project's files still run one after another, in name order. Both runs
 * wait mostly on chains and databases, so side by side they take about the longer one's time
 * (docs in README, "Tests"). Every line is echoed with its project's prefix and kept in
 * `.data/test-logs/<project>.log`; the exit code is non-zero when either run fails.
 *
 * `npm run test:e2e -- --help`.
 */
import { readdirSync, rmSync } from "node:fs";
import { join } from "node:path";
import { type Command, HELP_OPTION, parseCommandLine, refuse } from "./lib/cli.js";
import { REPO_ROOT } from "./lib/paths.js";
import { installSignalHandlers, spawnManaged } from "./lib/procs.js";

const CMD: Command = {
  name: "test:e2e",
  usage: "usage: npm run test:e2e -- [<file filter>...]",
  help: `
Runs the end-to-end test files: the e2e project's on their shared devnet and the solo project's
on chains and a Postgres of their own (vitest.config.ts), as two vitest runs side by side, each
running its files one after another in name order. Every line is printed with its project's
prefix and kept in .data/test-logs/<project>.log; the exit code is 1 when either run fails.

  <file filter>  only the files of test/e2e whose path contains it (as vitest filters), e.g.
                 5-api-points; each must match a file. Without any: every file.`,
};

const PROJECTS = ["e2e", "solo"] as const;
const { positionals: filters } = parseCommandLine(CMD, { allowPositionals: true, options: { ...HELP_OPTION } });
const files = readdirSync(join(REPO_ROOT, "test", "e2e")).filter((f) => f.endsWith(".test.ts"));
for (const f of filters) {
  if (!files.some((file) => `test/e2e/${file}`.includes(f))) refuse(CMD, `no file of test/e2e matches "${f}"`);
}
// a project that holds none of the files named passes with no tests
const extra = filters.length ? [...filters, "--passWithNoTests"] : [];
const logDir = join(REPO_ROOT, ".data", "test-logs");
const vitest = join(REPO_ROOT, "node_modules", ".bin", "vitest");

installSignalHandlers();
const started = Date.now();
const runs = PROJECTS.map((project) => {
  const logFile = join(logDir, `${project}.log`);
  rmSync(logFile, { force: true });
  const proc = spawnManaged(project, vitest, ["run", "--project", project, ...extra], {
    cwd: REPO_ROOT,
    logFile,
    echo: true,
    // a run stopped by Ctrl-C still stops its chains and databases in its teardown
    stopSignal: "SIGINT",
    killTimeoutMs: 30_000,
  });
  return proc.exited.then((exit) => ({ project, logFile, exit, seconds: (Date.now() - started) / 1000 }));
});

const results = await Promise.all(runs);
let failed = false;
for (const r of results) {
  const ok = r.exit.code === 0;
  failed ||= !ok;
  const how = ok ? "passed" : `FAILED (${r.exit.signal ? `signal ${r.exit.signal}` : `exit ${r.exit.code}`})`;
  process.stdout.write(`test-e2e: ${r.project} ${how} in ${r.seconds.toFixed(0)} s; log ${r.logFile}\n`);
}
process.exit(failed ? 1 : 0);
