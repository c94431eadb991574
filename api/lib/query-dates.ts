/**
 * Dates in query parameters, read once for every route: a date `YYYY-MM-DD` (a whole UTC day) or
 * an ISO 8601 date-time (UTC when it carries no offset), parsed by db/days.ts. A day the calendar
 * does not have (`2026-02-30`) or an hour past 23 is malformed, not rolled over.
 */
import { z } from "@hono/zod-openapi";
import { parseDateOrDateTime } from "../../db/days.js";

/**
 * A query date bound: a date or a date-time, parsed to `{kind, ms, text}`. The handlers turn it
 * into their bounds (a date covers its whole UTC day where a route says so).
 */
export const DateOrDateTime = z
  .string()
  .transform((s, ctx) => {
    const d = parseDateOrDateTime(s);
    if (d) return d;
    ctx.addIssue({
      code: "custom",
      message: "Input should be a valid date (YYYY-MM-DD) or ISO 8601 date-time",
      input: s,
    });
    return z.NEVER;
  })
  .openapi({
    type: "string",
    description: "A date `YYYY-MM-DD` (a whole UTC day) or an ISO 8601 date-time (UTC if no offset is given)",
    example: "2026-01-31",
  });
