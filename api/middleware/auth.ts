/** `x-api-key` on the routes that need it: 401 without one, 403 with a wrong or revoked one. */
import { createMiddleware } from "hono/factory";
import { checkKey } from "../keys.js";
import type { AppEnv } from "../lib/router.js";

export const requireKey = createMiddleware<AppEnv>(async (c, next) => {
  const key = c.req.header("x-api-key");
  if (!key) return c.json({ detail: "Missing API key: send it in the x-api-key header" }, 401);
  const r = await checkKey(c.var.deps.db, key.trim());
  if (!r.ok) return c.json({ detail: r.reason === "revoked" ? "API key revoked" : "Invalid API key" }, 403);
  c.set("apiKeyId", r.id);
  await next();
});
