/**
 * npm run bench:builders: times every transaction builder under 8 concurrent clients on the
 * demo's chains (a simulated devnet with the protocol world), and in the same run its floor: the
 * same RPC calls the builder makes (quotes, state reads, the simulation), made directly with viem,
 * as concurrently as the builder makes them. Last line:
 *   builders-bench: p99_ms=<slowest builder p99> floor_p99_ms=<its floor> ratio=<p99/floor>
 *
 * How the floor is made: the API reaches each chain through a JSON-RPC pass-through
 * (bench/rpc-proxy.ts). One warm build of each builder is recorded there: every call, when it was
 * sent and answered. Calls in flight together form a stage; the floor replays the stages in order,
 * each stage's calls at once, with a viem client through the same pass-through. So the floor is the
 * chain's own cost of the build; the rest of the builder's time is ours (HTTP, validation,
 * encoding, the database, the audit row).
 *
 * Each timed run is preceded by 4 untimed requests per client at the same concurrency, for the
 * builder and for the floor alike (connections opened, code compiled). Each builder's line gives
 * p50/p90/p99/max, and the CPU milliseconds per request of the API, anvil, Postgres, Redis and this
 * process (the clients and the pass-through) in both runs, from /proc (Linux), and the mean of the
 * builds' own Server-Timing phases (before, read, simulate, build, audit), with the three slowest
 * builds' phases, and the event loop delay of this process (the clients' and the pass-through's).
 * For comparison only, the floor is also run over the API's own transport (`rpcCall`: undici
 * without viem's client, cheaper per call than viem over `fetch`); the last line keeps the floor as
 * viem comes.
 *
 * BENCH_BUILDERS_DAYS (default 30) days of simulated history; BENCH_BUILDERS_REQUESTS (default 200)
 * requests per builder, split over BENCH_BUILDERS_CLIENTS (default 8) concurrent clients;
 * BENCH_BUILDERS_ONLY, a regular expression, times only the builders it matches;
 * BENCH_BUILDERS_API_NODE_OPTIONS, NODE_OPTIONS of the API process (e.g. a CPU profiler);
 * BENCH_BUILDERS_RPC_LATENCY_MS (default 0) holds every RPC answer that long in the pass-through,
 * for the builder and the floor alike: the builds against a node a round trip away.
 */
import { mkdirSync, readFileSync } from "node:fs";
import { join } from "node:path";
import { monitorEventLoopDelay } from "node:perf_hooks";
import type { PublicClient } from "viem";
import type { BuilderRequest } from "../bench/builder-requests.js";
import type { CpuClass } from "../bench/cpu.js";
import type { RecordedCall, RpcProxy } from "../bench/rpc-proxy.js";
import type { Manifest } from "../contracts/devnet/index.js";
import { type Command, HELP_OPTION, parseCommandLine, settings } from "./lib/cli.js";
import { errMessage, installSignalHandlers, stopAll } from "./lib/procs.js";

const CMD: Command = {
  name: "bench:builders",
  usage: "usage: npm run bench:builders   (settings from the environment; no arguments)",
  help: `
Times every transaction builder under 8 concurrent clients on a simulated devnet with the protocol
world, and in the same run its floor: the same RPC calls made directly with viem, as concurrently
as the builder makes them. Last line:
  builders-bench: p99_ms=<slowest builder p99> floor_p99_ms=<its floor> ratio=<p99/floor>
Settings (environment, all optional): BENCH_BUILDERS_DAYS (30), BENCH_BUILDERS_REQUESTS (200 per
builder), BENCH_BUILDERS_CLIENTS (8), BENCH_BUILDERS_ONLY (a regular expression of builder names),
BENCH_BUILDERS_API_NODE_OPTIONS (NODE_OPTIONS of the API, e.g. a CPU profiler),
BENCH_BUILDERS_RPC_LATENCY_MS (0: every RPC answer held that long, for both sides, as from a node a
round trip away). A bad value is refused with a message (exit 2). Figures: docs/performance.md.`,
};
parseCommandLine(CMD, { options: { ...HELP_OPTION } });
const isRegExp = (s: string) => {
  try {
    new RegExp(s);
    return true;
  } catch {
    return false;
  }
};
// loaded after the command line, the bench's modules after its settings: --help and refusals load nothing else
const env = await settings(CMD, ({ z, envNum }) =>
  z.object({
    BENCH_BUILDERS_DAYS: envNum((n) => n.int().min(7).max(365)).default(30),
    BENCH_BUILDERS_REQUESTS: envNum((n) => n.int().min(8).max(100_000)).default(200),
    BENCH_BUILDERS_CLIENTS: envNum((n) => n.int().min(1).max(256)).default(8),
    BENCH_BUILDERS_ONLY: z.string().default("").refine(isRegExp, "must be a regular expression"),
    BENCH_BUILDERS_RPC_LATENCY_MS: envNum((n) => n.int().min(0).max(2_000)).default(0),
  }),
);
const [
  { createPublicClient, http },
  { createKey },
  { candidates },
  { cpuDelta, cpuSnapshot },
  { stagesOf, startRpcProxy },
  { loadRegistry },
  { DEVNET_CHAINS, genesisTimestamp, runDevnet },
  { createDb, createPool, migrateToLatest },
  { loadRegistryData },
  { rpcCall },
  { startAnvil },
  { httpOk, REPO_ROOT },
  { recreateDatabase, startEmbeddedPostgres },
  { startRedis },
  { startApiProcess },
] = await Promise.all([
  import("viem"),
  import("../api/keys.js"),
  import("../bench/builder-requests.js"),
  import("../bench/cpu.js"),
  import("../bench/rpc-proxy.js"),
  import("../config/registry.js"),
  import("../contracts/devnet/index.js"),
  import("../db/client.js"),
  import("../db/registry-load.js"),
  import("../onchain/rpc-fetch.js"),
  import("./lib/anvil.js"),
  import("./lib/indexer.js"),
  import("./lib/postgres.js"),
  import("./lib/redis.js"),
  import("./lib/workers.js"),
]);
const DAYS = env.BENCH_BUILDERS_DAYS;
const REQUESTS = env.BENCH_BUILDERS_REQUESTS;
const CLIENTS = env.BENCH_BUILDERS_CLIENTS;
const ONLY = new RegExp(env.BENCH_BUILDERS_ONLY);
const LATENCY = env.BENCH_BUILDERS_RPC_LATENCY_MS;
/** untimed requests before each timed run, at the same concurrency */
const WARM = CLIENTS * 4;
const API_PORT = 8099;
const t0 = Date.now();
const say = (m: string) => console.log(`[bench:builders ${((Date.now() - t0) / 1000).toFixed(1).padStart(6)}s] ${m}`);

/** CPU milliseconds per timed request of the processes that do work, from a `cpuDelta`. */
function cpuLine(d: Record<CpuClass, number>): string {
  const per = (s: number) => ((s * 1000) / REQUESTS).toFixed(1);
  return (
    `api ${per(d.api)}, anvil ${per(d.anvil)}, postgres ${per(d.postgres)}, redis ${per(d.redis)}, bench ` +
    `${per(d.bench)}`
  );
}

/** p-th percentile of `xs` (nearest rank). */
function percentile(xs: readonly number[], p: number): number {
  const s = [...xs].sort((a, b) => a - b);
  return s[Math.min(s.length - 1, Math.max(0, Math.ceil((p / 100) * s.length) - 1))]!;
}

/** Runs `once` `n` times over CLIENTS concurrent loops; each call's milliseconds. */
async function timed(once: () => Promise<void>, n = REQUESTS): Promise<number[]> {
  const out: number[] = [];
  let left = n;
  await Promise.all(
    Array.from({ length: CLIENTS }, async () => {
      while (left-- > 0) {
        const s = performance.now();
        await once();
        out.push(performance.now() - s);
      }
    }),
  );
  return out;
}

/**
 * Watches this process's event loop (the clients and the pass-through run on it): a stall delays
 * every request in flight, on the builder's side and the floor's alike. Returns a stop that says
 * the delay's p99 and max in ms.
 */
function stalls(): () => string {
  const h = monitorEventLoopDelay({ resolution: 5 });
  h.enable();
  return () => {
    h.disable();
    return `${(h.percentile(99) / 1e6).toFixed(1)}/${(h.max / 1e6).toFixed(1)}`;
  };
}

async function main(): Promise<void> {
  installSignalHandlers();
  const dir = join(REPO_ROOT, ".data", "bench-builders");
  mkdirSync(dir, { recursive: true });
  const pgi = await startEmbeddedPostgres({
    port: 54371,
    dataDir: join(dir, "postgres"),
    database: "postgres",
    logFile: join(dir, "postgres.log"),
  });
  const dbUrl = await recreateDatabase(pgi.adminUrl, "bench_builders");
  const redis = await startRedis({
    port: 63799,
    dataDir: join(dir, "redis"),
    logFile: join(dir, "redis.log"),
    replaceLeftover: true,
  });
  const endTime = Math.floor(Date.now() / 1000);
  const chains = await Promise.all(
    DEVNET_CHAINS.map(async (c) => {
      const a = await startAnvil({
        chainId: c.chainId,
        port: c.port + 20_000,
        genesisTimestamp: genesisTimestamp(endTime, DAYS),
        logFile: join(dir, `anvil-${c.chainId}.log`),
      });
      return { chainId: c.chainId, rpcUrl: a.rpcUrl, blockTime: c.blockTime, snapshotInterval: c.snapshotInterval };
    }),
  );
  const registryFile = join(dir, "vaults.json");
  const manifestFile = join(dir, "manifest.json");
  say(`simulating ${DAYS} days on chains ${chains.map((c) => c.chainId).join(", ")}`);
  await runDevnet({
    seed: "bench-builders",
    days: DAYS,
    endTime,
    wallets: 20,
    chains,
    manifestPath: manifestFile,
    registryPath: registryFile,
  });
  const manifest = JSON.parse(readFileSync(manifestFile, "utf8")) as Manifest;

  const db = createDb(createPool(dbUrl, 2, "bench-builders"));
  await migrateToLatest(db);
  await loadRegistryData(db, loadRegistry(registryFile));
  const { key } = await createKey(db, "bench-builders", ["transactions:build"]);
  await db.destroy();

  const proxies = new Map<number, RpcProxy>();
  for (const [i, c] of chains.entries()) proxies.set(c.chainId, await startRpcProxy(c.rpcUrl, 18_990 + i, LATENCY));
  const api = startApiProcess({
    databaseUrl: dbUrl,
    redisUrl: redis.url,
    port: API_PORT,
    chains: chains.map((c) => ({ chainId: c.chainId, rpcUrl: proxies.get(c.chainId)!.url })),
    logFile: join(dir, "api.log"),
    env: {
      LOG_LEVEL: "warn",
      RATE_LIMIT_PER_MINUTE: "1000000",
      NODE_OPTIONS: process.env.BENCH_BUILDERS_API_NODE_OPTIONS ?? "",
    },
  });
  for (let i = 0; !(await httpOk(`http://127.0.0.1:${API_PORT}/v1/`)); i++) {
    if (api.exitInfo() || i > 600) throw new Error(`the API did not start:\n${api.recentOutput()}`);
    await new Promise((r) => setTimeout(r, 100));
  }

  const base = `http://127.0.0.1:${API_PORT}/api/v1`;
  const send = async (path: string, body: unknown) => {
    const res = await fetch(`${base}${path}`, {
      method: "POST",
      headers: { "content-type": "application/json", "x-api-key": key },
      body: JSON.stringify(body),
    });
    return { status: res.status, text: await res.text(), timing: res.headers.get("server-timing") };
  };
  /** the builds' Server-Timing phases, summed (ms), and how many were summed */
  let phases = new Map<string, number>();
  let timedBuilds = 0;
  /** each timed build: its latency as the client saw it, and its Server-Timing */
  let builds: { ms: number; timing: string }[] = [];
  const post = async (path: string, body: unknown) => {
    const start = performance.now();
    const r = await send(path, body);
    if (r.status !== 200) throw new Error(`${path} answered ${r.status}: ${r.text.slice(0, 400)}`);
    timedBuilds++;
    builds.push({ ms: performance.now() - start, timing: r.timing ?? "" });
    for (const part of (r.timing ?? "").split(", ")) {
      const [name, dur] = part.split(";dur=");
      if (name && dur) phases.set(name, (phases.get(name) ?? 0) + Number(dur));
    }
  };
  /** the slowest builds of a run, with where the API says their time went */
  const slowest = (n: number) =>
    [...builds]
      .sort((a, b) => b.ms - a.ms)
      .slice(0, n)
      .map((b) => `${b.ms.toFixed(1)} (${b.timing.replaceAll(";dur=", " ").replaceAll(", ", " ")})`)
      .join("; ");

  // one buildable request per builder, from the devnet's state
  const byName = new Map<string, BuilderRequest[]>();
  for (const c of manifest.chains) {
    const client = createPublicClient({ transport: http(chains.find((x) => x.chainId === c.chainId)!.rpcUrl) });
    for (const [name, list] of await candidates(c, client)) byName.set(name, [...(byName.get(name) ?? []), ...list]);
  }
  const chosen: BuilderRequest[] = [];
  const only = ONLY;
  for (const [name, list] of [...byName].sort(([a], [b]) => a.localeCompare(b))) {
    if (!only.test(name)) continue;
    const refusals: string[] = [];
    for (const r of list) {
      const a = await send(r.path, r.body);
      if (a.status === 200) {
        chosen.push(r);
        break;
      }
      refusals.push(`${a.status} ${a.text.slice(0, 160)}`);
    }
    if (chosen.at(-1)?.name !== name) {
      throw new Error(`${name}: none of ${list.length} candidates builds: ${refusals.slice(0, 3).join(" | ")}`);
    }
  }
  if (chosen.length === 0) {
    const names = [...byName.keys()].sort().join(", ");
    throw new Error(`BENCH_BUILDERS_ONLY=${env.BENCH_BUILDERS_ONLY} matches no builder (they are: ${names})`);
  }
  say(`builders: ${chosen.map((b) => b.name).join(", ")}`);
  if (LATENCY > 0) say(`every RPC answer held ${LATENCY} ms (a node a round trip away), for builder and floor`);

  const lines: { name: string; p99: number; floor: number; lean: number }[] = [];
  for (const b of chosen) {
    const proxy = proxies.get(b.chainId)!;
    await post(b.path, b.body); // warm: module lookup, catalogue, connections
    proxy.record();
    await post(b.path, b.body);
    const calls: RecordedCall[] = proxy.stop();
    const stages = stagesOf(calls);
    const replayWith = (call: (c: RecordedCall) => Promise<unknown>) => async () => {
      for (const stage of stages) await Promise.all(stage.map(call));
    };
    // the floor: viem as it comes (its http transport over fetch); and, for comparison only, the
    // API's own transport (rpcCall), which costs the client less per call
    const client: PublicClient = createPublicClient({ transport: http(proxy.url, { timeout: 30_000, retryCount: 0 }) });
    const replay = replayWith((c) => client.request({ method: c.method, params: c.params } as never));
    const replayLean = replayWith((c) => rpcCall(proxy.url, c.method, c.params, { timeoutMs: 30_000, retries: 0 }));
    // both sides warmed under the same concurrency first (connections opened, code compiled)
    await timed(() => post(b.path, b.body), WARM);
    const c0 = cpuSnapshot();
    phases = new Map();
    timedBuilds = 0;
    builds = [];
    const loopB = stalls();
    const builder = await timed(() => post(b.path, b.body));
    const stallB = loopB();
    const c1 = cpuSnapshot();
    const inApi = [...phases].map(([n, ms]) => `${n} ${(ms / timedBuilds).toFixed(1)}`).join(", ");
    await timed(replay, WARM);
    const c2 = cpuSnapshot();
    const loopF = stalls();
    const floor = await timed(replay);
    const stallF = loopF();
    const c3 = cpuSnapshot();
    await timed(replayLean, WARM);
    const lean = await timed(replayLean);
    const p99 = percentile(builder, 99);
    const fp99 = percentile(floor, 99);
    lines.push({ name: b.name, p99, floor: fp99, lean: percentile(lean, 99) });
    const pct = (xs: number[]) => [50, 90, 99, 100].map((p) => percentile(xs, p).toFixed(1)).join("/");
    say(
      `${b.name}: p50/p90/p99/max ${pct(builder)} ms; floor ${pct(floor)} ms; ${calls.length} RPC calls in ` +
        `${stages.length} stages (${[...new Set(calls.map((c) => c.method))].join(", ")})`,
    );
    say(`  CPU ms per request: builder ${cpuLine(cpuDelta(c0, c1))}; floor ${cpuLine(cpuDelta(c2, c3))}`);
    say(`  the builds' Server-Timing, mean ms: ${inApi}`);
    say(`  the slowest builds, ms (Server-Timing): ${slowest(3)}`);
    say(`  this process's event loop delay, p99/max ms: builder ${stallB}; floor ${stallF}`);
    say(`  floor over the API's own transport (rpcCall), for comparison: ${pct(lean)} ms`);
  }
  for (const p of proxies.values()) await p.close();
  await stopAll();
  const worst = lines.reduce((a, b) => (b.p99 > a.p99 ? b : a));
  console.log(
    `for comparison, ${worst.name} against a floor over the API's own transport: ${worst.lean.toFixed(2)} ms, ` +
      `ratio ${(worst.p99 / worst.lean).toFixed(3)}`,
  );
  console.log(
    `builders-bench: p99_ms=${worst.p99.toFixed(2)} floor_p99_ms=${worst.floor.toFixed(2)} ` +
      `ratio=${(worst.p99 / worst.floor).toFixed(3)}`,
  );
}

main().catch(async (err) => {
  console.error(`bench:builders failed: ${errMessage(err)}`);
  await stopAll();
  process.exit(1);
});
