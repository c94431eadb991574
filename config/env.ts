/** Settings from the environment, parsed and checked once at start-up. */
import { z } from "zod";

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
