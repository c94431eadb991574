/**
 * Metrics of the process itself (prom-client), shared by the API's and the workers' /metrics:
 * Node's CPU, memory, event loop and GC, and the failures of each of a chain's RPC URLs when it
 * has several (onchain/rpc-fetch.ts fails over from one to the next).
 */
import { Counter, collectDefaultMetrics, Registry } from "prom-client";
import { onRpcUrlFailure } from "../onchain/rpc-fetch.js";

const processRegistry = new Registry();
// counted from the module's load, so failures before the first scrape (or before the metrics
// are set up, e.g. the workers' first jobs) are in it
const failures = new Counter({
  name: "vaults_rpc_url_failures_total",
  help:
    "Failed calls to one of a chain's RPC URLs (url: its index in PONDER_RPC_URL_<chain_id>): unreachable, " +
    "429 or 5xx, or a timeout; counted where a chain has several URLs, and the call fails over to the next",
  labelNames: ["chain_id", "url"],
  registers: [processRegistry],
});
onRpcUrlFailure((chainId, url) => failures.inc({ chain_id: String(chainId), url: String(url) }));
let collecting = false;

/** This process's metrics, Node's collected from the first call, however many registries show them. */
export function processMetrics(): Registry {
  if (!collecting) {
    collectDefaultMetrics({ register: processRegistry });
    collecting = true;
  }
  return processRegistry;
}
