/**
 * Raw token amounts as exact JSON numbers. They exceed 2^53, so a JS number would round them;
 * `JSON.rawJSON` (Node 22+) makes JSON.stringify write the digits as they are. The value stands
 * in for a number in the response types (the schema says `integer`); only JSON.stringify reads it.
 */
declare global {
  interface JSON {
    rawJSON(text: string): unknown;
  }
}

const INTEGER = /^-?(0|[1-9][0-9]*)$/;

/** The decimal integer string `raw` (or bigint), written to JSON as a number with every digit. */
export function exactNumber(raw: string | bigint): number {
  const text = typeof raw === "bigint" ? raw.toString() : raw;
  if (!INTEGER.test(text)) throw new Error(`not a decimal integer: ${JSON.stringify(text)}`);
  return JSON.rawJSON(text) as number;
}
