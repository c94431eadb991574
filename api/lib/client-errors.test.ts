/**
 * The server's own refusals, on a real HTTP server with the handler: an over-long query is a
 * 431 with a JSON detail (not Node's bare status line), garbage is a 400 with one, and a normal
 * request still reaches the app.
 */
import { createServer, type Server } from "node:http";
import { connect } from "node:net";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { answerClientErrors } from "./client-errors.js";

let server: Server;
let port: number;

beforeAll(async () => {
  server = createServer((_req, res) => res.end("ok"));
  answerClientErrors(server);
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  port = (server.address() as { port: number }).port;
});
afterAll(() => new Promise<void>((r) => server.close(() => r())));

/** Sends raw bytes and reads everything until the server closes. */
const raw = (text: string) =>
  new Promise<string>((resolve, reject) => {
    const s = connect(port, "127.0.0.1", () => s.write(text));
    let got = "";
    s.on("data", (d) => {
      got += d.toString();
    });
    s.on("end", () => resolve(got));
    s.on("error", reject);
  });

describe("client errors", () => {
  it("answers a query above 16 KiB with 431 and a JSON detail", async () => {
    const res = await fetch(`http://127.0.0.1:${port}/api/v1/vaults?q=${"x".repeat(20_000)}`);
    expect(res.status).toBe(431);
    expect(res.headers.get("content-type")).toBe("application/json");
    expect(((await res.json()) as { detail: string }).detail).toMatch(/16 KiB/);
  });

  it("answers a malformed request with 400 and a JSON detail, then closes", async () => {
    const text = await raw("NOT HTTP AT ALL\r\n\r\n");
    expect(text).toMatch(/^HTTP\/1\.1 400 Bad Request\r\n/);
    const body = text.slice(text.indexOf("\r\n\r\n") + 4);
    expect(JSON.parse(body).detail).toMatch(/not valid HTTP/);
  });

  it("leaves ordinary requests to the app", async () => {
    const res = await fetch(`http://127.0.0.1:${port}/ok`);
    expect(await res.text()).toBe("ok");
  });
});
