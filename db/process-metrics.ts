/**
 * Metrics of the process itself (prom-client), shared by the API's and the workers' /metrics:
 * Node's CPU, memory, event loop and GC, and the failures of each of a chain's RPC URLs when it
 * has several (onchain/rpc-fetch.ts fails over from one to the next).
 */
import { Counter, collectDefaultMetrics, Registry } from "prom-client";
import { onRpcUrlFailure } from "../onchain/rpc-fetch.js";

let processRegistry: Registry | undefined;

/** This process's metrics, collected once however many registries show them. */
export function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
    const failures = new Counter({
      name: "vaults_rpc_url_failures_total",
      help:
        "Failed calls to one of a chain's RPC URLs (url: its index in PONDER_RPC_URL_<chain_id>): unreachable, " +
        "429 or 5xx, or a timeout; counted where a chain has several URLs, and the call fails over to the next",
      labelNames: ["chain_id", "url"],
      registers: [processRegistry],
    });
    onRpcUrlFailure((chainId, url) => failures.inc({ chain_id: String(chainId), url: String(url) }));
  }
  return processRegistry;
}
