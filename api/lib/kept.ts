/**
 * What the API reads from the database and keeps a while (the registry's subaccounts, the chains'
 * protocols, the indexed traders, the vault set's directory): served from memory, and once older
 * than its time to live, still served once while one load replaces it in the background
 * (lru-cache's `fetch`, stale-while-revalidate). So no request waits on the periodic reload, and
 * requests arriving together share one load instead of each running it.
 */
import { LRUCache } from "lru-cache";

export interface Kept<V extends {}> {
  /** The value of `key` kept for `owner` (a database handle), loaded by `load` when absent. */
  get(owner: object, key: string, load: () => Promise<V>): Promise<V>;
  /** The same, loaded again first when the kept value is older than `maxAgeMs`. */
  fresh(owner: object, key: string, load: () => Promise<V>, maxAgeMs: number): Promise<V>;
}

export function kept<V extends {}>(ttlMs: number, max = 10_000): Kept<V> {
  const caches = new WeakMap<object, LRUCache<string, V, () => Promise<V>>>();
  const cacheOf = (owner: object) => {
    let c = caches.get(owner);
    if (!c) {
      c = new LRUCache<string, V, () => Promise<V>>({
        max,
        ttl: ttlMs,
        allowStale: true,
        fetchMethod: (_key, _stale, { context }) => context(),
      });
      caches.set(owner, c);
    }
    return c;
  };
  const fetch = async (
    c: LRUCache<string, V, () => Promise<V>>,
    key: string,
    load: () => Promise<V>,
    force: boolean,
  ) => {
    // forced: wait for the new value rather than take the old one
    const v = await c.fetch(key, force ? { context: load, forceRefresh: true, allowStale: false } : { context: load });
    return v === undefined ? load() : v;
  };
  return {
    get: (owner, key, load) => fetch(cacheOf(owner), key, load, false),
    fresh: (owner, key, load, maxAgeMs) => {
      const c = cacheOf(owner);
      const left = c.getRemainingTTL(key);
      const old = left <= 0 || ttlMs - left > maxAgeMs;
      return fetch(c, key, load, old);
    },
  };
}

export interface Recent<V> {
  /**
   * The value of `key`, read by `read` at most `maxAgeMs` before `now`. Past half that age, the
   * kept value is still served while one read replaces it in the background.
   */
  get(key: string, read: () => Promise<V>, now?: number): Promise<V>;
  /** Drops the value of `key` (and a read in flight for it): the next caller reads again. */
  forget(key: string): void;
}

/**
 * What must be recent rather than merely kept (an API key's revocation, an operator account's
 * scopes): never served older than `maxAgeMs`, counted from when its read was sent. A value in
 * steady use is read again from half that age on, in the background, so a caller waits on the
 * database only for a value it has not asked for lately. Callers arriving together share one
 * read; at most `max` values are kept, the least recently used going first.
 */
export function recent<V extends {}>(maxAgeMs: number, max = 10_000): Recent<V> {
  const values = new LRUCache<string, { at: number; value: V }>({ max });
  const reading = new Map<string, Promise<{ at: number; value: V }>>();
  const load = (key: string, read: () => Promise<V>, at: number) => {
    const inFlight = reading.get(key);
    if (inFlight) return inFlight;
    const p: Promise<{ at: number; value: V }> = read()
      .then((value) => {
        const e = { at, value };
        // a read forgotten meanwhile keeps nothing
        const kept = values.peek(key);
        if (reading.get(key) === p && (!kept || kept.at <= at)) values.set(key, e);
        return e;
      })
      .finally(() => {
        if (reading.get(key) === p) reading.delete(key);
      });
    reading.set(key, p);
    return p;
  };
  return {
    async get(key, read, now = Date.now()) {
      const e = values.get(key);
      if (e && now - e.at <= maxAgeMs) {
        if (now - e.at > maxAgeMs / 2 && !reading.has(key)) load(key, read, now).catch(() => {});
        return e.value;
      }
      // a read already in flight may have been sent too long ago: then read once more
      let got = await load(key, read, now);
      if (now - got.at > maxAgeMs) got = await load(key, read, now);
      return got.value;
    },
    forget(key) {
      values.delete(key);
      reading.delete(key);
    },
  };
}
