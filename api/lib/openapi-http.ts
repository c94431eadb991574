/**
 * What every operation of a document answers at the HTTP level, besides its own responses: the
 * response cache's 304 and `ETag` on the reads (api/middleware/response-cache.ts, when
 * RESPONSE_CACHE_MS is above 0) and the body limit's 413 on the routes that take a body
 * (api/middleware/body-limit.ts). Added to the generated document in one place, so no route can
 * leave them out.
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

/** Adds the 304 (reads, when `cached`) and the 413 (routes with a body) to every operation of `doc`. */
export function withHttpResponses(doc: OpenAPIObject, cached: boolean): OpenAPIObject {
  for (const item of Object.values(doc.paths ?? {})) {
    for (const [method, raw] of Object.entries(item)) {
      const op = raw as Operation;
      if (!op || typeof op !== "object" || !op.responses) continue;
      if (method === "get" && cached) {
        const ok = op.responses["200"];
        if (ok) ok.headers = { ...ok.headers, ETag: ETAG };
        op.responses["304"] = {
          description:
            "Not modified: `If-None-Match` names the answer's current `ETag`; no body (the answer is the one the client holds)",
        };
      }
      if (op.requestBody) {
        op.responses["413"] = {
          description: `Request body too large: above ${MAX_BODY_BYTES} bytes (1 MiB)`,
          content: {
            "application/json": {
              schema: { type: "object", properties: { detail: { type: "string" } }, required: ["detail"] },
            },
          },
        };
      }
    }
  }
  return doc;
}
