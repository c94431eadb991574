/**
 * What Node's HTTP server answers before the app sees a request: a request line and headers
 * above `maxHeaderSize` (16 KiB by default: a long query string, a cookie jar), a request it
 * cannot parse, or one whose headers took too long. By default Node writes a bare status line
 * with no body; with this handler the client gets the same status with the JSON `detail` the
 * app's own errors carry, then the connection closes (its stream can no longer be trusted).
 */
import type { Server } from "node:http";
import type { Duplex } from "node:stream";

const ANSWERS: Record<string, [number, string, string]> = {
  HPE_HEADER_OVERFLOW: [
    431,
    "Request Header Fields Too Large",
    "The request line and headers are above 16 KiB: send fewer or shorter query parameters",
  ],
  ERR_HTTP_REQUEST_TIMEOUT: [408, "Request Timeout", "The request's headers did not arrive in time"],
};
const MALFORMED: [number, string, string] = [400, "Bad Request", "The request is not valid HTTP/1.1"];

/** The raw HTTP answer to a client error whose code Node gives (`HPE_*`, `ERR_HTTP_*`). */
export function clientErrorResponse(code: string | undefined): string {
  const [status, reason, detail] = (code && ANSWERS[code]) || MALFORMED;
  const body = JSON.stringify({ detail });
  return (
    `HTTP/1.1 ${status} ${reason}\r\nContent-Type: application/json\r\n` +
    `Content-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`
  );
}

/** Answers the server's client errors with a JSON body (a reset connection gets nothing). */
export function answerClientErrors(server: Server): void {
  server.on("clientError", (err: NodeJS.ErrnoException, socket: Duplex) => {
    if (err.code === "ECONNRESET" || !socket.writable) {
      socket.destroy();
      return;
    }
    socket.end(clientErrorResponse(err.code));
  });
}
