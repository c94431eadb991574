/** UTC calendar days as integers (days since 1970-01-01) and 'YYYY-MM-DD' strings. */
export const DAY_SECONDS = 86_400;

export function dayOf(unixSeconds: number | bigint): number {
  return Math.floor(Number(unixSeconds) / DAY_SECONDS);
}

export function dayToDate(day: number): string {
  return new Date(day * DAY_SECONDS * 1000).toISOString().slice(0, 10);
}

export function dateToDay(date: string): number {
  if (!/^\d{4}-\d{2}-\d{2}$/.test(date)) throw new Error(`not a date (YYYY-MM-DD): "${date}"`);
  const ms = Date.parse(`${date}T00:00:00Z`);
  if (Number.isNaN(ms) || new Date(ms).toISOString().slice(0, 10) !== date)
    throw new Error(`not a calendar date: "${date}"`);
  return ms / 1000 / DAY_SECONDS;
}

/** First second after the end of `day`. */
export function endOfDay(day: number): number {
  return (day + 1) * DAY_SECONDS;
}

export function today(nowMs = Date.now()): number {
  return Math.floor(nowMs / 1000 / DAY_SECONDS);
}
