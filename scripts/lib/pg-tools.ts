/**
 * Postgres's client programs (pg_dump, pg_restore, psql) for the backup and restore rehearsal:
 * npm has none, Debian has them (`postgresql-client`). pg_dump refuses a server of a newer major
 * than its own, so the programs are looked for by major, in Debian's layout
 * (/usr/lib/postgresql/<major>/bin), the newest first, and installed with apt-get when missing.
 */
import { existsSync, readdirSync } from "node:fs";
import { join } from "node:path";
import { aptInstall, isExecutable } from "./apt.js";

export interface PgTools {
  major: number;
  pgDump: string;
  pgRestore: string;
  psql: string;
}

const ROOT = "/usr/lib/postgresql";

/** The newest Debian-installed client whose major is at least `minMajor`, if any. */
export function findPgTools(minMajor: number, root = ROOT): PgTools | undefined {
  if (!existsSync(root)) return undefined;
  const majors = readdirSync(root)
    .filter((d) => /^\d+$/.test(d))
    .map(Number)
    .filter((m) => m >= minMajor)
    .sort((a, b) => b - a);
  for (const major of majors) {
    const bin = join(root, String(major), "bin");
    const tools = {
      major,
      pgDump: join(bin, "pg_dump"),
      pgRestore: join(bin, "pg_restore"),
      psql: join(bin, "psql"),
    };
    if ([tools.pgDump, tools.pgRestore, tools.psql].every(isExecutable)) return tools;
  }
  return undefined;
}

/**
 * pg_dump, pg_restore and psql for a server of major `serverMajor`: found, or installed
 * (`apt-get install -y postgresql-client`, Debian's current major). Throws a readable message
 * when none can be had here.
 */
export async function ensurePgTools(serverMajor: number, log: (m: string) => void): Promise<PgTools> {
  const found = findPgTools(serverMajor);
  if (found) return found;
  const howTo =
    `Install PostgreSQL's client programs, version ${serverMajor} or newer ` +
    "(on Debian: apt-get install postgresql-client).";
  await aptInstall("postgresql-client", {
    log,
    howTo,
    found: () => findPgTools(0)?.pgDump,
  });
  const tools = findPgTools(serverMajor);
  if (!tools) {
    const have = findPgTools(0)?.major;
    throw new Error(`pg_dump ${have} cannot dump a Postgres ${serverMajor} server. ${howTo}`);
  }
  return tools;
}
