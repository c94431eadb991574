/**
 * Edits the vault registry file for `npm run vaults`: one entry added or removed, every other
 * entry (and every other key of the file) kept as it was, the result checked by loadRegistry
 * before it replaces the file (a temporary file renamed over it: readers see the old file or the
 * new one, never half of one).
 */
import { existsSync, mkdirSync, readFileSync, renameSync, rmSync, writeFileSync } from "node:fs";
import { dirname } from "node:path";
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
