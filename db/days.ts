/** UTC calendar days as integers (days since 1970-01-01) and 'YYYY-MM-DD' strings. */
export const DAY_SECONDS = 86_400;

export function dayOf(unixSeconds: number | bigint): number {
  return Math.floor(Number(unixSeconds) / DAY_SECONDS);
}

export function dayToDate(day: number): string {
  return new Date(day * DAY_SECONDS * 1000).toISOString().slice(0, 10);
}

const DATE_RE = /^\d{4}-\d{2}-\d{2}$/;
const DATETIME_RE = /^\d{4}-\d{2}-\d{2}[T ](?:[01]\d|2[0-3]):[0-5]\d(:[0-5]\d(\.\d{1,9})?)?(Z|[+-]\d{2}:?\d{2})?$/i;

/** Is `date` (`YYYY-MM-DD`) a day of the calendar (not `2026-02-30`, which Date.parse rolls over)? */
function isCalendarDay(date: string): boolean {
  const ms = Date.parse(`${date}T00:00:00Z`);
  return Number.isFinite(ms) && new Date(ms).toISOString().slice(0, 10) === date;
}

export function dateToDay(date: string): number {
  if (!DATE_RE.test(date)) throw new Error(`not a date (YYYY-MM-DD): "${date}"`);
  if (!isCalendarDay(date)) throw new Error(`not a calendar date: "${date}"`);
  return Date.parse(`${date}T00:00:00Z`) / 1000 / DAY_SECONDS;
}

export type DateBound = { kind: "date" | "datetime"; ms: number; text: string };

/**
 * A date `YYYY-MM-DD` (its UTC midnight) or an ISO 8601 date-time (UTC when it carries no
 * offset), or null. A day the calendar lacks or an hour past 23 is null, not rolled over into the
 * next month or day as Date.parse would.
 */
export function parseDateOrDateTime(s: string): DateBound | null {
  const v = s.trim();
  if (DATE_RE.test(v) && isCalendarDay(v)) return { kind: "date", ms: Date.parse(`${v}T00:00:00Z`), text: v };
  if (DATETIME_RE.test(v) && isCalendarDay(v.slice(0, 10))) {
    let t = v.replace(" ", "T");
    if (!/(Z|[+-]\d{2}:?\d{2})$/i.test(t)) t += "Z";
    const ms = Date.parse(t);
    if (Number.isFinite(ms)) return { kind: "datetime", ms, text: v };
  }
  return null;
}

/** First second after the end of `day`. */
export function endOfDay(day: number): number {
  return (day + 1) * DAY_SECONDS;
}

export function today(nowMs = Date.now()): number {
  return Math.floor(nowMs / 1000 / DAY_SECONDS);
}
