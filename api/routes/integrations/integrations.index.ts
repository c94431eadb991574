import type { Surfaces } from "../index.js";
import { lendingVaultApy, lendingVaultApyHandler } from "./lending-vault-apy.js";

/** /integrations: institutional surface. */
export function registerIntegrations({ inst }: Surfaces): void {
  inst.openapi(lendingVaultApy, lendingVaultApyHandler);
}
