/**
 * Each surface's OpenAPI 3.1 document (`/openapi.json`, with the introduction of docs.intro.ts)
 * and its reference page (`/docs`, Scalar), whose script is served from the npm package at
 * `/docs/scalar.js` (docs.scalar.ts): the page loads nothing from any other host.
 */
import { Scalar } from "@scalar/hono-api-reference";
import { withHttpResponses } from "../../lib/openapi-http.js";
import { withOperationIds } from "../../lib/openapi-ids.js";
import type { Router } from "../../lib/router.js";
import { applyReadPolicy } from "../../lib/security.js";
import { API_VERSION } from "../../version.js";
import type { Surfaces } from "../index.js";
import { type IntroConfig, introduction, type Surface } from "./docs.intro.js";
import { type ScalarBundle, scalarBundle, serveScalarBundle } from "./docs.scalar.js";

export type DocsConfig = IntroConfig & {
  /** RESPONSE_CACHE_MS: above 0, reads answer ETags and 304s */
  responseCacheMs?: number;
};

const SURFACES: { key: keyof Surfaces; surface: Surface; base: string; title: string }[] = [
  { key: "pub", surface: "public", base: "/v1", title: "Public API" },
  { key: "inst", surface: "institutional", base: "/api/v1", title: "Institutional API" },
];

function registerSurface(r: Router, s: (typeof SURFACES)[number], config: DocsConfig, bundle: ScalarBundle) {
  const document = {
    openapi: "3.1.0",
    info: {
      title: `Vault yield service: ${s.surface} API`,
      version: API_VERSION,
      description: introduction(s.surface, config),
    },
    servers: [{ url: s.base }],
  };
  // generated once, with each operation's security as the routes enforce it (api/lib/security.ts);
  // the public surface stays open whatever the setting
  const closeReads = s.surface === "institutional" && config.readsRequireKey === true;
  let doc: ReturnType<Router["getOpenAPI31Document"]> | undefined;
  r.get("/openapi.json", (c) => {
    doc ??= withOperationIds(
      withHttpResponses(
        applyReadPolicy(r.getOpenAPI31Document(document), r, closeReads),
        (config.responseCacheMs ?? 0) > 0,
      ),
    );
    return c.json(doc);
  });
  r.get("/docs/scalar.js", serveScalarBundle(bundle));
  r.get(
    "/docs",
    Scalar({
      url: `${s.base}/openapi.json`,
      pageTitle: s.title,
      cdn: `${s.base}/docs/scalar.js?v=${bundle.hash}`,
      // nothing from other hosts: no web fonts, no telemetry, no AI agent, no hosted developer tools
      withDefaultFonts: false,
      telemetry: false,
      agent: { disabled: true },
      showDeveloperTools: "never",
    }),
  );
}

/** The documents and reference pages of both surfaces, for this configuration. */
export function registerDocs(s: Surfaces, config: DocsConfig): void {
  const bundle = scalarBundle();
  for (const x of SURFACES) registerSurface(s[x.key], x, config, bundle);
}
