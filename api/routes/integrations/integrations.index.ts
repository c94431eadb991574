import { builderAudit } from "../../lib/build/audit.js";
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
 * and record it in the build audit (`builderAudit`).
 */
export function registerIntegrations({ inst }: Surfaces): void {
  inst.openapi(lendingVaultApy, lendingVaultApyHandler);
  inst.openapi(perpRelayerAStatus, perpRelayerAStatusHandler);
  inst.openapi(perpRelayerBStatus, perpRelayerBStatusHandler);
  inst.openapi(
    lendingMarketSupply,
    lendingMarketSupplyHandler,
    builderAudit(inst, lendingMarketSupply, "lending_market.supply") as never,
  );
  inst.openapi(
    lendingMarketBorrow,
    lendingMarketBorrowHandler,
    builderAudit(inst, lendingMarketBorrow, "lending_market.borrow") as never,
  );
  inst.openapi(
    lendingMarketRepay,
    lendingMarketRepayHandler,
    builderAudit(inst, lendingMarketRepay, "lending_market.repay") as never,
  );
  inst.openapi(
    lendingMarketWithdraw,
    lendingMarketWithdrawHandler,
    builderAudit(inst, lendingMarketWithdraw, "lending_market.withdraw") as never,
  );
  inst.openapi(
    perpRelayerADeposit,
    perpRelayerADepositHandler,
    builderAudit(inst, perpRelayerADeposit, "perp_relayer_a.deposit") as never,
  );
  inst.openapi(
    perpRelayerBDeposit,
    perpRelayerBDepositHandler,
    builderAudit(inst, perpRelayerBDeposit, "perp_relayer_b.deposit") as never,
  );
  inst.openapi(dexDeposit, dexDepositHandler, builderAudit(inst, dexDeposit, "dex_pool.deposit") as never);
  inst.openapi(dexWithdraw, dexWithdrawHandler, builderAudit(inst, dexWithdraw, "dex_pool.withdraw") as never);
  inst.openapi(dexRebalance, dexRebalanceHandler, builderAudit(inst, dexRebalance, "dex_pool.rebalance") as never);
  inst.openapi(
    dexClaimRewards,
    dexClaimRewardsHandler,
    builderAudit(inst, dexClaimRewards, "dex_pool.claim_rewards") as never,
  );
}
