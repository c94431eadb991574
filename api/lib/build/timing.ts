/**
 * Where a build's time went, answered in a `Server-Timing` header (W3C Server Timing) on every
 * builder answer, built or refused:
 * - `before`: from the request's arrival in the app to the builder's start (the rate limit, the
 *   key, the body's validation, and waiting for the CPU);
 * - `read`: the read stage at the head (`readAtHead`: the multicall, with its encoding);
 * - `simulate`: the simulations (`simulate`); several in flight at once count once;
 * - `build`: the builder from start to answer, the two above included;
 * - `audit`: the audit row's insert and commit.
 * Times are wall-clock milliseconds as the API saw them, so they include waiting for the CPU.
 * The phases are found through AsyncLocalStorage, so the builders need not pass a recorder down.
 */
import { AsyncLocalStorage } from "node:async_hooks";

type Spans = Map<string, [number, number][]>;
const store = new AsyncLocalStorage<Spans>();

/** Runs `fn` as phase `name` of the build in progress (if any). */
export async function phase<T>(name: string, fn: () => Promise<T>): Promise<T> {
  const spans = store.getStore();
  if (!spans) return fn();
  const start = performance.now();
  try {
    return await fn();
  } finally {
    const list = spans.get(name) ?? [];
    list.push([start, performance.now()]);
    spans.set(name, list);
  }
}

/** The time covered by `spans`, overlaps counted once. */
function covered(spans: [number, number][]): number {
  const sorted = [...spans].sort((a, b) => a[0] - b[0]);
  let total = 0;
  let [from, to] = sorted[0] ?? [0, 0];
  for (const [s, e] of sorted.slice(1)) {
    if (s > to) {
      total += to - from;
      from = s;
      to = e;
    } else to = Math.max(to, e);
  }
  return total + (to - from);
}

/** The phases of one build: run the builder in `run`, add the others, and write the header. */
export class BuildTimings {
  private readonly spans: Spans = new Map();

  run<T>(fn: () => Promise<T>): Promise<T> {
    return store.run(this.spans, () => phase("build", fn));
  }

  async add<T>(name: string, fn: () => Promise<T>): Promise<T> {
    return store.run(this.spans, () => phase(name, fn));
  }

  /** Phase `name` ran from `start` (a performance.now() time) until now. */
  since(name: string, start: number): void {
    this.spans.set(name, [[start, performance.now()]]);
  }

  /** Each phase that ran, in milliseconds (overlaps counted once). */
  durations(): Record<string, number> {
    return Object.fromEntries(
      ["before", "read", "simulate", "build", "audit"]
        .filter((n) => this.spans.has(n))
        .map((n) => [n, covered(this.spans.get(n)!)]),
    );
  }

  header(): string {
    return Object.entries(this.durations())
      .map(([n, ms]) => `${n};dur=${ms.toFixed(1)}`)
      .join(", ");
  }
}
