/**
 * The points write routes through the real app (issue 5): wallet registration signed with
 * EIP-712 by viem local accounts (EOAs) and by a SmartWallet (EIP-1271) deployed on the local
 * chain; replayed, expired, foreign and malformed signatures; referrals and the signup bonus;
 * concurrent duplicates (exactly one wins); the daily streak claim over consecutive and skipped
 * days with the app's clock; every write's audit row; scopes and 422 bodies.
 */
import { type AddressInfo, createServer, type Socket } from "node:net";
import { type Address, createPublicClient, createWalletClient, defineChain, type Hex, http, zeroAddress } from "viem";
import { generatePrivateKey, type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SmartWalletAbi } from "../../abis/SmartWalletAbi.js";
import type { App } from "../../api/app.js";
import { registerTypedData } from "../../api/auth/register-message.js";
import { DEFAULT_POINTS_AWARDS } from "../../api/env.js";
import { createKey } from "../../api/keys.js";
import { streakPoints } from "../../api/routes/points/daily-streak-claim.js";
import { bytecode } from "../../contracts/devnet/artifacts.js";
import { formatFixed, parseFixed } from "../../db/fixed.js";
import { type ApiHarness, readAnswer, setupApi } from "../api-harness.js";
import { auditOf, dropCredentialTraces, type Invalid, newAudits, type Refused, send } from "../write-helpers.js";

const REGISTER = "/api/v1/platform/points/register";
const CLAIM = "/api/v1/platform/points/daily_streak/claim";
/** anvil's first default dev account (funded on every anvil chain) */
const ANVIL_DEV_KEY: Hex = "0xac0974bec39a17e36ba4a6b4d238ff944bacb478cbed5efcae784d7bf4f2ff80";

let h: ApiHarness;
let pointsKey: { id: string; key: string };
let otherScopeKey: { id: string; key: string };
const keyIds: string[] = [];
/** every wallet this file registers or claims for (lower case), cleaned up in afterAll */
const wallets = new Set<string>();

type Registered = { success: boolean; message: string; user_id: string; referral_bonus_awarded: boolean };
type Claimed = { success: boolean; pointsAwarded: number; newStreakDays: number; totalPoints: number; message: string };

const nowS = () => Math.floor(Date.now() / 1000);
const lc = (a: string) => a.toLowerCase();
const upper = (a: string) => `0x${a.slice(2).toUpperCase()}`;
let nonceSeq = 0;
const newNonce = () => `w6-nonce-${Date.now()}-${++nonceSeq}`;

interface Signed {
  user_address: string;
  referrer_address?: string | null;
  chain_id: number;
  signature: string;
  nonce: string;
  expiry: number;
}

/** A registration body signed by `signer` (for `user`, default the signer's own address). */
async function signed(
  signer: PrivateKeyAccount,
  o: {
    user?: Address;
    referrer?: Address | null;
    chainId?: number;
    domainChainId?: number;
    nonce?: string;
    expiry?: number;
  } = {},
): Promise<Signed> {
  const user = o.user ?? signer.address;
  const chainId = o.chainId ?? 1;
  const nonce = o.nonce ?? newNonce();
  const expiry = o.expiry ?? nowS() + 3600;
  const signature = await signer.signTypedData(
    registerTypedData({ user, referrer: o.referrer ?? null, chainId: o.domainChainId ?? chainId, nonce, expiry }),
  );
  wallets.add(lc(user));
  return {
    user_address: user,
    ...(o.referrer ? { referrer_address: o.referrer } : {}),
    chain_id: chainId,
    signature,
    nonce,
    expiry,
  };
}

const register = (body: unknown, key: string | null = pointsKey.key, headers: Record<string, string> = {}) =>
  send<Registered & Refused & Invalid>(h.app, "POST", REGISTER, body, {
    ...(key ? { "x-api-key": key } : {}),
    ...headers,
  });

const fresh = () => privateKeyToAccount(generatePrivateKey());

beforeAll(async () => {
  h = await setupApi();
  pointsKey = await createKey(h.db, "w6-points", ["points:write"]);
  otherScopeKey = await createKey(h.db, "w6-points-other-scope", ["rewards:write", "strategy_apy:write"]);
  keyIds.push(pointsKey.id, otherScopeKey.id);
}, 600_000);

afterAll(async () => {
  if (h) {
    const ws = [...wallets];
    if (ws.length) {
      await h.db.deleteFrom("registry.streak_claim").where("address", "in", ws).execute();
      await h.db.deleteFrom("registry.register_nonce").where("address", "in", ws).execute();
      // referees first (they reference their referrer)
      await h.db
        .deleteFrom("registry.points_user")
        .where("address", "in", ws)
        .where("referrer", "is not", null)
        .execute();
      await h.db.deleteFrom("registry.points_user").where("address", "in", ws).execute();
    }
    await dropCredentialTraces(h, keyIds);
  }
  await h?.close();
});

describe("POST /api/v1/platform/points/register: EOA signatures", () => {
  it("a valid EIP-712 signature registers the wallet once: user row, spent nonce, audit row", async () => {
    const a = fresh();
    const body = await signed(a);
    const before = (await auditOf(h, pointsKey.id)).length;
    const r = await register(body);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toEqual({
      success: true,
      message: "Registered",
      user_id: expect.stringMatching(/^[0-9a-f-]{36}$/),
      referral_bonus_awarded: false,
    });
    expect(r.res.headers.get("idempotent-replayed")).toBeNull();
    const users = await h.q<{ id: string; referrer: string | null; chain_id: number; signup_bonus: string }>(
      "SELECT id::text, referrer, chain_id, signup_bonus::text FROM registry.points_user WHERE address = $1",
      [lc(a.address)],
    );
    expect(users).toEqual([{ id: r.body.user_id, referrer: null, chain_id: 1, signup_bonus: "0.000000000000000000" }]);
    expect(
      await h.q("SELECT nonce, chain_id FROM registry.register_nonce WHERE address = $1", [lc(a.address)]),
    ).toEqual([{ nonce: body.nonce, chain_id: 1 }]);
    // no referrer: no signup bonus entry
    expect(
      await h.q("SELECT 1 FROM derived.points_ledger WHERE wallet = $1 AND source = 'signup_bonus'", [lc(a.address)]),
    ).toEqual([]);
    const audits = await newAudits(h, pointsKey.id, before);
    expect(audits).toEqual([
      expect.objectContaining({
        principal_kind: "api_key",
        principal_id: pointsKey.id,
        action: "points.register",
        target: `wallet:${lc(a.address)}`,
        method: "POST",
        path: REGISTER,
        status: 200,
        outcome: "ok",
        code: null,
        idempotency_key: null,
        detail: { referrer: null, chain_id: 1, signup_bonus: "0", nonce: body.nonce },
      }),
    ]);
    // the audit row names the request: its id is the answer's X-Request-Id
    expect(audits[0]!.request_id).toBe(r.res.headers.get("x-request-id"));
    expect(audits[0]!.request_id).toEqual(expect.any(String));

    // the same signed message again: a replay, refused (409 nonce_used) and audited as refused
    const replay = await register(body);
    expect(replay.status).toBe(409);
    expect(replay.body).toEqual({ detail: expect.any(String), code: "nonce_used" });
    // a new message (new nonce) for a registered wallet
    const again = await register(await signed(a));
    expect(again.status).toBe(409);
    expect(again.body.code).toBe("already_registered");
    expect(
      await h.q("SELECT count(*)::int AS n FROM registry.points_user WHERE address = $1", [lc(a.address)]),
    ).toEqual([{ n: 1 }]);
    expect(
      (await newAudits(h, pointsKey.id, before + 1)).map((x) => [x.status, x.outcome, x.code, x.target, x.action]),
    ).toEqual([
      [409, "refused", "nonce_used", null, "points.register"],
      [409, "refused", "already_registered", null, "points.register"],
    ]);
  });

  it("with an Idempotency-Key a retry of a registration replays its 200 (not nonce_used); concurrent retries register once", async () => {
    const a = fresh();
    const body = await signed(a);
    const k = `w6-register-${body.nonce}`;
    const rs = await Promise.all(
      Array.from({ length: 4 }, () => register(body, pointsKey.key, { "idempotency-key": k })),
    );
    expect(rs.map((r) => r.status)).toEqual([200, 200, 200, 200]);
    expect(new Set(rs.map((r) => r.body.user_id)).size).toBe(1);
    expect(rs.filter((r) => r.res.headers.get("idempotent-replayed") === "true")).toHaveLength(3);
    const later = await register(body, pointsKey.key, { "idempotency-key": k });
    expect(later.status).toBe(200);
    expect(later.body).toEqual(rs[0]!.body);
    expect(
      await h.q("SELECT count(*)::int AS n FROM registry.points_user WHERE address = $1", [lc(a.address)]),
    ).toEqual([{ n: 1 }]);
    expect(await h.q("SELECT outcome FROM registry.write_audit WHERE idempotency_key = $1", [k])).toEqual([
      { outcome: "ok" },
    ]);
    // without the key the same message is a replay
    expect((await register(body)).body.code).toBe("nonce_used");
  });

  it("the address in any letter case (lower, checksummed, upper) with the same signature", async () => {
    for (const form of [lc, (x: string) => x, upper]) {
      const a = fresh();
      const body = await signed(a);
      const r = await register({ ...body, user_address: form(a.address) });
      expect(r.status, `${form(a.address)}: ${JSON.stringify(r.body)}`).toBe(200);
      expect(await h.q("SELECT address FROM registry.points_user WHERE address = $1", [lc(a.address)])).toHaveLength(1);
    }
  });

  it("chain_id and expiry written as text, as FastAPI (pydantic) reads them, with the same signature", async () => {
    const a = fresh();
    const body = await signed(a);
    const r = await register({ ...body, chain_id: String(body.chain_id), expiry: ` ${body.expiry}` });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(await h.q("SELECT address FROM registry.points_user WHERE address = $1", [lc(a.address)])).toHaveLength(1);
  });

  it("an expiry past 2^53 as a string of digits, up to 2^256 - 1 (never); as a JSON number 422", async () => {
    const never = (1n << 256n) - 1n;
    const bodyOf = async (a: PrivateKeyAccount, expiry: bigint) => {
      const nonce = newNonce();
      const typed = registerTypedData({ user: a.address, referrer: null, chainId: 1, nonce, expiry });
      wallets.add(lc(a.address));
      return { user_address: a.address, chain_id: 1, signature: await a.signTypedData(typed), nonce };
    };
    const a = fresh();
    const r = await register({ ...(await bodyOf(a, never)), expiry: never.toString() });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    // with an Idempotency-Key the request is hashed as JSON: the expiry as its digits (a bigint
    // would not serialise)
    const again = await register({ ...(await bodyOf(fresh(), never)), expiry: never.toString() }, pointsKey.key, {
      "idempotency-key": "w6-expiry-never",
    });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    const b = fresh();
    const big = await bodyOf(b, 2n ** 60n);
    const refusedAs = async (expiry: unknown, type: string) => {
      const x = await register({ ...big, expiry });
      expect(x.status, JSON.stringify(x.body)).toBe(422);
      expect(x.body.detail).toEqual([expect.objectContaining({ loc: ["body", "expiry"], type })]);
    };
    await refusedAs(2 ** 60, "value_error"); // a JSON number that large may have lost digits
    await refusedAs((never + 1n).toString(), "less_than_equal");
    await refusedAs("-5", "greater_than_equal");
    await refusedAs(true, "int_type");
    expect(await h.q("SELECT 1 FROM registry.points_user WHERE address = $1", [lc(b.address)])).toEqual([]);
    expect((await register({ ...big, expiry: (2n ** 60n).toString() })).status).toBe(200);
  });

  it("an expired signature: 400 signature_expired, nothing written", async () => {
    const a = fresh();
    const r = await register(await signed(a, { expiry: nowS() - 60 }));
    expect(r.status).toBe(400);
    expect(r.body).toEqual({ detail: expect.stringContaining("expired"), code: "signature_expired" });
    expect(await h.q("SELECT 1 FROM registry.points_user WHERE address = $1", [lc(a.address)])).toEqual([]);
    expect(await h.q("SELECT 1 FROM registry.register_nonce WHERE address = $1", [lc(a.address)])).toEqual([]);
    const [last] = (await auditOf(h, pointsKey.id)).slice(-1);
    expect(last).toMatchObject({
      action: "points.register",
      status: 400,
      outcome: "refused",
      code: "signature_expired",
    });
  });

  it("foreign signatures: another key, another chain's domain, another nonce, expiry or referrer than signed: 403 invalid_signature", async () => {
    const a = fresh();
    const b = fresh();
    const good = await signed(a);
    const cases: [string, Signed][] = [
      ["signed by another wallet", await signed(b, { user: a.address })],
      ["signed for chain 8453, sent for chain 1", await signed(a, { domainChainId: 8453 })],
      ["another nonce than signed", { ...good, nonce: `${good.nonce}x` }],
      ["another expiry than signed", { ...good, expiry: good.expiry + 1 }],
      ["another user than signed", { ...(await signed(b)), user_address: a.address }],
    ];
    for (const [what, body] of cases) {
      const r = await register(body);
      expect(r.status, what).toBe(403);
      expect(r.body, what).toEqual({ detail: expect.any(String), code: "invalid_signature" });
    }
    expect(await h.q("SELECT 1 FROM registry.points_user WHERE address = $1", [lc(a.address)])).toEqual([]);
    // refusals spend no nonce: the genuine message still registers
    expect((await register(good)).status).toBe(200);
  });

  it("malformed signatures: 403 invalid_signature for well-formed hex that is no signature, 422 for what is not hex", async () => {
    const a = fresh();
    const good = await signed(a);
    const sig = good.signature;
    // a flipped byte in r, a wrong recovery byte, a truncated and an over-long signature, junk bytes
    const flipped = `${sig.slice(0, 10)}${sig[10] === "0" ? "1" : "0"}${sig.slice(11)}`;
    for (const bad of [
      flipped,
      `${sig.slice(0, -2)}1f`,
      sig.slice(0, 130),
      `${sig}00`,
      "0xdeadbeef",
      `0x${"00".repeat(65)}`,
      "0x123",
    ]) {
      const r = await register({ ...good, signature: bad });
      expect(r.status, bad).toBe(403);
      expect(r.body.code, bad).toBe("invalid_signature");
    }
    for (const bad of ["", "0x", "deadbeef", `0x${"zz".repeat(65)}`, `0x${"ab".repeat(10_001)}`]) {
      const r = await register({ ...good, signature: bad });
      expect(r.status, bad.slice(0, 20)).toBe(422);
      expect(r.body.detail[0]!.loc, bad.slice(0, 20)).toEqual(["body", "signature"]);
    }
    expect(await h.q("SELECT 1 FROM registry.points_user WHERE address = $1", [lc(a.address)])).toEqual([]);
  });

  it("referrals: an unregistered referrer is refused without spending the nonce; once it registers, the same message registers with the signup bonus", async () => {
    const referrer = fresh();
    const referee = fresh();
    const body = await signed(referee, { referrer: referrer.address });
    const early = await register(body);
    expect(early.status).toBe(400);
    expect(early.body.code).toBe("referrer_not_registered");
    expect((await register(await signed(referrer))).status).toBe(200);
    const r = await register(body);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ success: true, referral_bonus_awarded: true });
    expect(r.body.message).toContain(lc(referrer.address));
    const [u] = await h.q<{ referrer: string; signup_bonus: string; day: string }>(
      "SELECT referrer, signup_bonus::text, (registered_at AT TIME ZONE 'UTC')::date::text AS day FROM registry.points_user WHERE address = $1",
      [lc(referee.address)],
    );
    expect(u).toMatchObject({
      referrer: lc(referrer.address),
      signup_bonus: `${DEFAULT_POINTS_AWARDS.signupBonus}.000000000000000000`,
    });
    // the bonus entry is in the ledger at once, on the registration's UTC day
    expect(
      await h.q(
        "SELECT day::text, ref, points::text FROM derived.points_ledger WHERE wallet = $1 AND chain_id = 0 AND vault = '' AND source = 'signup_bonus'",
        [lc(referee.address)],
      ),
    ).toEqual([
      { day: u!.day, ref: lc(referrer.address), points: `${DEFAULT_POINTS_AWARDS.signupBonus}.000000000000000000` },
    ]);
    const [last] = (await auditOf(h, pointsKey.id)).slice(-1);
    expect(last).toMatchObject({
      outcome: "ok",
      target: `wallet:${lc(referee.address)}`,
      detail: { referrer: lc(referrer.address), signup_bonus: DEFAULT_POINTS_AWARDS.signupBonus },
    });
  });

  it("the zero address as referrer_address means no referrer, as in the signed message", async () => {
    const a = fresh();
    const body = await signed(a);
    const r = await register({ ...body, referrer_address: zeroAddress });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({ success: true, message: "Registered", referral_bonus_awarded: false });
    expect(
      await h.q("SELECT referrer, signup_bonus::text FROM registry.points_user WHERE address = $1", [lc(a.address)]),
    ).toEqual([{ referrer: null, signup_bonus: "0.000000000000000000" }]);
  });

  it("a wallet referring itself: 400 self_referral", async () => {
    const a = fresh();
    const r = await register(await signed(a, { referrer: a.address }));
    expect(r.status).toBe(400);
    expect(r.body.code).toBe("self_referral");
  });

  it("concurrent duplicates: the same message sent 5 times at once registers once (the others 409 nonce_used)", async () => {
    const a = fresh();
    const body = await signed(a);
    const before = (await auditOf(h, pointsKey.id)).length;
    const rs = await Promise.all(Array.from({ length: 5 }, () => register(body)));
    expect(rs.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409]);
    expect(rs.filter((r) => r.status === 409).map((r) => r.body.code)).toEqual(Array(4).fill("nonce_used"));
    expect(
      await h.q("SELECT count(*)::int AS n FROM registry.points_user WHERE address = $1", [lc(a.address)]),
    ).toEqual([{ n: 1 }]);
    expect(
      await h.q("SELECT count(*)::int AS n FROM registry.register_nonce WHERE address = $1", [lc(a.address)]),
    ).toEqual([{ n: 1 }]);
    const audits = await newAudits(h, pointsKey.id, before);
    expect(audits.map((x) => x.outcome).sort()).toEqual(["ok", "refused", "refused", "refused", "refused"]);
  });

  it("concurrent duplicates: 5 differently signed messages for one wallet at once register it once (the others 409 already_registered)", async () => {
    const a = fresh();
    const bodies = await Promise.all(Array.from({ length: 5 }, () => signed(a)));
    const rs = await Promise.all(bodies.map((b) => register(b)));
    expect(rs.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409]);
    expect(rs.filter((r) => r.status === 409).map((r) => r.body.code)).toEqual(Array(4).fill("already_registered"));
    expect(
      await h.q("SELECT count(*)::int AS n FROM registry.points_user WHERE address = $1", [lc(a.address)]),
    ).toEqual([{ n: 1 }]);
    // only the winner's nonce is spent
    const winner = bodies[rs.findIndex((r) => r.status === 200)]!;
    expect(await h.q("SELECT nonce FROM registry.register_nonce WHERE address = $1", [lc(a.address)])).toEqual([
      { nonce: winner.nonce },
    ]);
  });
});

describe("POST /api/v1/platform/points/register: a smart-contract wallet (EIP-1271)", () => {
  let owner: PrivateKeyAccount;
  let walletAddr: Address;

  beforeAll(async () => {
    const c = h.devnet.chains[0]!;
    const chain = defineChain({
      id: c.chainId,
      name: `devnet-${c.chainId}`,
      nativeCurrency: { name: "Ether", symbol: "ETH", decimals: 18 },
      rpcUrls: { default: { http: [c.rpcUrl] } },
    });
    const deployer = createWalletClient({
      account: privateKeyToAccount(ANVIL_DEV_KEY),
      chain,
      transport: http(c.rpcUrl),
    });
    const client = createPublicClient({ chain, transport: http(c.rpcUrl) });
    owner = fresh();
    const hash = await deployer.deployContract({
      abi: SmartWalletAbi,
      bytecode: bytecode("SmartWallet"),
      args: [owner.address],
    });
    const receipt = await client.waitForTransactionReceipt({ hash });
    expect(receipt.status).toBe("success");
    walletAddr = receipt.contractAddress!;
    expect(await client.readContract({ address: walletAddr, abi: SmartWalletAbi, functionName: "owner" })).toBe(
      owner.address,
    );
    wallets.add(lc(walletAddr));
  });

  it("refuses what the wallet does not accept: a stranger's signature, junk, the owner's signature for a chain where the wallet is not deployed", async () => {
    const stranger = fresh();
    const cases: [string, Signed][] = [
      ["a stranger's signature", await signed(stranger, { user: walletAddr })],
      ["junk bytes", { ...(await signed(owner, { user: walletAddr })), signature: "0xdeadbeef" }],
      // chain 8453 has an RPC but no code at this address: the owner's ECDSA signature is not the address's
      ["chain 8453 (not deployed there)", await signed(owner, { user: walletAddr, chainId: 8453 })],
    ];
    for (const [what, body] of cases) {
      const r = await register(body);
      expect(r.status, `${what}: ${JSON.stringify(r.body)}`).toBe(403);
      expect(r.body.code, what).toBe("invalid_signature");
    }
  });

  it("a chain without an RPC: 503 signature_unverifiable (audited as refused)", async () => {
    const r = await register(await signed(owner, { user: walletAddr, chainId: 10 }));
    expect(r.status).toBe(503);
    expect(r.body).toEqual({ detail: expect.any(String), code: "signature_unverifiable" });
    const [last] = (await auditOf(h, pointsKey.id)).slice(-1);
    expect(last).toMatchObject({
      action: "points.register",
      status: 503,
      outcome: "refused",
      code: "signature_unverifiable",
    });
  });

  it("an RPC that hangs: the signature check holds no write transaction open while it waits", async () => {
    // a node that accepts connections and never answers
    const sockets = new Set<Socket>();
    const hung = createServer((sock) => {
      sockets.add(sock);
      sock.on("error", () => {});
    });
    await new Promise<void>((r) => hung.listen(0, "127.0.0.1", () => r()));
    const url = `http://127.0.0.1:${(hung.address() as AddressInfo).port}`;
    try {
      const app = h.appWith({ rpcUrls: new Map([[1, url]]) });
      const body = await signed(owner, { user: walletAddr });
      const pending = app.request("/api/v1/platform/points/register", {
        method: "POST",
        headers: { "x-api-key": pointsKey.key, "content-type": "application/json" },
        body: JSON.stringify(body),
      });
      await new Promise((r) => setTimeout(r, 1000)); // the check is waiting on the node now
      expect(sockets.size).toBeGreaterThan(0);
      const open = await h.q<{ n: number }>(
        "SELECT count(*)::int AS n FROM pg_stat_activity WHERE application_name = 'vault-api-test' AND state LIKE 'idle in transaction%'",
      );
      expect(open).toEqual([{ n: 0 }]);
      const r = await readAnswer<{ code: string }>(await pending);
      expect(r.status).toBe(503);
      expect(r.body.code).toBe("signature_unverifiable");
      // nothing was spent: the same signed message registers once the node answers
      expect(await h.q("SELECT nonce FROM registry.register_nonce WHERE nonce = $1", [body.nonce])).toEqual([]);
    } finally {
      for (const sock of sockets) sock.destroy();
      await new Promise<void>((r) => hung.close(() => r()));
    }
  }, 20_000);

  it("a 503 is not kept under its Idempotency-Key: the retry, once the node answers, registers", async () => {
    const body = await signed(owner, { user: walletAddr, chainId: 10 });
    const headers = { "idempotency-key": `retry-after-503-${body.nonce}` };
    const first = await register(body, pointsKey.key, headers);
    expect(first.status).toBe(503);
    // the node of "chain 10" answers now (chain 1's: the wallet and its owner are there)
    const chain1 = h.devnet.chains.find((c) => c.chainId === 1)!.rpcUrl;
    const app = h.appWith({
      rpcUrls: new Map([
        [1, chain1],
        [10, chain1],
      ]),
    });
    const again = await send<Registered>(app, "POST", REGISTER, body, { "x-api-key": pointsKey.key, ...headers });
    expect(again.status, JSON.stringify(again.body)).toBe(200);
    expect(again.res.headers.get("idempotent-replayed")).toBeNull();
    // and that answer is the one kept
    const third = await send<Registered>(app, "POST", REGISTER, body, { "x-api-key": pointsKey.key, ...headers });
    expect([third.status, third.res.headers.get("idempotent-replayed")]).toEqual([200, "true"]);
    // as the next test expects: the wallet not registered yet
    await h.q("DELETE FROM registry.points_user WHERE address = $1", [lc(walletAddr)]);
  });

  it("the owner's signature registers the contract wallet (checked on chain 1 through isValidSignature)", async () => {
    const body = await signed(owner, { user: walletAddr });
    const r = await register(body);
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.success).toBe(true);
    expect(await h.q("SELECT chain_id FROM registry.points_user WHERE address = $1", [lc(walletAddr)])).toEqual([
      { chain_id: 1 },
    ]);
    // and a replay of it is refused
    expect((await register(body)).body.code).toBe("nonce_used");
  });
});

describe("write plumbing", () => {
  it("a process without the write pool answers 503 read_only and writes nothing", async () => {
    const a = fresh();
    const readOnly = h.appWithDeps({ wdb: null });
    const r = await send<Refused>(readOnly, "POST", REGISTER, await signed(a), { "x-api-key": pointsKey.key });
    expect(r.status).toBe(503);
    expect(r.body).toEqual({ detail: expect.any(String), code: "read_only" });
    expect(await h.q("SELECT 1 FROM registry.points_user WHERE address = $1", [lc(a.address)])).toEqual([]);
  });

  it("a registration asks the workers for nothing: its ledger entry is a view over the registry", async () => {
    // (the writes that change derived inputs, rewards, ask for a fan-out: 6-api-writes-rewards)
    let asked = 0;
    const down = h.appWithDeps({
      requestRecompute: async () => {
        asked++;
        throw new Error("redis down");
      },
    });
    const referrer = fresh();
    const a = fresh();
    expect((await send(down, "POST", REGISTER, await signed(referrer), { "x-api-key": pointsKey.key })).status).toBe(
      200,
    );
    const body = await signed(a, { referrer: referrer.address });
    const r = await send<Registered>(down, "POST", REGISTER, body, { "x-api-key": pointsKey.key });
    expect(r.status).toBe(200);
    expect(r.body.referral_bonus_awarded).toBe(true);
    expect(asked).toBe(0);
    const entry = await h.q("SELECT source, ref FROM derived.points_entry WHERE wallet = $1", [lc(a.address)]);
    expect(entry).toEqual([{ source: "signup_bonus", ref: lc(referrer.address) }]);
  });
});

describe("POST /api/v1/platform/points/register: credentials and malformed input", () => {
  it("no key 401, revoked key 403, key without points:write 403 insufficient_scope; nothing written", async () => {
    const a = fresh();
    const body = await signed(a);
    const none = await register(body, null);
    expect(none.status).toBe(401);
    expect((await register(body, h.revokedKey)).status).toBe(403);
    for (const key of [h.key, otherScopeKey.key]) {
      const r = await register(body, key);
      expect(r.status).toBe(403);
      expect(r.body).toEqual({ detail: expect.stringContaining("points:write"), code: "insufficient_scope" });
    }
    // a bearer token is no credential on this route
    expect((await register(body, null, { authorization: "Bearer abc.def.ghi" })).status).toBe(401);
    expect(await h.q("SELECT 1 FROM registry.points_user WHERE address = $1", [lc(a.address)])).toEqual([]);
    expect((await register(body)).status).toBe(200);
  });

  it("422 with FastAPI bodies: missing fields, malformed address, types, lengths, a body that is not JSON", async () => {
    const a = fresh();
    const good = await signed(a);
    const cases: [string, unknown, (string | number)[]][] = [
      ["no user_address", { ...good, user_address: undefined }, ["body", "user_address"]],
      ["short address", { ...good, user_address: "0x1234" }, ["body", "user_address"]],
      ["bad referrer", { ...good, referrer_address: "nope" }, ["body", "referrer_address"]],
      ["chain_id as a word", { ...good, chain_id: "one" }, ["body", "chain_id"]],
      ["expiry as a fraction in text", { ...good, expiry: "1.5" }, ["body", "expiry"]],
      ["chain_id 0", { ...good, chain_id: 0 }, ["body", "chain_id"]],
      // signed for that chain, so only the column's range is wrong (it was a 500: integer overflow)
      ["chain_id past a 32-bit column", await signed(fresh(), { chainId: 2 ** 31 }), ["body", "chain_id"]],
      ["nonce too short", { ...good, nonce: "short" }, ["body", "nonce"]],
      ["nonce too long", { ...good, nonce: "n".repeat(129) }, ["body", "nonce"]],
      // signed as it is, so only the nonce's NUL is wrong (it was a 500: Postgres text refuses NUL)
      ["nonce with NUL", await signed(fresh(), { nonce: `w6-nul\u0000${Date.now()}` }), ["body", "nonce"]],
      ["expiry not an integer", { ...good, expiry: 1.5 }, ["body", "expiry"]],
      ["no signature", { ...good, signature: undefined }, ["body", "signature"]],
    ];
    for (const [what, body, loc] of cases) {
      const r = await register(body);
      expect(r.status, what).toBe(422);
      expect(r.body.detail, what).toEqual(
        expect.arrayContaining([expect.objectContaining({ loc, msg: expect.any(String), type: expect.any(String) })]),
      );
    }
    const missing = await register({});
    expect(missing.status).toBe(422);
    expect(missing.body.detail.map((d) => d.loc[1]).sort()).toEqual([
      "chain_id",
      "expiry",
      "nonce",
      "signature",
      "user_address",
    ]);
    expect(missing.body.detail.every((d) => d.type === "missing" && d.msg === "Field required")).toBe(true);
    const notJson = await register("{not json");
    expect(notJson.status).toBe(422);
    expect(notJson.body.detail[0]!.loc).toEqual(["body"]);
    expect(await h.q("SELECT 1 FROM registry.points_user WHERE address = $1", [lc(a.address)])).toEqual([]);
  });
});

describe("POST /api/v1/platform/points/daily_streak/claim", () => {
  let clock = new Date("2026-10-05T08:00:00Z");
  let clocked: App;
  let holders: string[] = [];
  const claim = (address: string, app: App = clocked, key: string | null = pointsKey.key) =>
    send<Claimed & Refused & Invalid>(app, "POST", CLAIM, { address }, key ? { "x-api-key": key } : {});
  const balanceOf = async (w: string) =>
    (await h.q<{ t: string }>("SELECT total_points::text AS t FROM derived.points_balance WHERE wallet = $1", [w]))[0]
      ?.t ?? "0";
  const claimsOf = (w: string) =>
    h.q<{ day: string; streak_days: number; points: string }>(
      "SELECT day::text, streak_days, points::text FROM registry.streak_claim WHERE address = $1 ORDER BY day",
      [w],
    );
  const ledgerOf = (w: string) =>
    h.q<{ day: string; points: string }>(
      "SELECT day::text, points::text FROM derived.points_ledger WHERE wallet = $1 AND chain_id = 0 AND vault = '' AND source = 'daily_streak' ORDER BY day",
      [w],
    );
  const fx = (p: string) => `${Number(p).toFixed(0)}.000000000000000000`;

  beforeAll(async () => {
    clocked = h.appWithDeps({ now: () => clock });
    // share holders of the devnet nobody registered (the devnet's wallets cannot sign: their
    // addresses are derived from names, so they are registered here directly)
    holders = (
      await h.q<{ wallet: string }>(
        `SELECT DISTINCT p.wallet FROM derived.points_pool p
         WHERE p.shares > 0
           AND NOT EXISTS (SELECT 1 FROM registry.points_user u WHERE u.address = p.wallet OR u.referrer = p.wallet)
           AND NOT EXISTS (SELECT 1 FROM registry.streak_claim s WHERE s.address = p.wallet)
         ORDER BY p.wallet DESC LIMIT 4`,
      )
    ).map((r) => r.wallet);
    expect(holders).toHaveLength(4);
    for (const w of holders) {
      wallets.add(w);
      await h.db
        .insertInto("registry.points_user")
        .values({ address: w, referrer: null, chain_id: 1, registered_at: "2026-09-01T00:00:00Z" })
        .execute();
    }
  });

  it("consecutive days grow the streak, a skipped day restarts it, one claim per UTC day; ledger and audit rows", async () => {
    const w = holders[0]!;
    const rules = DEFAULT_POINTS_AWARDS;
    const base = await balanceOf(w);
    const steps: [string, number][] = [
      ["2026-10-05T08:00:00Z", 1],
      ["2026-10-06T23:59:59Z", 2],
      ["2026-10-07T00:00:01Z", 3],
      // 2026-10-08 skipped
      ["2026-10-09T12:00:00Z", 1],
      ["2026-10-10T00:00:00Z", 2],
    ];
    const before = (await auditOf(h, pointsKey.id)).length;
    // totalPoints is the wallet's live total, this claim included
    let claimed = 0n;
    for (const [at, streak] of steps) {
      clock = new Date(at);
      const r = await claim(upper(w));
      expect(r.status, `${at}: ${JSON.stringify(r.body)}`).toBe(200);
      const pts = streakPoints(rules, streak);
      claimed += parseFixed(pts);
      expect(r.body).toEqual({
        success: true,
        pointsAwarded: Number(pts),
        newStreakDays: streak,
        totalPoints: Number(formatFixed(parseFixed(base) + claimed)),
        message: streak > 1 ? `Day ${streak} of your streak` : "Streak started",
      });
      // the same UTC day again
      clock = new Date(new Date(at).getTime() + 1000);
      if (clock.toISOString().slice(0, 10) === at.slice(0, 10)) {
        const again = await claim(w);
        expect(again.status, at).toBe(409);
        expect(again.body.code).toBe("already_claimed");
      }
    }
    const expected = steps.map(([at, s]) => ({
      day: at.slice(0, 10),
      streak_days: s,
      points: fx(streakPoints(rules, s)),
    }));
    expect(await claimsOf(w)).toEqual(expected);
    expect(await ledgerOf(w)).toEqual(expected.map(({ day, points }) => ({ day, points })));
    // a clock gone back before the last claim cannot claim
    clock = new Date("2026-10-08T12:00:00Z");
    expect((await claim(w)).body.code).toBe("already_claimed");

    const audits = await newAudits(h, pointsKey.id, before);
    const ok = audits.filter((a) => a.outcome === "ok");
    expect(ok.map((a) => a.detail)).toEqual(
      expected.map((e) => ({ day: e.day, streak_days: e.streak_days, points: streakPoints(rules, e.streak_days) })),
    );
    for (const a of ok)
      expect(a).toMatchObject({
        action: "points.streak_claim",
        target: `wallet:${w}`,
        path: CLAIM,
        status: 200,
        principal_id: pointsKey.id,
      });
    expect(
      audits.filter((a) => a.outcome === "refused").every((a) => a.code === "already_claimed" && a.status === 409),
    ).toBe(true);
    expect(audits.filter((a) => a.outcome === "refused")).toHaveLength(steps.length);
  });

  it("with an Idempotency-Key a retried claim replays its answer; another key the same day is already_claimed", async () => {
    const w = holders[3]!;
    clock = new Date("2026-10-20T10:00:00Z");
    const k = `w6-claim-${w}-${Date.now()}`;
    const first = await send<Claimed>(
      clocked,
      "POST",
      CLAIM,
      { address: w },
      { "x-api-key": pointsKey.key, "idempotency-key": k },
    );
    expect(first.status).toBe(200);
    const again = await send<Claimed>(
      clocked,
      "POST",
      CLAIM,
      { address: w },
      { "x-api-key": pointsKey.key, "idempotency-key": k },
    );
    expect(again.status).toBe(200);
    expect(again.res.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body).toEqual(first.body);
    const other = await send<Refused>(
      clocked,
      "POST",
      CLAIM,
      { address: w },
      { "x-api-key": pointsKey.key, "idempotency-key": `${k}-2` },
    );
    expect(other.status).toBe(409);
    expect(other.body.code).toBe("already_claimed");
    expect(await claimsOf(w)).toHaveLength(1);
    await h.db.deleteFrom("registry.streak_claim").where("address", "=", w).execute();
  });

  it("the streak's points stop growing at POINTS_STREAK_MAX", async () => {
    const w = holders[1]!;
    await h.db
      .insertInto("registry.streak_claim")
      .values({ address: w, day: "2026-10-04", streak_days: 45, points: "50", claimed_at: "2026-10-04T10:00:00Z" })
      .execute();
    clock = new Date("2026-10-05T10:00:00Z");
    const r = await claim(w);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ newStreakDays: 46, pointsAwarded: Number(DEFAULT_POINTS_AWARDS.streakMax) });
  });

  it("concurrent claims for one wallet and day: exactly one wins", async () => {
    const w = holders[2]!;
    clock = new Date("2026-10-05T10:00:00Z");
    const rs = await Promise.all(Array.from({ length: 6 }, () => claim(w)));
    expect(rs.map((r) => r.status).sort()).toEqual([200, 409, 409, 409, 409, 409]);
    expect(rs.filter((r) => r.status === 409).every((r) => r.body.code === "already_claimed")).toBe(true);
    expect(await claimsOf(w)).toEqual([
      { day: "2026-10-05", streak_days: 1, points: fx(DEFAULT_POINTS_AWARDS.streakBase) },
    ]);
    expect(await ledgerOf(w)).toHaveLength(1);
  });

  it("refusals: not registered 404 user_not_found, no position 409 no_active_positions; nothing written", async () => {
    clock = new Date("2026-10-05T10:00:00Z");
    const stranger = lc(fresh().address);
    const r = await claim(stranger);
    expect(r.status).toBe(404);
    expect(r.body).toEqual({ detail: expect.any(String), code: "user_not_found" });
    // registered through the route, but holds nothing
    const a = fresh();
    expect((await register(await signed(a))).status).toBe(200);
    const idle = await claim(a.address);
    expect(idle.status).toBe(409);
    expect(idle.body.code).toBe("no_active_positions");
    expect(await claimsOf(lc(a.address))).toEqual([]);
    expect(await ledgerOf(lc(a.address))).toEqual([]);
    const [last] = (await auditOf(h, pointsKey.id)).slice(-1);
    expect(last).toMatchObject({
      action: "points.streak_claim",
      outcome: "refused",
      code: "no_active_positions",
      status: 409,
    });
  });

  it("credentials and malformed input: 401, 403 insufficient_scope, 422 on the address", async () => {
    const w = holders[3]!;
    clock = new Date("2026-10-05T10:00:00Z");
    expect((await claim(w, clocked, null)).status).toBe(401);
    const noScope = await claim(w, clocked, h.key);
    expect(noScope.status).toBe(403);
    expect(noScope.body.code).toBe("insufficient_scope");
    expect((await claim(w, clocked, otherScopeKey.key)).body.code).toBe("insufficient_scope");
    for (const body of [{}, { address: "0x12" }, { address: 42 }, { wallet: w }]) {
      const r = await send<Invalid>(clocked, "POST", CLAIM, body, { "x-api-key": pointsKey.key });
      expect(r.status, JSON.stringify(body)).toBe(422);
      expect(r.body.detail[0]!.loc).toEqual(["body", "address"]);
    }
    expect(await claimsOf(w)).toEqual([]);
    // the harness app (real clock) claims too
    const real = await claim(w, h.app);
    expect(real.status).toBe(200);
    expect(await claimsOf(w)).toEqual([
      {
        day: expect.stringMatching(/^\d{4}-\d{2}-\d{2}$/),
        streak_days: 1,
        points: fx(DEFAULT_POINTS_AWARDS.streakBase),
      },
    ]);
  });
});
