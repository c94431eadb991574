import type { Surfaces } from "../index.js";
import { auditLogHandler, permissionsHandler, rolesHandler, timelocksHandler } from "./governance.handlers.js";
import { auditLog, permissions, roles, timelocks } from "./governance.routes.js";

/** Institutional governance routes (key required): roles, permissions, timelocks, audit log. */
export function registerGovernance({ inst }: Surfaces): void {
  inst.openapi(roles, rolesHandler);
  inst.openapi(permissions, permissionsHandler);
  inst.openapi(timelocks, timelocksHandler);
  inst.openapi(auditLog, auditLogHandler);
}
