/** Settings from the environment, parsed and checked once at start-up. */
import { z } from "zod";

/** `schema` applied to `env`; throws one readable error listing every bad variable. */
export function parseEnv<S extends z.ZodType>(schema: S, env: NodeJS.ProcessEnv, what: string): z.output<S> {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join(".")}: ${i.message}`);
    throw new Error(`invalid ${what}:\n${lines.join("\n")}`);
  }
  return parsed.data;
}

/** A non-negative decimal setting with up to 18 decimals (the API reads some of the same). */
export const decimal = (def: string) =>
  z
    .string()
    .regex(/^\d+(\.\d{1,18})?$/, "must be a non-negative decimal number")
    .default(def);
