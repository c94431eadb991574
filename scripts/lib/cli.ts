/**
 * What the command-line tools share: `--help`/`-h` (usage, exit 0, nothing touched), refusals of
 * bad arguments (a message, the usage, exit 2), the DATABASE_URL check, and the check the
 * read-only commands make instead of running migrations.
 */
import { resolve } from "node:path";
import { type ParseArgsConfig, parseArgs } from "node:util";
import type { Kysely } from "kysely";
import type { z } from "zod";
import type { envNum } from "../../config/env.js";
import { POSTGRES_SCHEME, POSTGRES_URL_FORM, parsablePostgresUrl } from "../../config/postgres-url.js";
import type { PoolTimeouts } from "../../db/client.js";
import { errMessage } from "./procs.js";

export interface Command {
  /** the npm script's name, e.g. `keys` */
  name: string;
  /** one or more `usage: ...` lines */
  usage: string;
  /** what `--help` prints after the usage */
  help: string;
}

/** Spread into every command's parseArgs options. */
export const HELP_OPTION = { help: { type: "boolean", short: "h" } } as const;

export function refuse(cmd: Command, msg: string): never {
  console.error(`${cmd.name}: ${msg}`);
  console.error(cmd.usage);
  console.error(`(npm run ${cmd.name} -- --help for more)`);
  process.exit(2);
}

export function printHelp(cmd: Command): never {
  console.log(`${cmd.usage}\n\n${cmd.help.trim()}`);
  process.exit(0);
}

/**
 * parseArgs over the process's arguments, strict: an unknown option or a malformed one is refused
 * (exit 2), and so is an option given twice that takes one value (parseArgs would keep the last:
 * `--points 1 ... --points 2` is a mistake, not a choice); `--help` prints the help and exits 0
 * before anything else is looked at.
 */
export function parseCommandLine<const T extends ParseArgsConfig>(
  cmd: Command,
  config: T,
): ReturnType<typeof parseArgs<T>> {
  let parsed: ReturnType<typeof parseArgs<T & { tokens: true }>>;
  try {
    parsed = parseArgs<T & { tokens: true }>({ ...config, tokens: true });
  } catch (err) {
    // an unknown option next to --help still gets the help: the user asked for it
    if (process.argv.slice(2).some((a) => a === "--help" || a === "-h")) printHelp(cmd);
    refuse(cmd, errMessage(err));
  }
  if ((parsed.values as { help?: boolean }).help) printHelp(cmd);
  const seen = new Set<string>();
  for (const t of parsed.tokens as { kind: string; name?: string }[]) {
    if (t.kind !== "option" || t.name === undefined || config.options?.[t.name]?.multiple) continue;
    if (seen.has(t.name)) refuse(cmd, `--${t.name} is given more than once`);
    seen.add(t.name);
  }
  return parsed as ReturnType<typeof parseArgs<T>>;
}

/** What a command's settings schema is built with (`settings`). */
export interface SchemaKit {
  z: typeof z;
  envNum: typeof envNum;
}

/**
 * A command's settings from the environment (`parseEnv`), with the schema `build` makes; a bad
 * one is refused by name (exit 2). zod is loaded here, not at the top: --help loads none of it.
 */
export async function settings<S extends z.ZodType>(cmd: Command, build: (kit: SchemaKit) => S): Promise<z.output<S>> {
  const [{ z: zod }, { envNum: num, parseEnv }] = await Promise.all([import("zod"), import("../../config/env.js")]);
  const schema = build({ z: zod, envNum: num });
  try {
    return parseEnv(schema, process.env, `${cmd.name} settings`);
  } catch (err) {
    return refuse(cmd, errMessage(err));
  }
}

/**
 * A text option or argument (a name, a reason, an author), trimmed: refused (exit 2) when empty,
 * longer than `max` characters, or holding a control character (a tab or a line break would
 * break the lists' tab-separated lines; `multiline` lets line breaks through, for free text).
 */
export function textArgument(
  cmd: Command,
  label: string,
  value: string | undefined,
  max: number,
  opts: { multiline?: boolean } = {},
): string {
  const text = value?.trim() ?? "";
  if (!text) refuse(cmd, `${label} is empty`);
  if ([...text].length > max) refuse(cmd, `${label} is longer than ${max} characters`);
  const lineBreak = (c: number) => opts.multiline === true && (c === 10 || c === 13);
  const control = [...text].some((ch) => {
    const c = ch.codePointAt(0)!;
    return (c < 0x20 || (c >= 0x7f && c <= 0x9f)) && !lineBreak(c);
  });
  if (control) {
    const allowed = opts.multiline ? " (line breaks are allowed)" : "";
    refuse(cmd, `${label} holds a control character (a tab, a line break, ...)${allowed}`);
  }
  return text;
}

/**
 * A file named on the command line, absolute: a relative one is taken from the directory the
 * command was typed in (npm's INIT_CWD), not from the repository root npm runs scripts in.
 */
export function argumentPath(given: string): string {
  return resolve(process.env.INIT_CWD || process.cwd(), given);
}

/** DATABASE_URL, checked as the services check it (never echoed: it holds a password). */
export function databaseUrl(cmd: Command): string {
  const url = process.env.DATABASE_URL?.trim();
  if (!url || !POSTGRES_SCHEME.test(url)) refuse(cmd, "DATABASE_URL must be set to a postgres:// URL");
  if (!parsablePostgresUrl(url)) refuse(cmd, `DATABASE_URL ${POSTGRES_URL_FORM}`);
  return url;
}

/**
 * The commands' waits on the database: a server that does not take the connection within 10 s,
 * or leaves a statement unanswered, ends the command with a message instead of hanging it.
 */
export const CLI_DB_TIMEOUTS: PoolTimeouts = { connectMs: 10_000, statementMs: 300_000, queryMs: 310_000 };

/**
 * The read-only commands (list, show) do not run migrations: they check that the tables they read
 * exist. Returns a sentence naming the first missing one (and what creates it), or null.
 */
export async function missingTable<DB>(db: Kysely<DB>, tables: readonly string[]): Promise<string | null> {
  const { sql } = await import("kysely"); // not at the top: --help loads nothing it does not need
  for (const table of tables) {
    const schema = table.split(".")[0]!;
    const { rows } = await sql<{ found: boolean; schema_found: boolean }>`
      SELECT to_regclass(${table}::text) IS NOT NULL AS found,
             EXISTS (SELECT 1 FROM pg_namespace WHERE nspname = ${schema}) AS schema_found`.execute(db);
    const r = rows[0]!;
    if (r.found) continue;
    return r.schema_found
      ? `the database has no table ${table} yet (its migrations are behind): ` +
          "start the workers or the API once, they migrate it"
      : `the database has no ${schema} schema yet: start the workers, the API or the demo first (they create it)`;
  }
  return null;
}

/** Socket errors meaning the database was not reached. */
const SOCKET = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ENOTFOUND",
  "EAI_AGAIN",
  "ETIMEDOUT",
  "EHOSTUNREACH",
  "ENETUNREACH",
]);
/** The server's answers refusing us: bad password, no such role or database, starting up. */
const REFUSED = new Set(["28P01", "28000", "3D000", "57P03"]);

/**
 * Whether `err` says the database could not be reached or let us in. A socket error counts only
 * when it is about the database's port (an RPC's refused connection is not the database's).
 */
function databaseUnreachable(err: unknown, port: number): boolean {
  const e = err as { code?: unknown; port?: unknown; errors?: unknown[]; message?: unknown; cause?: unknown } | null;
  if (!e || typeof e !== "object") return false;
  if (typeof e.code === "string" && REFUSED.has(e.code)) return true;
  if (typeof e.code === "string" && SOCKET.has(e.code) && (e.port === undefined || e.port === port)) return true;
  if (Array.isArray(e.errors) && e.errors.some((x) => databaseUnreachable(x, port))) return true;
  if (e.cause !== undefined && e.cause !== err && databaseUnreachable(e.cause, port)) return true;
  return /timeout exceeded when trying to connect|Connection terminated (due to connection timeout|unexpectedly)/.test(
    String(e.message ?? ""),
  );
}

/** host, port and database of DATABASE_URL, never its user or password (null: none to read). */
function databaseTarget(): { host: string; port: number; database: string } | null {
  const url = process.env.DATABASE_URL?.trim() ?? "";
  try {
    const u = new URL(url.replace("@/", "@___DUMMY___/"));
    // no host: pg connects to localhost; ?host=/dir: a Unix socket there
    const host = u.searchParams.get("host") || (u.hostname === "___DUMMY___" ? "" : u.hostname) || "localhost";
    return { host, port: Number(u.port || 5432), database: u.pathname.length > 1 ? u.pathname : "" };
  } catch {
    return null;
  }
}

/**
 * A command's last word on an error it did not expect: the message and exit 1. When it is the
 * database that could not be reached or refused the login, it says so and names DATABASE_URL
 * (its host, port and database: the password stays out of the terminal).
 */
export function commandFailed(name: string, err: unknown): never {
  console.error(failureLine(name, err));
  process.exit(1);
}

/** What commandFailed prints for `err` (exported for its test). */
export function failureLine(name: string, err: unknown): string {
  const db = databaseTarget();
  if (!db || !databaseUnreachable(err, db.port)) return `${name} failed: ${errMessage(err)}`;
  return `${name}: the database (DATABASE_URL, ${db.host}:${db.port}${db.database}) is not usable: ${errMessage(err)}`;
}
