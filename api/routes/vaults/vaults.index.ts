import type { Surfaces } from "../index.js";
import {
  pendingRedemptions,
  pendingRedemptionsBatch,
  pendingRedemptionsBatchHandler,
  pendingRedemptionsHandler,
} from "./pending-redemptions.js";

/** /vaults: pending redemptions, institutional surface only. */
export function registerVaults({ inst }: Surfaces): void {
  // the static path before the parameterised one it would also match
  inst.openapi(pendingRedemptionsBatch, pendingRedemptionsBatchHandler);
  inst.openapi(pendingRedemptions, pendingRedemptionsHandler);
}
