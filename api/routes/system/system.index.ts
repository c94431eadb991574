import type { Surfaces } from "../index.js";
import { pingHandler, rootHandler } from "./system.handlers.js";
import { ping, root } from "./system.routes.js";

export function registerSystem({ pub, inst }: Surfaces): void {
  pub.openapi(root, rootHandler);
  inst.openapi(ping, pingHandler);
}
