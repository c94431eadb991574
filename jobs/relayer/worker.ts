/**
 * The perp relayer as a BullMQ worker: a repeatable job on queue `perp-relayer` runs one
 * `relayOnce` pass (contracts/devnet/protocols/perp.ts) over every bridge chain, from a cursor per
 * chain kept in Redis, and credits (or rejects, below the bridge's minimum) on the core ledger each
 * deposit at least `delaySeconds` old, from the relayer's key.
 *
 * Never twice: the ledger refuses a core hash it processed (`AlreadyProcessed`) and relayOnce reads
 * its status before sending, so a pass that crashed after a credit and before saving its cursor,
 * a restarted worker or a second relayer process only find the deposit processed. The cursor is
 * keyed by the ledger, the chain's genesis hash and its bridges: a new devnet with the same chain
 * ids, or a bridge added, starts from block 0 again.
 *
 * Reorgs: a deposit is read once RELAYER_CONFIRMATIONS blocks are on top of its own, so one a
 * shallower reorg drops is never credited, and the cursor never passes a block that may change.
 * The cursor keeps the hash of the block before it; a pass that finds that block changed (a
 * deeper reorg) reads the last REORG_REWIND_BLOCKS again, where the new branch may hold deposits.
 */
import { Queue, Worker } from "bullmq";
import { Redis } from "ioredis";
import type { Registry } from "prom-client";
import {
  type Address,
  BaseError,
  type Chain,
  createPublicClient,
  createWalletClient,
  defineChain,
  type Hex,
  http,
  isHex,
  keccak256,
  type PublicClient,
  toHex,
  type WalletClient,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { z } from "zod";
import { isTransportError } from "../../config/rpc-errors.js";
import { type RelayResult, type RelaySource, relayOnce } from "../../contracts/devnet/protocols/perp.js";
import { rpcFetch } from "../../onchain/rpc-fetch.js";
import { PREFIX } from "../queues.js";
import { closeWorker } from "../worker-close.js";
import type { RelayerConfig } from "./config.js";
import { relayerMetrics } from "./metrics.js";

export const RELAYER_QUEUE = {
  name: "perp-relayer",
  input: z.object({ reason: z.enum(["schedule", "manual"]) }),
  output: z.object({
    credited: z.array(z.string()),
    rejected: z.array(z.string()),
    pending: z.number().int(),
    processed: z.number().int(),
    cursors: z.record(z.string(), z.string()),
    /** bridge chains left out of the pass: they did not answer */
    unreachable: z.array(z.number().int()),
  }),
} as const;
export type RelayerJobOutput = z.infer<typeof RELAYER_QUEUE.output>;

export const RELAYER_SCHEDULER_ID = "perp-relayer-schedule";

export type Log = (line: string) => void;

export interface RelayerHandle {
  queue: Queue;
  worker: Worker;
  /** the relayer's address (RELAYER on the ledger) */
  address: Address;
  /** one pass now, outside the queue (tests, the CLI's --once) */
  runOnce(): Promise<RelayerJobOutput>;
  /** its Prometheus metrics (jobs/relayer/metrics.ts), with the process's own */
  metrics: Registry;
  close(): Promise<void>;
}

function chainOf(id: number, rpcUrl: string): Chain {
  return defineChain({
    id,
    name: `chain ${id}`,
    nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
    rpcUrls: { default: { http: [rpcUrl] } },
  });
}

/** An RPC failure in one line: viem's short message and details (its URL, body, version left out). */
export function briefly(err: unknown): string {
  if (err instanceof BaseError) return err.details ? `${err.shortMessage} Details: ${err.details}` : err.shortMessage;
  return (err instanceof Error ? err.message : String(err)).split("\n")[0] ?? "";
}

/**
 * Redis key of a chain's cursor: the first block the next pass reads. Keyed by the bridges read
 * too: a bridge added to a chain's list is read from block 0, not from where the others got to.
 */
export function cursorKey(ledger: Address, chainId: number, genesisHash: string, bridges: readonly Address[]): string {
  const set = keccak256(
    toHex(
      [...bridges]
        .map((b) => b.toLowerCase())
        .sort()
        .join(","),
    ),
  ).slice(2, 18);
  return `${PREFIX}:${RELAYER_QUEUE.name}:cursor:${ledger.toLowerCase()}:${chainId}:${genesisHash}:${set}`;
}

/** How far back a pass reads again when the block under its cursor changed (a deep reorg). */
export const REORG_REWIND_BLOCKS = 128n;

/**
 * A stored cursor: `<next block>:<hash of the block before it>` (the hash is what tells a reorg
 * under the cursor), or a bare block number as relayers before the hash stored it.
 */
export function parseCursor(stored: string | null): { next: bigint; hash?: Hex } {
  const [next, hash] = (stored ?? "").split(":");
  // anything else (a value written by hand): read from block 0 again, which only costs time
  if (!next || !/^\d+$/.test(next)) return { next: 0n };
  return { next: BigInt(next), ...(hash && isHex(hash) ? { hash } : {}) };
}

export async function startRelayer(
  cfg: RelayerConfig & { redisUrl: string },
  log: Log = (l) => process.stdout.write(`[relayer] ${l}\n`),
): Promise<RelayerHandle> {
  // as jobs/runtime.ts's connections: BullMQ needs maxRetriesPerRequest null
  const connection = new Redis(cfg.redisUrl, { maxRetriesPerRequest: null, enableReadyCheck: true });
  connection.on("error", () => {}); // reconnects by itself; a pass fails and is retried
  const account = privateKeyToAccount(cfg.privateKey);
  const metrics = relayerMetrics();
  const clients = new Map<number, PublicClient>();
  for (const c of cfg.chains) {
    const transport = http(c.rpcUrl, { fetchFn: rpcFetch as never });
    clients.set(c.chainId, createPublicClient({ chain: chainOf(c.chainId, c.rpcUrl), transport }));
  }
  const core = cfg.chains.find((c) => c.chainId === cfg.coreChainId);
  if (!core) throw new Error(`relayer: no RPC for the core chain ${cfg.coreChainId}`);
  const coreClient = clients.get(core.chainId) as PublicClient;
  const wallet: WalletClient = createWalletClient({
    account,
    chain: chainOf(core.chainId, core.rpcUrl),
    transport: http(core.rpcUrl, { fetchFn: rpcFetch as never }),
  });
  const bridgeChains = cfg.chains.filter((c) => c.bridges.length > 0);
  const genesis = new Map<number, string>();
  const keyOf = async (chainId: number) => {
    let g = genesis.get(chainId);
    if (!g) {
      const block = await (clients.get(chainId) as PublicClient).getBlock({ blockNumber: 0n });
      g = block.hash;
      genesis.set(chainId, g);
    }
    return cursorKey(cfg.ledger, chainId, g, bridgeChains.find((c) => c.chainId === chainId)?.bridges ?? []);
  };
  /**
   * Where a chain's pass starts: its cursor, or, where the block under the cursor is no longer
   * the one it was (a reorg deeper than the confirmations), REORG_REWIND_BLOCKS before it, so a
   * deposit the new branch holds under the cursor is read. What was processed is only found
   * processed again. Throws where the node fails to answer.
   */
  const startOf = async (chainId: number, stored: string | null): Promise<bigint> => {
    const { next, hash } = parseCursor(stored);
    if (!hash || next === 0n) return next;
    const client = clients.get(chainId) as PublicClient;
    const now = await client.getBlock({ blockNumber: next - 1n }).catch((err: unknown) => {
      if (isTransportError(err)) throw err;
      return null; // no such block any more: the chain is shorter than it was
    });
    if (now?.hash === hash) return next;
    const from = next > REORG_REWIND_BLOCKS ? next - REORG_REWIND_BLOCKS : 0n;
    log(`chain ${chainId}: block ${next - 1n} is not the one the last pass read (a reorg): reading from ${from}`);
    return from;
  };
  /**
   * The cursor to store: `next` with the hash of the block before it, as the pass read it (read
   * before the logs). Without one (the cursor held at a deposit still too young, or nothing new
   * to read), the cursor as it was when it did not move, else the bare block number.
   */
  const cursorOf = (next: bigint, hash: Hex | undefined, stored: string | null): string => {
    if (hash) return `${next}:${hash}`;
    return stored && parseCursor(stored).next === next ? stored : String(next);
  };

  // A bridge chain that does not answer is left out of a pass; the others are relayed. Said once
  // when it stops answering and once when it answers again; `vaults_relayer_source_up` shows it.
  const down = new Set<number>();
  const sourceState = (chainId: number, up: boolean, error?: unknown) => {
    metrics.sourceUp(chainId, up);
    if (up) {
      if (down.delete(chainId)) log(`chain ${chainId} answers again: relaying its deposits`);
      return;
    }
    if (!down.has(chainId)) log(`chain ${chainId} does not answer; relaying the other chains: ${briefly(error)}`);
    down.add(chainId);
  };

  // one pass at a time in this process (the queue's worker has concurrency 1; runOnce shares it)
  let running: Promise<RelayerJobOutput> | null = null;
  const pass = async (): Promise<RelayerJobOutput> => {
    const reachable: { chain: (typeof bridgeChains)[number]; key: string }[] = [];
    for (const chain of bridgeChains) {
      try {
        reachable.push({ chain, key: await keyOf(chain.chainId) });
      } catch (err) {
        sourceState(chain.chainId, false, err);
      }
    }
    const sources: RelaySource[] = [];
    const read: ((typeof reachable)[number] & { stored: string | null })[] = [];
    for (const r of reachable) {
      let fromBlock: bigint;
      const stored = await connection.get(r.key);
      try {
        fromBlock = await startOf(r.chain.chainId, stored);
      } catch (err) {
        sourceState(r.chain.chainId, false, err);
        continue;
      }
      read.push({ ...r, stored });
      sources.push({
        client: clients.get(r.chain.chainId) as PublicClient,
        bridges: r.chain.bridges,
        fromBlock,
        confirmations: cfg.confirmations,
      });
    }
    const r: RelayResult = await relayOnce({
      sources,
      core: { client: coreClient, wallet, ledger: cfg.ledger },
      delaySeconds: cfg.delaySeconds,
      skipFailedSources: true,
    });
    const failed = new Map(r.failed.map((f) => [f.source, f.error]));
    const cursors: Record<string, string> = {};
    for (const [i, { chain, key, stored }] of read.entries()) {
      sourceState(chain.chainId, !failed.has(i), failed.get(i));
      if (failed.has(i)) continue;
      const next = r.nextFromBlock[i] ?? 0n;
      await connection.set(key, cursorOf(next, r.nextHash[i], stored));
      cursors[String(chain.chainId)] = next.toString();
    }
    for (const a of r.credited) {
      const d = a.deposit;
      metrics.deposit(d.chainId, "credited");
      log(
        `credited ${d.coreHash} (chain ${d.chainId} block ${d.blockNumber}, ${d.amount} of ${d.token} ` +
          `to ${d.destination === 1 ? "spot" : "perp"} for ${d.depositor}) in ${a.txHash}`,
      );
    }
    for (const a of r.rejected) {
      metrics.deposit(a.deposit.chainId, "rejected");
      log(`rejected ${a.deposit.coreHash} (chain ${a.deposit.chainId}): ${a.reason} in ${a.txHash}`);
    }
    metrics.passDone(r.pending.length, new Date());
    return {
      credited: r.credited.map((a) => a.deposit.coreHash),
      rejected: r.rejected.map((a) => a.deposit.coreHash),
      pending: r.pending.length,
      processed: r.processed.length,
      cursors,
      unreachable: [...down].sort((a, b) => a - b),
    };
  };
  const runOnce = async (): Promise<RelayerJobOutput> => {
    while (running) await running.catch(() => {});
    running = pass();
    try {
      return await running;
    } finally {
      running = null;
    }
  };

  const queue = new Queue(RELAYER_QUEUE.name, { connection, prefix: PREFIX });
  queue.on("error", () => {});
  const worker = new Worker(
    RELAYER_QUEUE.name,
    async (job) => {
      const parsed = RELAYER_QUEUE.input.safeParse(job.data);
      if (!parsed.success) throw new Error(`bad ${RELAYER_QUEUE.name} input: ${parsed.error.message}`);
      return RELAYER_QUEUE.output.parse(await runOnce());
    },
    { connection, prefix: PREFIX, concurrency: 1, lockDuration: 60_000, stalledInterval: 60_000 },
  );
  // a Redis or node outage repeats the same error at every retry: said once until it changes
  let lastError = "";
  const logError = (error: string, line: string) => {
    if (error !== lastError) log(line);
    lastError = error;
  };
  worker.on("failed", (job, err) => {
    metrics.passFailed();
    logError(err.message, `pass failed (attempt ${job?.attemptsMade ?? "?"}): ${err.message}`);
  });
  worker.on("error", (err) => logError(err.message, `worker error: ${err.message}`));
  worker.on("completed", () => (lastError = ""));
  // declared at start, and whenever Redis comes back (it may have lost its data): the same
  // template both times, so the retries and the retention of finished passes stay
  const declare = () =>
    queue.upsertJobScheduler(
      RELAYER_SCHEDULER_ID,
      { every: cfg.pollMs },
      {
        name: RELAYER_QUEUE.name,
        data: { reason: "schedule" },
        opts: {
          attempts: cfg.attempts,
          backoff: { type: "exponential", delay: 1000 },
          removeOnComplete: { age: 3600, count: 100 },
          // a week of failed passes, at most 1,000: a pass every 2 s failing for a week (a
          // relayer key that lost its role) would keep 300,000 in Redis
          removeOnFail: { age: 7 * 24 * 3600, count: 1000 },
        },
      },
    );
  await declare();
  let first = connection.status !== "ready";
  connection.on("ready", () => {
    if (first) {
      first = false;
      return;
    }
    declare().catch((err: Error) => log(`cannot re-declare the schedule: ${err.message}`));
  });
  log(
    `relaying ${bridgeChains.map((c) => `chain ${c.chainId} (${c.bridges.length} bridges)`).join(", ")} to ledger ` +
      `${cfg.ledger} on chain ${cfg.coreChainId} as ${account.address}, delay ${cfg.delaySeconds} s, ` +
      `${cfg.confirmations} confirmations, ` +
      `every ${cfg.pollMs} ms`,
  );
  return {
    queue,
    worker,
    address: account.address,
    runOnce,
    metrics: metrics.registry,
    async close() {
      // bounded: with Redis already gone (a shutdown stopping everything at once) it would wait
      await closeWorker(worker, 5000, log);
      while (running) await running.catch(() => {});
      await queue.close();
      connection.disconnect();
    },
  };
}
