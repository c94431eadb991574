/** Passwords, tokens, the register message, stable request hashing and streak points. */

import { decode } from "hono/jwt";
import { generatePrivateKey, privateKeyToAccount } from "viem/accounts";
import { describe, expect, it } from "vitest";
import type { ReadDb } from "../lib/db.js";
import { stableJson } from "../lib/writes.js";
import { streakPoints } from "../routes/points/daily-streak-claim.js";
import { hashPassword, passwordProblem, verifyPassword } from "./passwords.js";
import { registerTypedData, verifyRegistration } from "./register-message.js";
import { checkToken, issueToken } from "./tokens.js";

describe("operator passwords (scrypt)", () => {
  it("verifies the right password only, with a per-hash salt", async () => {
    const h1 = await hashPassword("correct horse battery");
    const h2 = await hashPassword("correct horse battery");
    expect(h1).toMatch(/^scrypt\$15\$8\$1\$/);
    expect(h1).not.toBe(h2);
    expect(await verifyPassword("correct horse battery", h1)).toBe(true);
    expect(await verifyPassword("correct horse batterz", h1)).toBe(false);
    expect(await verifyPassword("correct horse battery", "plaintext")).toBe(false);
    expect(await verifyPassword("x", h1.replace("$15$", "$40$"))).toBe(false); // absurd cost refused, not attempted
  });
  it("password rules", () => {
    expect(passwordProblem("short")).toMatch(/at least 12/);
    expect(passwordProblem("long enough password")).toBeNull();
  });
});

describe("bearer tokens", () => {
  const secret = "s".repeat(40);
  const noDb = null as unknown as ReadDb; // these checks fail before the account lookup
  it("carry the operator and the scopes, and expire", async () => {
    const t = await issueToken(secret, "alice", ["strategy_apy:write"], 900, 1_000_000);
    expect(t).toMatchObject({ token_type: "bearer", expires_in: 900, scope: "strategy_apy:write" });
    expect(decode(t.access_token).payload).toMatchObject({
      sub: "alice",
      scope: "strategy_apy:write",
      iat: 1_000_000,
      exp: 1_000_900,
    });
    expect(await checkToken(noDb, secret, t.access_token)).toEqual({ ok: false, reason: "expired" });
  });
  it("refuse another key's signature and garbage", async () => {
    const t = await issueToken(secret, "alice", [], 900);
    expect(await checkToken(noDb, "t".repeat(40), t.access_token)).toEqual({ ok: false, reason: "invalid" });
    expect(await checkToken(noDb, secret, "not.a.jwt")).toEqual({ ok: false, reason: "invalid" });
  });
});

describe("register message (EIP-712)", () => {
  const account = privateKeyToAccount(generatePrivateKey());
  const other = privateKeyToAccount(generatePrivateKey());
  const m = { user: account.address, referrer: null, chainId: 1, nonce: "nonce-0001", expiry: 2_000_000_000 };
  it("an EOA's signature verifies without an RPC; another signer's or another message's does not", async () => {
    const sig = await account.signTypedData(registerTypedData(m));
    expect(await verifyRegistration(m, sig, undefined)).toBe("valid");
    expect(await verifyRegistration({ ...m, nonce: "nonce-0002" }, sig, undefined)).toBe("unverifiable"); // could be a contract wallet: needs the chain
    const foreign = await other.signTypedData(registerTypedData(m));
    expect(await verifyRegistration(m, foreign, "http://127.0.0.1:1")).toBe("unverifiable"); // RPC down
    expect(await verifyRegistration({ ...m, chainId: 8453 }, sig, undefined)).toBe("unverifiable");
  });
  it("the referrer is the zero address when there is none", () => {
    expect(registerTypedData(m).message.referrer).toBe("0x0000000000000000000000000000000000000000");
  });
});

describe("request hashing for Idempotency-Key", () => {
  it("ignores key order and undefined fields", () => {
    expect(stableJson({ b: 1, a: [{ y: 2, x: 1 }], c: undefined })).toBe(stableJson({ a: [{ x: 1, y: 2 }], b: 1 }));
    expect(stableJson({ a: 1 })).not.toBe(stableJson({ a: "1" }));
  });
});

describe("daily streak points", () => {
  const rules = { streakBase: "10", streakStep: "2.5", streakMax: "20" };
  it("grow by the step per streak day up to the maximum", () => {
    expect([1, 2, 3, 4, 5, 9].map((n) => Number(streakPoints(rules, n)))).toEqual([10, 12.5, 15, 17.5, 20, 20]);
  });
});
