import type { Surfaces } from "../index.js";
import {
  pendingRedemptionsBatchHandler,
  pendingRedemptionsHandler,
  strategistListHandler,
  strategyApyByVaultHandler,
  strategyApyListHandler,
  unrealizedPnlHandler,
  unrealizedPnlLatestHandler,
  vaultHistoryArchivedHandler,
  vaultHistoryHandler,
  withdrawalQueueHandler,
} from "./platform.handlers.js";
import {
  pendingRedemptions,
  pendingRedemptionsBatch,
  strategistList,
  strategyApyByVault,
  strategyApyList,
  unrealizedPnl,
  unrealizedPnlLatest,
  vaultHistory,
  vaultHistoryArchived,
  withdrawalQueue,
} from "./platform.routes.js";
import { strategyApyCreate, strategyApyCreateHandler } from "./strategy-apy.write.js";

/** Platform analytics, redemptions and withdrawals: institutional surface only. */
export function registerPlatform({ inst }: Surfaces): void {
  inst.openapi(strategyApyList, strategyApyListHandler);
  inst.openapi(strategyApyCreate, strategyApyCreateHandler);
  inst.openapi(strategyApyByVault, strategyApyByVaultHandler);
  inst.openapi(strategistList, strategistListHandler);
  // the static paths before the parameterised ones they would also match
  inst.openapi(unrealizedPnlLatest, unrealizedPnlLatestHandler);
  inst.openapi(unrealizedPnl, unrealizedPnlHandler);
  inst.openapi(vaultHistoryArchived, vaultHistoryArchivedHandler);
  inst.openapi(vaultHistory, vaultHistoryHandler);
  inst.openapi(pendingRedemptionsBatch, pendingRedemptionsBatchHandler);
  inst.openapi(pendingRedemptions, pendingRedemptionsHandler);
  inst.openapi(withdrawalQueue, withdrawalQueueHandler);
}
