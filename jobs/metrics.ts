/**
 * Prometheus metrics of a worker process, served on METRICS_PORT (`npm run workers`): queue depths,
 * job durations by queue and outcome, how far the indexer is behind each chain's head and how far
 * the derived tables are behind the indexer (db/progress.ts), and Node's process metrics.
 * Queue depths and lags are read when scraped.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import type { Job } from "bullmq";
import { Gauge, Histogram, Registry } from "prom-client";
import { processMetrics } from "../db/process-metrics.js";
import type { ChainCheckpoint, ChainProgress } from "../db/progress.js";
import { chainHead, lagBetween, readCheckpoints, readProgress } from "../db/progress.js";
import { QUEUES, type QueueKey } from "./queues.js";
import type { Log, WorkerHandle } from "./runtime.js";

/** The queue states whose sizes are exported. */
export const QUEUE_STATES = ["waiting", "active", "delayed", "failed"] as const;

export interface JobsMetricsOptions {
  indexerSchema: string;
  /** chain id -> JSON-RPC URL: the indexer's lag behind each chain's head (none without) */
  rpcUrls: Map<number, string>;
  /** a source that does not answer within this long is reported down for this scrape */
  timeoutMs?: number;
}

interface Reading {
  counts: Map<string, Record<string, number>> | null;
  checkpoints: ChainCheckpoint[] | null;
  progress: ChainProgress[] | null;
  heads: Map<number, { block: number; time: Date }>;
}

const within = <T>(p: Promise<T>, ms: number): Promise<T> =>
  Promise.race([
    p,
    new Promise<never>((_, reject) => setTimeout(() => reject(new Error(`no answer in ${ms} ms`)), ms).unref()),
  ]);

/** A registry with this process's metrics; job durations are observed from `handle`'s workers. */
export function jobsMetrics(handle: Pick<WorkerHandle, "db" | "queues" | "workers">, o: JobsMetricsOptions): Registry {
  const registry = new Registry();
  const timeoutMs = o.timeoutMs ?? 3000;
  const durations = new Histogram({
    name: "vaults_job_duration_seconds",
    help: "Time a job attempt ran, by queue and outcome (completed, failed: a failed attempt may be retried)",
    labelNames: ["queue", "outcome"] as const,
    buckets: [0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10, 30, 60, 120, 300, 600],
    registers: [registry],
  });
  const observe = (queue: string, outcome: "completed" | "failed", job: Job | undefined) => {
    if (!job?.processedOn) return;
    durations.observe({ queue, outcome }, Math.max(0, (job.finishedOn ?? Date.now()) - job.processedOn) / 1000);
  };
  for (const w of handle.workers) {
    w.on("completed", (job) => observe(w.name, "completed", job));
    w.on("failed", (job) => observe(w.name, "failed", job));
  }

  // One reading per scrape, shared by every gauge below.
  let last: { at: number; reading: Promise<Reading> } | undefined;
  const read = async (): Promise<Reading> => {
    const keys = Object.keys(QUEUES) as QueueKey[];
    const [counts, checkpoints, progress, heads] = await Promise.all([
      within(Promise.all(keys.map((k) => handle.queues.queues[k].getJobCounts(...QUEUE_STATES))), timeoutMs)
        .then((cs) => new Map(keys.map((k, i) => [QUEUES[k].name, cs[i]!])))
        .catch(() => null),
      within(readCheckpoints(handle.db, o.indexerSchema), timeoutMs).catch(() => null),
      within(readProgress(handle.db), timeoutMs).catch(() => null),
      Promise.all(
        [...o.rpcUrls].map(async ([id, url]) => [id, await chainHead(url, timeoutMs).catch(() => null)] as const),
      ).then((hs) => new Map(hs.flatMap(([id, h]) => (h ? [[id, h] as const] : [])))),
    ]);
    return { counts, checkpoints, progress, heads };
  };
  const reading = () => {
    if (!last || Date.now() - last.at > 1000) last = { at: Date.now(), reading: read() };
    return last.reading;
  };

  const gauge = <L extends string>(
    name: string,
    help: string,
    labelNames: readonly L[],
    fill: (r: Reading, set: (labels: Record<L, string | number>, v: number) => void) => void,
  ) =>
    new Gauge<L>({
      name,
      help,
      labelNames,
      registers: [registry],
      async collect() {
        const r = await reading();
        this.reset();
        fill(r, (labels, v) => this.set(labels, v));
      },
    });

  gauge("vaults_metrics_source_up", "1 when the source answered this scrape", ["source"], (r, set) => {
    set({ source: "redis" }, r.counts ? 1 : 0);
    set({ source: "postgres" }, r.checkpoints && r.progress ? 1 : 0);
  });
  gauge("vaults_queue_jobs", "Jobs in a queue by state", ["queue", "state"], (r, set) => {
    for (const [queue, c] of r.counts ?? []) for (const state of QUEUE_STATES) set({ queue, state }, c[state] ?? 0);
  });

  const perChain = (name: string, help: string, values: (r: Reading) => [number, number][]) =>
    gauge(name, help, ["chain_id"], (r, set) => {
      for (const [chainId, v] of values(r)) set({ chain_id: chainId }, v);
    });
  const indexerLag = (r: Reading) =>
    (r.checkpoints ?? []).flatMap((c) => {
      const head = r.heads.get(c.chainId);
      return head ? [{ chainId: c.chainId, ...lagBetween(c, head) }] : [];
    });
  const derivedLag = (r: Reading) =>
    (r.progress ?? []).flatMap((p) => {
      const c = r.checkpoints?.find((x) => x.chainId === p.chainId);
      return c ? [{ chainId: p.chainId, ...lagBetween(p, c) }] : [];
    });
  const seconds = (d: Date) => d.getTime() / 1000;

  perChain("vaults_indexer_block", "The indexer's checkpoint: the newest block it has processed", (r) =>
    (r.checkpoints ?? []).map((c) => [c.chainId, c.block]),
  );
  perChain("vaults_indexer_block_timestamp_seconds", "Timestamp of the indexer's checkpoint block", (r) =>
    (r.checkpoints ?? []).map((c) => [c.chainId, seconds(c.time)]),
  );
  perChain("vaults_indexer_lag_blocks", "Chain head - the indexer's checkpoint (chains with an RPC URL)", (r) =>
    indexerLag(r).map((l) => [l.chainId, l.blocks]),
  );
  perChain("vaults_indexer_lag_seconds", "The same in chain time: 0 when indexed to the head", (r) =>
    indexerLag(r).map((l) => [l.chainId, l.seconds]),
  );
  perChain("vaults_derived_block", "The indexer checkpoint the derived tables are computed from", (r) =>
    (r.progress ?? []).map((p) => [p.chainId, p.block]),
  );
  perChain("vaults_derived_computed_timestamp_seconds", "When the run that computed them finished", (r) =>
    (r.progress ?? []).map((p) => [p.chainId, seconds(p.computedAt)]),
  );
  perChain("vaults_derived_lag_blocks", "The indexer's checkpoint - the derived tables' (vaults_derived_block)", (r) =>
    derivedLag(r).map((l) => [l.chainId, l.blocks]),
  );
  perChain("vaults_derived_lag_seconds", "The same in chain time: 0 when the jobs are up to date", (r) =>
    derivedLag(r).map((l) => [l.chainId, l.seconds]),
  );
  return Registry.merge([processMetrics(), registry]);
}

export interface MetricsServer {
  port: number;
  close(): Promise<void>;
}

/**
 * GET /metrics on host:port. A port already taken is reported and the process (`who`) runs on
 * without metrics (two worker processes on one host need a METRICS_PORT each): returns null then.
 */
export async function serveMetrics(
  registry: Registry,
  port: number,
  host: string,
  log: Log,
  who = "the workers run",
): Promise<MetricsServer | null> {
  const server: Server = createServer((req, res) => {
    if (req.method !== "GET" || (req.url ?? "").split("?")[0] !== "/metrics") {
      res.writeHead(404, { "content-type": "text/plain" }).end("GET /metrics\n");
      return;
    }
    registry.metrics().then(
      (text) => res.writeHead(200, { "content-type": registry.contentType, "cache-control": "no-store" }).end(text),
      (err: Error) => res.writeHead(500, { "content-type": "text/plain" }).end(`${err.message}\n`),
    );
  });
  const listening = await new Promise<boolean>((resolve) => {
    server.once("error", (err: NodeJS.ErrnoException) => {
      log(`metrics: cannot listen on ${host}:${port} (${err.code ?? err.message}); ${who} on without them`);
      resolve(false);
    });
    server.listen(port, host, () => resolve(true));
  });
  if (!listening) return null;
  const bound = (server.address() as AddressInfo).port;
  log(`metrics on http://${host}:${bound}/metrics`);
  return {
    port: bound,
    close: () =>
      new Promise<void>((resolve) => {
        server.close(() => resolve());
        server.closeAllConnections(); // a scraper's keep-alive connection would hold it open
      }),
  };
}
