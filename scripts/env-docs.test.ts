/**
 * Every setting the code reads from the environment is documented: in the README's configuration
 * table and in .env.example, or, for the benchmarks' own, in docs/performance.md. Names are found
 * as `process.env.NAME` and as the keys of the zod schemas the settings are parsed with
 * (`NAME: z...`, `NAME: envNum(...)`, `NAME: decimal(...)`); names built at run time (`PONDER_RPC_URL_<chainId>`) are documented by hand.
 */
import { readdirSync, readFileSync, statSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "./lib/indexer.js";

const DIRS = ["api", "jobs", "db", "config", "onchain", "src", "scripts"];
/** Not settings of ours (INIT_CWD: where npm was typed, which npm sets). */
const NOT_SETTINGS = new Set(["PATH", "CI", "INIT_CWD"]);

function sources(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    if (statSync(path).isDirectory()) return sources(path);
    return /\.ts$/.test(name) && !/\.test\.ts$/.test(name) ? [path] : [];
  });
}

function settingNames(): Set<string> {
  const names = new Set<string>();
  const files = [...DIRS.flatMap((d) => sources(join(REPO_ROOT, d))), join(REPO_ROOT, "ponder.config.ts")];
  for (const file of files) {
    const text = readFileSync(file, "utf8");
    for (const m of text.matchAll(/process\.env\.([A-Z][A-Z0-9_]+)|\b([A-Z][A-Z0-9_]{2,}): (?:z|envNum|decimal)\b/g))
      names.add((m[1] ?? m[2])!);
  }
  for (const n of NOT_SETTINGS) names.delete(n);
  return names;
}

describe("the environment's settings", () => {
  it("are each in the README's table and .env.example, or the benchmarks' in performance.md", () => {
    const readme = readFileSync(join(REPO_ROOT, "README.md"), "utf8");
    const example = readFileSync(join(REPO_ROOT, ".env.example"), "utf8");
    const perf = readFileSync(join(REPO_ROOT, "docs", "performance.md"), "utf8");
    const names = settingNames();
    expect(names.size).toBeGreaterThan(50);
    const undocumented = [...names]
      .sort()
      .filter((n) =>
        n.startsWith("BENCH_") ? !perf.includes(n) : !readme.includes(`\`${n}\``) || !example.includes(n),
      )
      .map((n) => `${n}: ${n.startsWith("BENCH_") ? "docs/performance.md" : "README.md and .env.example"}`);
    expect(undocumented).toEqual([]);
  });
});
