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
