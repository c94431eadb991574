/**
 * One error body for every malformed request, FastAPI style: 422 with
 * `{detail: [{loc, msg, type}]}`, `loc` ending in the field's name. Unknown things answer 404,
 * a missing or bad key 401/403, all with JSON bodies.
 */
import { z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { ZodError } from "zod";

export const ValidationErrorSchema = z
  .object({
    detail: z.array(
      z.object({
        loc: z.array(z.union([z.string(), z.number()])),
        msg: z.string(),
        type: z.string(),
      }),
    ),
  })
  .openapi("HTTPValidationError");

export const ErrorSchema = z.object({ detail: z.string() }).openapi("Error");

const LOC: Record<string, string> = {
  query: "query",
  param: "path",
  json: "body",
  form: "body",
  header: "header",
  cookie: "cookie",
};

export interface ErrorItem {
  loc: (string | number)[];
  msg: string;
  type: string;
}

/** zod v4 leaves the input off its issues; its message says when the value was absent. */
function isMissing(issue: ZodError["issues"][number]): boolean {
  return issue.code === "invalid_type" && /received undefined$/.test(issue.message);
}

/** A failed bound's type: of a string's length, an array's, or a number (`_equal` when inclusive). */
function boundType(
  issue: { origin: string; inclusive?: boolean },
  ofString: string,
  ofArray: string,
  ofNumber: string,
): string {
  if (issue.origin === "string") return ofString;
  if (issue.origin === "array") return ofArray;
  return issue.inclusive === false ? ofNumber : `${ofNumber}_equal`;
}

/**
 * pydantic's type and message for a value of the wrong JSON type, by what zod expected. A number
 * field here is an integer one (the float fields refuse other types themselves: `laxNumber`,
 * `strictNumber`); zod's message is the only place that says what it received.
 */
function wrongType(issue: ZodError["issues"][number] & { code: "invalid_type" }, atRoot: boolean): [string, string] {
  switch (issue.expected) {
    case "string":
      return ["string_type", "Input should be a valid string"];
    case "boolean":
      return ["bool_type", "Input should be a valid boolean"];
    case "array":
      return ["list_type", "Input should be a valid list"];
    case "object":
      return atRoot
        ? ["model_attributes_type", "Input should be a valid dictionary or object to extract fields from"]
        : ["dict_type", "Input should be a valid dictionary"];
    case "int":
      return ["int_from_float", "Input should be a valid integer, got a number with a fractional part"];
    case "number":
      // a query integer's own message (QueryInt) is pydantic's already
      if (!/^Invalid input/.test(issue.message)) return ["int_parsing", issue.message];
      return /received string$/.test(issue.message)
        ? ["int_parsing", "Input should be a valid integer, unable to parse string as an integer"]
        : ["int_type", "Input should be a valid integer"];
    default:
      return [`${issue.expected}_type`, issue.message];
  }
}

/**
 * pydantic's message for a number or string past a bound where zod's own stands ("Too small:
 * expected number to be >=0"); a bound given its own message keeps it.
 */
function boundMessage(issue: ZodError["issues"][number]): string | undefined {
  if (issue.code !== "too_small" && issue.code !== "too_big") return undefined;
  if (!/^Too (small|big):/.test(issue.message)) return undefined;
  const small = issue.code === "too_small";
  const bound = small ? issue.minimum : issue.maximum;
  const inclusive = issue.inclusive !== false;
  if (issue.origin === "string") {
    const n = Number(bound);
    const chars = n === 1 ? "character" : "characters";
    return `String should have ${small ? "at least" : "at most"} ${n} ${chars}`;
  }
  if (issue.origin !== "number" && issue.origin !== "int") return undefined;
  const than = `${small ? "greater" : "less"} than${inclusive ? " or equal to" : ""}`;
  return `Input should be ${than} ${bound}`;
}

/**
 * pydantic's message for a value outside an enumeration or literal where zod's own stands
 * ("Invalid option: expected one of ..."): "Input should be 'perp' or 'spot'", values as
 * Python writes them (True, 'text').
 */
function choiceMessage(issue: ZodError["issues"][number]): string | undefined {
  if (issue.code !== "invalid_value" || !/^Invalid (option|input)/.test(issue.message)) return undefined;
  const py = (v: unknown) =>
    typeof v === "string" ? `'${v}'` : typeof v === "boolean" ? (v ? "True" : "False") : String(v);
  const all = issue.values.map(py);
  const list = all.length > 1 ? `${all.slice(0, -1).join(", ")} or ${all.at(-1)}` : (all[0] ?? "");
  return `Input should be ${list}`;
}

/** FastAPI's error types, from zod's issue codes. */
function typeOf(issue: ZodError["issues"][number]): string {
  switch (issue.code) {
    case "invalid_type":
      return isMissing(issue) ? "missing" : wrongType(issue, issue.path.length === 0)[0];
    case "too_small":
      return boundType(issue, "string_too_short", "too_short", "greater_than");
    case "too_big":
      return boundType(issue, "string_too_long", "too_long", "less_than");
    case "invalid_value":
      return issue.values.every((v) => typeof v === "string") ? "enum" : "literal_error";
    case "invalid_format":
      return "string_pattern_mismatch";
    case "unrecognized_keys":
      return "extra_forbidden";
    case "custom":
      return typeof issue.params?.type === "string" ? issue.params.type : "value_error";
    default:
      return "value_error";
  }
}

/**
 * The error items of a failed validation: one per field, as pydantic stops at a field's first
 * failed constraint (zod reports every check: an empty address is both too short and not one).
 */
export function validationItems(error: ZodError, target: string): ErrorItem[] {
  const seen = new Set<string>();
  const items = allItems(error, target).filter((i) => {
    const key = JSON.stringify(i.loc);
    if (seen.has(key)) return false;
    seen.add(key);
    return true;
  });
  if (items.length <= MAX_ERROR_ITEMS) return items;
  // a body of a megabyte's unknown keys would answer megabytes of items, one per key
  const more = items.length - MAX_ERROR_ITEMS;
  const loc = [LOC[target] ?? target];
  return [...items.slice(0, MAX_ERROR_ITEMS), { loc, msg: `and ${more} more errors`, type: "too_many_errors" }];
}

/** The most error items a 422 lists; one more item says how many it left out. */
export const MAX_ERROR_ITEMS = 100;

function allItems(error: ZodError, target: string): ErrorItem[] {
  return error.issues.flatMap((i) => {
    const loc = [LOC[target] ?? target, ...i.path.map((p) => (typeof p === "symbol" ? String(p) : p))];
    // FastAPI names each field it does not know on its own
    if (i.code === "unrecognized_keys") {
      return i.keys.map((k) => ({ loc: [...loc, k], msg: "Extra inputs are not permitted", type: typeOf(i) }));
    }
    const msg = isMissing(i)
      ? "Field required"
      : i.code === "invalid_type"
        ? wrongType(i, i.path.length === 0)[1]
        : (boundMessage(i) ?? choiceMessage(i) ?? i.message);
    return [{ loc, msg, type: typeOf(i) }];
  });
}

export function validationError(c: Context, items: ErrorItem[]) {
  return c.json({ detail: items }, 422);
}

/** The defaultHook of every router: a failed validation answers 422 with the spec's body. */
export function defaultHook(result: { success: boolean; error?: ZodError; target: string }, c: Context) {
  if (!result.success && result.error) return validationError(c, validationItems(result.error, result.target));
  return undefined;
}

export function notFound(c: Context, what: string) {
  return c.json({ detail: what }, 404);
}

/** The body of a failed business rule on a write route: which rule, in `code`. */
export const RefusalSchema = z
  .object({
    detail: z.string().openapi({ description: "What went wrong, for people" }),
    code: z
      .string()
      .openapi({ description: "Which rule refused the request, for programs (see the route's description)" }),
  })
  .openapi("Refusal");
