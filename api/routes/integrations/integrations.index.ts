import { registerBuilder } from "../../lib/build/audit.js";
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

/**
 * /integrations: institutional surface. The builders answer a malformed request with the 422 body
 * and record it in the build audit (`registerBuilder`).
 */
export function registerIntegrations({ inst }: Surfaces): void {
  inst.openapi(lendingVaultApy, lendingVaultApyHandler);
  inst.openapi(perpRelayerAStatus, perpRelayerAStatusHandler);
  inst.openapi(perpRelayerBStatus, perpRelayerBStatusHandler);
  registerBuilder(inst, lendingMarketSupply, lendingMarketSupplyHandler, "lending_market.supply");
  registerBuilder(inst, lendingMarketBorrow, lendingMarketBorrowHandler, "lending_market.borrow");
  registerBuilder(inst, lendingMarketRepay, lendingMarketRepayHandler, "lending_market.repay");
  registerBuilder(inst, lendingMarketWithdraw, lendingMarketWithdrawHandler, "lending_market.withdraw");
  registerBuilder(inst, perpRelayerADeposit, perpRelayerADepositHandler, "perp_relayer_a.deposit");
  registerBuilder(inst, perpRelayerBDeposit, perpRelayerBDepositHandler, "perp_relayer_b.deposit");
  registerBuilder(inst, dexDeposit, dexDepositHandler, "dex_pool.deposit");
  registerBuilder(inst, dexWithdraw, dexWithdrawHandler, "dex_pool.withdraw");
  registerBuilder(inst, dexRebalance, dexRebalanceHandler, "dex_pool.rebalance");
  registerBuilder(inst, dexClaimRewards, dexClaimRewardsHandler, "dex_pool.claim_rewards");
}
