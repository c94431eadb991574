/**
 * The HTTP API: the public surface under /v1 and the institutional one under /api/v1, each an
 * OpenAPIHono router with its OpenAPI 3.1 document (/openapi.json) and reference page (/docs).
 * createApp takes its dependencies, so tests drive it through app.request().
 */
import { OpenAPIHono } from "@hono/zod-openapi";
import type { Context } from "hono";
import { cors } from "hono/cors";
import { HTTPException } from "hono/http-exception";
import pino from "pino";
import { SCOPES } from "./auth/scopes.js";
import { ChainReads } from "./lib/chain-reads.js";
import { neverCached } from "./lib/openapi-http.js";
import { type AppDeps, type AppEnv, createRouter } from "./lib/router.js";
import { genuineKeyId } from "./middleware/auth.js";
import { limitBody } from "./middleware/body-limit.js";
import { installMetrics } from "./middleware/metrics.js";
import { lastQueryValue } from "./middleware/query-last.js";
import { rateLimit } from "./middleware/rate-limit.js";
import { responseCache } from "./middleware/response-cache.js";
import { addResponseHeaders, responseHeaders } from "./middleware/response-headers.js";
import { registerDocs } from "./routes/docs/docs.index.js";
import { registerRoutes } from "./routes/index.js";

import { API_VERSION } from "./version.js";

export { API_VERSION };

export interface CreateAppOptions {
  logger?: pino.Logger;
}

const DB_DOWN = new Set([
  "ECONNREFUSED",
  "ECONNRESET",
  "ETIMEDOUT",
  "57P01",
  "57P02",
  "57P03",
  "08000",
  "08001",
  "08003",
  "08006",
  "57014", // a statement cancelled by the API's statement_timeout (api/lib/db.ts)
]);

export function isDatabaseDown(err: unknown): boolean {
  const code = (err as { code?: string })?.code;
  const msg = (err as Error)?.message ?? "";
  return (
    (code != null && DB_DOWN.has(code)) ||
    /Connection terminated|connect ECONNREFUSED|timeout exceeded when trying to connect|Query read timeout/.test(msg)
  );
}

/** Postgres refusing a text value: an invalid byte sequence (NUL in text) or a \u0000 in jsonb. */
function isUnstorableText(err: unknown): boolean {
  const code = (err as { code?: string })?.code;
  return code === "22021" || code === "22P05";
}

/** How long the rate limiter waits for a request's key lookup before counting by address. */
const KEY_WAIT_MS = 300;

export function createApp(deps: AppDeps, opts: CreateAppOptions = {}) {
  const log = opts.logger ?? pino({ level: "silent" });
  const app = new OpenAPIHono<AppEnv>({ strict: false });
  const logRequests = log.isLevelEnabled("info");
  installMetrics(app, deps.config); // first: it times everything after it; GET /metrics is outside the surfaces
  app.use(responseHeaders);
  // live chain figures are never older than a cached answer may be (at most 1 s)
  const chainReads = new ChainReads({ headTtlMs: Math.min(1000, deps.config.responseCacheMs ?? 0) });
  app.use(async (c, next) => {
    c.set("deps", deps);
    c.set("log", log);
    c.set("chainReads", chainReads);
    c.set("apiKeyId", null);
    c.set("principal", null);
    const t0 = performance.now();
    c.set("receivedAt", t0);
    await next();
    if (logRequests)
      log.info(
        {
          reqId: c.get("requestId"),
          method: c.req.method,
          path: c.req.path,
          status: c.res.status,
          ms: +(performance.now() - t0).toFixed(2),
        },
        "request",
      );
  });

  // CORS: only whitelisted origins get CORS headers; a preflight from any other origin is refused.
  const allowed = new Set(deps.config.corsOrigins);
  app.use(async (c, next) => {
    const origin = c.req.header("origin");
    if (origin && c.req.method === "OPTIONS" && !allowed.has(origin))
      return c.json({ detail: `Origin ${origin} is not allowed` }, 403);
    await next();
  });
  const corsHeaders = cors({
    origin: (o) => (allowed.has(o) ? o : null),
    allowHeaders: ["content-type", "x-api-key", "authorization", "idempotency-key"],
    exposeHeaders: [
      "RateLimit-Policy",
      "RateLimit-Limit",
      "RateLimit-Remaining",
      "RateLimit-Reset",
      "Retry-After",
      "X-Request-Id",
      "Idempotent-Replayed",
      "Server-Timing",
      "X-Vault-Chain",
      "X-Next-Before",
    ],
    maxAge: 600,
  });
  // Only browsers send Origin, and only their requests need CORS headers. hono's cors touches the
  // response before the handler runs, which makes every later response replacement (the response
  // cache) rebuild it through undici; requests without Origin skip it and get `Vary: Origin`.
  // An origin not listed gets none at all (hono's would still expose the headers to it).
  app.use(async (c, next) => {
    const origin = c.req.header("origin");
    if (origin && allowed.has(origin)) return corsHeaders(c, next);
    addResponseHeaders(c, { vary: "Origin" });
    await next();
  });
  app.use(limitBody);
  app.use(lastQueryValue);
  const limit = rateLimit(deps.redis, deps.config.rateLimitPerMinute, {
    trustProxyHops: deps.config.trustProxyHops ?? 0,
    log: (m) => log.warn(m),
    keyId: (c, key) => genuineKeyId(c, key, KEY_WAIT_MS),
  });
  app.use("/v1/*", limit);
  app.use("/api/v1/*", limit);
  // the ping reports the database's, chains' and indexer's state now: never a stored answer
  const cache = responseCache(deps.config.responseCacheMs ?? 0, Date.now, neverCached);
  app.use("/v1/*", cache);
  app.use("/api/v1/*", cache);

  const pub = createRouter();
  const inst = createRouter();
  inst.openAPIRegistry.registerComponent("securitySchemes", "ApiKeyHeader", {
    type: "apiKey",
    in: "header",
    name: "x-api-key",
    description:
      "An API key issued with `npm run keys -- create <name> [--scope <scope>]...`. Required on the routes the spec " +
      "marks and on every write (which need the scope they name); optional on the other reads, where a key " +
      "that is sent is checked and its own rate limit applies.",
  });
  inst.openAPIRegistry.registerComponent("securitySchemes", "OAuth2Password", {
    type: "oauth2",
    description:
      "Operator accounts (`npm run operators -- create <username> --scope <scope>`) get short-lived bearer tokens " +
      "from POST /api/v1/token.",
    flows: { password: { tokenUrl: "/api/v1/token", scopes: { ...SCOPES } } },
  });
  registerRoutes({ pub, inst });

  pub.openAPIRegistry.registerComponent("securitySchemes", "ApiKeyHeader", {
    type: "apiKey",
    in: "header",
    name: "x-api-key",
    description: "Optional on the public surface; a key that is sent is checked and its own rate limit applies.",
  });
  registerDocs({ pub, inst }, deps.config);
  app.route("/v1", pub);
  app.route("/api/v1", inst);

  // A path the app serves asked with another method: 405 with the methods it takes (as
  // FastAPI answers), not a 404 that says the path does not exist.
  let routes: { re: RegExp; method: string }[] | undefined;
  app.notFound((c) => {
    routes ??= app.routes.filter((r) => r.method !== "ALL").map((r) => ({ re: pathPattern(r.path), method: r.method }));
    const allow = new Set(routes.filter((r) => r.re.test(c.req.path)).map((r) => r.method));
    if (allow.size === 0) return c.json({ detail: "Not Found" }, 404);
    if (allow.has("GET")) allow.add("HEAD");
    c.header("Allow", [...allow].sort().join(", "));
    return c.json({ detail: "Method Not Allowed" }, 405);
  });
  app.onError((err, c: Context) => {
    if (err instanceof HTTPException && err.status === 400) {
      // hono's JSON validator: a body that is not JSON
      return c.json(
        { detail: [{ loc: ["body"], msg: err.message || "JSON decode error", type: "json_invalid" }] },
        422,
      );
    }
    if (err instanceof HTTPException && err.status === 415) {
      // a body sent without a JSON content type is as malformed as bad JSON
      return c.json(
        {
          detail: [
            {
              loc: ["body"],
              msg: "Input should be a JSON body (content-type: application/json)",
              type: "model_attributes_type",
            },
          ],
        },
        422,
      );
    }
    if (err instanceof HTTPException) return c.json({ detail: err.message }, err.status);
    if (isDatabaseDown(err)) {
      log.error({ reqId: c.get("requestId"), err: (err as Error).message }, "database unavailable");
      return c.json({ detail: "Service unavailable: the database cannot be reached" }, 503);
    }
    if (isUnstorableText(err)) {
      // a route whose schema let a NUL through to Postgres: the request's fault, not the server's
      log.warn({ reqId: c.get("requestId"), err: (err as Error).message }, "text Postgres cannot hold");
      return c.json(
        {
          detail: [
            {
              loc: ["request"],
              msg: "A text value contains a character Postgres cannot hold (NUL, U+0000)",
              type: "string_pattern_mismatch",
            },
          ],
        },
        422,
      );
    }
    log.error({ reqId: c.get("requestId"), err }, "unhandled error");
    return c.json({ detail: "Internal Server Error" }, 500);
  });
  return app;
}
export type App = ReturnType<typeof createApp>;

/** A hono route path (`/v1/tokenized_vaults/:vault_address`) as a regular expression. */
function pathPattern(path: string): RegExp {
  const parts = path
    .split("/")
    .map((seg) => (seg === "*" ? ".*" : seg.startsWith(":") ? "[^/]+" : seg.replace(/[.*+?^${}()|[\]\\]/g, "\\$&")));
  return new RegExp(`^${parts.join("/")}/?$`);
}
