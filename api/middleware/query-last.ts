/**
 * A query parameter given more than once is read as FastAPI reads a scalar one: its last value
 * (`?limit=abc&limit=10` is 10). No route takes a list in its query (the spec lists none), so
 * every key is a scalar; hono's validator would otherwise hand the schema an array, a 422.
 */
import type { MiddlewareHandler } from "hono";

export const lastQueryValue: MiddlewareHandler = async (c, next) => {
  const all = c.req.queries.bind(c.req);
  c.req.queries = ((key?: string) => {
    if (key !== undefined) return all(key)?.slice(-1);
    return Object.fromEntries(Object.entries(all()).map(([k, v]) => [k, v.slice(-1)]));
  }) as typeof c.req.queries;
  await next();
};
