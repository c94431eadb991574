/**
 * The security each OpenAPI operation states, as the middleware enforces it. Routes declare
 * `openReadSecurity` (no credential, or a key) when they run `readKey`; when the operator closes
 * the institutional reads (API_READS_REQUIRE_KEY=1), those operations state `keySecurity` and the
 * 401 answer instead. Which operations run `readKey` is read off the router itself, so the
 * document cannot claim a policy the routes do not apply.
 */
import { readKey } from "../middleware/auth.js";
import { authResponses, keySecurity, type Router } from "./router.js";

type OpenAPIObject = ReturnType<Router["getOpenAPI31Document"]>;

/** "get /vaults/{vault_address}" for every route of `router` that runs `handler`. */
function operationsRunning(router: Router, handler: unknown): Set<string> {
  const out = new Set<string>();
  for (const r of router.routes) {
    if (r.handler !== handler) continue;
    out.add(`${r.method.toLowerCase()} ${r.path.replaceAll(/:([^/]+)/g, "{$1}")}`);
  }
  return out;
}

/** Rewrites `doc` (generated from `router`, paths relative to it) for the closed-reads policy. */
export function applyReadPolicy(doc: OpenAPIObject, router: Router, readsRequireKey: boolean): OpenAPIObject {
  if (!readsRequireKey) return doc;
  const closed = operationsRunning(router, readKey);
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const [method, op] of Object.entries(item)) {
      if (!closed.has(`${method} ${path}`)) continue;
      const operation = op as { security?: unknown; responses?: Record<string, unknown> };
      operation.security = keySecurity;
      operation.responses = { ...operation.responses, 401: authResponses[401] };
    }
  }
  return doc;
}
