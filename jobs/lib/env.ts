/** Settings from the environment, parsed and checked once at start-up. */
import type { z } from "zod";

/** `schema` applied to `env`; throws one readable error listing every bad variable. */
export function parseEnv<S extends z.ZodType>(schema: S, env: NodeJS.ProcessEnv, what: string): z.output<S> {
  const parsed = schema.safeParse(env);
  if (!parsed.success) {
    const lines = parsed.error.issues.map((i) => `  ${i.path.join(".")}: ${i.message}`);
    throw new Error(`invalid ${what}:\n${lines.join("\n")}`);
  }
  return parsed.data;
}
