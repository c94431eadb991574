/**
 * From a URL to its file without a search: every route lives in the directory its URL names
 * (`routeDir`), and docs/routes.md lists every route with its file, as the code defines them.
 */
import { readdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..", "..");

function files(dir: string): string[] {
  return readdirSync(join(ROOT, dir), { withFileTypes: true }).flatMap((e) => {
    const p = join(dir, e.name);
    if (e.isDirectory()) return files(p);
    return e.name.endsWith(".ts") && !e.name.endsWith(".test.ts") ? [p] : [];
  });
}

/** The routes the code defines: createRoute({ method, path }) in api/routes. */
function routesInCode(): { method: string; path: string; file: string }[] {
  return files("api/routes").flatMap((file) =>
    [...readFileSync(join(ROOT, file), "utf8").matchAll(/createRoute\(\{\s*method: "(\w+)",\s*path: "([^"]+)"/g)].map(
      (m) => ({ method: m[1]!.toUpperCase(), path: m[2]!, file }),
    ),
  );
}

/** The directory of a route: its URL's family. */
export function routeDir(path: string): string {
  const [first = "", second = ""] = path.split("/").filter(Boolean);
  if (first === "platform" && (second === "points" || second === "governance")) return second;
  if (first === "tokenized_vaults") return "tokenized_vault";
  if (first === "token") return "auth";
  if (first === "" || first === "ping") return "system";
  return first;
}

describe("routes and their files", () => {
  const code = routesInCode();

  it("every route is in the directory its URL names", () => {
    expect(code.length).toBeGreaterThan(30);
    for (const r of code)
      expect(r.file, `${r.method} ${r.path}`).toMatch(new RegExp(`^api/routes/${routeDir(r.path)}/`));
  });

  it("docs/routes.md lists every route with its file, and nothing else", () => {
    const doc = readFileSync(join(ROOT, "docs/routes.md"), "utf8");
    const listed = [...doc.matchAll(/^\| (GET|POST|PUT|PATCH|DELETE) +\| `([^`]+)` +\| `([^`]+)` +\|/gm)].map(
      (m) => `${m[1]} ${m[2]} ${m[3]}`,
    );
    expect(listed.sort()).toEqual(code.map((r) => `${r.method} ${r.path} ${r.file}`).sort());
  });
});
