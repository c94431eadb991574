/**
 * Prometheus metrics of the API at GET /metrics (text exposition format, outside both surfaces:
 * no key, no rate limit): requests and their latencies by method, route pattern and status, the
 * transaction builders' builds and phases (`api/lib/build/metrics.ts`), and the Node process's own
 * metrics. `API_METRICS=0` leaves the route out; `API_METRICS_TOKEN`
 * makes it ask for `Authorization: Bearer <token>`.
 */
import { createHash, timingSafeEqual } from "node:crypto";
import type { Context, Env, Hono, MiddlewareHandler } from "hono";
import { matchedRoutes } from "hono/route";
import { Counter, Histogram, Registry } from "prom-client";
import { processMetrics } from "../../db/process-metrics.js";
import { buildMetrics } from "../lib/build/metrics.js";

export interface MetricsSettings {
  /** serve GET /metrics (default true) */
  metrics?: boolean;
  /** when set, GET /metrics wants this bearer token */
  metricsToken?: string;
}

/**
 * The route pattern a request was routed to, as hono registered it (`/api/v1/vaults/:address`),
 * never the raw URL: the pattern of the handler that answered, else of the first route that
 * matched (a middleware answered: rate limit, key, cache), else `unmatched`.
 */
export function routeLabel(c: Context): string {
  const routes = matchedRoutes(c);
  const answered = routes[c.req.routeIndex];
  if (answered && answered.method !== "ALL") return answered.path;
  return routes.find((r) => r.method !== "ALL")?.path ?? "unmatched";
}

const sha256 = (s: string) => createHash("sha256").update(s).digest();

/** Counts and times every request of `app` and serves GET /metrics; call it before any other middleware. */
export function installMetrics<E extends Env>(app: Hono<E>, settings: MetricsSettings): void {
  if (settings.metrics === false) return;
  const registry = new Registry();
  const labelNames = ["method", "route", "status"] as const;
  const requests = new Counter({
    name: "http_requests_total",
    help: "HTTP requests answered",
    labelNames,
    registers: [registry],
  });
  const duration = new Histogram({
    name: "http_request_duration_seconds",
    help: "Time to answer an HTTP request",
    labelNames,
    buckets: [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10],
    registers: [registry],
  });
  const all = Registry.merge([processMetrics(), registry, buildMetrics]);
  const token = settings.metricsToken ? sha256(settings.metricsToken) : null;

  const count: MiddlewareHandler = async (c, next) => {
    const t0 = performance.now();
    let status = 500; // what an error thrown past every handler becomes
    try {
      await next();
      status = c.res.status;
    } finally {
      const labels = { method: c.req.method, route: routeLabel(c), status: String(status) };
      requests.inc(labels);
      duration.observe(labels, (performance.now() - t0) / 1000);
    }
  };
  app.use(count);
  app.get("/metrics", async (c) => {
    if (token) {
      const got = /^Bearer (.+)$/i.exec(c.req.header("authorization") ?? "")?.[1];
      if (!got || !timingSafeEqual(sha256(got), token)) {
        const detail = "GET /metrics wants Authorization: Bearer <API_METRICS_TOKEN>";
        return c.json({ detail }, 401, { "www-authenticate": "Bearer" });
      }
    }
    return c.body(await all.metrics(), 200, { "content-type": all.contentType, "cache-control": "no-store" });
  });
}
