/**
 * Edits the vault registry file for `npm run vaults`: one entry added or removed, every other
 * entry (and every other key of the file) kept as it was, the result checked by loadRegistry
 * before it replaces the file (a temporary file renamed over it: readers see the old file or the
 * new one, never half of one).
 */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
import lockfile from "proper-lockfile";
import { loadRegistry, type Registry } from "../../config/registry.js";

interface RawRegistry {
  version: 1;
  vaults: Record<string, unknown>[];
  [key: string]: unknown;
}

/** The file's JSON as it is, after checking it is a valid registry (a missing file is an empty one). */
export function readRegistryFile(path: string): RawRegistry {
  if (!existsSync(path)) return { version: 1, vaults: [] };
  loadRegistry(path); // throws a readable error listing every problem
  return JSON.parse(readFileSync(path, "utf8")) as RawRegistry;
}

export const sameVault = (v: Record<string, unknown>, chainId: number, address: string) =>
  v.chainId === chainId && String(v.address).toLowerCase() === address.toLowerCase();

/** Writes `raw` to `path` if it is a valid registry; returns it as loaded. */
export function writeRegistryFile(path: string, raw: RawRegistry): Registry {
  mkdirSync(dirname(path), { recursive: true });
  const tmp = `${path}.tmp-${process.pid}`;
  writeFileSync(tmp, `${JSON.stringify(raw, null, 2)}\n`);
  try {
    const reg = loadRegistry(tmp);
    renameSync(tmp, path);
    return { ...reg, path };
  } catch (err) {
    rmSync(tmp, { force: true });
    throw err;
  }
}

/** Another command holds the file's lock for longer than a change waits. */
export class RegistryLocked extends Error {}

/** How long a change waits for another command's change of the same file to finish. */
const LOCK_WAIT = { retries: 60, factor: 1.2, minTimeout: 50, maxTimeout: 1000 };

/**
 * Runs `change` (read the file, edit it, write it, load the tables) holding `<path>.lock`, so
 * two commands changing one registry file take turns and neither loses the other's entry. A
 * lock left by a process that died is taken over once it is 10 s stale (proper-lockfile keeps a
 * held lock fresh); the lock goes with the process however it exits.
 */
export async function withRegistryLock<T>(path: string, change: () => Promise<T>): Promise<T> {
  mkdirSync(dirname(path), { recursive: true });
  let release: () => Promise<void>;
  try {
    release = await lockfile.lock(path, { realpath: false, stale: 10_000, retries: LOCK_WAIT });
  } catch (err) {
    if ((err as { code?: string }).code !== "ELOCKED") throw err;
    const held = `another command is still changing ${path} (it holds ${path}.lock)`;
    throw new RegistryLocked(`${held}: try again once it is done`);
  }
  try {
    return await change();
  } finally {
    await release().catch(() => {});
  }
}
