/**
 * What every operation of a document answers at the HTTP level, besides its own responses: the
 * response cache's 304 and `ETag` on the reads (api/middleware/response-cache.ts, when
 * RESPONSE_CACHE_MS is above 0), the body limit's 413 on the routes that take a body
 * (api/middleware/body-limit.ts), the rate limit's 429 on every operation
 * (api/middleware/rate-limit.ts) and the database outage's 503 on every operation that reads it
 * (api/app.ts's error handler; all but the liveness root). Added to the generated document in one
 * place, so no route can leave them out; a route's own 429 or 503 (with its own wording) stays.
 */
import { MAX_BODY_BYTES } from "../middleware/body-limit.js";
import type { Router } from "./router.js";

type OpenAPIObject = ReturnType<Router["getOpenAPI31Document"]>;
interface Operation {
  requestBody?: unknown;
  responses?: Record<string, { headers?: Record<string, unknown> } & Record<string, unknown>>;
}

const ETAG = {
  description:
    "A weak validator of this answer's body; send it back as `If-None-Match` for a 304 while the answer is unchanged",
  schema: { type: "string", example: 'W/"5d41402abc4b2a76"' },
};

const DETAIL = {
  "application/json": {
    schema: { type: "object", properties: { detail: { type: "string" } }, required: ["detail"] },
  },
};

/** Reads the response cache never answers from a stored answer (the ping reports the state now). */
export const neverCached = (path: string) => path.endsWith("/ping");

/** Adds the 304 (reads, when `cached`), 413 (bodies), 429 and 503 to every operation of `doc`. */
export function withHttpResponses(doc: OpenAPIObject, cached: boolean): OpenAPIObject {
  for (const [path, item] of Object.entries(doc.paths ?? {})) {
    for (const [method, raw] of Object.entries(item)) {
      const op = raw as Operation;
      if (!op || typeof op !== "object" || !op.responses) continue;
      op.responses["429"] ??= {
        description: "Rate limit exceeded: the key's (or, without a valid key, the address's) requests per minute",
        headers: { "Retry-After": { description: "Seconds until the window resets", schema: { type: "integer" } } },
        content: DETAIL,
      };
      // the liveness root answers without the database
      if (path !== "/") {
        op.responses["503"] ??= {
          description: "Service unavailable: the database cannot be reached",
          content: DETAIL,
        };
      }
      if (method === "get" && cached && !neverCached(path)) {
        const ok = op.responses["200"];
        if (ok) ok.headers = { ...ok.headers, ETag: ETAG };
        op.responses["304"] = {
          description:
            "Not modified: `If-None-Match` names the answer's current `ETag`; no body (the answer is the one the " +
            "client holds)",
        };
      }
      if (op.requestBody) {
        op.responses["413"] = {
          description: `Request body too large: above ${MAX_BODY_BYTES} bytes (1 MiB)`,
          content: DETAIL,
        };
      }
    }
  }
  return doc;
}
