/**
 * Look-ahead prefetch of the flow snapshots' state reads during a backfill.
 *
 * Ponder runs a chain's handlers one after another, so each flow snapshot read (one multicall per
 * vault and block with deposits or withdraws) used to stop indexing for a round trip: about 3,250
 * sequential reads in the indexer benchmark, most of the gap to bare Ponder
 * (docs/performance.md, "Indexer benchmark"). When a flow read is asked for at block B, this module
 * looks ahead: one eth_getLogs over [B+1, B+W] for the Deposit and Withdraw events of the chain's
 * registered vaults (the events the handlers in src/vaults.ts receive) gives the (vault, block)
 * pairs that will need a read, and their reads start in the background, a few at a time. The
 * handler then takes the answer that is already there.
 *
 * Rows stay identical: a prefetched read is the same multicall at the same block, pinned to the
 * block hash of the log (EIP-1898), and it is used only when that hash equals the hash of the
 * block the handler is indexing, so a reorged block never gets the answer of another block. A
 * miss, a hash mismatch or a failed prefetch falls back to the direct read the handler always did.
 * Nothing is prefetched within Ponder's finality depth of the head (the live path, where reorgs
 * happen), and prefetch errors never reach the handler.
 *
 * The window adapts: it starts small, doubles while scans find few flows (sparse history) and
 * shrinks to about `4 * maxAhead` pairs per scan where every block has flows, so a dense stretch
 * does not make one huge eth_getLogs answer (viem refuses bodies over 10 MB; a failed scan also
 * halves the window).
 *
 * Memory stays flat: an answer is dropped once used, at most `maxAhead` reads are started and not
 * yet used, the plan holds at most one window of pairs, and everything below the block being
 * indexed is dropped as the handlers move on.
 */
import { type AbiEvent, type Address, getAbiItem, type Hex, type PublicClient, toEventSelector, toHex } from "viem";
import { Erc4626Abi } from "../abis/Erc4626Abi";
import { LendingPoolAbi } from "../abis/LendingPoolAbi";
import { TokenizedVaultV2Abi } from "../abis/TokenizedVaultV2Abi";
import type { EvmVault } from "../config/registry";

/** The events whose handlers take a flow snapshot, per vault family (src/vaults.ts). */
export const FLOW_EVENTS: Record<EvmVault["family"], readonly AbiEvent[]> = {
  lendingPool: [
    getAbiItem({ abi: LendingPoolAbi, name: "Deposit" }),
    getAbiItem({ abi: LendingPoolAbi, name: "Withdraw" }),
  ],
  tokenizedVaultV2: [
    getAbiItem({ abi: TokenizedVaultV2Abi, name: "Deposit" }),
    getAbiItem({ abi: TokenizedVaultV2Abi, name: "Withdraw" }),
  ],
  erc4626: [getAbiItem({ abi: Erc4626Abi, name: "Deposit" }), getAbiItem({ abi: Erc4626Abi, name: "Withdraw" })],
};

const FLOW_TOPICS: Record<EvmVault["family"], Set<Hex>> = {
  lendingPool: new Set(FLOW_EVENTS.lendingPool.map((e) => toEventSelector(e))),
  tokenizedVaultV2: new Set(FLOW_EVENTS.tokenizedVaultV2.map((e) => toEventSelector(e))),
  erc4626: new Set(FLOW_EVENTS.erc4626.map((e) => toEventSelector(e))),
};

/**
 * Blocks Ponder treats as unfinalized behind the head (the same table as Ponder 0.16's
 * getFinalityBlockCount, which it does not export): blocks within this depth are indexed on the
 * live path and may still be reorged, so they are never prefetched.
 */
export function finalityBlocks(chainId: number): number {
  if ([1, 3, 4, 5, 42, 11155111].includes(chainId)) return 65;
  if ([137, 80001].includes(chainId)) return 200;
  if ([42161, 42170, 421611, 421613].includes(chainId)) return 240;
  return 30;
}

/** A block with deposits or withdraws of a vault, as found in the logs. */
export interface FlowAt {
  vault: Address;
  blockNumber: bigint;
  blockHash: Hex;
}

interface LogLike {
  address: Address;
  blockNumber: bigint | null;
  blockHash: Hex | null;
  topics: readonly Hex[];
  removed?: boolean;
}

/**
 * The distinct (vault, block) pairs with flows in `logs`, in block order: logs of a registered
 * vault whose topic0 is a Deposit or Withdraw of that vault's family (what Ponder routes to the
 * flow handlers); pending and removed logs are left out.
 */
export function flowsInLogs(logs: readonly LogLike[], vaults: ReadonlyMap<string, EvmVault>): FlowAt[] {
  const seen = new Set<string>();
  const out: FlowAt[] = [];
  for (const log of logs) {
    if (log.removed || log.blockNumber === null || log.blockHash === null) continue;
    const vault = vaults.get(log.address.toLowerCase());
    const topic0 = log.topics[0];
    if (!vault || !topic0 || !FLOW_TOPICS[vault.family].has(topic0.toLowerCase() as Hex)) continue;
    const key = `${vault.address}:${log.blockNumber}`;
    if (seen.has(key)) continue;
    seen.add(key);
    out.push({ vault: vault.address, blockNumber: log.blockNumber, blockHash: log.blockHash });
  }
  return out.sort((a, b) => (a.blockNumber < b.blockNumber ? -1 : a.blockNumber > b.blockNumber ? 1 : 0));
}

/** Where a read is pinned: the direct read by number (as ever), a prefetched one by the log's hash. */
export type ReadAt = { blockNumber: bigint } | { blockHash: Hex };

export interface FlowPrefetchOptions<T> {
  chainId: number;
  /** The chain's node, for eth_blockNumber and eth_getLogs (src/common.ts: the direct client). */
  client: PublicClient;
  /** The chain's registered vaults. */
  vaults: readonly EvmVault[];
  /** The state read itself (src/common.ts: readVaultState). */
  read: (v: EvmVault, at: ReadAt) => Promise<T>;
  /** Most blocks scanned ahead per eth_getLogs; 0 turns prefetch off (default 1000). */
  windowBlocks?: number;
  /** The first scan's window (default min(windowBlocks, 128)); it adapts from there. */
  initialWindowBlocks?: number;
  /** Prefetched reads in flight at once (default 6). */
  concurrency?: number;
  /** Prefetched reads started and not yet used, at most (default 64). */
  maxAhead?: number;
  /** No prefetch within this many blocks of the head (default: Ponder's finality depth). */
  finalityBlocks?: number;
  /** How old the known head may get before it is fetched again (default 3000 ms). */
  headTtlMs?: number;
  /** Pause after a failed scan or read; doubles on each failure in a row, up to 64 times (default 1000 ms). */
  backoffMs?: number;
  /** Where warnings go (default console.warn). */
  warn?: (message: string) => void;
  /** Where the one-line summary goes once no flow read was asked for a while (default console.info). */
  info?: (message: string) => void;
  /**
   * How long without flow reads before that summary, if anything was prefetched since the last one (default 5000 ms).
   */
  summaryIdleMs?: number;
}

type Settled<T> = { ok: true; value: T } | { ok: false; error: unknown };

interface Started<T> {
  blockHash: Hex;
  blockNumber: bigint;
  result: Promise<Settled<T>>;
}

export interface PrefetchStats {
  /** answers taken from a prefetched read */
  hits: number;
  /** reads asked for that were not prefetched */
  misses: number;
  /** prefetched answers of another block hash than the handler's (not used) */
  mismatches: number;
  /** prefetched reads that failed (the handler read directly) */
  failures: number;
  /** direct reads within the finality depth of the head (or before the head was known) */
  nearHead: number;
  /** eth_getLogs scans made, and failed */
  scans: number;
  scanFailures: number;
  /** prefetched reads started */
  started: number;
  /** pairs dropped unused because the handlers went past their block */
  dropped: number;
}

const key = (vault: string, blockNumber: bigint) => `${vault}:${blockNumber}`;

/** Look-ahead prefetch of one chain's flow reads (see the module comment). */
export class FlowPrefetcher<T> {
  readonly stats: PrefetchStats = {
    hits: 0,
    misses: 0,
    mismatches: 0,
    failures: 0,
    nearHead: 0,
    scans: 0,
    scanFailures: 0,
    started: 0,
    dropped: 0,
  };

  private readonly chainId: number;
  private readonly client: PublicClient;
  private readonly read: (v: EvmVault, at: ReadAt) => Promise<T>;
  private readonly byAddress: Map<string, EvmVault>;
  private readonly addresses: Address[];
  /** topic0 of every flow event of the chain's vault families */
  private readonly topics: Hex[];
  /** the current scan window, and its upper bound */
  private window: number;
  private readonly maxWindow: number;
  private readonly concurrency: number;
  private readonly maxAhead: number;
  private readonly finality: bigint;
  private readonly headTtlMs: number;
  private readonly backoffMs: number;
  private readonly warn: (message: string) => void;
  private readonly info: (message: string) => void;
  private readonly summaryIdleMs: number;
  private summaryTimer: ReturnType<typeof setTimeout> | undefined;
  /** stats.started at the last summary, and when it was (or when prefetching began) */
  private summarizedAt = 0;
  private summaryLast = 0;

  /** pairs found by the scans and not started yet, in block order (Map keeps insertion order) */
  private readonly planned = new Map<string, FlowAt>();
  /** reads started and not used yet */
  private readonly started = new Map<string, Started<T>>();
  private inFlight = 0;
  /** the lowest block the handlers may still ask for */
  private floor = 0n;
  /** the last block covered by a finished scan */
  private scannedTo = -1n;
  private scanning = false;
  private head: bigint | undefined;
  private headAt = 0;
  private headLoading = false;
  private headFailing = false;
  /** failures in a row (scans and reads), and the time before which nothing new is tried */
  private failuresInARow = 0;
  private pausedUntil = 0;

  constructor(opts: FlowPrefetchOptions<T>) {
    this.chainId = opts.chainId;
    this.client = opts.client;
    this.read = opts.read;
    this.byAddress = new Map(opts.vaults.map((v) => [v.address.toLowerCase(), v]));
    this.addresses = [...this.byAddress.keys()] as Address[];
    const families = new Set(opts.vaults.map((v) => v.family));
    this.topics = [...families].flatMap((f) => FLOW_EVENTS[f].map((e) => toEventSelector(e)));
    this.maxWindow = Math.max(0, Math.floor(opts.windowBlocks ?? 1000));
    this.window = Math.min(this.maxWindow, Math.max(1, Math.floor(opts.initialWindowBlocks ?? 128)));
    this.concurrency = Math.max(1, opts.concurrency ?? 6);
    this.maxAhead = Math.max(1, opts.maxAhead ?? 64);
    this.finality = BigInt(opts.finalityBlocks ?? finalityBlocks(opts.chainId));
    this.headTtlMs = opts.headTtlMs ?? 3000;
    this.backoffMs = opts.backoffMs ?? 1000;
    this.warn = opts.warn ?? ((m) => console.warn(m));
    this.info = opts.info ?? ((m) => console.info(m));
    this.summaryIdleMs = opts.summaryIdleMs ?? 5000;
  }

  /** Pairs planned or started and not used yet (bounded; for tests and diagnostics). */
  get size(): number {
    return this.planned.size + this.started.size;
  }

  /**
   * The state of `v` at the end of `block`, from a prefetched read when one of the same block hash
   * is there, else read directly (by number, as the handlers always did). Handlers of one chain ask
   * in block order; everything below `block.number` is dropped.
   */
  async get(v: EvmVault, block: { number: bigint; hash: Hex }): Promise<T> {
    this.advance(block.number);
    this.scheduleSummary();
    const k = key(v.address.toLowerCase(), block.number);
    const entry = this.started.get(k);
    if (entry) {
      this.started.delete(k);
      this.pump();
      if (entry.blockHash.toLowerCase() === block.hash.toLowerCase()) {
        const r = await entry.result;
        if (r.ok) {
          this.stats.hits++;
          return r.value;
        }
        // Counted as a failure when it settled; the direct read below keeps viem's retries.
      } else {
        this.stats.mismatches++;
      }
    } else {
      // A planned pair is read right here instead.
      this.planned.delete(k);
      if (this.isNearHead(block.number)) this.stats.nearHead++;
      else this.stats.misses++;
    }
    return this.read(v, { blockNumber: block.number });
  }

  /** Drops what lies below `blockNumber`, keeps the head fresh, scans ahead and starts reads. */
  private advance(blockNumber: bigint): void {
    if (this.maxWindow === 0) return;
    if (blockNumber > this.floor) {
      this.floor = blockNumber;
      for (const [k, f] of this.planned) {
        if (f.blockNumber >= blockNumber) break;
        this.planned.delete(k);
        this.stats.dropped++;
      }
      for (const [k, s] of this.started) {
        if (s.blockNumber < blockNumber) {
          this.started.delete(k);
          this.stats.dropped++;
        }
      }
    }
    this.refreshHead();
    this.maybeScan(blockNumber);
    this.pump();
  }

  /** The last block that may be prefetched (head minus the finality depth), if the head is known. */
  private safeHead(): bigint | undefined {
    return this.head === undefined ? undefined : this.head - this.finality;
  }

  private isNearHead(blockNumber: bigint): boolean {
    const safe = this.safeHead();
    return safe === undefined || blockNumber > safe;
  }

  /** Fetches the head in the background when the known one is older than headTtlMs. */
  private refreshHead(): void {
    if (this.headLoading || Date.now() - this.headAt < this.headTtlMs) return;
    this.headLoading = true;
    this.client
      .getBlockNumber({ cacheTime: 0 })
      .then(
        (n) => {
          if (this.head === undefined || n > this.head) this.head = n;
          this.headAt = Date.now();
          this.headFailing = false;
        },
        (err: unknown) => {
          // Tried again after the TTL; until then the last known head (or none: no prefetch) holds.
          this.headAt = Date.now();
          if (!this.headFailing) this.report("eth_blockNumber", err);
          this.headFailing = true;
        },
      )
      .finally(() => {
        this.headLoading = false;
      });
  }

  /** Starts a scan of the next window when less than half a window lies scanned ahead of `blockNumber`. */
  private maybeScan(blockNumber: bigint): void {
    if (this.scanning || Date.now() < this.pausedUntil) return;
    const safe = this.safeHead();
    if (safe === undefined || blockNumber > safe) return;
    if (this.scannedTo - blockNumber >= BigInt(this.window) / 2n) return;
    const from = this.scannedTo >= blockNumber ? this.scannedTo + 1n : blockNumber + 1n;
    const to = from + BigInt(this.window) - 1n < safe ? from + BigInt(this.window) - 1n : safe;
    if (from > to) return;
    this.scanning = true;
    this.stats.scans++;
    // A raw eth_getLogs: only addresses, blocks and topic0 are needed, and viem's getLogs would
    // ABI-decode every log (tens of thousands over a backfill, on the indexing thread).
    this.client
      .request({
        method: "eth_getLogs",
        params: [{ address: this.addresses, topics: [this.topics], fromBlock: toHex(from), toBlock: toHex(to) }],
      })
      .then(
        (raw) => {
          const logs = raw.map((l) => ({
            address: l.address,
            blockNumber: l.blockNumber === null ? null : BigInt(l.blockNumber),
            blockHash: l.blockHash,
            topics: l.topics,
            removed: l.removed,
          }));
          const flows = flowsInLogs(logs, this.byAddress);
          for (const f of flows) {
            if (f.blockNumber >= this.floor) this.planned.set(key(f.vault, f.blockNumber), f);
          }
          this.scannedTo = to;
          this.adaptWindow(flows.length, Number(to - from + 1n));
          this.succeeded();
          this.pump();
        },
        (err: unknown) => {
          // A node may refuse wide ranges: halve the window, pause, and let a later read try again.
          this.stats.scanFailures++;
          this.window = Math.max(1, Math.floor(this.window / 2));
          this.failed(`eth_getLogs ${from}..${to}`, err);
        },
      )
      .finally(() => {
        this.scanning = false;
      });
  }

  /** Aims the next scans at about 4 * maxAhead pairs each, within [1, windowBlocks]. */
  private adaptWindow(found: number, span: number): void {
    const target = 4 * this.maxAhead;
    if (found > target) this.window = Math.max(1, Math.floor((span * target) / found));
    else if (span >= this.window && found < target / 2) this.window = Math.min(this.maxWindow, this.window * 2);
  }

  /** Starts planned reads while fewer than `concurrency` are in flight and `maxAhead` wait unused. */
  private pump(): void {
    while (this.inFlight < this.concurrency && this.started.size < this.maxAhead && Date.now() >= this.pausedUntil) {
      const next = this.planned.entries().next();
      if (next.done) return;
      const [k, f] = next.value;
      this.planned.delete(k);
      const v = this.byAddress.get(f.vault)!;
      this.inFlight++;
      this.stats.started++;
      // Never rejects (a synchronous throw of `read` included): failures settle as { ok: false }.
      const result: Promise<Settled<T>> = Promise.resolve()
        .then(() => this.read(v, { blockHash: f.blockHash }))
        .then(
          (value) => {
            this.succeeded();
            return { ok: true as const, value };
          },
          (error: unknown) => {
            this.stats.failures++;
            this.failed(`read of ${f.vault} at ${f.blockNumber}`, error);
            return { ok: false as const, error };
          },
        );
      void result.finally(() => {
        this.inFlight--;
        this.pump();
      });
      this.started.set(k, { blockHash: f.blockHash, blockNumber: f.blockNumber, result });
    }
  }

  /**
   * One line on how well prefetching worked, once the flow reads pause (the end of a backfill, or
   * of a busy stretch of it) after something was prefetched, and once a minute while they go on;
   * totals since the start.
   */
  private scheduleSummary(): void {
    if (this.stats.started === this.summarizedAt) return;
    // During a long backfill, also one line every 20 s (Ponder logs its progress every 5 s).
    if (Date.now() - this.summaryLast >= 20_000 && this.summaryLast > 0) {
      clearTimeout(this.summaryTimer);
      this.summarize();
      return;
    }
    if (this.summaryLast === 0) this.summaryLast = Date.now();
    if (this.summaryTimer) {
      this.summaryTimer.refresh();
      return;
    }
    this.summaryTimer = setTimeout(() => this.summarize(), this.summaryIdleMs);
    this.summaryTimer.unref?.();
  }

  private summarize(): void {
    this.summaryTimer = undefined;
    this.summaryLast = Date.now();
    this.summarizedAt = this.stats.started;
    const s = this.stats;
    this.info(
      `flow prefetch on chain ${this.chainId}: ${s.hits} reads prefetched and used, ${s.misses} missed, ` +
        `${s.mismatches} of another block hash, ${s.failures} failed, ${s.dropped} unused; ` +
        `${s.scans} eth_getLogs scans (${s.scanFailures} failed)`,
    );
  }

  private succeeded(): void {
    this.failuresInARow = 0;
    this.pausedUntil = 0;
  }

  /** Pauses prefetching (doubling with each failure in a row) and warns on the first of a series. */
  private failed(what: string, err: unknown): void {
    if (this.failuresInARow === 0) this.report(what, err);
    this.failuresInARow++;
    this.pausedUntil = Date.now() + this.backoffMs * 2 ** Math.min(this.failuresInARow - 1, 6);
  }

  private report(what: string, err: unknown): void {
    const msg = err instanceof Error ? ((err as { shortMessage?: string }).shortMessage ?? err.message) : String(err);
    this.warn(`flow prefetch on chain ${this.chainId}: ${what} failed (${msg}); the handlers read directly meanwhile`);
  }
}
