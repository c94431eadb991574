/** The commit a benchmark measured, for its recorded figures. */
import { execFileSync } from "node:child_process";
import { REPO_ROOT } from "./indexer.js";

/** The short commit at HEAD, "+ uncommitted changes" when the tracked files differ from it. */
export function gitDescribe(): string {
  try {
    const head = execFileSync("git", ["rev-parse", "--short", "HEAD"], { cwd: REPO_ROOT, encoding: "utf8" }).trim();
    const dirty = execFileSync("git", ["status", "--porcelain", "--untracked-files=no"], {
      cwd: REPO_ROOT,
      encoding: "utf8",
    }).trim();
    return dirty ? `${head} + uncommitted changes` : head;
  } catch {
    return "unknown (not a git checkout)";
  }
}
