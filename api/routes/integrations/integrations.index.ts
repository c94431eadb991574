import type { Surfaces } from "../index.js";
import {
  dexClaimRewards,
  dexClaimRewardsHandler,
  dexDeposit,
  dexDepositHandler,
  dexRebalance,
  dexRebalanceHandler,
  dexWithdraw,
  dexWithdrawHandler,
} from "./dex-pool.js";
import {
  lendingMarketBorrow,
  lendingMarketBorrowHandler,
  lendingMarketRepay,
  lendingMarketRepayHandler,
  lendingMarketSupply,
  lendingMarketSupplyHandler,
  lendingMarketWithdraw,
  lendingMarketWithdrawHandler,
} from "./lending-market.js";
import { lendingVaultApy, lendingVaultApyHandler } from "./lending-vault-apy.js";
import {
  perpRelayerADeposit,
  perpRelayerADepositHandler,
  perpRelayerBDeposit,
  perpRelayerBDepositHandler,
} from "./perp-relayer-deposit.js";
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
  inst.openapi(lendingMarketSupply, lendingMarketSupplyHandler);
  inst.openapi(lendingMarketBorrow, lendingMarketBorrowHandler);
  inst.openapi(lendingMarketRepay, lendingMarketRepayHandler);
  inst.openapi(lendingMarketWithdraw, lendingMarketWithdrawHandler);
  inst.openapi(perpRelayerADeposit, perpRelayerADepositHandler);
  inst.openapi(perpRelayerBDeposit, perpRelayerBDepositHandler);
  inst.openapi(dexDeposit, dexDepositHandler);
  inst.openapi(dexWithdraw, dexWithdrawHandler);
  inst.openapi(dexRebalance, dexRebalanceHandler);
  inst.openapi(dexClaimRewards, dexClaimRewardsHandler);
}
