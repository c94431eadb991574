/** Reads Ponder's Prometheus /metrics text and sums the series the benchmark reports. */

export interface Sample {
  name: string;
  labels: Record<string, string>;
  value: number;
}

export function parseMetrics(text: string): Sample[] {
  const out: Sample[] = [];
  for (const line of text.split("\n")) {
    if (line.length === 0 || line.startsWith("#")) continue;
    const m = /^([a-zA-Z_:][a-zA-Z0-9_:]*)(?:\{(.*)\})?\s+(\S+)/.exec(line);
    if (!m) continue;
    const labels: Record<string, string> = {};
    for (const l of (m[2] ?? "").matchAll(/(\w+)="((?:[^"\\]|\\.)*)"/g)) labels[l[1]!] = l[2]!;
    const value = Number(m[3]);
    if (Number.isFinite(value)) out.push({ name: m[1]!, labels, value });
  }
  return out;
}

/** Sum of a series, optionally filtered by labels, grouped by one label (or "" for a total). */
export function sumBy(
  samples: Sample[],
  name: string,
  by?: string,
  where: Record<string, string> = {},
): Map<string, number> {
  const out = new Map<string, number>();
  for (const s of samples) {
    if (s.name !== name) continue;
    if (Object.entries(where).some(([k, v]) => s.labels[k] !== v)) continue;
    const key = by ? (s.labels[by] ?? "") : "";
    out.set(key, (out.get(key) ?? 0) + s.value);
  }
  return out;
}

export function total(samples: Sample[], name: string, where: Record<string, string> = {}): number {
  return sumBy(samples, name, undefined, where).get("") ?? 0;
}

export interface RunMetrics {
  /** log events completed (block and setup events excluded), per handler name */
  logEvents: number;
  blockEvents: number;
  /** sum of indexing function durations, ms, and per handler name */
  handlerMs: number;
  handlerMsByEvent: Map<string, number>;
  /** context.client actions: count and ms per action */
  rpcActions: Map<string, { count: number; ms: number }>;
  /** cached-client request outcomes (rpc | database | prefetch_rpc | prefetch_database) */
  rpcRequestsByType: Map<string, number>;
  prefetchByType: Map<string, number>;
  /** every JSON-RPC request Ponder sent (sync and indexing): count and ms per method */
  rpcByMethod: Map<string, { count: number; ms: number }>;
  /** ms per step of the historical pipeline */
  transformMs: Map<string, number>;
  extractMs: Map<string, number>;
  groupMs: Map<string, number>;
  historicalBlocks: number;
}

function countAndMs(samples: Sample[], base: string, by: string): Map<string, { count: number; ms: number }> {
  const counts = sumBy(samples, `${base}_count`, by);
  const sums = sumBy(samples, `${base}_sum`, by);
  const out = new Map<string, { count: number; ms: number }>();
  for (const [k, count] of counts) out.set(k, { count, ms: sums.get(k) ?? 0 });
  return out;
}

export function summarise(samples: Sample[]): RunMetrics {
  const completed = sumBy(samples, "ponder_indexing_completed_events", "event");
  let logEvents = 0;
  let blockEvents = 0;
  for (const [event, n] of completed) {
    if (event.endsWith(":block")) blockEvents += n;
    else if (!event.endsWith(":setup")) logEvents += n;
  }
  const handlerMsByEvent = sumBy(samples, "ponder_indexing_function_duration_sum", "event");
  return {
    logEvents,
    blockEvents,
    handlerMs: [...handlerMsByEvent.values()].reduce((a, b) => a + b, 0),
    handlerMsByEvent,
    rpcActions: countAndMs(samples, "ponder_indexing_rpc_action_duration", "action"),
    rpcRequestsByType: sumBy(samples, "ponder_indexing_rpc_requests_total", "type"),
    prefetchByType: sumBy(samples, "ponder_indexing_rpc_prefetch_total", "type"),
    rpcByMethod: countAndMs(samples, "ponder_rpc_request_duration", "method"),
    transformMs: sumBy(samples, "ponder_historical_transform_duration", "step"),
    extractMs: sumBy(samples, "ponder_historical_extract_duration", "step"),
    groupMs: sumBy(samples, "ponder_historical_concurrency_group_duration", "group"),
    historicalBlocks: total(samples, "ponder_historical_total_blocks"),
  };
}
