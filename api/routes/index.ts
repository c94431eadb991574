/** Every resource registers its routes on the surfaces it belongs to. */
import type { Router } from "../lib/router.js";
import { registerAuth } from "./auth/token.js";
import { registerGovernance } from "./governance/governance.index.js";
import { registerIntegrations } from "./integrations/integrations.index.js";
import { registerPlatform } from "./platform/platform.index.js";
import { registerPoints } from "./points/points.index.js";
import { registerRevertReason } from "./revert_reason/revert_reason.index.js";
import { registerSubaccounts } from "./subaccounts/subaccounts.index.js";
import { registerSystem } from "./system/system.index.js";
import { registerTokenizedVault } from "./tokenized_vault/tokenized_vault.index.js";
import { registerVaults } from "./vaults/vaults.index.js";
import { registerWithdrawals } from "./withdrawals/withdrawals.index.js";

export interface Surfaces {
  pub: Router;
  inst: Router;
}

export function registerRoutes(s: Surfaces): void {
  registerSystem(s);
  registerAuth(s);
  registerTokenizedVault(s);
  registerPlatform(s);
  registerVaults(s);
  registerWithdrawals(s);
  registerRevertReason(s);
  registerSubaccounts(s);
  registerIntegrations(s);
  registerGovernance(s);
  registerPoints(s);
}
