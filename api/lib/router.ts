/** Router factory and shared schemas: every resource builds its routes with these. */

import { OpenAPIHono, z } from "@hono/zod-openapi";
import type { Redis } from "ioredis";
import type { Kysely } from "kysely";
import type { Logger } from "pino";
import type { Database } from "../../db/schema.js";
import type { ApiConfig } from "../env.js";
import type { KeyCheck } from "../keys.js";
import type { ChainReads } from "./chain-reads.js";
import type { ReadDb } from "./db.js";
import { defaultHook, ErrorSchema, RefusalSchema, ValidationErrorSchema } from "./errors.js";

export interface AppDeps {
  db: ReadDb;
  /** the write side (registry tables); null: this process serves reads only, writes answer 503 */
  wdb?: Kysely<Database> | null;
  config: Pick<ApiConfig, "indexerSchema" | "rpcUrls" | "corsOrigins" | "rateLimitPerMinute"> &
    Partial<
      Pick<ApiConfig, "ensResolvers" | "tokenTtlS" | "points" | "standingsMs" | "readsRequireKey" | "trustProxyHops">
    > &
    Partial<Pick<ApiConfig, "metrics" | "metricsToken">> & { responseCacheMs?: number; tokenSecret?: string };
  redis: Redis | null;
  /** asks the workers for a fan-out (after a write that changes an input of the derived tables) */
  requestRecompute?: () => Promise<void>;
  /** the clock (tests set it) */
  now: () => Date;
}

/** Who is calling: an API key or an operator's bearer token, with the scopes it grants. */
export interface Principal {
  kind: "api_key" | "operator";
  id: string;
  scopes: readonly string[];
}

export type AppEnv = {
  Variables: {
    deps: AppDeps;
    /** the app's logger: details an answer leaves out go here */
    log: Logger;
    apiKeyId: string | null;
    principal: Principal | null;
    requestId: string;
    /** when this app began handling the request (performance.now()) */
    receivedAt: number;
    /** headers every answer of this request gets (api/middleware/response-headers.ts) */
    responseHeaders: Record<string, string>;
    responseHeadersWritten: boolean;
    /** this app's live chain reads, shared by concurrent requests (api/lib/chain-reads.ts) */
    chainReads: ChainReads;
    /** set by runWrite once the request's write committed: the response cache then empties */
    wrote?: boolean;
    /** the lookup of the request's x-api-key, made once (api/middleware/auth.ts `sentKeyCheck`) */
    keyCheck?: { key: string; result: Promise<KeyCheck> };
  };
};

export function createRouter() {
  return new OpenAPIHono<AppEnv>({ defaultHook: defaultHook as never, strict: false });
}
export type Router = ReturnType<typeof createRouter>;

/**
 * A vault address in a path or query: EVM hex or another chain's address format (Solana's
 * base58, which has no 0: whatever starts with 0x is meant as EVM hex and must be it).
 */
export const VAULT_ADDRESS_PATTERN = "^(?:0x[0-9a-fA-F]{40}|(?!0[xX])[0-9A-Za-z]{1,128})$";
/** (The document's `pattern` is both checks in one: `VAULT_ADDRESS_PATTERN`.) */
export const VaultAddress = z
  .string()
  .min(1)
  .max(128)
  .regex(/^[0-9A-Za-z]+$/, "must be a vault address")
  // typed as a pattern, as every other address of the API is refused
  .refine((s) => !/^0x/i.test(s) || /^0x[0-9a-fA-F]{40}$/.test(s), {
    message: "must be a 0x-prefixed 20-byte hex address",
    params: { type: "string_pattern_mismatch" },
  })
  .openapi({
    pattern: VAULT_ADDRESS_PATTERN,
    example: "0x2c622344b5dc29dccc034ca76f123d4479d24122",
  });

/**
 * `schema` or null, for a named schema (one given a name with `.openapi("Name")`): OpenAPI 3.1's
 * `anyOf: [{$ref}, {type: "null"}]`. Never `.nullable()` a named schema: zod-to-openapi writes it
 * as `allOf: [{$ref}, {type: [..., "null"]}]` (null still fails the `$ref`), as a bare `$ref` (a
 * named schema with no top-level `type`, e.g. an `.extend()` of another named one), or, when the
 * nullable use is the first it meets, makes the named component itself nullable for every use. A
 * union with `z.null()` is written right, and parses and infers as `.nullable()` does.
 */
export const nullableRef = <S extends z.ZodType>(schema: S) => z.union([schema, z.null()]);

/** in a u-flag regex a surrogate range matches only unpaired ones (paired ones are one code point) */
const LONE_SURROGATE = /[\uD800-\uDFFF]/u;
/**
 * Free text that is stored or looked up in Postgres, whose text cannot hold NUL (U+0000), nor
 * its jsonb an unpaired surrogate (plain text would silently store U+FFFD in its place).
 */
export const PgText = () =>
  z
    .string()
    .refine((s) => !s.includes("\0"), NUL_MESSAGE)
    .refine((s) => !LONE_SURROGATE.test(s), SURROGATE_MESSAGE);
export const NUL_MESSAGE = "must not contain NUL (U+0000), which Postgres text cannot hold";
export const SURROGATE_MESSAGE =
  "must not contain an unpaired UTF-16 surrogate (\\ud800 to \\udfff alone), which is no Unicode character";

export const EvmAddress = z.string().regex(/^0x[0-9a-fA-F]{40}$/, "must be a 0x-prefixed 20-byte hex address");

const TRUE_TEXT = new Set(["1", "on", "t", "true", "y", "yes"]);
const BOOL_TEXT = new Set([...TRUE_TEXT, "0", "off", "f", "false", "n", "no"]);
/**
 * Boolean query flags as FastAPI (pydantic) reads them: in any case, true/false, t/f, yes/no, y/n,
 * on/off, 1/0; anything else is a 422 `bool_parsing`.
 */
export const QueryBool = (def: boolean) =>
  z
    .string()
    .default(def ? "true" : "false")
    .refine((v) => BOOL_TEXT.has(v.toLowerCase()), {
      message: "Input should be a valid boolean, unable to interpret input",
      params: { type: "bool_parsing" },
    })
    .transform((v) => TRUE_TEXT.has(v.toLowerCase()))
    .openapi({ type: "boolean", default: def });

const INT_TEXT = /^\s*[+-]?\d+\s*$/;
/**
 * A query string's integer, as FastAPI reads one: decimal digits with an optional sign. Empty,
 * `1e3`, `0x10` or `1.5` is malformed (422 `int_parsing`), not the number JavaScript would make
 * of it (an empty value would otherwise be 0, not the default). Past 2^53 it is malformed too.
 */
const intText = (v: unknown) => {
  if (typeof v !== "string") return v;
  const n = INT_TEXT.test(v) ? Number(v) : Number.NaN;
  return Number.isSafeInteger(n) ? n : Number.NaN;
};

/** FastAPI's message for a query or path integer that is not one (type `int_parsing`). */
export const INT_PARSING = "Input should be a valid integer, unable to parse string as an integer";

export const QueryInt = (o: { def?: number; min?: number; max?: number }) => {
  // an absent value keeps zod's own message, which the 422 reports as FastAPI's `missing`
  let s = z.number({ error: (iss) => (iss.input === undefined ? undefined : INT_PARSING) }).int(INT_PARSING);
  if (o.min != null) s = s.min(o.min, `Input should be greater than or equal to ${o.min}`);
  if (o.max != null) s = s.max(o.max, `Input should be less than or equal to ${o.max}`);
  const q = z.preprocess(intText, s);
  return o.def != null ? q.default(o.def) : q;
};

const INT_BODY_TEXT = /^\s*[+-]?\d+\s*$/;
// `\d+(?:\.\d*)?`, not `\d+\.?\d*`: the latter backtracks quadratically on a long run of digits
const NUMBER_TEXT = /^\s*[+-]?(?:\d+(?:\.\d*)?|\.\d+)(?:[eE][+-]?\d+)?\s*$/;
/**
 * An integer field of a body whose shape the spec gives (FastAPI's, which pydantic reads in its
 * default, lax mode): a JSON number, or a string of decimal digits ("8453"), is read as
 * `schema` reads a number; anything else is refused by `schema` as before. The bodies this
 * service designed (the builders', the relayers') stay strict.
 */
export const laxInt = <S extends z.ZodType>(schema: S) =>
  z.preprocess((v) => safeBound(typeof v === "string" && INT_BODY_TEXT.test(v) ? Number(v) : v), schema);

/**
 * An integer past ±(2^53 - 1) as ±(2^53 - 1), for a schema whose bounds are within them: it
 * fails the field's own bound ("less than or equal to 9999"), not zod's safe-integer one.
 */
const safeBound = (v: unknown) =>
  typeof v === "number" && Number.isInteger(v)
    ? Math.max(-Number.MAX_SAFE_INTEGER, Math.min(Number.MAX_SAFE_INTEGER, v))
    : v;

/**
 * A number field of such a body: a JSON number, or a string holding one ("2", "0.05", "1e-3").
 * Anything else is refused with pydantic's float types (`float_parsing`, `float_type`,
 * `finite_number`), before `schema` (whose own issue would not tell a number from an integer).
 */
export const laxNumber = <S extends z.ZodType>(schema: S) =>
  z.preprocess((v, ctx) => {
    const n = typeof v === "string" && NUMBER_TEXT.test(v) ? Number(v) : v;
    if (n === undefined || (typeof n === "number" && Number.isFinite(n))) return n;
    const [message, type] =
      typeof n === "number"
        ? ["Input should be a finite number", "finite_number"]
        : typeof n === "string"
          ? ["Input should be a valid number, unable to parse string as a number", "float_parsing"]
          : ["Input should be a valid number", "float_type"];
    ctx.addIssue({ code: "custom", message, params: { type } });
    return z.NEVER;
  }, schema);

/**
 * A number field of a body this service designed (strict: a JSON number only, no string). A
 * value of another type is refused with pydantic's strict float types (`float_type`,
 * `finite_number`) before `schema`, whose own issue would not tell a number from an integer.
 */
export const strictNumber = <S extends z.ZodType>(schema: S) =>
  z.preprocess((v, ctx) => {
    if (v === undefined || (typeof v === "number" && Number.isFinite(v))) return v;
    const [message, type] =
      typeof v === "number"
        ? ["Input should be a finite number", "finite_number"]
        : ["Input should be a valid number", "float_type"];
    ctx.addIssue({ code: "custom", message, params: { type } });
    return z.NEVER;
  }, schema);

/**
 * An integer field of a body this service designed (strict: a JSON integer only, as pydantic's
 * strict mode reads one): a string, boolean, null or a number with a fraction is `int_type`,
 * before `schema` (`z.number().int()` with the field's bounds, all within ±(2^53 - 1); an
 * integer past them is checked at them: `safeBound`). JSON numbers reach us parsed: `1.0` is
 * the integer 1.
 */
export const strictInt = <S extends z.ZodType>(schema: S) =>
  z.preprocess((v, ctx) => {
    if (v === undefined) return v;
    if (typeof v === "number" && Number.isInteger(v)) return safeBound(v);
    ctx.addIssue({ code: "custom", message: "Input should be a valid integer", params: { type: "int_type" } });
    return z.NEVER;
  }, schema);

const UINT256_MAX = (1n << 256n) - 1n;
/**
 * A uint256 field of a body whose shape the spec gives (an EIP-712 message's `expiry`): a JSON
 * number up to 2^53 − 1 (past it JSON numbers lose digits), or a string of decimal digits up to
 * 2^256 − 1. Read as a bigint.
 */
export const laxUint256 = (description: string) =>
  z
    .unknown()
    .transform((v, ctx) => {
      const fail = (message: string, type: string) => {
        ctx.addIssue({ code: "custom", message, params: { type } });
        return z.NEVER;
      };
      if (v === undefined) return fail("Field required", "missing");
      if (typeof v === "number") {
        if (!Number.isInteger(v))
          return fail("Input should be a valid integer, got a number with a fractional part", "int_from_float");
        if (v < 0) return fail("Input should be greater than or equal to 0", "greater_than_equal");
        if (!Number.isSafeInteger(v))
          return fail(
            "Above 2^53 - 1, a JSON number loses digits: send it as a string of decimal digits",
            "value_error",
          );
        return BigInt(v);
      }
      if (typeof v !== "string") return fail("Input should be a valid integer", "int_type");
      const t = v.trim();
      if (!/^\+?\d{1,100}$/.test(t)) {
        if (/^-\d+$/.test(t)) return fail("Input should be greater than or equal to 0", "greater_than_equal");
        return fail(INT_PARSING, "int_parsing");
      }
      const n = BigInt(t);
      return n > UINT256_MAX ? fail("Input should be less than or equal to 2^256 - 1 (uint256)", "less_than_equal") : n;
    })
    .openapi({
      description,
      anyOf: [
        { type: "integer", minimum: 0, maximum: Number.MAX_SAFE_INTEGER },
        { type: "string", pattern: "^\\d{1,78}$" },
      ],
    });

/** The error responses every route declares. */
export const errorResponses = {
  422: { description: "Validation error", content: { "application/json": { schema: ValidationErrorSchema } } },
  429: { description: "Rate limit exceeded", content: { "application/json": { schema: ErrorSchema } } },
} as const;
export const notFoundResponse = {
  404: { description: "Not found", content: { "application/json": { schema: ErrorSchema } } },
} as const;
export const authResponses = {
  401: { description: "Missing API key", content: { "application/json": { schema: ErrorSchema } } },
  403: { description: "Invalid or revoked API key", content: { "application/json": { schema: ErrorSchema } } },
} as const;
/** Responses of an open read about credentials: a key that is sent and refused. */
export const openReadAuthResponses = {
  403: {
    description: "An API key was sent and is invalid or revoked",
    content: { "application/json": { schema: ErrorSchema } },
  },
} as const;

/** Security requirement of routes that need the `x-api-key` header. */
export const keySecurity = [{ ApiKeyHeader: [] as string[] }];
/**
 * Security of the read routes the spec leaves unmarked: no credential, or a key (checked when
 * sent). With API_READS_REQUIRE_KEY=1 the institutional document states `keySecurity` instead
 * (api/lib/security.ts rewrites it), as the middleware then enforces.
 */
export const openReadSecurity: Record<string, string[]>[] = [{}, { ApiKeyHeader: [] }];

type JsonResponse<S> = { description: string; content: { "application/json": { schema: S } } };
/** An OpenAPI response with a JSON body. */
export const jsonResponse = <S>(description: string, schema: S): JsonResponse<S> => ({
  description,
  content: { "application/json": { schema } },
});
const json = jsonResponse;

const VAULT_CHAIN_HEADER = {
  description: "The chain id of the vault this answer is about (api/lib/chain.ts: the rule of every one-vault route)",
  schema: { type: "integer" as const, example: 8453 },
};
const NEXT_BEFORE_HEADER = {
  description: "On a full page: the cursor of its oldest record; pass it as `before` for the next, older page",
  schema: { type: "string" as const, example: "18000000:12" },
};
/**
 * The 200 of a route about one vault: a JSON body, and header `X-Vault-Chain` naming the chain
 * served; `paged` adds the `X-Next-Before` cursor of a full page.
 */
export const vaultJsonResponse = <S>(description: string, schema: S, paged = false) => ({
  ...jsonResponse(description, schema),
  headers: {
    "X-Vault-Chain": VAULT_CHAIN_HEADER,
    ...(paged ? { "X-Next-Before": NEXT_BEFORE_HEADER } : {}),
  } as Record<string, typeof VAULT_CHAIN_HEADER | typeof NEXT_BEFORE_HEADER>,
});

/** Responses of a write route: credentials (401/403), refusals by code, validation, rate limit. */
export function writeResponses<R extends Partial<Record<400 | 404 | 409 | 503, string>>>(refusals: R) {
  const out = {} as { [K in keyof R]: JsonResponse<typeof RefusalSchema> };
  for (const [status, description] of Object.entries(refusals))
    (out as Record<string, unknown>)[status] = json(description as string, RefusalSchema);
  return {
    401: json(
      "No credentials; on a route that takes a bearer token (strategy APY create), also an invalid or expired one",
      RefusalSchema.partial({ code: true }),
    ),
    403: json(
      "Invalid or revoked API key, or a credential without the route's scope (code `insufficient_scope`)",
      RefusalSchema.partial({ code: true }),
    ),
    ...out,
    422: json("Validation error (also: an Idempotency-Key reused with another request)", ValidationErrorSchema),
    429: json("Rate limit exceeded", ErrorSchema),
  };
}

/** The optional Idempotency-Key header of every write route. */
export const IdempotencyHeader = z.object({
  "idempotency-key": z
    .string()
    .optional()
    .openapi({
      param: { in: "header" },
      description:
        "Any 1–255 visible ASCII characters. A retry with the same key and body returns the first answer (header " +
        "`Idempotent-Replayed: true`) without acting again; the same key with another body answers 422. Answers " +
        "are kept 24 h, per credential.",
    }),
});
