/**
 * A real Redis for BullMQ in local runs and tests.
 *
 * - `ensureRedisServer` finds the `redis-server` binary and, as root on
 *   Debian/Ubuntu, installs it once with apt-get.
 * - `startRedis` runs our own redis-server (never the distribution's system
 *   service) under the process supervisor in ./procs.ts, so Ctrl-C / stopAll
 *   kill it. Persistence is off and `maxmemory-policy` is `noeviction`, which
 *   BullMQ requires. A test can stop() it and start it again on the same port
 *   and data dir to simulate an outage.
 * - `resolveRedis` uses `REDIS_URL` when set (checking it answers and warning
 *   when its eviction policy is not `noeviction`), else starts a local one.
 */
import { mkdirSync } from "node:fs";
import { connect } from "node:net";
import { join, resolve } from "node:path";
import { Redis } from "ioredis";
import { assertPortFree } from "./anvil.js";
import { aptInstall, isExecutable, whichInPath } from "./apt.js";
import { REPO_ROOT } from "./paths.js";
import {
  errMessage,
  exitUnlessAsked,
  type Kept,
  keepRunning,
  type ManagedProcess,
  spawnManaged,
  waitFor,
} from "./procs.js";

/** Progress/warning sink; default writes `[redis] <line>` to stdout. */
export type RedisLog = (line: string) => void;

const defaultLog: RedisLog = (line) => process.stdout.write(`[redis] ${line}\n`);

/** The port the Debian/Ubuntu package's system service listens on; we never use it. */
const SYSTEM_SERVICE_PORT = 6379;

// ---------------------------------------------------------------------------
// Raw RESP probe (no client library: no reconnect loops, no error events)
// ---------------------------------------------------------------------------

type RawReply = { kind: "ok" | "error"; text: string };

/**
 * Send one inline command (e.g. `PING`, `INFO server`) to host:port and read
 * one reply: simple strings, errors, integers and bulk strings. Rejects on
 * connection errors, timeouts and replies that are not RESP.
 */
function rawCommand(host: string, port: number, command: string, timeoutMs: number): Promise<RawReply> {
  return new Promise((resolvePromise, reject) => {
    const sock = connect({ host, port });
    let buf = Buffer.alloc(0);
    const done = (err: Error | undefined, reply?: RawReply) => {
      sock.removeAllListeners();
      sock.on("error", () => {});
      sock.destroy();
      if (err) reject(err);
      else resolvePromise(reply!);
    };
    sock.setTimeout(timeoutMs, () => done(new Error(`no reply to ${command} within ${timeoutMs} ms`)));
    sock.once("connect", () => sock.write(`${command}\r\n`));
    sock.once("error", (err) => done(err));
    sock.once("close", () => done(new Error(`connection closed before a reply to ${command}`)));
    sock.on("data", (d: Buffer) => {
      buf = Buffer.concat([buf, d]);
      const eol = buf.indexOf("\r\n");
      if (eol < 0) {
        if (buf.length > 4096) done(new Error("not a Redis reply (no line end in 4 KiB)"));
        return;
      }
      const head = buf.subarray(0, eol).toString("utf8");
      const type = head[0];
      if (type === "+" || type === ":") return done(undefined, { kind: "ok", text: head.slice(1) });
      if (type === "-") return done(undefined, { kind: "error", text: head.slice(1) });
      if (type === "$") {
        const len = Number(head.slice(1));
        if (!Number.isInteger(len)) return done(new Error(`not a Redis reply: ${JSON.stringify(head.slice(0, 80))}`));
        if (len < 0) return done(undefined, { kind: "ok", text: "" });
        if (buf.length < eol + 2 + len) return; // wait for the rest of the bulk string
        return done(undefined, { kind: "ok", text: buf.subarray(eol + 2, eol + 2 + len).toString("utf8") });
      }
      done(new Error(`not a Redis reply: ${JSON.stringify(head.slice(0, 80))}`));
    });
  });
}

/**
 * What listens on host:port:
 * - `closed`: nothing accepts connections;
 * - `pong`: a Redis that answers PING without authentication;
 * - `redis-restricted`: a Redis that refuses us (password, protected mode);
 * - `other`: something that is not a Redis (or does not answer).
 */
export type RedisProbe = "closed" | "pong" | "redis-restricted" | "other";

export async function probeRedis(host: string, port: number, timeoutMs = 1000): Promise<RedisProbe> {
  try {
    const r = await rawCommand(host, port, "PING", timeoutMs);
    if (r.kind === "ok") return r.text === "PONG" ? "pong" : "other";
    return /^(NOAUTH|DENIED|NOPERM|WRONGPASS)\b/.test(r.text) ? "redis-restricted" : "other";
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code;
    return code === "ECONNREFUSED" || code === "EADDRNOTAVAIL" ? "closed" : "other";
  }
}

/** `process_id` from `INFO server`, or undefined. */
async function redisPid(host: string, port: number): Promise<number | undefined> {
  const r = await rawCommand(host, port, "INFO server", 1000);
  if (r.kind !== "ok") return undefined;
  const m = /^process_id:(\d+)/m.exec(r.text);
  return m ? Number(m[1]) : undefined;
}

// ---------------------------------------------------------------------------
// redis-server binary
// ---------------------------------------------------------------------------

/** Path of `redis-server` (PATH, /usr/bin, /usr/sbin, /usr/local/bin), or undefined. */
export function findRedisServer(): string | undefined {
  return (
    whichInPath("redis-server") ??
    ["/usr/bin/redis-server", "/usr/sbin/redis-server", "/usr/local/bin/redis-server"].find(isExecutable)
  );
}

const HOW_TO_INSTALL =
  "Install it (Debian/Ubuntu: `sudo apt-get install redis-server`, macOS: `brew install redis`), " +
  "or set REDIS_URL to an existing Redis (redis://host:port, with maxmemory-policy noeviction).";

let ensurePromise: Promise<string> | undefined;

/**
 * Path of the `redis-server` binary. If it is missing and we run as root with
 * apt-get available, installs the `redis-server` package once (running
 * `apt-get update` and retrying if the first attempt fails). Otherwise throws
 * an Error explaining how to install it or to set REDIS_URL. Idempotent:
 * concurrent and repeated calls share one lookup/installation.
 *
 * The package's own system service (port 6379, if the init system starts it)
 * is left alone and never used: `startRedis` runs a separate process.
 */
export function ensureRedisServer(log: RedisLog = defaultLog): Promise<string> {
  ensurePromise ??= installIfMissing(log).catch((err: unknown) => {
    ensurePromise = undefined; // allow a later retry
    throw err;
  });
  return ensurePromise;
}

async function installIfMissing(log: RedisLog): Promise<string> {
  const found = findRedisServer();
  if (found) return found;

  const serviceWasUp = (await probeRedis("127.0.0.1", SYSTEM_SERVICE_PORT)) !== "closed";
  const installed = await aptInstall("redis-server", { log, howTo: HOW_TO_INSTALL, found: findRedisServer });
  log(`installed ${installed}`);
  if (!serviceWasUp && (await probeRedis("127.0.0.1", SYSTEM_SERVICE_PORT)) !== "closed") {
    // The package's postinst started its system service. Stopping a system
    // service is not ours to do; we simply never use it.
    log(
      `note: the package started its system service on 127.0.0.1:${SYSTEM_SERVICE_PORT}; it is left running and ` +
        `NOT used ` +
        "(this project starts its own redis-server on a separate port). Disable it with `systemctl disable --now " +
        "redis-server` if unwanted.",
    );
  }
  return installed;
}

// ---------------------------------------------------------------------------
// startRedis
// ---------------------------------------------------------------------------

export interface StartRedisOptions {
  /** Default 63790 (deliberately not 6379, the system service's port). */
  port?: number | undefined;
  /** Address to bind and connect to. Default '127.0.0.1'. */
  host?: string | undefined;
  /** Working dir of redis-server (`--dir`; persistence is off). Default `<repo>/.data/redis`. */
  dataDir?: string | undefined;
  /** Append redis output (prefixed `[name]`) to this file. */
  logFile?: string | undefined;
  /** Echo redis output to stdout. Default false. */
  echo?: boolean | undefined;
  /**
   * If a Redis already answers PING on host:port, use it (its `stop()` is then
   * a no-op) instead of failing with "port in use". Default false.
   */
  reuseExisting?: boolean | undefined;
  /**
   * If a Redis left by an earlier run holds host:port (one answering PING whose working dir is
   * `dataDir`: ours, killed before its stop), shut it down and start a fresh one, so no state of
   * that run carries over. Any other Redis there is still refused. Default false.
   */
  replaceLeftover?: boolean | undefined;
  /** How long to wait for PING to answer. Default 20000 ms. */
  startTimeoutMs?: number | undefined;
  /** Process name used in logs. Default 'redis'. */
  name?: string | undefined;
  /** Progress lines (installation, reuse). Default: stdout with a `[redis]` prefix. */
  log?: RedisLog | undefined;
}

export interface RedisInstance {
  /** `redis://<host>:<port>` */
  url: string;
  host: string;
  port: number;
  dataDir: string;
  /** True when an already running Redis was reused (`reuseExisting`). */
  reused: boolean;
  /** The supervised redis-server; undefined when reused. */
  process: ManagedProcess | undefined;
  /** Stop our redis-server (SIGTERM, then SIGKILL). No-op for a reused one. Resolves once the port is closed. */
  stop(): Promise<void>;
}

function redisUrl(host: string, port: number): string {
  return `redis://${host.includes(":") ? `[${host}]` : host}:${port}`;
}

/**
 * Start our own redis-server (found or installed by `ensureRedisServer`) on
 * host:port under the process supervisor, and wait until it answers PING.
 * Safe to call again after `stop()` with the same port and data dir.
 */
export async function startRedis(opts: StartRedisOptions = {}): Promise<RedisInstance> {
  const port = opts.port ?? 63790;
  const host = opts.host ?? "127.0.0.1";
  const dataDir = resolve(opts.dataDir ?? join(REPO_ROOT, ".data", "redis"));
  const name = opts.name ?? "redis";
  const log = opts.log ?? defaultLog;
  const url = redisUrl(host, port);
  if (!Number.isInteger(port) || port <= 0 || port > 65535) {
    throw new Error(`startRedis: port must be an integer in 1..65535 (got ${port})`);
  }

  try {
    await assertPortFree(host, port, `redis-server on ${host}:${port}`);
  } catch (err) {
    const probe = await probeRedis(host, port);
    if (probe === "pong" && opts.reuseExisting) {
      log(`reusing the Redis already running at ${url} (not started by us; stop() leaves it running)`);
      const { maxmemoryPolicy } = await checkRedis(url).catch(() => ({ maxmemoryPolicy: undefined }));
      if (maxmemoryPolicy !== undefined && maxmemoryPolicy !== "noeviction") {
        log(`warning: the reused Redis at ${url} has maxmemory-policy "${maxmemoryPolicy}"; BullMQ needs "noeviction"`);
      }
      return { url, host, port, dataDir, reused: true, process: undefined, stop: () => Promise.resolve() };
    }
    const leftover = probe === "pong" && opts.replaceLeftover ? await workingDir(url) : undefined;
    if (leftover !== undefined && resolve(leftover) === dataDir) {
      log(`shutting down the Redis an earlier run left at ${url} (working dir ${leftover}); starting afresh`);
      await shutdownLeftover(url, host, port);
    } else if (probe === "pong" || probe === "redis-restricted") {
      throw new Error(
        `Cannot start redis-server: port ${host}:${port} is in use by another Redis` +
          (probe === "pong" ? " (set REDIS_URL to use it)" : " that requires authentication") +
          `. Stop it (a previous run still alive? check with \`ss -ltnp | grep :${port}\`) or pick another port.`,
      );
    } else {
      throw err; // assertPortFree's readable "port in use" message
    }
  }

  const bin = await ensureRedisServer(log);
  mkdirSync(dataDir, { recursive: true });
  const args = [
    "--port",
    String(port),
    "--bind",
    host,
    "--maxmemory-policy",
    "noeviction", // BullMQ loses jobs otherwise
    "--save",
    "",
    "--appendonly",
    "no",
    "--dir",
    dataDir,
    "--daemonize",
    "no",
    "--protected-mode",
    "yes",
  ];
  const proc = spawnManaged(name, bin, args, { logFile: opts.logFile, echo: opts.echo, cwd: dataDir });

  const timeoutMs = opts.startTimeoutMs ?? 20_000;
  const failure = (what: string) =>
    new Error(
      `redis-server at ${url} ${what}. Last ` +
        `output:\n${proc.recentOutput()}${opts.logFile ? `\n(full log: ${opts.logFile})` : ""}`,
    );
  try {
    const outcome = await waitFor<"ready" | "exited" | { otherPid: number }>(
      async () => {
        if (proc.exitInfo()) return "exited";
        if ((await probeRedis(host, port, 1000)) !== "pong") return undefined;
        const pid = await redisPid(host, port).catch(() => undefined);
        return pid === undefined || pid === proc.pid ? "ready" : { otherPid: pid };
      },
      { timeoutMs, intervalMs: 100, what: `redis-server at ${url} to answer PING` },
    ).catch((err: unknown) => {
      throw failure(`did not answer PING within ${timeoutMs} ms (${errMessage(err)})`);
    });
    if (outcome === "exited") {
      const exit = proc.exitInfo();
      throw failure(`exited during startup (${exit?.signal ?? `code ${exit?.code}`})`);
    }
    if (typeof outcome === "object") {
      throw failure(
        `is answered by another redis-server (pid ${outcome.otherPid}), not the one we started (pid ${proc.pid})`,
      );
    }
  } catch (err) {
    await proc.stop(2000);
    throw err;
  }

  return {
    url,
    host,
    port,
    dataDir,
    reused: false,
    process: proc,
    async stop() {
      await proc.stop();
      // The listening socket goes with the process; make sure before a restart on the same port.
      await waitFor(async () => (await probeRedis(host, port, 500)) === "closed", {
        timeoutMs: 5000,
        intervalMs: 50,
        what: `port ${host}:${port} to close after stopping redis-server`,
      });
    },
  };
}

/**
 * Keeps `first` (a redis-server we started) running (`keepRunning` in ./procs.ts): when it exits
 * without being stopped (killed, crashed, out of memory), another is started on the same port and
 * directory. Its data is gone, as in any restart of a Redis without persistence: the workers and
 * the relayer declare their schedules again on reconnecting, and the relayer, its cursors gone,
 * rescans the bridges and credits nothing twice (it reads each deposit's status on the core
 * ledger first). A reused Redis (not ours) is left alone.
 */
export function keepRedisRunning(first: RedisInstance, opts: StartRedisOptions): Kept<RedisInstance> {
  const log = opts.log ?? defaultLog;
  return keepRunning(first, {
    what: `redis-server at ${first.url}`,
    // a reused one (not ours) is not watched
    exited: (r) => (r.process ? exitUnlessAsked(r.process) : new Promise<never>(() => {})),
    start: () => startRedis({ ...opts, log, reuseExisting: false, replaceLeftover: false }),
    stop: (r) => r.stop(),
    pid: (r) => r.process?.pid,
    log,
  });
}

// ---------------------------------------------------------------------------
// resolveRedis
// ---------------------------------------------------------------------------

export type ResolvedRedis = { url: string; external: true } | { url: string; external: false; stop(): Promise<void> };

/** `url` with its password replaced by `***`, for messages. */
function redactUrl(url: URL): string {
  if (!url.password) return url.toString();
  const u = new URL(url.toString());
  u.password = "***";
  return u.toString();
}

/**
 * Parse and check `REDIS_URL`: must be a redis:// or rediss:// URL with a
 * host. Returns the URL; throws a readable Error otherwise.
 */
export function parseRedisUrl(raw: string): URL {
  let url: URL;
  try {
    url = new URL(raw);
  } catch {
    throw new Error(
      `REDIS_URL is not a valid URL (expected redis://host:port or rediss://host:port, got ${JSON.stringify(raw)})`,
    );
  }
  if (url.protocol !== "redis:" && url.protocol !== "rediss:") {
    throw new Error(
      `REDIS_URL must be a redis:// or rediss:// URL, e.g. redis://127.0.0.1:6379 (got ` +
        `${JSON.stringify(redactUrl(url))})`,
    );
  }
  if (!url.hostname) throw new Error(`REDIS_URL has no host (got ${JSON.stringify(redactUrl(url))})`);
  return url;
}

/** The working dir (`CONFIG GET dir`) of the Redis at `url`, or undefined when it cannot be read. */
async function workingDir(url: string): Promise<string | undefined> {
  const client = oneShotClient(url, 2000);
  try {
    await client.connect();
    return configValue(await client.call("CONFIG", ["GET", "dir"]), "dir");
  } catch {
    return undefined;
  } finally {
    client.disconnect();
  }
}

/** `SHUTDOWN NOSAVE` the Redis at `url` and wait until host:port is closed. */
async function shutdownLeftover(url: string, host: string, port: number): Promise<void> {
  const client = oneShotClient(url, 2000);
  try {
    await client.connect();
    await client.call("SHUTDOWN", ["NOSAVE"]);
  } catch {
    // the server closes the connection instead of answering
  } finally {
    client.disconnect();
  }
  await waitFor(async () => (await probeRedis(host, port, 500)) === "closed", {
    timeoutMs: 10_000,
    intervalMs: 50,
    what: `the leftover Redis at ${url} to shut down`,
  });
}

/** A client that connects once, never retries and never queues: for checks, not for work. */
function oneShotClient(url: string, timeoutMs: number): Redis {
  const client = new Redis(url, {
    lazyConnect: true,
    connectTimeout: timeoutMs,
    commandTimeout: timeoutMs,
    maxRetriesPerRequest: 0,
    enableOfflineQueue: false,
    retryStrategy: () => null, // one attempt; report instead of retrying forever
    protocol: 2,
  });
  client.on("error", () => {});
  return client;
}

/** `CONFIG GET` reply (flat [k, v] array or map object) -> value of `key`. */
function configValue(reply: unknown, key: string): string | undefined {
  if (Array.isArray(reply)) {
    for (let i = 0; i + 1 < reply.length; i += 2) if (String(reply[i]) === key) return String(reply[i + 1]);
    return undefined;
  }
  if (reply && typeof reply === "object") {
    const v = (reply as Record<string, unknown>)[key];
    return v === undefined ? undefined : String(v);
  }
  return undefined;
}

/**
 * Check that the Redis at `url` answers PING; returns its `maxmemory-policy`,
 * or undefined when CONFIG is disabled (managed Redis services).
 */
export async function checkRedis(url: string, timeoutMs = 5000): Promise<{ maxmemoryPolicy: string | undefined }> {
  const shown = redactUrl(new URL(url));
  const client = oneShotClient(url, timeoutMs);
  let lastError: Error | undefined;
  client.on("error", (err: Error) => (lastError = err));
  try {
    try {
      await client.connect();
      const pong = await client.ping();
      if (pong !== "PONG") throw new Error(`PING answered ${JSON.stringify(pong)}`);
    } catch (err) {
      const detail = lastError && lastError !== err ? `${errMessage(err)}; ${errMessage(lastError)}` : errMessage(err);
      throw new Error(`Redis at REDIS_URL ${shown} does not answer: ${detail}`);
    }
    try {
      return {
        maxmemoryPolicy: configValue(await client.call("CONFIG", ["GET", "maxmemory-policy"]), "maxmemory-policy"),
      };
    } catch {
      return { maxmemoryPolicy: undefined }; // CONFIG renamed/disabled
    }
  } finally {
    client.disconnect();
  }
}

export interface ResolveRedisOptions extends StartRedisOptions {
  /** Timeout for connecting to REDIS_URL. Default 5000 ms. */
  connectTimeoutMs?: number | undefined;
  /** A redis-server started here is started again when it exits (`keepRedisRunning`). Default false. */
  keepRunning?: boolean | undefined;
}

/**
 * The Redis for BullMQ: `env.REDIS_URL` if set (validated, PING-checked, and a
 * warning logged if its maxmemory-policy is not `noeviction`), else our own
 * redis-server started with `ensureRedisServer` + `startRedis(opts)`, or the one already running
 * there (unless `reuseExisting: false`); one started here is kept running with `keepRunning`.
 */
export async function resolveRedis(
  env: NodeJS.ProcessEnv = process.env,
  opts: ResolveRedisOptions = {},
): Promise<ResolvedRedis> {
  const log = opts.log ?? defaultLog;
  const raw = env.REDIS_URL?.trim();
  if (raw) {
    const url = parseRedisUrl(raw);
    const { maxmemoryPolicy } = await checkRedis(url.toString(), opts.connectTimeoutMs);
    if (maxmemoryPolicy === undefined) {
      log(
        `warning: cannot read maxmemory-policy of ${redactUrl(url)} (CONFIG disabled?); BullMQ needs it to be ` +
          `"noeviction"`,
      );
    } else if (maxmemoryPolicy !== "noeviction") {
      log(
        `warning: ${redactUrl(url)} has maxmemory-policy "${maxmemoryPolicy}"; BullMQ needs "noeviction" ` +
          "(Redis may otherwise evict job keys under memory pressure). Set it with `CONFIG SET maxmemory-policy " +
          "noeviction`.",
      );
    }
    return { url: raw, external: true };
  }
  await ensureRedisServer(log);
  // the local Redis of the other processes (workers, API, relayer) when one runs: the commands
  // share its queues; the demo, which starts everything fresh, passes reuseExisting: false
  const r = await startRedis({ reuseExisting: true, ...opts });
  if (!opts.keepRunning || r.reused) return { url: r.url, external: false, stop: () => r.stop() };
  const kept = keepRedisRunning(r, opts);
  return { url: r.url, external: false, stop: () => kept.stop() };
}
