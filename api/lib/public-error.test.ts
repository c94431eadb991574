import { HttpRequestError, RpcRequestError, TimeoutError } from "viem";
import { describe, expect, it } from "vitest";
import { databaseFailure, publicMessage } from "./public-error.js";

const url = "https://eth.example.com/v2/SECRETKEY123";

describe("publicMessage", () => {
  it("gives viem's short message, never the request's URL or body", () => {
    const body = { method: "eth_blockNumber" };
    for (const e of [
      new HttpRequestError({ url, body, details: `connect ECONNREFUSED ${url}` }),
      new TimeoutError({ url, body }),
      new RpcRequestError({ url, body, error: { code: -32000, message: "header not found" } }),
    ]) {
      expect(e.message).toContain("SECRETKEY123");
      const m = publicMessage(e);
      expect(m).not.toContain("SECRETKEY123");
      expect(m).not.toContain("eth_blockNumber");
      expect(m.length).toBeGreaterThan(0);
    }
  });

  it("keeps a plain error's first line, URLs replaced, at most 200 characters", () => {
    expect(publicMessage(new Error(`fetch ${url} failed\nstack`))).toBe("fetch <url> failed");
    expect(publicMessage(new Error("postgres://u:pw@db:5432/x refused"))).toBe("<url> refused");
    expect(publicMessage(new Error("x".repeat(5_000)))).toHaveLength(200);
    expect(publicMessage("text")).toBe("text");
    expect(publicMessage(new Error(""))).toBe("no message");
  });
});

describe("databaseFailure", () => {
  it("names a code and its class, never the message", () => {
    const e = (code: string, message: string) => Object.assign(new Error(message), { code });
    expect(databaseFailure(e("28P01", 'password authentication failed for user "svc"'))).toBe(
      "the database refused (28P01: the credentials were refused)",
    );
    expect(databaseFailure(e("ECONNREFUSED", "connect ECONNREFUSED 10.0.0.5:5432"))).toBe(
      "the database cannot be reached (ECONNREFUSED)",
    );
    expect(databaseFailure(e("42P01", 'relation "secret" does not exist'))).toBe(
      "the database refused (42P01: see the API's log)",
    );
    expect(databaseFailure(new Error("Connection terminated unexpectedly"))).toBe(
      "the database failed (see the API's log)",
    );
  });
});
