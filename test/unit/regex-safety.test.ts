/**
 * No regular expression of the service backtracks super-linearly, unless it is listed below with
 * what bounds its input. A request body may be a megabyte: one quadratic pattern over a field of
 * it (`/0+$/` trimming a fraction, `\d+\.?\d*` over a run of digits) held the event loop for
 * minutes. Every regex literal of the sources (zod's `.regex()` included) goes through recheck.
 */
import { execFileSync } from "node:child_process";
import { readFileSync } from "node:fs";
import { join } from "node:path";
import { check } from "recheck";
import ts from "typescript";
import { describe, expect, it } from "vitest";

const ROOT = join(import.meta.dirname, "..", "..");

/** `file: pattern` of the patterns allowed to be super-linear, with what bounds their input. */
const BOUNDED: Record<string, string> = {
  "api/lib/build/simulate.ts: /method\\b.*\\b(not found|does not exist|not available|not supported|unsupported)|unsupported method/i":
    "a node's error text, cut to 2,000 characters first",
  "api/lib/openapi-ids.ts: /^_+|_+$/g": "the service's own route names, at start-up",
  "api/lib/public-error.ts: /\\b[a-z][a-z0-9+.-]{0,30}:\\/\\/[^\\s\"'<>]{0,2000}/gi":
    "an error's first line, cut to 2,000 characters before it is read",
  "api/routes/platform/platform.lib.ts: /0+$/": "a remainder's digits: at most a token's decimals (a uint8)",
  "bench/handlers.ts: /for\\s*\\(\\s*const\\s+(\\w+)\\s+of\\s+\\[([^\\]]*)\\]/g": "the project's own handler sources",
  'bench/metrics.ts: /(\\w+)="((?:[^"\\\\]|\\\\.)*)"/g': "the API's own metrics text, in the bench",
  "scripts/relayer.ts: /\\/\\/[^@]*@/": "the operator's REDIS_URL",
  "scripts/workers.ts: /\\/\\/[^@]*@/": "the operator's REDIS_URL",
};

function sources(): string[] {
  const out = execFileSync("git", ["ls-files", "*.ts"], { cwd: ROOT, encoding: "utf8" });
  return out
    .split("\n")
    .filter((f) => f !== "" && !f.endsWith(".test.ts") && !f.startsWith("test/") && !f.endsWith(".d.ts"));
}

function literals(file: string): string[] {
  const src = ts.createSourceFile(file, readFileSync(join(ROOT, file), "utf8"), ts.ScriptTarget.Latest, true);
  const found: string[] = [];
  const visit = (node: ts.Node) => {
    if (node.kind === ts.SyntaxKind.RegularExpressionLiteral) found.push(node.getText(src));
    ts.forEachChild(node, visit);
  };
  visit(src);
  return found;
}

describe("regular expressions", () => {
  it("backtrack at most linearly, or read only input bounded as listed", { timeout: 300_000 }, async () => {
    const all = sources().flatMap((file) => literals(file).map((lit) => ({ file, lit })));
    expect(all.length).toBeGreaterThan(100);
    // four at a time: recheck's time budget runs from the call, so a queue of 150 in one process
    // would spend it waiting on a loaded machine (its status then "unknown")
    const flagged: (string | null)[] = [];
    for (let i = 0; i < all.length; i += 4) {
      const batch = all.slice(i, i + 4).map(async ({ file, lit }) => {
        const end = lit.lastIndexOf("/");
        const r = await check(lit.slice(1, end), lit.slice(end + 1), { timeout: 30_000 });
        if (r.status === "safe") return null;
        const key = `${file}: ${lit}`;
        if (key in BOUNDED) return key;
        return `${key}${r.status === "vulnerable" ? ` (e.g. ${r.attack.pattern})` : ` (${r.status})`}`;
      });
      flagged.push(...(await Promise.all(batch)));
    }
    // an unlisted one fails with its attack string; a listed one that became safe asks for its removal
    expect(flagged.filter((f) => f != null).sort()).toEqual(Object.keys(BOUNDED).sort());
  });
});
