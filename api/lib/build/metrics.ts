/**
 * The builders' Prometheus metrics, served with the API's at GET /metrics: every build by action,
 * chain, outcome and refusal code (`builder_builds_total`: which chain's node refuses or fails
 * builds, how often a slippage bound is missed), and the time of each phase of `timing.ts`
 * (`builder_phase_seconds`: read, simulate, build, audit; which node is slow), recorded by
 * `runBuild` (audit.ts) as each build answers; and every simulation by chain and method
 * (`builder_simulations_total`: which chain's node lacks eth_simulateV1), by simulate.ts.
 */
import { Counter, Histogram, Registry } from "prom-client";
import type { SimulationMethod } from "./simulate.js";

export const buildMetrics = new Registry();

const builds = new Counter({
  name: "builder_builds_total",
  help: "Transaction builds answered, by action, chain, outcome (built or refused) and refusal code",
  labelNames: ["action", "chain", "outcome", "code"] as const,
  registers: [buildMetrics],
});

const phases = new Histogram({
  name: "builder_phase_seconds",
  help: "Time of each phase of a build (read, simulate, build, audit), as the API saw it",
  labelNames: ["action", "chain", "phase"] as const,
  buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
  registers: [buildMetrics],
});

const simulations = new Counter({
  name: "builder_simulations_total",
  help: "Builds' simulations by chain and method: eth_simulateV1, or eth_call with a state override where the node lacks it",
  labelNames: ["chain", "method"] as const,
  registers: [buildMetrics],
});

/** One simulation made (simulate.ts): a chain whose node has no eth_simulateV1 counts `eth_call`. */
export function recordSimulation(chainId: number, method: SimulationMethod): void {
  simulations.inc({ chain: String(chainId), method });
}

/**
 * One build answered: its outcome and its phases' milliseconds. `chain` is a label the caller
 * bounds (a configured chain's id, `other`, or empty), as `action` and `code` are the code's own.
 */
export function recordBuild(
  action: string,
  chain: string,
  outcome: "built" | "refused",
  code: string | null,
  phaseMs: Record<string, number>,
): void {
  builds.inc({ action, chain, outcome, code: code ?? "" });
  for (const [phase, ms] of Object.entries(phaseMs)) {
    if (phase !== "before") phases.observe({ action, chain, phase }, ms / 1000);
  }
}
