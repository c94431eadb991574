/**
 * How many files Ponder's file watcher looks after for an app root. `ponder start` runs a Vite dev
 * server whose chokidar watcher covers the whole root, minus Vite's default ignores (.git,
 * node_modules, test-results, the cache dir); busy directories there (Postgres data dirs under
 * .data/) cost the indexer CPU all the time. See docs/performance.md.
 */
import { lstatSync, readdirSync } from "node:fs";
import { join } from "node:path";

const IGNORED = new Set([".git", "node_modules", "test-results"]);

export function watchedFiles(root: string): { files: number; byTopDir: Map<string, number> } {
  const byTopDir = new Map<string, number>();
  let files = 0;
  const walk = (dir: string, top: string) => {
    let names: string[];
    try {
      names = readdirSync(dir);
    } catch {
      return;
    }
    for (const name of names) {
      if (IGNORED.has(name)) continue;
      const p = join(dir, name);
      if (p === join(root, ".ponder", "vite")) continue;
      let st: ReturnType<typeof lstatSync>;
      try {
        st = lstatSync(p);
      } catch {
        continue;
      }
      if (st.isDirectory()) walk(p, top || name);
      else {
        files++;
        const key = top || "(root)";
        byTopDir.set(key, (byTopDir.get(key) ?? 0) + 1);
      }
    }
  };
  walk(root, "");
  return { files, byTopDir };
}
