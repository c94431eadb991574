/**
 * Request batching for the heavy vault reads: per key (route variant), at most one computation
 * runs at a time; requests arriving while one runs wait for the next one, which starts when the
 * running one ends and serves all of them. Every request is thus answered from a read that started
 * after it arrived (a client sees its own earlier writes: nothing is cached), while under
 * concurrency the database runs one statement per key instead of one per request, and the body
 * is built and serialized once per batch.
 */
interface Slot<T> {
  running?: Promise<T>;
  queued?: Promise<T>;
}

export class Batcher<T> {
  private readonly slots = new Map<string, Slot<T>>();

  run(key: string, fn: () => Promise<T>): Promise<T> {
    let slot = this.slots.get(key);
    if (!slot) {
      slot = {};
      this.slots.set(key, slot);
    }
    const s = slot;
    if (!s.running) {
      const p = fn();
      s.running = p;
      // registered before any waiter's reaction, so it runs first when p settles
      p.then(
        () => this.settle(key, s, p),
        () => this.settle(key, s, p),
      );
      return p;
    }
    if (!s.queued) {
      s.queued = s.running
        .then(
          () => undefined,
          () => undefined,
        )
        .then(() => {
          s.queued = undefined;
          return this.run(key, fn);
        });
    }
    return s.queued;
  }

  private settle(key: string, s: Slot<T>, p: Promise<T>): void {
    if (s.running === p) s.running = undefined;
    if (!s.running && !s.queued && this.slots.get(key) === s) this.slots.delete(key);
  }
}

/** One batcher per application instance (its dependencies object). */
export function batcherFor<T>(cache: WeakMap<object, Batcher<T>>, owner: object): Batcher<T> {
  let b = cache.get(owner);
  if (!b) {
    b = new Batcher<T>();
    cache.set(owner, b);
  }
  return b;
}
