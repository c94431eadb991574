/** Shared helpers for the end-to-end tests. */
import { readFileSync } from "node:fs";
import { connect, createServer, type Server, type Socket } from "node:net";
import { join } from "node:path";
import pg from "pg";
import type { Manifest } from "../contracts/devnet/index.js";
import { tryBind } from "../scripts/lib/anvil.js";
import { REPO_ROOT } from "../scripts/lib/paths.js";
import { type ManagedProcess, spawnManaged, waitFor } from "../scripts/lib/procs.js";

/**
 * TEST_PORT_OFFSET (default 0) shifts the anvil ports and the data directories, so several test
 * runs can share a machine (e.g. 100: anvil 18645/18646). Postgres and the indexer take ports the
 * kernel picks: fixed ones in the ephemeral range (32768-60999) can be held by an outgoing connection.
 */
export const PORT_OFFSET = Number(process.env.TEST_PORT_OFFSET ?? 0);

export function loadManifest(path: string): Manifest {
  return JSON.parse(readFileSync(path, "utf8")) as Manifest;
}

export async function withDb<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

export async function rows<T = Record<string, unknown>>(
  c: pg.Client,
  sql: string,
  params: unknown[] = [],
): Promise<T[]> {
  return (await c.query(sql, params)).rows as T[];
}

export const key = (chainId: number | string, tx: string, logIndex: number | string) => `${chainId}:${tx}:${logIndex}`;

export async function rpcCall<T>(url: string, method: string, params: unknown[] = []): Promise<T> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  const body = (await res.json()) as { result?: T; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result as T;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));

/**
 * Waits, when the UTC day ends within `beforeS` seconds or began less than `afterS` ago, until
 * `afterS` seconds into the day: for a file that builds "today" from the clock and must not see
 * the day change under it. Returns the seconds waited (0 nearly always).
 */
export async function awayFromMidnight(beforeS: number, afterS: number): Promise<number> {
  const wait = midnightWait(beforeS, afterS, Date.now());
  if (wait > 0) await sleep(wait * 1000);
  return wait;
}

/** The seconds `awayFromMidnight` waits at `nowMs`. */
export function midnightWait(beforeS: number, afterS: number, nowMs: number): number {
  const into = (nowMs / 1000) % 86_400;
  if (into < afterS) return afterS - into;
  return into > 86_400 - beforeS ? 86_400 - into + afterS : 0;
}

/**
 * JSON.parse keeping the exact digits of the numbers under `keys` (as their source text), as a
 * big-number aware client reads raw token amounts; `notNumbers` lists the keys whose value was
 * not a JSON number.
 */
export function parseExact<T>(text: string, keys: readonly string[]): { body: T; notNumbers: string[] } {
  const notNumbers: string[] = [];
  const reviver = (k: string, v: unknown, ctx?: { source?: string }) => {
    if (!keys.includes(k)) return v;
    if (typeof v !== "number" || ctx?.source == null) {
      notNumbers.push(k);
      return v;
    }
    return ctx.source;
  };
  const body = JSON.parse(text, reviver as (k: string, v: unknown) => unknown) as T;
  return { body, notNumbers };
}

/** The kernel's first ephemeral port (the local ports of outgoing connections start there). */
function ephemeralStart(): number {
  try {
    const first = Number(readFileSync("/proc/sys/net/ipv4/ip_local_port_range", "utf8").trim().split(/\s+/)[0]);
    return Number.isInteger(first) && first > 21_000 ? first : 32_768;
  } catch {
    return 32_768;
  }
}

/**
 * The first of `n` consecutive ports no socket holds now, below the ephemeral range: the tests
 * that take them start servers on them seconds later, and a port in the ephemeral range can be
 * taken meanwhile as an outgoing connection's local port (Ponder then moves to the next one).
 */
export async function freePorts(n: number): Promise<number> {
  const top = ephemeralStart() - n;
  for (let attempt = 0; attempt < 100; attempt++) {
    const first = 20_000 + Math.floor(Math.random() * (top - 20_000));
    const all = await Promise.all(Array.from({ length: n }, (_, i) => tryBind("127.0.0.1", first + i)));
    if (all.every((err) => err === null)) return first;
  }
  throw new Error(`no ${n} consecutive free ports found`);
}

/**
 * A port no socket holds now, as the kernel picks it. A fixed port in the ephemeral range can be
 * the local port of some outgoing connection; a server asked to listen there fails, or (Ponder)
 * takes the next port instead.
 */
export function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once("error", reject);
    server.listen(0, "127.0.0.1", () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

/** procs' `waitFor`, polled every 500 ms, with its arguments in the order the e2e tests read best. */
export const until = <T>(what: string, timeoutMs: number, probe: () => Promise<T | undefined>) =>
  waitFor(probe, { what, timeoutMs, intervalMs: 500 });

/**
 * `npm run indexer` (scripts/indexer.ts) as a managed process named `name`, with `env` over the
 * test's own and its output in `logFile`: resolves once it says it is at head on every chain;
 * throws with its last lines when it exits first or takes over 5 minutes.
 */
export async function startIndexerCommand(name: string, env: NodeJS.ProcessEnv, logFile: string) {
  const indexer = spawnIndexerCommand(name, env, logFile);
  await indexerAtHead(indexer, logFile);
  return indexer;
}

/** `npm run indexer` started, not waited for (its output in `logFile`). */
export function spawnIndexerCommand(name: string, env: NodeJS.ProcessEnv, logFile: string): ManagedProcess {
  const tsx = join(REPO_ROOT, "node_modules", ".bin", "tsx");
  return spawnManaged(name, tsx, [join(REPO_ROOT, "scripts", "indexer.ts")], {
    cwd: REPO_ROOT,
    env: { ...process.env, ...env },
    logFile,
  });
}

/** Waits until `npm run indexer` says it is at head on every chain; throws if it exits first. */
export async function indexerAtHead(indexer: ManagedProcess, logFile: string): Promise<void> {
  const head = await until("the indexer at its heads", 300_000, async () =>
    indexer.exitInfo()
      ? "exited"
      : readFileSync(logFile, "utf8").includes("at head on every chain")
        ? "at head"
        : undefined,
  ).catch((err: unknown) => {
    throw new Error(`${(err as Error).message}\nlast lines of npm run indexer:\n${indexer.recentOutput()}`);
  });
  if (head === "exited") throw new Error(`npm run indexer exited:\n${indexer.recentOutput()}`);
}

/**
 * A TCP relay to `target`'s host and port (listen on `server` where wanted). `hold()` keeps what
 * either side sends from then on (the connections stay open and nothing arrives: a peer that
 * hangs); `release()` passes it on in order and relays again.
 */
export function tcpRelay(target: URL): { server: Server; hold(): void; release(): void } {
  let holding = false;
  const held: (() => void)[] = [];
  const server = createServer((client) => {
    const upstream = connect(Number(target.port), target.hostname);
    const pass = (from: Socket, to: Socket) =>
      from.on("data", (d) => (holding ? held.push(() => to.write(d)) : to.write(d)));
    pass(client, upstream);
    pass(upstream, client);
    const close = () => {
      client.destroy();
      upstream.destroy();
    };
    client.on("error", close).on("close", close);
    upstream.on("error", close).on("close", close);
  });
  return {
    server,
    hold: () => {
      holding = true;
    },
    release: () => {
      holding = false;
      for (const send of held.splice(0)) send();
    },
  };
}
