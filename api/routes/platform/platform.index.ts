import type { Surfaces } from "../index.js";
import { historicalApyChart, historicalApyChartHandler } from "./historical-apy-chart.js";
import { loanbook, loanbookHandler, subaccountsLoanbook, subaccountsLoanbookHandler } from "./loanbook.js";
import {
  strategistListHandler,
  strategyApyByVaultHandler,
  strategyApyListHandler,
  unrealizedPnlHandler,
  unrealizedPnlLatestHandler,
  vaultHistoryArchivedHandler,
  vaultHistoryHandler,
} from "./platform.handlers.js";
import {
  strategistList,
  strategyApyByVault,
  strategyApyList,
  unrealizedPnl,
  unrealizedPnlLatest,
  vaultHistory,
  vaultHistoryArchived,
} from "./platform.routes.js";
import { strategyApyCreate, strategyApyCreateHandler } from "./strategy-apy.write.js";

/** /platform analytics: institutional surface only. */
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
  inst.openapi(historicalApyChart, historicalApyChartHandler);
  inst.openapi(loanbook, loanbookHandler);
  inst.openapi(subaccountsLoanbook, subaccountsLoanbookHandler);
}
