import { registerBuilder } from "../../lib/build/audit.js";
import type { Surfaces } from "../index.js";
import { healthFactorHandler, subaccountListHandler, summaryHandler } from "./subaccounts.handlers.js";
import { healthFactor, subaccountList, summary } from "./subaccounts.routes.js";
import { swapHandler, swapRoute } from "./swaps.js";

/** /subaccounts: institutional surface, key required (as the spec marks them). */
export function registerSubaccounts({ inst }: Surfaces): void {
  inst.openapi(subaccountList, subaccountListHandler);
  inst.openapi(healthFactor, healthFactorHandler);
  inst.openapi(summary, summaryHandler);
  registerBuilder(inst, swapRoute, swapHandler, "swap");
}
