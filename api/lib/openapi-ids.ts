/**
 * Each operation's `operationId`, made from its method and path where the route names none, so
 * client generators get stable, readable function names: `get /tokenized_vault/{vault_address}`
 * is `get_tokenized_vault_by_vault_address`. Method and path are unique in a document, so are
 * these; a route's own `operationId` stays.
 */
import type { Router } from "./router.js";

type OpenAPIObject = ReturnType<Router["getOpenAPI31Document"]>;
const METHODS = new Set(["get", "put", "post", "delete", "options", "head", "patch", "trace"]);

/** `method` and `path` as an identifier: words of letters and digits joined by `_`. */
export function operationId(method: string, path: string): string {
  const words = path
    .split("/")
    .filter(Boolean)
    .map((seg) => (/^\{.+\}$/.test(seg) ? `by_${seg.slice(1, -1)}` : seg))
    .map((seg) => seg.replaceAll(/[^0-9A-Za-z]+/g, "_").replaceAll(/^_+|_+$/g, ""))
    .filter(Boolean);
  return [method.toLowerCase(), ...(words.length ? words : ["root"])].join("_");
}

/** Sets the `operationId` of every operation of `doc` that has none. */
export function withOperationIds(doc: OpenAPIObject): OpenAPIObject {
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const [method, op] of Object.entries(item as Record<string, { operationId?: string }>)) {
      if (METHODS.has(method) && op && typeof op === "object") op.operationId ??= operationId(method, path);
    }
  }
  return doc;
}
