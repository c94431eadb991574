/**
 * Scalar's standalone browser bundle (`@scalar/api-reference`, pinned in package.json), served by
 * the API itself so the reference pages work on a host without internet access: the page
 * `@scalar/hono-api-reference` writes would otherwise load it from a CDN.
 *
 * The file (about 3.5 MB) is read once per process, when the first app is created; its gzip copy
 * (about a quarter of that) is made once, on the first request for it, in zlib's thread pool, and
 * served to clients that accept it as soon as it is ready. The URL the pages use carries a hash of the content, so the
 * answer can be cached for a year: an upgraded bundle gets a new URL.
 */
import { createHash } from "node:crypto";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import { gzip as gzipAsync } from "node:zlib";
import type { Context } from "hono";
import { acceptsGzip } from "../../middleware/response-cache.js";

export interface ScalarBundle {
  body: Uint8Array<ArrayBuffer>;
  /** the gzip copy, once made */
  gzip: Uint8Array<ArrayBuffer> | null;
  zipping: boolean;
  /** a content hash: the ETag, and the cache-busting query of the pages' script URL */
  hash: string;
}

let bundle: ScalarBundle | undefined;

/** The bundle, read on the first call. Throws, naming the package, if it is not installed. */
export function scalarBundle(): ScalarBundle {
  if (bundle) return bundle;
  let file: string;
  try {
    file = createRequire(import.meta.url).resolve("@scalar/api-reference/browser/standalone.js");
  } catch (err) {
    const why = (err as Error).message;
    throw new Error(`The API reference pages need the npm package @scalar/api-reference (run npm install): ${why}`);
  }
  const body = readFileSync(file);
  bundle = { body, gzip: null, zipping: false, hash: createHash("sha256").update(body).digest("hex").slice(0, 16) };
  return bundle;
}

/** Starts making the gzip copy, once (a failure leaves the plain answer, as before it is ready). */
function startGzip(b: ScalarBundle): void {
  if (b.zipping) return;
  b.zipping = true;
  gzipAsync(b.body, { level: 9 }, (err, zipped) => {
    if (!err) b.gzip = zipped;
  });
}

const YEAR_S = 365 * 24 * 3600;

/** The handler of `GET <surface>/docs/scalar.js`. */
export function serveScalarBundle(b: ScalarBundle) {
  const etag = `"${b.hash}"`;
  return (c: Context) => {
    const headers: Record<string, string> = {
      "content-type": "text/javascript; charset=utf-8",
      "cache-control": `public, max-age=${YEAR_S}, immutable`,
      etag,
      vary: "Accept-Encoding",
    };
    if (
      c.req
        .header("if-none-match")
        ?.split(",")
        .some((t) => t.trim().replace(/^W\//, "") === etag)
    ) {
      return c.body(null, 304, headers);
    }
    if (acceptsGzip(c.req.header("accept-encoding"))) {
      if (b.gzip) return c.body(b.gzip, 200, { ...headers, "content-encoding": "gzip" });
      startGzip(b);
    }
    // its length said: the response cache, which keeps nothing over 2 MiB, then leaves it unread
    return c.body(b.body, 200, { ...headers, "content-length": String(b.body.byteLength) });
  };
}
