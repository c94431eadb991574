/** Node's process metrics (prom-client), shared by the API's and the workers' /metrics. */
import { collectDefaultMetrics, Registry } from "prom-client";

let processRegistry: Registry | undefined;

/** CPU, memory, event loop and GC of this process, collected once however many registries show them. */
export function processMetrics(): Registry {
  if (!processRegistry) {
    processRegistry = new Registry();
    collectDefaultMetrics({ register: processRegistry });
  }
  return processRegistry;
}
