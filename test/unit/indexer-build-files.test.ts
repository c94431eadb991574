/**
 * The indexer's build is ponder.config.ts, ponder.schema.ts and the files of src/, abis/ and
 * config/ (scripts/lib/indexer.ts `buildFiles`): they name its deployment schema, and an indexer
 * group or a redeploy runs from a copy of just them. A handler importing anything else would
 * fail to load there, and a change to it would not make a new deployment.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..", "..");
const BUILD_DIRS = ["src", "abis", "config"];

function files(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return files(p);
    return e.name.endsWith(".ts") && !e.name.endsWith(".test.ts") ? [p] : [];
  });
}

describe("the indexer's build files", () => {
  it("import only each other (and packages)", () => {
    const build = ["ponder.config.ts", "ponder.schema.ts", ...BUILD_DIRS.flatMap(files)];
    const outside: string[] = [];
    for (const file of build) {
      const text = readFileSync(join(ROOT, file), "utf8");
      for (const m of text.matchAll(/\bfrom\s+"(\.{1,2}\/[^"]+)"/g)) {
        const target = join(file, "..", m[1]!);
        if (![...BUILD_DIRS, "ponder.schema", "ponder.config"].some((d) => target.startsWith(d)))
          outside.push(`${file} imports ${m[1]}`);
      }
    }
    expect(build.length).toBeGreaterThan(20);
    expect(outside).toEqual([]);
  });
});
