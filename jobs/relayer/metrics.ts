/**
 * The relayer's Prometheus metrics (`npm run relayer` serves them at RELAYER_METRICS_PORT): the
 * deposits it credited or rejected, failed passes, the deposits still waiting out the delay, and
 * when a pass last finished, beside the process's own metrics (its RPC URLs' failures included).
 */
import { Counter, Gauge, Registry } from "prom-client";
import { processMetrics } from "../../db/process-metrics.js";

export interface RelayerMetrics {
  registry: Registry;
  deposit(chainId: number, outcome: "credited" | "rejected"): void;
  passFailed(): void;
  passDone(pending: number, at: Date): void;
  /** whether a bridge chain answered the last pass */
  sourceUp(chainId: number, up: boolean): void;
}

export function relayerMetrics(): RelayerMetrics {
  const registry = new Registry();
  const deposits = new Counter({
    name: "vaults_relayer_deposits_total",
    help: "Bridge deposits the relayer settled on the core ledger, by source chain and outcome",
    labelNames: ["chain_id", "outcome"],
    registers: [registry],
  });
  const failures = new Counter({
    name: "vaults_relayer_pass_failures_total",
    help: "Relay passes that failed (each is retried, up to RELAYER_ATTEMPTS)",
    registers: [registry],
  });
  const pending = new Gauge({
    name: "vaults_relayer_pending_deposits",
    help: "Deposits seen by the last pass and still younger than RELAYER_DELAY_S",
    registers: [registry],
  });
  const last = new Gauge({
    name: "vaults_relayer_last_pass_timestamp_seconds",
    help: "When the last successful pass finished (unix seconds)",
    registers: [registry],
  });
  const sources = new Gauge({
    name: "vaults_relayer_source_up",
    help: "1 when the bridge chain answered the last pass, 0 when it was left out (its deposits wait)",
    labelNames: ["chain_id"],
    registers: [registry],
  });
  return {
    registry: Registry.merge([processMetrics(), registry]),
    deposit: (chainId, outcome) => deposits.inc({ chain_id: String(chainId), outcome }),
    passFailed: () => failures.inc(),
    passDone: (n, at) => {
      pending.set(n);
      last.set(at.getTime() / 1000);
    },
    sourceUp: (chainId, up) => sources.set({ chain_id: String(chainId) }, up ? 1 : 0),
  };
}
