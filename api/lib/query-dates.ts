/**
 * Dates in query parameters, read once for every route: a date `YYYY-MM-DD` (a whole UTC day) or
 * an ISO 8601 date-time (UTC when it carries no offset). A day the calendar does not have
 * (`2026-02-30`) or an hour past 23 is malformed, not rolled over into the next month or day as
 * `Date.parse` would.
 */
import { z } from "@hono/zod-openapi";

export type DateBound = { kind: "date" | "datetime"; ms: number; text: string };

const DATE_RE = /^\d{4}-\d{2}-\d{2}$/;
const DATETIME_RE = /^\d{4}-\d{2}-\d{2}[T ](?:[01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?$/i;

/** Is `s` (`YYYY-MM-DD`) a day of the calendar? */
function validDay(s: string): boolean {
  const t = Date.parse(`${s}T00:00:00Z`);
  return Number.isFinite(t) && new Date(t).toISOString().slice(0, 10) === s;
}

/** `s` as a date or a date-time, or null when it is neither. */
export function parseDateOrDateTime(s: string): DateBound | null {
  const v = s.trim();
  if (DATE_RE.test(v) && validDay(v)) return { kind: "date", ms: Date.parse(`${v}T00:00:00Z`), text: v };
  if (DATETIME_RE.test(v) && validDay(v.slice(0, 10))) {
    let t = v.replace(" ", "T");
    if (!/(Z|[+-]\d{2}:?\d{2})$/i.test(t)) t += "Z";
    const ms = Date.parse(t);
    if (Number.isFinite(ms)) return { kind: "datetime", ms, text: v };
  }
  return null;
}

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
