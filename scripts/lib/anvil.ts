/**
 * Start local anvil nodes (from the `@foundry-rs/anvil` npm package) under the
 * process supervisor in ./procs.ts, plus a minimal JSON-RPC helper.
 */
import { existsSync, mkdirSync } from "node:fs";
import { readFile } from "node:fs/promises";
import { createRequire } from "node:module";
import { connect, createServer } from "node:net";
import { dirname, join, resolve } from "node:path";
import { REPO_ROOT } from "./paths.js";
import { errMessage, type ManagedProcess, spawnManaged, waitFor } from "./procs.js";

// ---------------------------------------------------------------------------
// JSON-RPC
// ---------------------------------------------------------------------------

export class RpcError extends Error {
  readonly method: string;
  readonly code: number | undefined;
  readonly data: unknown;
  constructor(message: string, method: string, code?: number, data?: unknown) {
    super(message);
    this.name = "RpcError";
    this.method = method;
    this.code = code;
    this.data = data;
  }
}

let rpcId = 0;

/**
 * Minimal JSON-RPC 2.0 call over HTTP with plain fetch. Returns `result`;
 * throws an `RpcError` with a readable message on network errors, timeouts,
 * non-2xx responses, malformed JSON and JSON-RPC errors.
 */
export async function rpc<T = unknown>(
  url: string,
  method: string,
  params: readonly unknown[] = [],
  opts: { timeoutMs?: number } = {},
): Promise<T> {
  const timeoutMs = opts.timeoutMs ?? 10_000;
  let res: Response;
  try {
    res = await fetch(url, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({ jsonrpc: "2.0", id: ++rpcId, method, params }),
      signal: AbortSignal.timeout(timeoutMs),
    });
  } catch (err) {
    const e = err as Error;
    const why = e.name === "TimeoutError" ? `no answer within ${timeoutMs} ms` : errMessage(e);
    throw new RpcError(`RPC ${method} to ${url} failed: ${why}`, method);
  }
  const text = await res.text();
  if (!res.ok) {
    throw new RpcError(
      `RPC ${method} to ${url} failed: HTTP ${res.status} ${res.statusText}: ${text.slice(0, 300)}`,
      method,
    );
  }
  let body: { result?: T; error?: { code?: number; message?: string; data?: unknown } };
  try {
    body = JSON.parse(text) as typeof body;
  } catch {
    throw new RpcError(`RPC ${method} to ${url}: response is not JSON: ${text.slice(0, 300)}`, method);
  }
  if (body.error) {
    const { code, message, data } = body.error;
    const dataStr = data === undefined ? "" : ` data=${JSON.stringify(data).slice(0, 300)}`;
    throw new RpcError(
      `RPC ${method} error ${code ?? "?"}: ${message ?? "unknown error"}${dataStr}`,
      method,
      code,
      data,
    );
  }
  if (!("result" in body)) {
    throw new RpcError(`RPC ${method} to ${url}: response has neither result nor error: ${text.slice(0, 300)}`, method);
  }
  return body.result as T;
}

// ---------------------------------------------------------------------------
// anvil binary
// ---------------------------------------------------------------------------

const PLATFORM_PACKAGES: Record<string, string | undefined> = {
  "linux-x64": "@foundry-rs/anvil-linux-amd64",
  "linux-arm64": "@foundry-rs/anvil-linux-arm64",
  "darwin-x64": "@foundry-rs/anvil-darwin-amd64",
  "darwin-arm64": "@foundry-rs/anvil-darwin-arm64",
  "win32-x64": "@foundry-rs/anvil-win32-amd64",
};

let cachedBinary: string | undefined;

/**
 * Path of the anvil executable: `$ANVIL_BIN` if set, else the native binary
 * of the platform package, else the `node_modules/.bin/anvil` node wrapper.
 */
export function findAnvilBinary(): string {
  if (cachedBinary) return cachedBinary;
  const candidates: string[] = [];
  if (process.env.ANVIL_BIN) candidates.push(process.env.ANVIL_BIN);
  const pkg = PLATFORM_PACKAGES[`${process.platform}-${process.arch}`];
  const exe = process.platform === "win32" ? "anvil.exe" : "anvil";
  if (pkg) {
    try {
      const require = createRequire(import.meta.url);
      candidates.push(join(dirname(require.resolve(`${pkg}/package.json`)), "bin", exe));
    } catch {
      /* not resolvable from here */
    }
    candidates.push(join(REPO_ROOT, "node_modules", pkg, "bin", exe));
  }
  candidates.push(join(REPO_ROOT, "node_modules", ".bin", "anvil"));
  const found = candidates.find((c) => existsSync(c));
  if (!found) {
    throw new Error(
      `anvil binary not found (platform ${process.platform}-${process.arch}). Looked at:\n  ` +
        `${candidates.join("\n  ")}\n` +
        "Run `npm install` (with install scripts allowed for @foundry-rs/anvil) or set ANVIL_BIN.",
    );
  }
  cachedBinary = found;
  return found;
}

// ---------------------------------------------------------------------------
// startAnvil
// ---------------------------------------------------------------------------

export interface StartAnvilOptions {
  chainId: number;
  port: number;
  /** Default '127.0.0.1'. */
  host?: string | undefined;
  /** Unix timestamp (seconds) of the genesis block (`--timestamp`). */
  genesisTimestamp?: number | undefined;
  /**
   * If set, chain state is loaded from / dumped to
   * `<stateDir>/anvil-<chainId>.json` (`--state`). The dump happens when anvil
   * shuts down gracefully (SIGTERM), not on SIGKILL.
   */
  stateDir?: string | undefined;
  /** Log file for anvil's output (prefixed `[anvil-<chainId>]`). */
  logFile: string;
  /** Echo anvil output to stdout too. Default false. */
  echo?: boolean | undefined;
  /**
   * Pass `--quiet` (anvil logs every RPC method call otherwise, which gets
   * large under an indexer's polling). Default true.
   */
  quiet?: boolean | undefined;
  /** Extra CLI args appended last. */
  extraArgs?: readonly string[] | undefined;
  /** How long to wait for eth_chainId to answer. Default 30000 ms. */
  startTimeoutMs?: number | undefined;
  /** Process name used in logs. Default `anvil-<chainId>`. */
  name?: string | undefined;
}

export interface AnvilInstance {
  rpcUrl: string;
  chainId: number;
  host: string;
  port: number;
  pid: number;
  process: ManagedProcess;
  stop(): Promise<void>;
}

/** Tries to bind host:port once: null when it can be bound, else the bind error. */
export function tryBind(host: string, port: number): Promise<NodeJS.ErrnoException | null> {
  return new Promise((resolvePromise) => {
    const srv = createServer();
    srv.unref();
    srv.once("error", (err: NodeJS.ErrnoException) => resolvePromise(err));
    srv.listen({ host, port, exclusive: true }, () => srv.close(() => resolvePromise(null)));
  });
}

/**
 * Whether a socket listens on `port`: read from the kernel's socket tables (Linux), so nothing
 * connects to a server that may not expect it; elsewhere, by connecting, reading what the server
 * sends and closing politely.
 */
async function isListening(host: string, port: number): Promise<boolean> {
  const hexPort = port.toString(16).toUpperCase().padStart(4, "0");
  let tables = 0;
  for (const file of ["/proc/net/tcp", "/proc/net/tcp6"]) {
    let text: string;
    try {
      text = await readFile(file, "utf8");
    } catch {
      continue;
    }
    tables++;
    for (const line of text.split("\n").slice(1)) {
      const [, local, , state] = line.trim().split(/\s+/);
      if (state === "0A" && local?.endsWith(`:${hexPort}`)) return true; // 0A: LISTEN
    }
  }
  if (tables > 0) return false;
  return new Promise((resolvePromise) => {
    const sock = connect({ host, port });
    const done = (listening: boolean) => {
      sock.removeAllListeners("connect");
      sock.on("error", () => {});
      sock.resume();
      sock.end();
      setTimeout(() => sock.destroy(), 1000).unref();
      resolvePromise(listening);
    };
    sock.setTimeout(1000, () => done(true));
    sock.once("connect", () => done(true));
    sock.once("error", () => done(false));
  });
}

/**
 * Resolves once host:port can be bound, else rejects with a readable error. Our fixed ports lie
 * in Linux's ephemeral range (32768-60999), so a closed client connection in TIME_WAIT can hold
 * one for up to 60 s although nothing listens there: that case is waited out (up to
 * `timeWaitMs`); a port something listens on fails at once.
 */
export async function assertPortFree(host: string, port: number, what: string, timeWaitMs = 65_000): Promise<void> {
  const until = Date.now() + timeWaitMs;
  for (let said = false; ; ) {
    const err = await tryBind(host, port);
    if (!err) return;
    if (err.code !== "EADDRINUSE") throw new Error(`Cannot start ${what}: cannot bind ${host}:${port}: ${err.message}`);
    if ((await isListening(host, port)) || Date.now() >= until) {
      throw new Error(
        `Cannot start ${what}: ${host}:${port} is already in use (a previous run still alive? ` +
          `check with \`ss -tanp | grep :${port}\`), or pick another port.`,
      );
    }
    if (!said) {
      console.error(
        `${what}: ${host}:${port} is held by a closing connection (TIME_WAIT); waiting for it to be released`,
      );
      said = true;
    }
    await new Promise((r) => setTimeout(r, 1000));
  }
}

export async function startAnvil(opts: StartAnvilOptions): Promise<AnvilInstance> {
  const host = opts.host ?? "127.0.0.1";
  const { chainId, port } = opts;
  const name = opts.name ?? `anvil-${chainId}`;
  if (!Number.isSafeInteger(chainId) || chainId <= 0) {
    throw new Error(`startAnvil: chainId must be a positive integer (got ${chainId})`);
  }
  await assertPortFree(host, port, `anvil for chain ${chainId}`);

  const args = [
    "--chain-id",
    String(chainId),
    "--port",
    String(port),
    "--host",
    host,
    "--block-base-fee-per-gas",
    "0",
    "--gas-limit",
    "100000000",
    "--auto-impersonate",
    "--accounts",
    "10",
    // Keep the state of every block in memory: the indexer reads vault state at historical blocks;
    // anvil otherwise writes every state to disk as JSON (gigabytes, and slower with every block).
    "--prune-history",
    "1000000",
  ];
  if (opts.genesisTimestamp !== undefined) args.push("--timestamp", String(Math.floor(opts.genesisTimestamp)));
  if (opts.stateDir) {
    mkdirSync(opts.stateDir, { recursive: true });
    args.push("--state", join(resolve(opts.stateDir), `anvil-${chainId}.json`));
  }
  if (opts.quiet ?? true) args.push("--quiet");
  if (opts.extraArgs) args.push(...opts.extraArgs);

  const proc = spawnManaged(name, findAnvilBinary(), args, {
    logFile: opts.logFile,
    echo: opts.echo,
    killTimeoutMs: 10_000, // give --state time to dump
  });

  const rpcUrl = `http://${host.includes(":") ? `[${host}]` : host}:${port}`;
  try {
    const outcome = await waitFor<{ chainIdHex: string } | { exited: true }>(
      async () => {
        if (proc.exitInfo()) return { exited: true };
        try {
          return { chainIdHex: await rpc<string>(rpcUrl, "eth_chainId", [], { timeoutMs: 2000 }) };
        } catch {
          return undefined;
        }
      },
      {
        timeoutMs: opts.startTimeoutMs ?? 30_000,
        intervalMs: 100,
        what: `anvil (chain ${chainId}) at ${rpcUrl} to answer eth_chainId (log: ${opts.logFile})`,
      },
    );
    if ("exited" in outcome) {
      const exit = proc.exitInfo();
      throw new Error(
        `anvil for chain ${chainId} exited during startup (${exit?.signal ?? `code ${exit?.code}`}). ` +
          `Last output:\n${proc.recentOutput()}\n(full log: ${opts.logFile})`,
      );
    }
    if (BigInt(outcome.chainIdHex) !== BigInt(chainId)) {
      throw new Error(
        `anvil at ${rpcUrl} reports chain id ${BigInt(outcome.chainIdHex)}, expected ${chainId} (state file from ` +
          `another chain?)`,
      );
    }
  } catch (err) {
    await proc.stop(2000);
    throw err;
  }

  return {
    rpcUrl,
    chainId,
    host,
    port,
    pid: proc.pid,
    process: proc,
    stop: () => proc.stop(),
  };
}
