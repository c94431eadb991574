/**
 * Live chain reads shared by concurrent requests: the routes that read a subaccount's positions
 * and loans, a loan book or a lending vault at a chain's head.
 *
 * - A chain's head (number, hash, timestamp) is read at most once per `headTtlMs` per RPC URL;
 *   requests that come meanwhile share that read, or the one under way. The API sets the TTL to
 *   its response cache's (RESPONSE_CACHE_MS, at most 1 s): a live figure is never older than a
 *   cached answer may be, and with the response cache off every request reads the head.
 * - A read at a head (keyed by what it reads) is made once per head block: requests at the same
 *   head share its result, or the read under way; a new head (another block hash, so a reorg too)
 *   reads afresh. Only the newest block's result is kept per key. A failed read is not kept.
 * - A read of what the indexer wrote about an account (`recent`, which decides what is read at the
 *   heads) is shared for as long as a head is: an index behind the chain is no older for it.
 *
 * Every answer built from these reads still names the block it was read at.
 */
import type { PublicClient } from "viem";

export interface Head {
  number: bigint;
  hash: `0x${string}`;
  /** unix seconds */
  timestamp: bigint;
}

type HeadClient = Pick<PublicClient, "getBlock">;

export interface ChainReadsOptions {
  /** how long a chain's head is reused (0: every request reads it) */
  headTtlMs: number;
  /** reads kept at most (the oldest go first) */
  maxEntries?: number;
  /** the clock, ms (tests pass their own) */
  now?: () => number;
}

/** A read kept for `headTtlMs` from its start (a head, or a `recent` read). */
interface RecentEntry {
  at: number;
  value: Promise<unknown>;
  /** the read has finished (a read under way is shared whatever its age) */
  done: boolean;
}

interface ReadEntry {
  block: bigint;
  hash: string;
  value: Promise<unknown>;
}

export class ChainReads {
  private readonly heads = new Map<string, RecentEntry>();
  private readonly reads = new Map<string, ReadEntry>();
  private readonly recents = new Map<string, RecentEntry>();
  private readonly headTtlMs: number;
  private readonly maxEntries: number;
  private readonly now: () => number;

  constructor(o: ChainReadsOptions) {
    this.headTtlMs = o.headTtlMs;
    this.maxEntries = o.maxEntries ?? 5000;
    this.now = o.now ?? Date.now;
  }

  /** The head of the chain behind `url` (`client` is that URL's client). */
  head(url: string, client: HeadClient): Promise<Head> {
    return this.kept(this.heads, url, () =>
      client.getBlock().then((b) => ({ number: b.number, hash: b.hash, timestamp: b.timestamp })),
    );
  }

  /**
   * `read` (not of a chain: e.g. the index's rows about an account), shared by the requests of the
   * next `headTtlMs` and with the read under way. A failed read is not kept.
   */
  recent<T>(key: string, read: () => Promise<T>): Promise<T> {
    return this.kept(this.recents, key, read);
  }

  /** `read` under `key` in `map`, shared while under way and for `headTtlMs` after it started. */
  private kept<T>(map: Map<string, RecentEntry>, key: string, read: () => Promise<T>): Promise<T> {
    const now = this.now();
    const hit = map.get(key);
    if (hit && (!hit.done || now - hit.at < this.headTtlMs)) return hit.value as Promise<T>;
    const entry = { at: now, done: false } as RecentEntry;
    entry.value = read().then(
      (v) => {
        entry.done = true;
        return v;
      },
      (err: unknown) => {
        entry.done = true;
        if (map.get(key) === entry) map.delete(key);
        throw err;
      },
    );
    map.delete(key);
    if (map.size >= this.maxEntries) map.delete(map.keys().next().value!);
    map.set(key, entry);
    return entry.value as Promise<T>;
  }

  /** `read` at `head` of the chain behind `url`, once per head block and `key`. */
  at<T>(url: string, head: Head, key: string, read: () => Promise<T>): Promise<T> {
    const k = `${url}\u0000${key}`;
    const hit = this.reads.get(k);
    if (hit && hit.hash === head.hash) return hit.value as Promise<T>;
    const value = read();
    // a request still holding an older head reads for itself and leaves the newer result in place
    if (!hit || hit.block <= head.number) {
      const entry: ReadEntry = { block: head.number, hash: head.hash, value };
      this.reads.delete(k);
      if (this.reads.size >= this.maxEntries) this.reads.delete(this.reads.keys().next().value!);
      this.reads.set(k, entry);
      value.catch(() => {
        if (this.reads.get(k) === entry) this.reads.delete(k);
      });
    }
    return value;
  }

  /** `read` at the current head (see `head`), once per head block and `key`; with that head. */
  async atHead<T>(
    url: string,
    client: HeadClient,
    key: string,
    read: (head: Head) => Promise<T>,
  ): Promise<{ head: Head; value: T }> {
    const head = await this.head(url, client);
    return { head, value: await this.at(url, head, key, () => read(head)) };
  }
}

const ids = new WeakMap<object, number>();
let nextId = 0;

/**
 * A key part naming one object (e.g. a chain's protocols entry, replaced whenever the catalogue
 * is reloaded), so a read made with another copy of the input is not reused.
 */
export function objectKey(o: object): number {
  let id = ids.get(o);
  if (id == null) {
    id = ++nextId;
    ids.set(o, id);
  }
  return id;
}
