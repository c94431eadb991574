/**
 * One writer per table: every write statement in the code names a table whose one writer, in
 * docs/schema.md ("Who writes what"), is the module holding it; and nothing imports across
 * api/ and jobs/. Tests, benchmarks and frozen migrations are not writers.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..");
const DIRS = ["api", "jobs", "db", "scripts", "src", "config", "contracts"];

function sources(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return e.name === "node_modules" || e.name === "migrations" ? [] : sources(p);
    return e.name.endsWith(".ts") && !e.name.endsWith(".test.ts") ? [p] : [];
  });
}

const SCHEMAS = "derived|registry|auth|ops";
const BUILDER = /\.(?:insertInto|updateTable|deleteFrom|mergeInto|replaceInto)\(\s*"([a-z_]+\.[a-z_]+)"/g;
const COPY = new RegExp(`\\b(?:copyInto|copyRows)\\(\\s*\\w+,\\s*"((?:${SCHEMAS})\\.[a-z_]+)"`, "g");
const RAW = new RegExp(
  `\\b(?:INSERT\\s+INTO|UPDATE|DELETE\\s+FROM|TRUNCATE(?:\\s+TABLE)?|COPY)\\s+((?:${SCHEMAS})\\.[a-z_]+)`,
  "g",
);

/** table → the modules that write it, found in the code */
function writersInCode(): Map<string, Set<string>> {
  const out = new Map<string, Set<string>>();
  for (const file of DIRS.flatMap(sources)) {
    if (/^scripts\/bench-/.test(file)) continue; // a benchmark's own setup
    const text = readFileSync(join(ROOT, file), "utf8");
    for (const re of [BUILDER, COPY, RAW])
      for (const m of text.matchAll(re)) {
        const set = out.get(m[1]!) ?? new Set<string>();
        set.add(file);
        out.set(m[1]!, set);
      }
  }
  return out;
}

/** table → its one writer, as docs/schema.md lists it (null: none yet) */
function writersInDocs(): Map<string, string | null> {
  const doc = readFileSync(join(ROOT, "docs/schema.md"), "utf8");
  const section = doc.slice(doc.indexOf("## 7. Who writes what"));
  const out = new Map<string, string | null>();
  for (const m of section.matchAll(/^\| `([a-z_]+\.[a-z_]+)`\s*\| ([^|]+)\|/gm)) {
    const writer = /`([^`]+\.ts)`/.exec(m[2]!);
    out.set(m[1]!, writer ? writer[1]! : null);
  }
  return out;
}

describe("one writer per table", () => {
  it("every table written in the code has exactly the writer docs/schema.md names", () => {
    const code = writersInCode();
    const docs = writersInDocs();
    expect(docs.size).toBeGreaterThan(20);
    for (const [table, files] of code) {
      expect(docs.has(table), `${table} is written by ${[...files]} but not listed in docs/schema.md`).toBe(true);
      expect([...files], `${table}'s writers`).toEqual([docs.get(table)]);
    }
    for (const [table, writer] of docs)
      if (writer) expect(code.get(table), `${table}: ${writer} writes it nowhere`).toBeDefined();
  });

  it("the API and the workers never import each other", () => {
    const crossing = (from: string, to: string) =>
      sources(from).filter((f) => new RegExp(`from "(\\.\\./)+${to}/`).test(readFileSync(join(ROOT, f), "utf8")));
    expect(crossing("api", "jobs")).toEqual([]);
    expect(crossing("jobs", "api")).toEqual([]);
  });

  it("finds writes of every kind (the scan itself)", () => {
    const sample = [
      '.insertInto("registry.reward")',
      'copyInto(client, "derived.vault_day", [])',
      "DELETE FROM derived.points_index t",
      "INSERT INTO derived.points_vault (chain_id)",
    ].join("\n");
    const found = [BUILDER, COPY, RAW].flatMap((re) => [...sample.matchAll(re)].map((m) => m[1]));
    expect(found.sort()).toEqual([
      "derived.points_index",
      "derived.points_vault",
      "derived.vault_day",
      "registry.reward",
    ]);
  });
});
