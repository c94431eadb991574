/**
 * What an answer may say about a failure behind it. An error's own message can carry what only
 * the operator should see: viem's messages end with the request's URL (an RPC provider's key is
 * often in its path) and body, a driver's with hosts and users. An answer gets the first line
 * (viem's `shortMessage` where it has one), any URL in it replaced, at most 200 characters; the
 * whole error goes to the log.
 */

const URL_IN_TEXT = /\b[a-z][a-z0-9+.-]{0,30}:\/\/[^\s"'<>]{0,2000}/gi;

/** The first line of an error's message (its `shortMessage` first), URLs removed, bounded. */
export function publicMessage(err: unknown): string {
  const short =
    err && typeof err === "object" && "shortMessage" in err && typeof err.shortMessage === "string"
      ? err.shortMessage
      : err instanceof Error
        ? err.message
        : String(err);
  const line = short.slice(0, 2_000).split("\n")[0]!.trim();
  return line.replace(URL_IN_TEXT, "<url>").slice(0, 200) || "no message";
}

/** SQLSTATE classes a health check names (https://www.postgresql.org/docs/current/errcodes-appendix.html). */
const PG_CLASSES: Record<string, string> = {
  "08": "the connection failed",
  "28": "the credentials were refused",
  "3D": "the database does not exist",
  "53": "the server is out of resources",
  "57": "the server is shutting down or cancelled the statement",
};

/** A database failure as a health check states it: its code and class, never its message. */
export function databaseFailure(err: unknown): string {
  const code = (err as { code?: unknown })?.code;
  if (typeof code === "string" && /^[0-9A-Z]{5}$/.test(code)) {
    return `the database refused (${code}: ${PG_CLASSES[code.slice(0, 2)] ?? "see the API's log"})`;
  }
  if (typeof code === "string" && /^E[A-Z]{2,20}$/.test(code)) return `the database cannot be reached (${code})`;
  return "the database failed (see the API's log)";
}
