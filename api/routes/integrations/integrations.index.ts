import type { Surfaces } from "../index.js";
import { lendingVaultApy, lendingVaultApyHandler } from "./lending-vault-apy.js";
import {
  perpRelayerAStatus,
  perpRelayerAStatusHandler,
  perpRelayerBStatus,
  perpRelayerBStatusHandler,
} from "./perp-relayer-status.js";

/** /integrations: institutional surface. */
export function registerIntegrations({ inst }: Surfaces): void {
  inst.openapi(lendingVaultApy, lendingVaultApyHandler);
  inst.openapi(perpRelayerAStatus, perpRelayerAStatusHandler);
  inst.openapi(perpRelayerBStatus, perpRelayerBStatusHandler);
}
