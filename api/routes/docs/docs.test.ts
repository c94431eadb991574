/**
 * The OpenAPI documents' introduction and the reference pages, on an app with no database (the
 * documents and pages never read it): the page's script comes from this service, and in a real
 * headless Chromium both pages render their introduction and operations while every request
 * they make stays on the service's own origin (anything else is aborted and counted), so they
 * work on a host without internet access.
 */
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import type { AddressInfo } from "node:net";
import { gunzipSync } from "node:zlib";
import { type ServerType, serve } from "@hono/node-server";
import { type Browser, chromium } from "playwright-core";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CHROMIUM_ARGS, ensureChromium } from "../../../scripts/lib/chromium.js";
import { createApp } from "../../app.js";
import type { AppDeps } from "../../lib/router.js";
import { type IntroConfig, introduction } from "./docs.intro.js";

interface Doc {
  info: { title: string; description: string };
  paths: Record<string, Record<string, { summary?: string; tags?: string[] }>>;
}

const noDatabase = new Proxy(
  {},
  {
    get(_, prop) {
      throw new Error(`the docs routes read the database (${String(prop)})`);
    },
  },
) as AppDeps["db"];

function docsApp(intro: IntroConfig) {
  const config = { indexerSchema: "indexer", rpcUrls: new Map<number, string>(), corsOrigins: [], ...intro };
  return createApp({ db: noDatabase, config, redis: null, now: () => new Date() });
}

const SURFACES = [
  { base: "/v1", surface: "public", title: "Vault yield service: public API" },
  { base: "/api/v1", surface: "institutional", title: "Vault yield service: institutional API" },
] as const;

const bundleFile = createRequire(import.meta.url).resolve("@scalar/api-reference/browser/standalone.js");

describe("the documents' introduction", () => {
  it("says what the figures mean and how keys, rate limits, chains and errors work", () => {
    for (const surface of ["public", "institutional"] as const) {
      const text = introduction(surface, { rateLimitPerMinute: 600 });
      expect(text).toMatch(/APYs, returns and other rates are \*\*fractions\*\*/);
      expect(text).toContain("`0.05` means 5\u00a0%");
      expect(text).toContain("**600 requests per minute** (`RATE_LIMIT_PER_MINUTE`)");
      for (const h of ["Policy", "Limit", "Remaining", "Reset"]) expect(text).toContain(`\`RateLimit-${h}\``);
      expect(text).toContain("`Retry-After`");
      expect(text).toContain("`600;w=60`");
      expect(text).toMatch(/a wrong or revoked one is refused with \*\*403\*\*/);
      expect(text).toMatch(/`chain_id` \(also accepted as `chain`\)/);
      expect(text).toContain("**lowest chain id**");
      expect(text).toMatch(/in the `X-Vault-Chain` header, and in its body.s chain field/);
      expect(text).toContain('{"detail": [{"loc": ["query", "n_days"]');
    }
  });

  it("states the key policy of this deployment", () => {
    const open = introduction("institutional", { rateLimitPerMinute: 600, readsRequireKey: false });
    expect(open).toContain("Every other read answers without a key.");
    expect(open).toContain("`API_READS_REQUIRE_KEY=1`");
    const closed = introduction("institutional", { rateLimitPerMinute: 600, readsRequireKey: true });
    expect(closed).not.toContain("answers without a key");
    expect(closed).toMatch(/requires a key on \*\*every other read\*\* of this surface/);
    for (const t of [open, closed]) {
      expect(t).toContain("health factor, summary and swaps, every pool and lending-market operation");
      expect(t).toContain("on every write");
    }
    // the public surface needs no credentials either way
    expect(introduction("public", { rateLimitPerMinute: 600, readsRequireKey: true })).toBe(
      introduction("public", { rateLimitPerMinute: 600, readsRequireKey: false }),
    );
    expect(introduction("public", { rateLimitPerMinute: 600 })).toContain("This surface needs no credentials.");
  });

  it("is each document's info.description, built from the app's configuration", async () => {
    for (const intro of [{ rateLimitPerMinute: 600 }, { rateLimitPerMinute: 42, readsRequireKey: true }]) {
      const app = docsApp(intro);
      for (const s of SURFACES) {
        const res = await app.request(`${s.base}/openapi.json`);
        expect(res.status).toBe(200);
        const doc = (await res.json()) as Doc;
        expect(doc.info.title).toBe(s.title);
        expect(doc.info.description).toBe(introduction(s.surface, intro));
      }
    }
  });
});

describe("the documents' HTTP-level answers", () => {
  type Op = { requestBody?: unknown; responses: Record<string, { headers?: Record<string, unknown> }> };
  const operations = async (config: IntroConfig & { responseCacheMs?: number }) => {
    const out: [string, Op][] = [];
    for (const s of SURFACES) {
      const doc = (await (await docsApp(config).request(`${s.base}/openapi.json`)).json()) as {
        paths: Record<string, Record<string, Op>>;
      };
      for (const [path, item] of Object.entries(doc.paths))
        for (const [method, op] of Object.entries(item)) out.push([`${method} ${s.base}${path}`, op]);
    }
    return out;
  };

  it("every read documents the cache's 304 and ETag, every body the limit's 413", async () => {
    const ops = await operations({ rateLimitPerMinute: 600, responseCacheMs: 1000 });
    const reads = ops.filter(([k]) => k.startsWith("get "));
    const bodies = ops.filter(([, op]) => op.requestBody);
    expect(reads.length).toBeGreaterThan(30);
    expect(bodies.length).toBeGreaterThan(10);
    for (const [k, op] of reads) {
      // the ping is never answered from the cache: no ETag, no 304
      const cached = !k.endsWith("/ping");
      expect(op.responses["304"] != null, k).toBe(cached);
      if (op.responses["200"]) expect(op.responses["200"].headers?.ETag != null, k).toBe(cached);
    }
    expect(reads.filter(([k]) => k.endsWith("/ping")).length).toBeGreaterThan(0);
    for (const [k, op] of bodies) expect(op.responses["413"], k).toBeDefined();
  });

  it("every operation documents the rate limit's 429, and all but the liveness root the outage's 503", async () => {
    const ops = await operations({ rateLimitPerMinute: 600 });
    for (const [k, op] of ops) {
      expect(op.responses["429"], k).toBeDefined();
      if (k !== "get /v1/") expect(op.responses["503"], k).toBeDefined();
    }
    expect(ops.find(([k]) => k === "get /v1/")?.[1].responses["503"]).toBeUndefined();
  });

  it("without the response cache (RESPONSE_CACHE_MS=0) no read claims a 304", async () => {
    const ops = await operations({ rateLimitPerMinute: 600, responseCacheMs: 0 });
    expect(ops.filter(([, op]) => op.responses["304"])).toEqual([]);
  });
});

describe("the reference pages' script", () => {
  const app = docsApp({ rateLimitPerMinute: 600 });

  it("is loaded from this service, and the page names no other host", async () => {
    for (const s of SURFACES) {
      const html = await (await app.request(`${s.base}/docs`)).text();
      const refs = [...html.matchAll(/\b(?:src|href)\s*=\s*"([^"]*)"/g)].map((m) => m[1]!);
      expect(refs).toEqual([expect.stringMatching(new RegExp(`^${s.base}/docs/scalar\\.js\\?v=[0-9a-f]{16}$`))]);
      expect(html).not.toMatch(/https?:\/\//);
      expect(html).toContain(`"url": "${s.base}/openapi.json"`);
    }
  });

  it("is the npm package's standalone bundle, cached for a year, gzipped, revalidated by ETag", async () => {
    const file = readFileSync(bundleFile);
    for (const s of SURFACES) {
      const page = await (await app.request(`${s.base}/docs`)).text();
      const url = /src="([^"]*scalar\.js[^"]*)"/.exec(page)![1]!;
      const res = await app.request(url);
      expect(res.status).toBe(200);
      expect(res.headers.get("content-type")).toBe("text/javascript; charset=utf-8");
      expect(res.headers.get("cache-control")).toBe("public, max-age=31536000, immutable");
      expect(Buffer.from(await res.arrayBuffer()).equals(file)).toBe(true);
      // its length declared, so the response cache (nothing over 2 MiB) does not read it
      expect(res.headers.get("content-length")).toBe(String(file.length));
      expect(res.headers.get("x-cache")).toBeNull();
      const etag = res.headers.get("etag")!;
      expect(url.endsWith(`?v=${etag.replaceAll('"', "")}`)).toBe(true);
      const again = await app.request(url, { headers: { "if-none-match": etag } });
      expect(again.status).toBe(304);
      expect(await again.text()).toBe("");
      // the gzip copy is made in the background once; it is served as soon as it exists
      let zipped: Response | undefined;
      for (let i = 0; i < 100 && !zipped; i++) {
        const r = await app.request(url, { headers: { "accept-encoding": "gzip, deflate" } });
        if (r.headers.get("content-encoding") === "gzip") zipped = r;
        else await new Promise((done) => setTimeout(done, 100));
      }
      expect(zipped, "no gzip answer within 10 s").toBeDefined();
      const body = Buffer.from(await zipped!.arrayBuffer());
      expect(body.length).toBeLessThan(file.length / 2);
      expect(gunzipSync(body).equals(file)).toBe(true);
      expect(zipped!.headers.get("vary")).toMatch(/Accept-Encoding/);
    }
  });
});

describe("the reference pages in headless Chromium", () => {
  const intro = { rateLimitPerMinute: 600 };
  let server: ServerType | undefined;
  let browser: Browser | undefined;
  let origin = "";

  beforeAll(async () => {
    // installs Debian's chromium on a machine that has none (a fresh CI machine): minutes
    const executablePath = await ensureChromium();
    const app = docsApp(intro);
    const s = serve({ fetch: app.fetch, port: 0, hostname: "127.0.0.1" });
    server = s;
    await new Promise<void>((done, fail) => {
      if (s.listening) return done();
      s.once("listening", () => done());
      s.once("error", fail);
    });
    origin = `http://127.0.0.1:${(s.address() as AddressInfo).port}`;
    // Playwright gives the browser a fresh temporary profile (user-data-dir) and removes it on close
    browser = await chromium.launch({ executablePath, args: [...CHROMIUM_ARGS], headless: true, timeout: 120_000 });
  }, 900_000);

  afterAll(async () => {
    await browser?.close();
    await new Promise<void>((done) => (server ? server.close(() => done()) : done()));
  });

  it("render the introduction and the operations, asking no other host for anything", async () => {
    const context = await browser!.newContext();
    const foreign: string[] = [];
    const local: { url: string; status: number }[] = [];
    await context.route("**/*", (route) => {
      const url = route.request().url();
      if (url.startsWith(`${origin}/`)) return route.continue();
      foreign.push(url);
      return route.abort("blockedbyclient");
    });
    context.on("response", (r) => {
      if (r.url().startsWith(`${origin}/`)) local.push({ url: r.url().slice(origin.length), status: r.status() });
    });
    try {
      for (const s of SURFACES) {
        const doc = (await (await fetch(`${origin}${s.base}/openapi.json`)).json()) as Doc;
        const page = await context.newPage();
        await page.goto(`${origin}${s.base}/docs`, { waitUntil: "load", timeout: 60_000 });
        // the introduction, rendered from the document's markdown
        await page
          .getByText("fractions, not percentages", { exact: false })
          .first()
          .waitFor({ timeout: 90_000 })
          .catch((err: Error) => {
            const others = foreign.join(", ") || "none";
            throw new Error(`${s.base}/docs shows no introduction (other hosts asked: ${others}): ${err.message}`);
          });
        await page.getByRole("heading", { name: "Rate limits" }).first().waitFor({ timeout: 10_000 });
        // biome-ignore lint/performance/useDomNodeTextContent: Playwright's rendered text, not a DOM property
        const text = await page.locator("body").innerText();
        expect(text).toContain(s.title);
        expect(text).toContain("X-Vault-Chain");
        // the sidebar: every tag, and the operations of the first one (open at first)
        const ops = Object.values(doc.paths).flatMap((p) => Object.values(p));
        const tags = [...new Set(ops.flatMap((o) => o.tags ?? []))];
        expect(tags.length).toBeGreaterThan(0);
        for (const t of tags) expect(text).toContain(t);
        const firstTagOps = ops.filter((o) => o.tags?.[0] === tags[0]).map((o) => o.summary!);
        expect(firstTagOps.length).toBeGreaterThan(0);
        for (const summary of firstTagOps) expect(text).toContain(summary);
        await page.close();
      }
      expect(foreign).toEqual([]);
      for (const s of SURFACES) {
        for (const path of [`${s.base}/docs`, `${s.base}/openapi.json`]) {
          expect(local).toContainEqual({ url: path, status: 200 });
        }
        expect(local.some((r) => r.url.startsWith(`${s.base}/docs/scalar.js?v=`) && r.status === 200)).toBe(true);
      }
    } finally {
      await context.close();
    }
  }, 240_000);
});
