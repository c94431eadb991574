/** findPgTools: the newest Debian-installed client at least the server's major, all three programs. */
import { chmodSync, mkdirSync, mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { findPgTools } from "./lib/pg-tools.js";

const root = mkdtempSync(join(tmpdir(), "pg-tools-"));
const install = (major: string, programs = ["pg_dump", "pg_restore", "psql"]) => {
  mkdirSync(join(root, major, "bin"), { recursive: true });
  for (const p of programs) {
    writeFileSync(join(root, major, "bin", p), "#!/bin/sh\n");
    chmodSync(join(root, major, "bin", p), 0o755);
  }
};
afterAll(() => rmSync(root, { recursive: true, force: true }));

describe("findPgTools", () => {
  it("takes the newest major at least the server's, with all of its programs", () => {
    expect(findPgTools(15, join(root, "none"))).toBeUndefined();
    install("13");
    install("15");
    install("17", ["pg_dump"]); // incomplete: skipped
    mkdirSync(join(root, "common")); // not a major
    expect(findPgTools(15, root)).toEqual({
      major: 15,
      pgDump: join(root, "15", "bin", "pg_dump"),
      pgRestore: join(root, "15", "bin", "pg_restore"),
      psql: join(root, "15", "bin", "psql"),
    });
    expect(findPgTools(16, root)).toBeUndefined();
    expect(findPgTools(0, root)?.major).toBe(15);
  });
});
