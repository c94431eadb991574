/**
 * Debian packages the project's scripts install when npm cannot provide them (redis-server,
 * chromium): apt-get, non-interactively, as root, once, with a readable error otherwise.
 */
import { spawn } from "node:child_process";
import { accessSync, constants as fsConstants } from "node:fs";
import { delimiter, join } from "node:path";
import { createLineLogger, errMessage } from "./procs.js";

export function isExecutable(path: string): boolean {
  try {
    accessSync(path, fsConstants.X_OK);
    return true;
  } catch {
    return false;
  }
}

export function whichInPath(exe: string): string | undefined {
  for (const dir of (process.env.PATH ?? "").split(delimiter)) {
    if (!dir) continue;
    const p = join(dir, exe);
    if (isExecutable(p)) return p;
  }
  return undefined;
}

export function findAptGet(): string | undefined {
  return whichInPath("apt-get") ?? ["/usr/bin/apt-get"].find(isExecutable);
}

/** Run `apt-get <args>` non-interactively; rejects with its last output lines on failure. */
export function runAptGet(aptGet: string, args: string[]): Promise<void> {
  const out = createLineLogger("apt-get", { keepLines: 30 });
  return new Promise((resolvePromise, reject) => {
    // Not spawnManaged: killing dpkg halfway on Ctrl-C would leave the package database broken.
    const child = spawn(aptGet, ["-o", "DPkg::Lock::Timeout=300", ...args], {
      env: { ...process.env, DEBIAN_FRONTEND: "noninteractive" },
      stdio: ["ignore", "pipe", "pipe"],
    });
    child.stdout.on("data", (d: Buffer) => out.write(d));
    child.stderr.on("data", (d: Buffer) => out.write(d));
    child.once("error", (err) => reject(new Error(`apt-get ${args.join(" ")}: ${err.message}`)));
    child.once("close", (code, signal) => {
      out.flush();
      if (code === 0) return resolvePromise();
      reject(
        new Error(
          `\`apt-get ${args.join(" ")}\` failed (${signal ? `signal ${signal}` : `exit code ${code}`}). ` +
            `Last output:\n${out.recent().join("\n")}`,
        ),
      );
    });
  });
}

/**
 * `apt-get install -y <pkg>` (retried once after `apt-get update`); `found()` tells where the
 * program is afterwards. Throws a message ending in `howTo` when it cannot be installed here.
 */
export async function aptInstall(
  pkg: string,
  o: { log: (m: string) => void; howTo: string; found: () => string | undefined },
): Promise<string> {
  const isRoot = process.getuid?.() === 0;
  const aptGet = findAptGet();
  if (!isRoot || !aptGet) {
    const why = !aptGet ? "apt-get is not available" : "not running as root";
    throw new Error(`${pkg} is not installed and cannot be installed automatically (${why}). ${o.howTo}`);
  }
  o.log(
    `${pkg} not found: installing the Debian package with \`apt-get install -y ${pkg}\` (one time, may take ` +
      `minutes)...`,
  );
  const install = ["install", "-y", "--no-install-recommends", pkg];
  try {
    await runAptGet(aptGet, install);
  } catch (first) {
    o.log(`apt-get install failed (${errMessage(first).split("\n")[0]}); running \`apt-get update\` and retrying...`);
    try {
      await runAptGet(aptGet, ["update"]);
      await runAptGet(aptGet, install);
    } catch (err) {
      throw new Error(`Installing ${pkg} with apt-get failed: ${errMessage(err)}\n${o.howTo}`);
    }
  }
  const installed = o.found();
  if (!installed) throw new Error(`apt-get installed ${pkg} but its program is not found. ${o.howTo}`);
  return installed;
}
