import { describe, expect, it } from "vitest";
import { z } from "zod";
import { validationItems } from "./errors.js";
import { DateOrDateTime } from "./query-dates.js";

describe("DateOrDateTime", () => {
  const q = z.object({ end_date: DateOrDateTime.optional() });
  it("parses a date or a date-time to its bound", () => {
    expect(q.parse({ end_date: "2026-01-31" })).toEqual({
      end_date: { kind: "date", ms: Date.UTC(2026, 0, 31), text: "2026-01-31" },
    });
    expect(q.parse({ end_date: "2026-01-31T10:00:00+01:00" }).end_date?.ms).toBe(Date.UTC(2026, 0, 31, 9));
  });
  it("a day the calendar lacks is a 422 on the field", () => {
    for (const s of ["2026-02-30", "2026-01-01T24:00:00Z", "soon"]) {
      const r = q.safeParse({ end_date: s });
      expect(validationItems(r.error!, "query")).toEqual([
        {
          loc: ["query", "end_date"],
          msg: "Input should be a valid date (YYYY-MM-DD) or ISO 8601 date-time",
          type: "value_error",
        },
      ]);
    }
  });
});
