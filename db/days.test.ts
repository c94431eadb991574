import { describe, expect, it } from "vitest";
import { parseDateOrDateTime } from "./days.js";

describe("parseDateOrDateTime", () => {
  it("a date is its whole UTC day; a date-time without offset is UTC", () => {
    expect(parseDateOrDateTime("2026-01-31")).toEqual({
      kind: "date",
      ms: Date.UTC(2026, 0, 31),
      text: "2026-01-31",
    });
    expect(parseDateOrDateTime("2024-02-29")?.ms).toBe(Date.UTC(2024, 1, 29));
    const at = Date.UTC(2026, 0, 1, 12, 30, 5);
    for (const s of ["2026-01-01T12:30:05", "2026-01-01 12:30:05", "2026-01-01T12:30:05Z", "2026-01-01T12:30:05z"]) {
      expect(parseDateOrDateTime(s)).toMatchObject({ kind: "datetime", ms: at });
    }
    expect(parseDateOrDateTime("2026-01-01T12:30")?.ms).toBe(Date.UTC(2026, 0, 1, 12, 30));
    expect(parseDateOrDateTime("2026-01-01T18:00:05+05:30")?.ms).toBe(at);
    expect(parseDateOrDateTime("2026-01-01T18:00:05+0530")?.ms).toBe(at);
    expect(parseDateOrDateTime("2026-01-01T12:30:05.250Z")?.ms).toBe(at + 250);
  });

  it("days the calendar lacks, hour 24 and other malformed text are refused, not rolled over", () => {
    for (const s of [
      "2026-02-30",
      "2025-02-29",
      "2026-04-31",
      "2026-13-01",
      "2026-00-10",
      "2026-02-30T00:00:00Z",
      "2026-01-01T24:00:00Z",
      "2026-01-01T23:60:00Z",
      "2026-01-01T23:59:60Z",
      "yesterday",
      "",
      "1767225600",
      "2026-1-1",
    ]) {
      expect(parseDateOrDateTime(s), s).toBeNull();
    }
  });
});
