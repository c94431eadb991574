import type { Surfaces } from "../index.js";
import { revertReason, revertReasonHandler } from "./revert-reason.js";

/** /revert_reason: institutional surface, open (the spec marks no key). */
export function registerRevertReason({ inst }: Surfaces): void {
  inst.openapi(revertReason, revertReasonHandler);
}
