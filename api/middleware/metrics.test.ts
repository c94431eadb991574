/** GET /metrics: requests counted by route pattern (never the raw URL), the token, the off switch. */
import { Hono } from "hono";
import { describe, expect, it } from "vitest";
import { installMetrics, type MetricsSettings } from "./metrics.js";

/** An app shaped like the real one: metrics first, a guard on a prefix, routes on a mounted sub-app. */
function app(settings: MetricsSettings = {}) {
  const a = new Hono();
  installMetrics(a, settings);
  a.use("/api/v1/*", async (c, next) => (c.req.header("x-deny") ? c.json({ detail: "no" }, 403) : next()));
  const inst = new Hono();
  inst.get("/vaults/pending-redemptions", (c) => c.json({ static: true }));
  inst.get("/vaults/:address", (c) => c.json({ address: c.req.param("address") }));
  inst.get("/boom", () => {
    throw new Error("boom");
  });
  a.route("/api/v1", inst);
  a.onError((_e, c) => c.json({ detail: "Internal Server Error" }, 500));
  a.notFound((c) => c.json({ detail: "Not Found" }, 404));
  return a;
}

/** The value of one sample line, 0 when the series is absent. */
function sample(text: string, series: string): number {
  const line = text.split("\n").find((l) => l.startsWith(`${series} `));
  return line ? Number(line.slice(series.length + 1)) : 0;
}

describe("API metrics", () => {
  it("count requests and time them by method, route pattern and status", async () => {
    const a = app();
    for (const addr of ["0xaa", "0xbb", "0xcc"]) expect((await a.request(`/api/v1/vaults/${addr}`)).status).toBe(200);
    await a.request("/api/v1/vaults/pending-redemptions");
    await a.request("/api/v1/vaults/0xdd", { headers: { "x-deny": "1" } });
    await a.request("/api/v1/boom");
    await a.request("/nowhere/0x1234");
    const res = await a.request("/metrics");
    expect(res.status).toBe(200);
    expect(res.headers.get("content-type")).toMatch(/^text\/plain; version=0\.0\.4/);
    const text = await res.text();
    const req = (labels: string) => sample(text, `http_requests_total{${labels}}`);
    expect(req('method="GET",route="/api/v1/vaults/:address",status="200"')).toBe(3);
    expect(req('method="GET",route="/api/v1/vaults/pending-redemptions",status="200"')).toBe(1);
    // a guard answered: the route the request was headed for
    expect(req('method="GET",route="/api/v1/vaults/:address",status="403"')).toBe(1);
    expect(req('method="GET",route="/api/v1/boom",status="500"')).toBe(1);
    expect(req('method="GET",route="unmatched",status="404"')).toBe(1);
    expect(text).not.toMatch(/0xaa|0xdd|nowhere/);
    const hist = 'http_request_duration_seconds_count{method="GET",route="/api/v1/vaults/:address",status="200"}';
    expect(sample(text, hist)).toBe(3);
    expect(text).toMatch(/^process_cpu_user_seconds_total /m);
    expect(text).toMatch(/^nodejs_eventloop_lag_seconds /m);
  });

  it("each app counts its own requests", async () => {
    const [a, b] = [app(), app()];
    await a.request("/api/v1/vaults/0x01");
    const text = await (await b.request("/metrics")).text();
    expect(sample(text, 'http_requests_total{method="GET",route="/api/v1/vaults/:address",status="200"}')).toBe(0);
  });

  it("with a token, GET /metrics wants it as a bearer token", async () => {
    const a = app({ metricsToken: "s3cret-metrics-token" });
    expect((await a.request("/metrics")).status).toBe(401);
    expect((await a.request("/metrics", { headers: { authorization: "Bearer wrong" } })).status).toBe(401);
    const ok = await a.request("/metrics", { headers: { authorization: "Bearer s3cret-metrics-token" } });
    expect(ok.status).toBe(200);
    expect(await ok.text()).toMatch(/http_requests_total\{method="GET",route="\/metrics",status="401"\} 2/);
  });

  it("switched off, there is no /metrics", async () => {
    const a = app({ metrics: false });
    expect((await a.request("/metrics")).status).toBe(404);
  });
});
