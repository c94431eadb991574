import { describe, expect, it } from "vitest";
import { z } from "zod";
import { MAX_ERROR_ITEMS, validationItems } from "./errors.js";
import {
  INT_PARSING,
  laxInt,
  laxNumber,
  laxUint256,
  PgText,
  QueryBool,
  QueryInt,
  SURROGATE_MESSAGE,
  strictInt,
  strictNumber,
  VaultAddress,
} from "./router.js";

describe("validation error items (FastAPI's shape)", () => {
  const schema = z.object({
    n_days: QueryInt({ def: 30, min: 1 }),
    status: z.enum(["active", "closed"]).optional(),
    vault_address: z.string(),
  });
  it("missing, mistyped, out of range and outside an enumeration", () => {
    const r = schema.safeParse({ n_days: "x", status: "gone" });
    expect(r.success).toBe(false);
    const items = validationItems(r.error!, "query");
    expect(items).toContainEqual({
      loc: ["query", "n_days"],
      msg: "Input should be a valid integer, unable to parse string as an integer",
      type: "int_parsing",
    });
    expect(items).toContainEqual({ loc: ["query", "status"], msg: expect.any(String), type: "enum" });
    expect(items).toContainEqual({ loc: ["query", "vault_address"], msg: "Field required", type: "missing" });
    const low = validationItems(schema.safeParse({ n_days: "0", vault_address: "x" }).error!, "query");
    expect(low).toEqual([
      { loc: ["query", "n_days"], msg: "Input should be greater than or equal to 1", type: "greater_than_equal" },
    ]);
  });
  it("a query flag reads pydantic's spellings in any case; anything else is bool_parsing", () => {
    const q = z.object({ active: QueryBool(true) });
    expect(q.parse({}).active).toBe(true);
    expect(z.object({ active: QueryBool(false) }).parse({}).active).toBe(false);
    for (const t of ["true", "TRUE", "True", "t", "T", "1", "yes", "Y", "on", "ON"]) {
      expect(q.parse({ active: t }).active, t).toBe(true);
    }
    for (const f of ["false", "FALSE", "f", "0", "no", "N", "off", "Off"]) {
      expect(q.parse({ active: f }).active, f).toBe(false);
    }
    for (const bad of ["", "2", "yes please", "tru", " true"]) {
      const r = q.safeParse({ active: bad });
      expect(r.success, JSON.stringify(bad)).toBe(false);
      expect(validationItems(r.error!, "query")).toEqual([
        {
          loc: ["query", "active"],
          msg: "Input should be a valid boolean, unable to interpret input",
          type: "bool_parsing",
        },
      ]);
    }
  });
  it("a query integer is decimal digits: empty, exponent, hex and fractions are malformed", () => {
    const q = z.object({ n: QueryInt({ def: 30, min: -1 }) });
    for (const bad of ["", " ", "1e3", "0x10", "1.5", "1.0", "NaN", "Infinity", "12a", "--1", "99999999999999999"]) {
      const r = q.safeParse({ n: bad });
      expect(r.success, JSON.stringify(bad)).toBe(false);
      expect(validationItems(r.error!, "query")).toEqual([
        { loc: ["query", "n"], msg: INT_PARSING, type: "int_parsing" },
      ]);
    }
    for (const [text, n] of [
      ["12", 12],
      [" 12 ", 12],
      ["+7", 7],
      ["-1", -1],
      ["007", 7],
    ] as const) {
      expect(q.parse({ n: text })).toEqual({ n });
    }
    expect(q.parse({})).toEqual({ n: 30 });
    // one without a default, absent: FastAPI's `missing`, not a malformed integer
    const required = z.object({ n: QueryInt({ min: 0 }) });
    expect(validationItems(required.safeParse({}).error!, "query")).toEqual([
      { loc: ["query", "n"], msg: "Field required", type: "missing" },
    ]);
    expect(validationItems(required.safeParse({ n: "x" }).error!, "query")[0]!.type).toBe("int_parsing");
  });
  it("path parameters are reported under 'path', bodies under 'body'", () => {
    const e = z.object({ a: z.string() }).safeParse({}).error!;
    expect(validationItems(e, "param")[0]!.loc).toEqual(["path", "a"]);
    expect(validationItems(e, "json")[0]!.loc).toEqual(["body", "a"]);
  });

  it("at most MAX_ERROR_ITEMS items, and one that counts the rest", () => {
    const strict = z.strictObject({ a: z.string() });
    const body = Object.fromEntries(Array.from({ length: 5_000 }, (_, i) => [`k${i}`, i]));
    const items = validationItems(strict.safeParse({ a: "x", ...body }).error!, "json");
    expect(items).toHaveLength(MAX_ERROR_ITEMS + 1);
    expect(items[0]).toEqual({ loc: ["body", "k0"], msg: "Extra inputs are not permitted", type: "extra_forbidden" });
    expect(items.at(-1)).toEqual({
      loc: ["body"],
      msg: `and ${5_000 - MAX_ERROR_ITEMS} more errors`,
      type: "too_many_errors",
    });
    // at the bound, no count
    const few = Object.fromEntries(Array.from({ length: MAX_ERROR_ITEMS }, (_, i) => [`k${i}`, i]));
    expect(validationItems(strict.safeParse({ a: "x", ...few }).error!, "json")).toHaveLength(MAX_ERROR_ITEMS);
  });

  it("one item per field: its first failed check, as pydantic stops at it", () => {
    const q = z.object({ vault_address: VaultAddress, n: laxInt(z.number().int().min(1).max(2_147_483_647)) });
    const items = validationItems(q.safeParse({ vault_address: "", n: 1e20 }).error!, "query");
    expect(items.map((i) => [i.loc.join("."), i.type])).toEqual([
      ["query.vault_address", "string_too_short"],
      ["query.n", "less_than_equal"],
    ]);
    // the field's own bound, not zod's safe-integer one
    expect(items[1]!.msg).toBe("Input should be less than or equal to 2147483647");
  });

  it("a body's number is float-typed, its integer int-typed, a fraction for an integer int_from_float", () => {
    const b = z.object({ m: laxNumber(z.number().min(0)), i: laxInt(z.number().int()) });
    const typeOf = (body: unknown) => validationItems(b.safeParse(body).error!, "json").map((x) => x.type);
    expect(typeOf({ m: "abc", i: 1 })).toEqual(["float_parsing"]);
    expect(typeOf({ m: true, i: 1 })).toEqual(["float_type"]);
    expect(typeOf({ m: Number.POSITIVE_INFINITY, i: 1 })).toEqual(["finite_number"]);
    expect(typeOf({ m: -1, i: 1 })).toEqual(["greater_than_equal"]);
    const x = z.object({ p: z.number().gt(0), q: z.number().lt(1) });
    expect(validationItems(x.safeParse({ p: 0, q: 1 }).error!, "json").map((i) => i.type)).toEqual([
      "greater_than",
      "less_than",
    ]);
    expect(typeOf({ m: 1, i: 1.5 })).toEqual(["int_from_float"]);
    expect(typeOf({ m: 1, i: "x" })).toEqual(["int_parsing"]);
    expect(typeOf({ i: 1 })).toEqual(["missing"]);
    expect(b.parse({ m: "0.05", i: "7" })).toEqual({ m: 0.05, i: 7 });
    expect(b.parse({ m: "1.", i: " +7 " })).toEqual({ m: 1, i: 7 });
    expect(b.parse({ m: ".5e1", i: 0 })).toEqual({ m: 5, i: 0 });
  });

  it("a strict body's number: a JSON number only, else pydantic's strict float type", () => {
    const b = z.object({ p: strictNumber(z.number().positive()).optional(), q: strictNumber(z.number()) });
    const typeOf = (body: unknown) => validationItems(b.safeParse(body).error!, "json").map((x) => [x.loc[1], x.type]);
    expect(typeOf({ p: "0.0003", q: 1 })).toEqual([["p", "float_type"]]);
    expect(typeOf({ p: true, q: 1 })).toEqual([["p", "float_type"]]);
    expect(typeOf({ p: -1, q: 1 })).toEqual([["p", "greater_than"]]);
    expect(typeOf({ p: 1 })).toEqual([["q", "missing"]]);
    expect(typeOf({ q: Number.NaN })).toEqual([["q", "finite_number"]]);
    expect(b.parse({ q: 0.5 })).toEqual({ q: 0.5 });
    expect(validationItems(b.safeParse({ q: "1" }).error!, "json")[0]!.msg).toBe("Input should be a valid number");
  });

  it("a strict body's integer: a JSON integer only, else pydantic's strict int types", () => {
    const b = z.object({
      bps: strictInt(z.number().int().min(0).max(10_000).default(50)),
      tick: strictInt(z.number().int()).optional(),
    });
    const items = (body: unknown) => validationItems(b.safeParse(body).error!, "json");
    expect(items({ bps: "50" })).toEqual([
      { loc: ["body", "bps"], msg: "Input should be a valid integer", type: "int_type" },
    ]);
    expect(items({ bps: true }).map((i) => i.type)).toEqual(["int_type"]);
    expect(items({ bps: null }).map((i) => i.type)).toEqual(["int_type"]);
    // strict: a fraction is no integer (pydantic's strict mode: int_type, not int_from_float)
    expect(items({ tick: 1.5 })).toEqual([
      { loc: ["body", "tick"], msg: "Input should be a valid integer", type: "int_type" },
    ]);
    expect(items({ bps: 10_001 })).toEqual([
      { loc: ["body", "bps"], msg: "Input should be less than or equal to 10000", type: "less_than_equal" },
    ]);
    // past 2^53 - 1: the field's own bound, not zod's safe-integer one
    expect(items({ bps: 1e30 })).toEqual(items({ bps: 10_001 }));
    expect(items({ bps: -1e30 })).toEqual([
      { loc: ["body", "bps"], msg: "Input should be greater than or equal to 0", type: "greater_than_equal" },
    ]);
    expect(b.parse({})).toEqual({ bps: 50 });
    expect(b.parse({ bps: 0, tick: -5 })).toEqual({ bps: 0, tick: -5 });
  });

  it("a value of the wrong JSON type gets pydantic's type and message", () => {
    const b = z.object({
      s: z.string().min(2).optional(),
      f: z.boolean().optional(),
      l: z.array(z.string()).optional(),
      o: z.object({}).optional(),
      i: laxInt(z.number().int()).optional(),
    });
    const items = (body: unknown) => validationItems(b.safeParse(body).error!, "json").map((i) => [i.type, i.msg]);
    expect(items({ s: 1, f: "true", l: "x", o: [], i: null })).toEqual([
      ["string_type", "Input should be a valid string"],
      ["bool_type", "Input should be a valid boolean"],
      ["list_type", "Input should be a valid list"],
      ["dict_type", "Input should be a valid dictionary"],
      ["int_type", "Input should be a valid integer"],
    ]);
    expect(items({ s: "x", i: "seven" })).toEqual([
      ["string_too_short", "String should have at least 2 characters"],
      ["int_parsing", "Input should be a valid integer, unable to parse string as an integer"],
    ]);
    expect(items([])).toEqual([
      ["model_attributes_type", "Input should be a valid dictionary or object to extract fields from"],
    ]);
  });

  it("a value outside an enumeration or literal: pydantic's message, the values as Python writes them", () => {
    const b = z.object({
      destination: z.enum(["perp", "spot"]).optional(),
      mode: z.enum(["a", "b", "c"]).optional(),
      full_range: z.literal(true).optional(),
    });
    const items = (body: unknown) => validationItems(b.safeParse(body).error!, "json").map((i) => [i.type, i.msg]);
    expect(items({ destination: "x", mode: 5, full_range: false })).toEqual([
      ["enum", "Input should be 'perp' or 'spot'"],
      ["enum", "Input should be 'a', 'b' or 'c'"],
      ["literal_error", "Input should be True"],
    ]);
  });

  it("a megabyte of digits that is no number is refused at once", () => {
    // the number pattern backtracked quadratically over a run of digits (minutes for a megabyte)
    const b = z.object({ m: laxNumber(z.number().min(0)) });
    for (const m of [`${"1".repeat(1_000_000)}x`, `${"1".repeat(1_000_000)}E`, `.${"5".repeat(1_000_000)}.`])
      expect(validationItems(b.safeParse({ m }).error!, "json").map((x) => x.type)).toEqual(["float_parsing"]);
  });

  it("a uint256 of a body: a safe JSON integer or a string of digits, read as a bigint", () => {
    const b = z.object({ expiry: laxUint256("when") });
    const max = (1n << 256n) - 1n;
    expect(b.parse({ expiry: 5 }).expiry).toBe(5n);
    expect(b.parse({ expiry: ` ${max} ` }).expiry).toBe(max);
    const typeOf = (expiry: unknown) =>
      validationItems(b.safeParse({ expiry }).error!, "json").map((x) => [x.loc.join("."), x.type]);
    expect(typeOf(undefined)).toEqual([["body.expiry", "missing"]]);
    expect(typeOf(2 ** 60)).toEqual([["body.expiry", "value_error"]]);
    expect(typeOf(1.5)).toEqual([["body.expiry", "int_from_float"]]);
    expect(typeOf(-1)).toEqual([["body.expiry", "greater_than_equal"]]);
    expect(typeOf("-1")).toEqual([["body.expiry", "greater_than_equal"]]);
    expect(typeOf((max + 1n).toString())).toEqual([["body.expiry", "less_than_equal"]]);
    expect(typeOf("1e3")).toEqual([["body.expiry", "int_parsing"]]);
    expect(typeOf(null)).toEqual([["body.expiry", "int_type"]]);
  });

  it("free text refuses NUL and an unpaired surrogate, and keeps a paired one (an emoji)", () => {
    const b = z.object({ t: PgText() });
    const items = (t: string) => validationItems(b.safeParse({ t }).error!, "json");
    expect(items("nonce-\ud800")).toEqual([{ loc: ["body", "t"], msg: SURROGATE_MESSAGE, type: "value_error" }]);
    expect(items("\udfff")[0]!.msg).toBe(SURROGATE_MESSAGE);
    expect(items("a\0b")[0]!.type).toBe("value_error");
    expect(b.parse({ t: "nonce-\u{1F600}" }).t).toBe("nonce-\u{1F600}");
  });
});
