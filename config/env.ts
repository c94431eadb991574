/** Settings from the environment, parsed and checked once at start-up. */
import { z } from "zod";
import { POSTGRES_SCHEME, POSTGRES_URL_FORM, parsablePostgresUrl } from "./postgres-url.js";

/**
 * `schema` applied to `env`; throws one readable error listing every bad variable. A variable
 * set to nothing (`RESPONSE_CACHE_MS=`) counts as unset, so it takes its default: not the 0 that
 * a number coercion would make of it.
 */
export function parseEnv<S extends z.ZodType>(
  schema: S,
  env: NodeJS.ProcessEnv,
  what: string,
  /** problems found outside the schema (`NAME: why`), listed in the same message */
  more: readonly string[] = [],
): z.output<S> {
  const set = Object.fromEntries(Object.entries(env).filter(([, v]) => v !== undefined && v.trim() !== ""));
  const parsed = schema.safeParse(set);
  if (!parsed.success || more.length > 0) {
    const lines = [
      ...(parsed.success ? [] : parsed.error.issues.map((i) => `${i.path.join(".")}: ${i.message}`)),
      ...more,
    ];
    throw new Error(`invalid ${what}:\n${lines.map((l) => `  ${l}`).join("\n")}`);
  }
  return parsed.data;
}

const NUMBER_TEXT = /^[+-]?(\d+(\.\d*)?|\.\d+)$/;

/**
 * A number setting: decimal text only, so `1e3` or `0x1F90` is refused, not read as 1000 or 8080
 * (what a bare coercion makes of them). `rules` adds the bounds: `envNum((n) => n.int().min(1))`.
 */
export const envNum = <T extends z.ZodType<number, number>>(rules: (n: z.ZodNumber) => T) =>
  z.string().trim().regex(NUMBER_TEXT, "must be a decimal number").transform(Number).pipe(rules(z.number()));

/** A non-negative decimal setting with up to 18 decimals (the API reads some of the same). */
export const decimal = (def: string) =>
  z
    .string()
    .regex(/^\d+(\.\d{1,18})?$/, "must be a non-negative decimal number")
    .default(def);

/**
 * DATABASE_URL of every process (API, workers, indexer): a postgres:// or postgresql:// URL that pg
 * can read (with `new URL`, and again with a placeholder host when it has none: `postgres://u@/db`),
 * so a malformed one is refused by name at start-up, not at the first query. `what` is the database
 * it names, for the message when it is unset. The message never holds the URL: it has a password.
 */
export const envPostgresUrl = (what: string) =>
  z
    .string({ error: `required: the postgres:// URL of ${what}` })
    .trim()
    .regex(POSTGRES_SCHEME, { error: "must be a postgres:// URL", abort: true })
    .refine(parsablePostgresUrl, POSTGRES_URL_FORM);

/**
 * REDIS_URL of every process (API, workers, relayer, demo): a redis:// or rediss:// URL with a
 * host, as scripts/lib/redis.ts `parseRedisUrl` reads it; unset, a local redis-server.
 */
export const envRedisUrl = z
  .string()
  .trim()
  .regex(/^rediss?:\/\//, { error: "must be a redis:// or rediss:// URL", abort: true })
  .refine(
    (s) => URL.canParse(s) && new URL(s).hostname !== "",
    "is not a valid URL (redis://[user:password@]host:port[/db], special characters percent-encoded)",
  )
  .optional();
