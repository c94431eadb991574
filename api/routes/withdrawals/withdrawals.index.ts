import type { Surfaces } from "../index.js";
import { withdrawalQueue, withdrawalQueueHandler } from "./withdrawals.js";

/** /withdrawals: withdrawal queues, institutional surface only. */
export function registerWithdrawals({ inst }: Surfaces): void {
  inst.openapi(withdrawalQueue, withdrawalQueueHandler);
}
