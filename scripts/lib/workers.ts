/** Starts the services (`npm run workers`, `api`, `relayer`) as managed child processes. */
import { join } from "node:path";
import { REPO_ROOT } from "./indexer.js";
import { type ManagedProcess, spawnManaged } from "./procs.js";

/**
 * How a TypeScript script of the repository runs as a service: node with tsx's loader, as the
 * npm scripts run it, not under the tsx CLI. The CLI is a second process that relays a signal
 * its child has not acknowledged within 30 ms and SIGKILLs the child when the relay is not
 * acknowledged either: on a loaded machine, a stop cut short.
 */
export function tsxNode(script: string): [command: string, args: string[]] {
  return [process.execPath, ["--import", "tsx", join(REPO_ROOT, script)]];
}

export interface WorkersOptions {
  databaseUrl: string;
  redisUrl: string;
  registryFile?: string;
  logFile?: string;
  env?: Record<string, string>;
  onExit?: (code: number | null) => void;
}

export function startWorkerProcess(o: WorkersOptions): ManagedProcess {
  return spawnManaged("workers", ...tsxNode("scripts/workers.ts"), {
    cwd: REPO_ROOT,
    env: {
      ...process.env,
      DATABASE_URL: o.databaseUrl,
      REDIS_URL: o.redisUrl,
      ...(o.registryFile ? { VAULT_REGISTRY: o.registryFile } : {}),
      ...o.env,
    },
    logFile: o.logFile,
    killTimeoutMs: 10_000,
    onExit: (code) => o.onExit?.(code),
  });
}

export interface ApiProcessOptions {
  databaseUrl: string;
  redisUrl: string;
  port: number;
  chains: { chainId: number; rpcUrl: string }[];
  logFile?: string;
  env?: Record<string, string>;
}

/** Starts `npm run api` as a managed child process. */
export function startApiProcess(o: ApiProcessOptions): ManagedProcess {
  return spawnManaged("api", ...tsxNode("scripts/api.ts"), {
    cwd: REPO_ROOT,
    env: {
      ...process.env,
      DATABASE_URL: o.databaseUrl,
      REDIS_URL: o.redisUrl,
      PORT: String(o.port),
      HOST: "127.0.0.1",
      ...Object.fromEntries(o.chains.map((c) => [`PONDER_RPC_URL_${c.chainId}`, c.rpcUrl])),
      ...o.env,
    },
    logFile: o.logFile,
    killTimeoutMs: 10_000,
  });
}

export interface RelayerProcessOptions {
  redisUrl: string;
  /** the core chain and every bridge chain */
  chains: { chainId: number; rpcUrl: string }[];
  /** the devnet manifest giving the ledger, the bridges and the relayer key */
  manifestFile: string;
  delaySeconds?: number;
  logFile?: string;
  /** echo the relayer's lines (its credits and rejections) on stdout */
  echo?: boolean;
  env?: Record<string, string>;
}

/** Starts `npm run relayer` (the perp relayer worker) as a managed child process. */
export function startRelayerProcess(o: RelayerProcessOptions): ManagedProcess {
  return spawnManaged("relayer", ...tsxNode("scripts/relayer.ts"), {
    cwd: REPO_ROOT,
    env: {
      ...process.env,
      REDIS_URL: o.redisUrl,
      DEVNET_MANIFEST: o.manifestFile,
      ...(o.delaySeconds !== undefined ? { RELAYER_DELAY_S: String(o.delaySeconds) } : {}),
      ...Object.fromEntries(o.chains.map((c) => [`PONDER_RPC_URL_${c.chainId}`, c.rpcUrl])),
      ...o.env,
    },
    logFile: o.logFile,
    echo: o.echo ?? false,
    killTimeoutMs: 10_000,
  });
}
