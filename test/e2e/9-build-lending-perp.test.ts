/**
 * The lending-market and perp-deposit builders on a protocol world of this file's own: every
 * payload a route answers is sent by the subaccount's trader (with its gas_limit, in the block the
 * simulation stood for) and the chain is held to what the answer said: aToken, debt-token and
 * underlying balances, Aave's account data and health factor, no approval left, the bridge's
 * Deposited event with the returned core_hash, and the core ledger crediting it through this
 * repository's relayer worker. Every refusal is recorded in registry.build_audit and sends nothing.
 */
import { randomUUID } from "node:crypto";
import { type Context, Hono } from "hono";
import {
  type Abi,
  type Address,
  createPublicClient,
  formatUnits,
  getAddress,
  type Hex,
  HttpRequestError,
  http,
  IntegerOutOfRangeError,
  keccak256,
  parseAbi,
  parseEventLogs,
  toHex,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CoreLedgerAbi } from "../../abis/CoreLedgerAbi.js";
import { Multicall3RuntimeCode } from "../../abis/Multicall3Abi.js";
import { PerpBridgeAAbi } from "../../abis/PerpBridgeAAbi.js";
import type { App } from "../../api/app.js";
import { createKey } from "../../api/keys.js";
import { AuditWriter, runBuild } from "../../api/lib/build/audit.js";
import type { AppDeps, AppEnv } from "../../api/lib/router.js";
import { MULTICALL3 } from "../../config/multicall3.js";
import { coreHash, deployCoreLedger } from "../../contracts/devnet/protocols/index.js";
import { ERC20_ABI } from "../../contracts/devnet/protocols/tx.js";
import { relayerConfig } from "../../jobs/relayer/config.js";
import { type RelayerHandle, startRelayer } from "../../jobs/relayer/worker.js";
import { rpc } from "../../scripts/lib/anvil.js";
import { type ApiHarness, readAnswer, setupApi } from "../api-harness.js";
import { loadManifest, PORT_OFFSET, sleep } from "../helpers.js";
import { actor, buildWorld, call, moduleCall, registerWorld, type World } from "../protocol-world.js";
import { type RpcProxy, rpcProxy } from "../swap-world.js";

const PORT = 18_740 + PORT_OFFSET + 160;
const E18 = 10n ** 18n;
const E6 = 10n ** 6n;
const ERC20 = parseAbi([
  "function balanceOf(address) view returns (uint256)",
  "function allowance(address, address) view returns (uint256)",
]);
const POOL = parseAbi([
  "function getUserAccountData(address) view returns (uint256, uint256, uint256, uint256, uint256, uint256)",
]);
const RELAYER_KEY = keccak256(toHex("9-build-lending-perp relayer"));

let h: ApiHarness;
let w: World;
let app: App;
let drop: () => Promise<void>;
let key: string;
let relayer: RelayerHandle | undefined;
/** counts the API's RPC calls to the world's chain */
let proxy: RpcProxy;
let ledger: Address;
let usdc: Address;
let weth: Address;
const reserve = (a: Address) => w.p.aave.reserves.find((r) => r.asset === a)!;

const read = async <T>(to: Address, abi: Abi, fn: string, args: readonly unknown[] = []): Promise<T> =>
  (await createPublicClient({ transport: http(w.anvil.rpcUrl) }).readContract({
    address: to,
    abi,
    functionName: fn,
    args: args as unknown[],
  })) as T;
const balance = (token: Address, holder: Address = w.sub.safe) => read<bigint>(token, ERC20, "balanceOf", [holder]);
const head = async () => BigInt(await rpc<Hex>(w.anvil.rpcUrl, "eth_blockNumber", []));
/**
 * An app reaching this file's chain (8453) through `url`, a pass-through, and the devnet's chains
 * directly: a borrow's floor check reads the subaccount on every catalogue chain.
 */
const appVia = (url: string) =>
  h.appWith({ rpcUrls: new Map([...h.devnet.chains.map((c) => [c.chainId, c.rpcUrl] as const), [8453, url]]) });

interface Units {
  raw: string;
  amount: number;
}
interface Payload {
  build_id: string;
  chain_id: number;
  from: string;
  target: string;
  data: Hex;
  value: string;
  gas_limit: string;
  approvals: { token: string; spender: string; amount_raw: string }[];
  calls: { target: string; description: string }[];
  simulation: { method: string; block_number: number; timestamp: number; gas_used: string };
}
interface Account {
  total_collateral_base: string;
  total_debt_base: string;
  total_collateral_usd: number;
  total_debt_usd: number;
  health_factor: number | null;
  health_factor_raw: string | null;
}
interface Change {
  token: string;
  before: Units;
  after: Units;
  change: Units;
}
interface Lending extends Payload {
  operation: string;
  all: boolean;
  amount: Units | null;
  health_factor: { before: number | null; after: number | null };
  account: { before: Account; after: Account };
  subaccount_health_factor: { minimum: number; before: number | null; after: number | null } | null;
  balances: { underlying: Change; a_token: Change; debt_token: Change };
}
interface Perp extends Payload {
  core_hash: Hex;
  nonce: string;
  bridge: string;
  destination: string;
  token: { address: string; symbol: string; decimals: number };
  minimum: Units;
  amount: Units;
  status_url: string;
  core: { chain_id: number; ledger: string } | null;
}
interface Refused {
  detail: string | { loc: (string | number)[]; msg: string; type: string }[];
  code?: string;
  reasons?: { candidate: string; kind: string; name: string; message: string }[];
}

async function post<T>(path: string, body: unknown, k: string | null = key, to: App = app) {
  const headers: Record<string, string> = { "content-type": "application/json" };
  if (k) headers["x-api-key"] = k;
  return readAnswer<T>(await to.request(`/api/v1${path}`, { method: "POST", headers, body: JSON.stringify(body) }));
}
const lending = (op: string, market: Address, body: Record<string, unknown>, sub: string = w.sub.safe) =>
  post<Lending & Refused>(`/integrations/lending_market/${market}/${op}/${sub}`, {
    chain: 8453,
    from: w.trader,
    ...body,
  });
const perp = (relayerName: "a" | "b", body: Record<string, unknown>) =>
  post<Perp & Refused>(`/integrations/perp_relayer_${relayerName}/deposit`, {
    subaccount: w.sub.safe,
    chain: 8453,
    from: w.trader,
    ...body,
  });

/** The answer's transaction, sent by its `from` with its gas limit, in the block the simulation stood for. */
async function send(p: Payload) {
  expect(p.from).toBe(w.trader);
  expect(await head()).toBe(BigInt(p.simulation.block_number));
  await rpc(w.anvil.rpcUrl, "evm_setNextBlockTimestamp", [p.simulation.timestamp]);
  const hash = await rpc<Hex>(w.anvil.rpcUrl, "eth_sendTransaction", [
    {
      from: p.from,
      to: p.target,
      data: p.data,
      value: toHex(BigInt(p.value)),
      gas: toHex(BigInt(p.gas_limit)),
      gasPrice: "0x0",
    },
  ]);
  const client = createPublicClient({ transport: http(w.anvil.rpcUrl) });
  const receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: 20 });
  expect(receipt.status).toBe("success");
  expect(receipt.blockNumber).toBe(BigInt(p.simulation.block_number) + 1n);
  await w.s.syncClock();
  return receipt;
}

/** The audit row of an answer (by its request id). */
async function audit(res: Response) {
  const rows = await h.q<{ outcome: string; status: number; code: string | null; action: string; subaccount: string }>(
    "SELECT outcome, status, code, action, subaccount FROM registry.build_audit WHERE request_id = $1",
    [res.headers.get("x-request-id")],
  );
  expect(rows).toHaveLength(1);
  return rows[0]!;
}

/** A refusal: its status and code (or 422 type), recorded, and nothing sent. */
async function refused(
  r: { status: number; body: Refused; res: Response },
  status: number,
  code: string,
  before: bigint,
): Promise<Refused> {
  expect(r.status, JSON.stringify(r.body)).toBe(status);
  if (status === 422) expect((r.body.detail as { type: string }[])[0]!.type).toBe(code);
  else expect(r.body.code).toBe(code);
  const row = await audit(r.res);
  expect(row).toMatchObject({ outcome: "refused", status, code });
  expect(await head()).toBe(before);
  return r.body;
}

async function accountData() {
  const [collateral, debt, , lt, , hf] = await read<bigint[]>(w.p.aave.pool, POOL, "getUserAccountData", [w.sub.safe]);
  return { collateral: collateral!, debt: debt!, lt: lt!, hf: hf! };
}

/** The chain agrees with the answer's "after": balances, account data, health factor, no approval left. */
async function expectAfter(a: Lending, underlying: Address) {
  const r = reserve(underlying);
  expect((await balance(underlying)).toString()).toBe(a.balances.underlying.after.raw);
  expect((await balance(r.aToken)).toString()).toBe(a.balances.a_token.after.raw);
  expect((await balance(r.variableDebtToken)).toString()).toBe(a.balances.debt_token.after.raw);
  const acct = await accountData();
  expect(acct.collateral.toString()).toBe(a.account.after.total_collateral_base);
  expect(acct.debt.toString()).toBe(a.account.after.total_debt_base);
  expect(a.account.after.health_factor_raw).toBe(acct.debt === 0n ? null : acct.hf.toString());
  expect(await read<bigint>(underlying, ERC20, "allowance", [w.sub.safe, w.p.aave.pool])).toBe(0n);
}

beforeAll(async () => {
  h = await setupApi();
  w = await buildWorld(`build-lend-${PORT_OFFSET}`, PORT);
  [usdc, weth] = [w.token("USDC"), w.token("WETH")];
  const mint = (t: Address, amount: bigint) =>
    w.s.send(w.deployer, t, call(ERC20_ABI, "mint", [w.sub.safe, amount]), "mint");
  await mint(usdc, 50_000n * E6);
  await mint(weth, 20n * E18);
  // the core ledger on the world's own chain, credited by a relayer key of this file
  const relayerAddress = privateKeyToAccount(RELAYER_KEY).address;
  await rpc(w.anvil.rpcUrl, "anvil_setBalance", [relayerAddress, toHex(100n * E18)]);
  ledger = (await deployCoreLedger({ s: w.s, from: w.deployer }, { relayer: relayerAddress })).ledger;
  drop = await registerWorld(h, w);
  const lc = (a: string) => a.toLowerCase();
  await h.q(`UPDATE registry.chain_protocols SET protocols = protocols || $2::jsonb WHERE chain_id = $1`, [
    8453,
    JSON.stringify({
      perp: {
        bridgeA: lc(w.p.perp.bridgeA),
        bridgeB: lc(w.p.perp.bridgeB),
        core: { chainId: 8453, ledger: lc(ledger) },
      },
    }),
  ]);
  proxy = await rpcProxy(w.anvil.rpcUrl);
  app = appVia(proxy.url);
  key = (await createKey(h.db, "build-lend", ["transactions:build"])).key;
}, 600_000);

afterAll(async () => {
  await proxy?.close();
  await relayer?.close();
  await drop?.();
  await w?.anvil.stop();
  await h?.close();
});

describe("a request wrong on its face", () => {
  it("is a 422 before any chain read: the same with the chain's node down", async () => {
    // chain 8453 reached at a port nothing listens on: any read would be a 503
    const down = appVia("http://127.0.0.1:9");
    const aUsdc = reserve(usdc).aToken;
    const base = { chain: 8453, from: w.trader };
    const cases: [string, unknown, (string | number)[]][] = [
      [`/integrations/lending_market/${aUsdc}/supply/${w.sub.safe}`, base, ["body", "amount"]],
      [
        `/integrations/lending_market/${aUsdc}/repay/${w.sub.safe}`,
        { ...base, all: true, amount: "1" },
        ["body", "all"],
      ],
      ["/integrations/perp_relayer_a/deposit", { ...base, subaccount: w.sub.safe }, ["body", "amount"]],
      [`/subaccounts/${w.sub.safe}/swaps`, { ...base, token_in: usdc, token_out: weth }, ["body", "amount"]],
      [
        `/integrations/dex_pool/${usdc}/deposit/${w.sub.safe}`,
        { ...base, amount0: "1", tick_lower: -600, tick_upper: 600, width_bps: 100 },
        ["body", "width_bps"],
      ],
      [
        `/integrations/dex_pool/${usdc}/deposit/${w.sub.safe}`,
        { ...base, amount0: "1", token_id: "1", full_range: true },
        ["body", "token_id"],
      ],
      [`/integrations/dex_pool/${usdc}/deposit/${w.sub.safe}`, { ...base, full_range: true }, ["body", "amount0"]],
      [`/integrations/dex_pool/${usdc}/rebalance/${w.sub.safe}`, { ...base, token_id: "1" }, ["body", "tick_lower"]],
    ];
    for (const [path, body, loc] of cases) {
      const r = await post<Refused>(path, body, key, down);
      expect([r.status, path], JSON.stringify(r.body)).toEqual([422, path]);
      expect((r.body.detail as { loc: unknown[] }[])[0]!.loc).toEqual(loc);
    }
  });
});

describe("lending market builders (Aave v3)", () => {
  it("needs a key with transactions:build: 401 without a key, 403 without the scope", async () => {
    const aWeth = reserve(weth).aToken;
    const path = `/integrations/lending_market/${aWeth}/supply/${w.sub.safe}`;
    expect((await post(path, { chain: 8453, amount: "1" }, null)).status).toBe(401);
    const r = await post<Refused>(path, { chain: 8453, amount: "1" }, h.key);
    expect(r.status).toBe(403);
    expect(r.body.code).toBe("insufficient_scope");
  });

  it("supply: the aToken balance grows by the amount, no debt, no approval left", async () => {
    const r = await lending("supply", reserve(weth).aToken, { amount: "10" });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const a = r.body;
    expect(a.operation).toBe("supply");
    expect(a.approvals).toEqual([{ token: weth, spender: w.p.aave.pool, amount_raw: (10n * E18).toString() }]);
    expect(a.calls.map((c) => c.target)).toEqual([w.p.aave.pool]);
    expect(a.calls.map((c) => c.description)).toEqual(["supply 10 WETH to Aave for the Safe"]);
    expect(a.target).toBe(w.sub.module);
    expect(a.health_factor).toEqual({ before: null, after: null });
    expect(a.balances.a_token.change.raw).toBe((10n * E18).toString());
    expect(a.balances.underlying.change.raw).toBe((-10n * E18).toString());
    expect(a.balances.debt_token.change.raw).toBe("0");
    expect(a.account.before.total_collateral_usd).toBe(0);
    expect(a.account.after.total_collateral_usd).toBe(32_000);
    expect(a.subaccount_health_factor).toBeNull(); // a supply cannot lower it
    expect(await audit(r.res)).toMatchObject({
      outcome: "built",
      status: 200,
      action: "lending_market.supply",
      subaccount: w.sub.safe.toLowerCase(),
    });
    await send(a);
    await expectAfter(a, weth);
  });

  it("borrow: the variable debt grows by the amount; the health factor after is Aave's after sending", async () => {
    const r = await lending("borrow", reserve(usdc).aToken, { amount: "8000" });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const a = r.body;
    expect(a.approvals).toEqual([]);
    expect(a.health_factor.before).toBeNull();
    expect(a.health_factor.after).toBeGreaterThan(1);
    expect(a.balances.debt_token.token).toBe(reserve(usdc).variableDebtToken);
    expect(a.balances.debt_token.change.raw).toBe((8_000n * E6).toString());
    expect(a.balances.underlying.change.raw).toBe((8_000n * E6).toString());
    expect(a.account.after.total_debt_usd).toBe(8_000);
    await send(a);
    await expectAfter(a, usdc);
    const acct = await accountData();
    expect(a.health_factor.after).toBe(Number(formatUnits(acct.hf, 18)));
    // the registry's floor (1.2), checked against the account-wide figure: its only debt is here
    expect(a.subaccount_health_factor).toEqual({ minimum: 1.2, before: null, after: expect.any(Number) });
    expect(a.subaccount_health_factor!.after!).toBeCloseTo(a.health_factor.after!, 9);
  });

  it("below the subaccount's min_health_factor: 409 unless allowed; then the route's figure is the answer's", async () => {
    const aUsdc = reserve(usdc).aToken;
    const aWeth = reserve(weth).aToken;
    // USD, 8 decimals: the collateral at its liquidation threshold, and the debt
    const acct = await accountData();
    const liquidation = (acct.collateral * acct.lt) / 10_000n;
    // a borrow to a health factor of 1.1, under the floor of 1.2 but well above Aave's 1
    const usd = (liquidation * 10n) / 11n - acct.debt;
    const amount_raw = (usd / 100n).toString(); // USDC at $1: 6 decimals
    const before = await head();
    const no = await refused(await lending("borrow", aUsdc, { amount_raw }), 409, "below_min_health_factor", before);
    expect(no.detail).toMatch(/from 3\.\d{4} to 1\.1\d{3}, below its min_health_factor 1\.2/);
    // so is a withdrawal of the WETH that leaves a health factor of about 1.15
    const wethLeft = (acct.debt * 115n * acct.collateral) / (100n * liquidation); // USD, 8 decimals
    const price = acct.collateral / 10n; // 10 WETH supplied
    const withdraw = ((acct.collateral - wethLeft) * E18) / price;
    const wd = { amount_raw: withdraw.toString() };
    await refused(await lending("withdraw", aWeth, wd), 409, "below_min_health_factor", before);
    const allowedWd = await lending("withdraw", aWeth, { ...wd, allow_below_min_health_factor: true });
    expect(allowedWd.status, JSON.stringify(allowedWd.body)).toBe(200);
    expect(allowedWd.body.subaccount_health_factor!.after!).toBeCloseTo(1.15, 3);
    // allowed: built, reported, and once sent the health factor route reads what it said
    const yes = await lending("borrow", aUsdc, { amount_raw, allow_below_min_health_factor: true });
    expect(yes.status, JSON.stringify(yes.body)).toBe(200);
    const f = yes.body.subaccount_health_factor!;
    expect(f.minimum).toBe(1.2);
    expect(f.after!).toBeCloseTo(1.1, 4);
    expect(f.after!).toBeCloseTo(yes.body.health_factor.after!, 9);
    expect(await audit(yes.res)).toMatchObject({ outcome: "built", action: "lending_market.borrow" });
    await send(yes.body);
    await expectAfter(yes.body, usdc);
    const route = await app.request(`/api/v1/subaccounts/health_factor?address=${w.sub.safe}`, {
      headers: { "x-api-key": h.key },
    });
    expect(route.status).toBe(200);
    const hf = (await route.json()) as { health_factor: number; min_health_factor: number };
    expect(hf.min_health_factor).toBe(1.2);
    expect(hf.health_factor).toBeCloseTo(f.after!, 9);
    // repaid, the account is as the tests after this one expect it
    const back = await lending("repay", aUsdc, { amount_raw });
    expect(back.status, JSON.stringify(back.body)).toBe(200);
    expect(back.body.subaccount_health_factor).toBeNull();
    await send(back.body);
  });

  it("the floor check reads every chain: without a chain's RPC, 503 no_rpc for a borrow; a supply builds", async () => {
    const only = h.appWith({ rpcUrls: new Map([[8453, proxy.url]]) });
    const send = async (op: string, market: Address, body: Record<string, unknown>) =>
      readAnswer<Refused>(
        await only.request(`/api/v1/integrations/lending_market/${market}/${op}/${w.sub.safe}`, {
          method: "POST",
          headers: { "content-type": "application/json", "x-api-key": key },
          body: JSON.stringify({ chain: 8453, from: w.trader, ...body }),
        }),
      );
    const other = h.devnet.chains.find((c) => c.chainId !== 8453)!.chainId;
    const no = await refused(await send("borrow", reserve(usdc).aToken, { amount: "1" }), 503, "no_rpc", await head());
    expect(no.detail).toContain(`PONDER_RPC_URL_${other}`);
    expect(no.detail).toContain("min_health_factor");
    expect((await send("supply", reserve(weth).aToken, { amount: "0.001" })).status).toBe(200);
  });

  it("refuses, recorded and with nothing sent: Aave '36', '35', NotTrader, unknown markets, a token not allowed, too much", async () => {
    const before = await head();
    const aUsdc = reserve(usdc).aToken;
    const aWeth = reserve(weth).aToken;
    // beyond the collateral: Aave's '36', named
    const b36 = await refused(await lending("borrow", aUsdc, { amount: "1000000" }), 409, "simulation_failed", before);
    expect(b36.reasons).toEqual([
      expect.objectContaining({ kind: "aave", name: "COLLATERAL_CANNOT_COVER_NEW_BORROW", candidate: "borrow" }),
    ]);
    expect(b36.reasons![0]!.message).toContain("'36'");
    // a withdrawal that would drop the health factor below 1: '35'
    const b35 = await refused(await lending("withdraw", aWeth, { amount: "9" }), 409, "simulation_failed", before);
    expect(b35.reasons![0]).toMatchObject({ kind: "aave", name: "HEALTH_FACTOR_LOWER_THAN_LIQUIDATION_THRESHOLD" });
    // a sender that is not the module's trader
    const stranger = actor("build-lend:stranger");
    const nt = await refused(
      await lending("supply", aWeth, { amount: "1", from: stranger }),
      409,
      "simulation_failed",
      before,
    );
    expect(nt.reasons![0]).toMatchObject({ kind: "subaccount", name: "NotTrader" });
    expect(nt.reasons![0]!.message).toContain(stranger);
    // not aTokens of the pool: a plain token, the debt token (it has UNDERLYING_ASSET_ADDRESS and POOL too)
    for (const m of [usdc, reserve(usdc).variableDebtToken]) {
      await refused(await lending("supply", m, { amount: "1" }), 404, "unknown_market", before);
    }
    // a token the module does not allow: 422 before any simulation
    await w.s.send(w.governance, w.sub.module, moduleCall("setTokens", [[weth], false]), "disallow WETH");
    const after = await head();
    try {
      const na = await refused(await lending("supply", aWeth, { amount: "1" }), 422, "token_not_allowed", after);
      // on the market's path segment, as the dex_pool builders name the pool's
      expect((na.detail as { loc: string[]; msg: string }[])[0]!).toMatchObject({
        loc: ["path", "market_token_address"],
        msg: expect.stringContaining("WETH"),
      });
    } finally {
      await w.s.send(w.governance, w.sub.module, moduleCall("setTokens", [[weth], true]), "allow WETH");
    }
    const now = await head();
    // above the Safe's balance: of WETH to supply, of aWETH to withdraw (a repay above it repays the
    // debt when the Safe holds that much: "repay more than the debt", below)
    const many = await refused(await lending("supply", aWeth, { amount: "1000" }), 422, "insufficient_balance", now);
    expect((many.detail as { msg: string }[])[0]!.msg).toMatch(/it holds [\d.]+ WETH, \d+ raw units$/);
    const out = await refused(await lending("withdraw", aWeth, { amount: "10.5" }), 422, "insufficient_balance", now);
    expect((out.detail as { msg: string }[])[0]!.msg).toMatch(
      /it holds [\d.]+ WETH supplied \(its aToken balance\), \d+ raw units$/,
    );
    // more than a uint256 holds: raw, a 422 of the schema; in whole units, once the decimals are known
    const over = await lending("borrow", aUsdc, { amount_raw: (1n << 256n).toString() });
    expect(over.status, JSON.stringify(over.body)).toBe(422);
    expect((over.body.detail as { loc: string[] }[])[0]!.loc).toEqual(["body", "amount_raw"]);
    expect(await audit(over.res)).toMatchObject({ outcome: "refused", status: 422, code: "validation_error" });
    await refused(await lending("borrow", aUsdc, { amount: `1${"0".repeat(72)}` }), 422, "less_than_equal", now);
    // near the body's megabyte: refused at once (a backtracking trim of the fraction took minutes)
    for (const body of [{ amount: `1.${"0".repeat(900_000)}1` }, { amount_raw: "9".repeat(900_000) }]) {
      const long = await lending("supply", aWeth, body);
      expect(long.status).toBe(422);
      const [item] = long.body.detail as { loc: string[]; msg: string }[];
      expect(item!.loc).toEqual(["body", Object.keys(body)[0]]);
      expect(item!.msg).toMatch(/at most 18 after the point|at most 2\^256 - 1/);
      expect(await audit(long.res)).toMatchObject({ outcome: "refused", status: 422 });
      // the row keeps what identifies such a request, not its megabyte
      const [row] = await h.q<{ request: { truncated: boolean; chars: number; prefix: string }; size: number }>(
        "SELECT request, pg_column_size(request) AS size FROM registry.build_audit WHERE request_id = $1",
        [long.res.headers.get("x-request-id")],
      );
      expect(row!.request).toMatchObject({ truncated: true, chars: expect.any(Number), sha256: expect.any(String) });
      expect(row!.request.chars).toBeGreaterThan(900_000);
      expect(row!.request.prefix.startsWith("{")).toBe(true);
      expect(row!.size).toBeLessThan(16 * 1024);
    }
    // a body of thousands of unknown keys: a hundred items and a count, a row of bounded size
    const keys = Object.fromEntries(Array.from({ length: 20_000 }, (_, i) => [`extra_${i}`, i]));
    const wide = await lending("supply", aWeth, { amount: "1", ...keys });
    expect(wide.status).toBe(422);
    const items = wide.body.detail as { loc: string[]; type: string; msg: string }[];
    expect(items).toHaveLength(101);
    expect(items.at(-1)).toMatchObject({ loc: ["body"], type: "too_many_errors", msg: "and 19900 more errors" });
    const [wrow] = await h.q<{ r: number; a: number }>(
      "SELECT pg_column_size(request) AS r, pg_column_size(answer) AS a FROM registry.build_audit WHERE request_id = $1",
      [wide.res.headers.get("x-request-id")],
    );
    expect(wrow!.r + wrow!.a).toBeLessThan(80 * 1024);
    expect(await head()).toBe(now);
    // zero: refused on the field that was sent
    for (const body of [{ amount: "0" }, { amount_raw: "0" }]) {
      const zero = await refused(await lending("supply", aWeth, body), 422, "greater_than", now);
      expect((zero.detail as { loc: string[] }[])[0]!.loc).toEqual(["body", Object.keys(body)[0]]);
    }
    // malformed: both amounts, `all` where it has no meaning, an unknown subaccount
    await refused(await lending("supply", aWeth, { amount: "1", amount_raw: "1" }), 422, "value_error", now);
    const strict = await lending("supply", aWeth, { all: true });
    expect(strict.status).toBe(422);
    await refused(await lending("withdraw", aWeth, { all: true, amount: "1" }), 422, "value_error", now);
    // a body that is not JSON, or not sent as JSON: refused before any schema, and recorded too
    const raw = (body: string, type: string) =>
      app.request(`/api/v1/integrations/lending_market/${aWeth}/supply/${w.sub.safe}`, {
        method: "POST",
        headers: { "content-type": type, "x-api-key": key },
        body,
      });
    for (const [body, type, error] of [
      ['{"chain": 8453,', "application/json", "json_invalid"],
      ['{"chain": 8453, "amount": "1"}', "text/plain", "model_attributes_type"],
    ] as const) {
      const res = await raw(body, type);
      expect(res.status, type).toBe(422);
      const answer = (await res.clone().json()) as { detail: { type: string }[] };
      expect(answer.detail[0]!.type).toBe(error);
      expect(await audit(res)).toMatchObject({
        outcome: "refused",
        status: 422,
        code: "validation_error",
        action: "lending_market.supply",
        subaccount: w.sub.safe.toLowerCase(),
      });
      expect(await head()).toBe(now);
    }
    // "max" is no amount; the refusal of a whole-position operation names `all`
    const max = await lending("repay", aUsdc, { amount: "max" });
    expect(max.status, JSON.stringify(max.body)).toBe(422);
    expect(max.body.detail).toMatchObject([{ loc: ["body", "amount"], msg: expect.stringContaining('"all": true') }]);
    expect(await audit(max.res)).toMatchObject({ outcome: "refused", status: 422, code: "validation_error" });
    await refused(
      await lending("supply", aWeth, { amount: "1" }, actor("build-lend:nobody")),
      404,
      "unknown_subaccount",
      now,
    );
    expect(await head()).toBe(now);
  });

  it("repay: the debt falls by the amount, with an exact approval that does not linger", async () => {
    const r = await lending("repay", reserve(usdc).aToken, { amount_raw: (3_000n * E6).toString() });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const a = r.body;
    expect(a.approvals).toEqual([{ token: usdc, spender: w.p.aave.pool, amount_raw: (3_000n * E6).toString() }]);
    expect(a.balances.debt_token.change.raw).toBe((-3_000n * E6).toString());
    expect(a.balances.underlying.change.raw).toBe((-3_000n * E6).toString());
    expect(a.health_factor.after!).toBeGreaterThan(a.health_factor.before!);
    await send(a);
    await expectAfter(a, usdc);
  });

  it("repay more than the debt: said so, approved no more than the debt and its margin", async () => {
    const debt = await balance(reserve(usdc).variableDebtToken);
    const held = await balance(usdc);
    // the Safe holds more than it owes (the repay-all test below needs it too)
    expect(held).toBeGreaterThan(debt + debt / 1000n + 1n);
    const r = await lending("repay", reserve(usdc).aToken, { amount_raw: held.toString() });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const a = r.body;
    expect(a.calls.map((c) => c.description).join("; ")).toMatch(
      /repay all of the variable USDC debt on Aave \([\d.]+ USDC at the head; [\d.]+ USDC asked, the rest stays in the Safe\)/,
    );
    const approved = BigInt(a.approvals[0]!.amount_raw);
    expect(approved).toBeGreaterThan(debt);
    expect(approved).toBeLessThan(held);
    expect(a.balances.debt_token.after.raw).toBe("0");
    expect(a.balances.underlying.change.raw).toBe((-BigInt(a.balances.debt_token.before.raw)).toString());
    // more than the Safe holds, too: it need hold only the debt
    const twice = await lending("repay", reserve(usdc).aToken, { amount_raw: (held * 2n).toString() });
    expect(twice.status, JSON.stringify(twice.body)).toBe(200);
    expect(BigInt(twice.body.approvals[0]!.amount_raw)).toBeGreaterThanOrEqual(approved);
    expect(BigInt(twice.body.approvals[0]!.amount_raw)).toBeLessThan(held);
    expect(twice.body.balances.debt_token.after.raw).toBe("0");
  });

  it("repay all: no debt left, the health factor after is null, the margin's approval reset", async () => {
    const debt = await balance(reserve(usdc).variableDebtToken);
    const r = await lending("repay", reserve(usdc).aToken, { all: true });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const a = r.body;
    expect(a.all).toBe(true);
    expect(a.amount).toBeNull();
    // the debt as of the simulated block, one second on, and a margin for interest until it lands
    expect(BigInt(a.approvals[0]!.amount_raw)).toBeGreaterThan(debt);
    expect(BigInt(a.balances.debt_token.before.raw)).toBeGreaterThanOrEqual(debt);
    expect(a.balances.debt_token.after.raw).toBe("0");
    expect(a.balances.underlying.change.raw).toBe((-BigInt(a.balances.debt_token.before.raw)).toString());
    expect(a.health_factor.before).toBeGreaterThan(1);
    expect(a.health_factor.after).toBeNull();
    await send(a);
    await expectAfter(a, usdc);
    expect((await accountData()).debt).toBe(0n);
  });

  it("withdraw an amount, then all: the aToken balance goes to 0 and the WETH is back", async () => {
    const aWeth = reserve(weth).aToken;
    const part = await lending("withdraw", aWeth, { amount: "2.5" });
    expect(part.status, JSON.stringify(part.body)).toBe(200);
    expect(part.body.balances.a_token.change.raw).toBe(((-25n * E18) / 10n).toString());
    await send(part.body);
    await expectAfter(part.body, weth);
    const rest = await lending("withdraw", aWeth, { all: true });
    expect(rest.status, JSON.stringify(rest.body)).toBe(200);
    expect(rest.body.balances.a_token.after.raw).toBe("0");
    expect(rest.body.account.after.total_collateral_usd).toBe(0);
    await send(rest.body);
    await expectAfter(rest.body, weth);
    expect(await balance(weth)).toBe(20n * E18);
    // nothing left to withdraw
    const none = await refused(
      await lending("withdraw", aWeth, { all: true }),
      422,
      "insufficient_balance",
      await head(),
    );
    expect(none.detail).toEqual([
      expect.objectContaining({
        loc: ["body", "all"],
        msg: "Nothing to withdraw: the Safe has no WETH supplied (its aToken balance is 0)",
      }),
    ]);
  });

  it("a warm build is two RPC round trips: one multicall at the head, one simulation on it", async () => {
    const aUsdc = reserve(usdc).aToken;
    expect((await lending("supply", aUsdc, { amount: "1" })).status).toBe(200); // the market is known
    const from = proxy.methods.length;
    const r = await lending("supply", aUsdc, { amount: "2" });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(proxy.methods.slice(from)).toEqual(["eth_call", "eth_simulateV1"]);
    expect(r.body.simulation.block_number).toBe(Number(await head()));
    // where its time went
    const timing = r.res.headers.get("server-timing") ?? "";
    expect(timing).toMatch(
      /^before;dur=[\d.]+, read;dur=[\d.]+, simulate;dur=[\d.]+, build;dur=[\d.]+, audit;dur=[\d.]+$/,
    );
    const dur = Object.fromEntries(timing.split(", ").map((p) => [p.split(";")[0], Number(p.split("=")[1])]));
    expect(dur.read! + dur.simulate!).toBeLessThanOrEqual(dur.build! + 0.1);
  });

  it("a node without eth_simulateV1: simulated by eth_call with a state override, the same answer, as sent", async () => {
    // a node of its own (another URL): what a node lacks is kept per URL
    const noSim = await rpcProxy(w.anvil.rpcUrl);
    noSim.refuse.add("eth_simulateV1");
    const viaCall = appVia(noSim.url);
    const asked = () => noSim.methods.filter((m) => m === "eth_simulateV1").length;
    try {
      const aUsdc = reserve(usdc).aToken;
      const path = `/integrations/lending_market/${aUsdc}/supply/${w.sub.safe}`;
      const body = { chain: 8453, from: w.trader, amount: "5" };
      // the same build at the same head through both nodes: the same transaction and figures
      const a = await post<Lending>(path, body);
      const b = await post<Lending>(path, body, key, viaCall);
      expect(b.status, JSON.stringify(b.body)).toBe(200);
      expect([a.body.simulation.method, b.body.simulation.method]).toEqual(["eth_simulateV1", "eth_call"]);
      expect(b.body.data).toBe(a.body.data);
      expect(b.body.simulation.timestamp).toBe(a.body.simulation.timestamp);
      expect(b.body.balances).toEqual(a.body.balances);
      expect(b.body.account).toEqual(a.body.account);
      expect(b.body.health_factor).toEqual(a.body.health_factor);
      // measured before refunds, so never below what the node's own simulation says
      expect(BigInt(b.body.simulation.gas_used)).toBeGreaterThanOrEqual(BigInt(a.body.simulation.gas_used));
      expect(await audit(b.res)).toMatchObject({ outcome: "built", action: "lending_market.supply" });
      const receipt = await send(b.body);
      expect(receipt.gasUsed).toBeLessThanOrEqual(BigInt(b.body.gas_limit));
      await expectAfter(b.body, usdc);
      expect(asked()).toBe(1);
      // kept for the URL: a refusal decoded through the probe, without asking for eth_simulateV1 again
      const before = await head();
      const b36 = await refused(
        await post<Refused>(
          `/integrations/lending_market/${aUsdc}/borrow/${w.sub.safe}`,
          {
            ...body,
            amount: "1000000",
          },
          key,
          viaCall,
        ),
        409,
        "simulation_failed",
        before,
      );
      expect(b36.reasons![0]).toMatchObject({ kind: "aave", name: "COLLATERAL_CANNOT_COVER_NEW_BORROW" });
      expect(asked()).toBe(1);
      // a node without block overrides either: in the head's own block
      noSim.maxParams.set("eth_call", 3);
      const own = await post<Lending>(path, body, key, viaCall);
      expect(own.status, JSON.stringify(own.body)).toBe(200);
      const { timestamp } = await createPublicClient({ transport: http(w.anvil.rpcUrl) }).getBlock({
        blockNumber: before,
      });
      expect(own.body.simulation).toMatchObject({ method: "eth_call", block_number: Number(before) });
      expect(own.body.simulation.timestamp).toBe(Number(timestamp));
      expect(own.body.balances.a_token.change.raw).toBe((5n * E6).toString());
      // nor state overrides: 503 naming what to change, recorded, nothing sent
      noSim.maxParams.set("eth_call", 2);
      const none = await refused(await post<Refused>(path, body, key, viaCall), 503, "simulation_unsupported", before);
      expect(none.detail).toMatch(/chain 8453 offers neither eth_simulateV1 nor eth_call with a state override/);
      expect(none.detail).toMatch(/PONDER_RPC_URL_8453/);
      const metrics = await (await viaCall.request("/metrics")).text();
      const code = 'action="lending_market.supply",chain="8453",outcome="refused",code="simulation_unsupported"';
      expect(metrics).toContain(`builder_builds_total{${code}} 1`);
      // the simulations by method: this node's through eth_call (a supply, a borrow, a supply)
      const simulations = (method: string) =>
        Number(
          metrics
            .split("\n")
            .find((l) => l.startsWith(`builder_simulations_total{chain="8453",method="${method}"}`))
            ?.split(" ")
            .pop() ?? 0,
        );
      expect(simulations("eth_call")).toBeGreaterThanOrEqual(3);
      expect(simulations("eth_simulateV1")).toBeGreaterThanOrEqual(1);
      // one that ignores them: its eth_call runs the trader's own (empty) code, and says so
      noSim.maxParams.clear();
      noSim.dropParams.set("eth_call", 2);
      await refused(await post<Refused>(path, body, key, viaCall), 503, "simulation_unsupported", before);
    } finally {
      await noSim.close();
    }
  });

  it("a chain without Multicall3: the reads put its code there in a state override; the same answer, as sent", async () => {
    // a node of its own (another URL): what a node's chain lacks is kept per URL
    const noMc = await rpcProxy(w.anvil.rpcUrl);
    const mc = MULTICALL3.toLowerCase();
    noMc.hideCode.add(mc);
    const viaOverride = appVia(noMc.url);
    // the multicalls the node was asked: with Multicall3's code in the override, or without
    const multicalls = () =>
      noMc.bodies
        .flatMap((b) => [JSON.parse(b)].flat() as { method: string; params: unknown[] }[])
        .filter((c) => c.method === "eth_call" && (c.params[0] as { to?: string }).to?.toLowerCase() === mc)
        .map((c) => Object.keys((c.params[2] ?? {}) as object).some((a) => a.toLowerCase() === mc));
    try {
      // the code put there is the devnet's own Multicall3
      expect((await rpc<Hex>(w.anvil.rpcUrl, "eth_getCode", [MULTICALL3, "latest"])).toLowerCase()).toBe(
        Multicall3RuntimeCode.toLowerCase(),
      );
      const aUsdc = reserve(usdc).aToken;
      const path = `/integrations/lending_market/${aUsdc}/supply/${w.sub.safe}`;
      const body = { chain: 8453, from: w.trader, amount: "3" };
      // the same build at the same head through both nodes: the same transaction and figures
      const a = await post<Lending>(path, body);
      const b = await post<Lending>(path, body, key, viaOverride);
      expect(b.status, JSON.stringify(b.body)).toBe(200);
      expect(b.body.data).toBe(a.body.data);
      expect(b.body.simulation).toEqual(a.body.simulation);
      expect(b.body.balances).toEqual(a.body.balances);
      expect(b.body.account).toEqual(a.body.account);
      expect(b.body.health_factor).toEqual(a.body.health_factor);
      // the first multicall found no code and was made again with it; the next ones carry it at once
      const first = multicalls();
      expect(first.slice(0, 2)).toEqual([false, true]);
      expect(first.slice(2).every((x) => x)).toBe(true);
      const receipt = await send(b.body);
      expect(receipt.status).toBe("success");
      await expectAfter(b.body, usdc);
      const again = await post<Lending>(path, body, key, viaOverride);
      expect(again.status, JSON.stringify(again.body)).toBe(200);
      expect(
        multicalls()
          .slice(first.length)
          .every((x) => x),
      ).toBe(true);
      // a node that refuses state overrides: a 503 that says what the chain lacks, nothing sent
      noMc.maxParams.set("eth_call", 2);
      const before = await head();
      const none = await refused(await post<Refused>(path, body, key, viaOverride), 503, "chain_unavailable", before);
      expect(none.detail).toMatch(/no Multicall3 at 0xcA11bde05977b3631167028862bE2a173976CA11 on this chain/);
    } finally {
      await noMc.close();
    }
  });

  it("GET /metrics counts the builds by action, chain, outcome and code, and times their phases", async () => {
    const metric = async (name: string, labels: string) => {
      const text = await (await app.request("/metrics")).text();
      const line = text.split("\n").find((l) => l.startsWith(`${name}{${labels}}`));
      return line ? Number(line.split(" ").pop()) : 0;
    };
    const built = 'action="lending_market.supply",chain="8453",outcome="built",code=""';
    const unsupported = 'action="lending_market.supply",chain="8453",outcome="refused",code="simulation_unsupported"';
    const [b0, u0] = [await metric("builder_builds_total", built), await metric("builder_builds_total", unsupported)];
    const aUsdc = reserve(usdc).aToken;
    expect((await lending("supply", aUsdc, { amount: "1" })).status).toBe(200);
    expect(await lending("supply", aUsdc, { amount: "1", chain: 10 })).toMatchObject({ status: 422 });
    expect(await metric("builder_builds_total", built)).toBe(b0 + 1);
    expect(await metric("builder_builds_total", unsupported)).toBe(u0);
    // a chain without an RPC here is one label, whatever chain was asked for (10: no protocols entry)
    const other = 'action="lending_market.supply",chain="other",outcome="refused",code="value_error"';
    expect(await metric("builder_builds_total", other)).toBeGreaterThanOrEqual(1);
    for (const phase of ["read", "simulate", "build", "audit"]) {
      const n = await metric(
        "builder_phase_seconds_count",
        `action="lending_market.supply",chain="8453",phase="${phase}"`,
      );
      expect(n, phase).toBeGreaterThanOrEqual(b0 + 1);
    }
  });

  it("builds answering at once: each answers after its own audit row; a NUL in a refused input is recorded", async () => {
    const aUsdc = reserve(usdc).aToken;
    const [built, bad, badPath] = await Promise.all([
      Promise.all(Array.from({ length: 12 }, (_, i) => lending("supply", aUsdc, { amount: String(i + 1) }))),
      lending("supply", aUsdc, { amount: "1\u0000\ud800" }),
      lending("supply", "0x%00" as Address, { amount: "1" }),
    ]);
    const ids = built.map((r) => {
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      return r.body.build_id;
    });
    const rows = await h.q<{ id: string; answer: { data: string; amount: Units } }>(
      "SELECT id::text, answer FROM registry.build_audit WHERE id = ANY($1::uuid[])",
      [ids],
    );
    expect(new Map(rows.map((r) => [r.id, r.answer.data]))).toEqual(
      new Map(built.map((r) => [r.body.build_id, r.body.data])),
    );
    expect(bad.status, JSON.stringify(bad.body)).toBe(422);
    expect(await audit(bad.res)).toMatchObject({ outcome: "refused", status: 422, code: "validation_error" });
    expect(badPath.status, JSON.stringify(badPath.body)).toBe(422);
    expect(await audit(badPath.res)).toMatchObject({ outcome: "refused", status: 422, code: "validation_error" });
  });

  it("a build failing on the service's own error: recorded, 500; a chain's error stays 503", async () => {
    const app = new Hono<AppEnv>();
    app.use(async (c, next) => {
      c.set("deps", { wdb: h.db, config: { rpcUrls: new Map() } } as unknown as AppDeps);
      c.set("principal", { kind: "api_key", id: "build-fault-test", scopes: [] });
      await next();
    });
    const thrower = (err: unknown) => (c: Context<AppEnv>) =>
      runBuild(c, "test.fault", { chain: 1 }, async () => {
        throw err;
      });
    const encoding = new Error("wrapped", { cause: new IntegerOutOfRangeError({ max: "1", min: "0", value: "2" }) });
    app.post("/ours", thrower(encoding));
    app.post("/chain", thrower(new HttpRequestError({ url: "http://127.0.0.1:1", details: "ECONNREFUSED" })));
    app.onError((_err, c) => c.json({ detail: "Internal Server Error" }, 500));
    const ours = await app.request("/ours", { method: "POST" });
    const chain = await app.request("/chain", { method: "POST" });
    expect([ours.status, chain.status]).toEqual([500, 503]);
    expect(await chain.json()).toMatchObject({ code: "chain_unavailable" });
    const rows = await h.q<{ status: number; code: string }>(
      "SELECT status, code FROM registry.build_audit WHERE principal_id = $1 ORDER BY at",
      ["build-fault-test"],
    );
    expect(rows).toEqual([
      { status: 500, code: "build_failed" },
      { status: 503, code: "chain_unavailable" },
    ]);
  });

  it("the audit writer: rows written together commit together; a bad row fails alone", async () => {
    const writer = new AuditWriter(h.db);
    const row = (id: string, principal_kind = "api_key") => ({
      id,
      principal_kind: principal_kind as "api_key",
      principal_id: "audit-writer-test",
      action: "test",
      path: "/test",
      chain_id: null,
      subaccount: null,
      status: 200,
      outcome: "built" as const,
      code: null,
      request_id: null,
      request: "{}",
      answer: "{}",
    });
    const ids = Array.from({ length: 20 }, () => randomUUID());
    const badId = randomUUID();
    const results = await Promise.allSettled([
      ...ids.slice(0, 10).map((id) => writer.write(row(id))),
      writer.write(row(badId, "nobody")), // the CHECK on principal_kind refuses it
      ...ids.slice(10).map((id) => writer.write(row(id))),
    ]);
    expect(results.map((r) => r.status)).toEqual([
      ...Array(10).fill("fulfilled"),
      "rejected",
      ...Array(10).fill("fulfilled"),
    ]);
    const stored = await h.q<{ id: string }>("SELECT id::text FROM registry.build_audit WHERE principal_id = $1", [
      "audit-writer-test",
    ]);
    expect(new Set(stored.map((r) => r.id))).toEqual(new Set(ids));
  });

  it("a Safe that drops its module: 409 stale_subaccount from the read stage, and builds again once it is back", async () => {
    const SAFE = parseAbi([
      "function disableModule(address prevModule, address module)",
      "function enableModule(address module)",
    ]);
    const aUsdc = reserve(usdc).aToken;
    expect((await lending("supply", aUsdc, { amount: "1" })).status).toBe(200); // the module is kept
    const sentinel = "0x0000000000000000000000000000000000000001";
    await w.s.send(w.sub.safe, w.sub.safe, call(SAFE, "disableModule", [sentinel, w.sub.module]), "disable");
    const from = proxy.methods.length;
    const staleAnswer = await lending("supply", aUsdc, { amount: "1" });
    const staleRes = staleAnswer.res;
    const stale = await refused(staleAnswer, 409, "stale_subaccount", await head());
    expect(stale.detail).toMatch(/no longer has its SubaccountModule/);
    expect(staleRes.headers.get("server-timing")).toMatch(
      /^before;dur=[\d.]+, read;dur=[\d.]+, build;dur=[\d.]+, audit;dur=[\d.]+$/,
    );
    expect(proxy.methods.slice(from)).not.toContain("eth_simulateV1");
    // looked up again: no module at all
    await refused(await lending("supply", aUsdc, { amount: "1" }), 409, "stale_subaccount", await head());
    await w.s.send(w.sub.safe, w.sub.safe, call(SAFE, "enableModule", [w.sub.module]), "enable");
    expect((await lending("supply", aUsdc, { amount: "1" })).status).toBe(200);
  });
});

describe("perp deposit builders", () => {
  afterAll(async () => {
    await relayer?.close();
    relayer = undefined;
  });
  const deposited = async (p: Perp) => {
    const receipt = await send(p);
    const events = parseEventLogs({ abi: PerpBridgeAAbi, eventName: "Deposited", logs: receipt.logs });
    expect(events).toHaveLength(1);
    expect(getAddress(events[0]!.address)).toBe(p.bridge);
    expect(events[0]!.args).toMatchObject({ coreHash: p.core_hash, depositor: w.sub.safe, nonce: BigInt(p.nonce) });
    expect(await read<bigint>(usdc, ERC20, "allowance", [w.sub.safe, p.bridge])).toBe(0n);
    return events[0]!.args;
  };
  const ledgerRead = <T>(fn: string, args: readonly unknown[]) => read<T>(ledger, CoreLedgerAbi as Abi, fn, args);
  const relay = async () => {
    relayer ??= await startRelayer(
      {
        ...relayerConfig({
          RELAYER_PRIVATE_KEY: RELAYER_KEY,
          CORE_CHAIN_ID: "8453",
          PERP_CORE_LEDGER: ledger,
          PERP_BRIDGES_8453: `${w.p.perp.bridgeA},${w.p.perp.bridgeB}`,
          PONDER_RPC_URL_8453: w.anvil.rpcUrl,
          RELAYER_DELAY_S: "0",
          // this test's own anvil mines only on its transactions
          RELAYER_CONFIRMATIONS: "0",
          RELAYER_POLL_MS: "600000",
        }),
        redisUrl: h.redisUrl,
      },
      () => {},
    );
    await relayer.runOnce();
    await w.s.syncClock();
  };

  it("bridge A: the deposit emits exactly the returned core_hash, and the relayer credits it on the core ledger", async () => {
    const r = await perp("a", { amount: "250" });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const p = r.body;
    expect(p.bridge).toBe(w.p.perp.bridgeA);
    expect(p.core_hash).toBe(coreHash(8453, w.p.perp.bridgeA, w.sub.safe, BigInt(p.nonce)));
    expect(p.minimum.raw).toBe(w.p.perp.minimumA);
    expect(p.destination).toBe("perp");
    expect(p.core).toEqual({ chain_id: 8453, ledger });
    expect(p.approvals).toEqual([{ token: usdc, spender: w.p.perp.bridgeA, amount_raw: (250n * E6).toString() }]);
    expect(p.calls.map((c) => c.description)).toEqual([
      "deposit 250 USDC to the core perp account through perp_relayer_a",
    ]);
    expect(p.status_url).toBe(`/api/v1/integrations/perp_relayer_a/check_status?core_hash=${p.core_hash}`);
    expect(await audit(r.res)).toMatchObject({ outcome: "built", action: "perp_relayer_a.deposit" });
    const ev = await deposited(p);
    expect([ev.amount, ev.token, ev.destination]).toEqual([250n * E6, usdc, 0]);
    expect(await ledgerRead<number>("status", [p.core_hash])).toBe(0);
    await relay();
    expect(await ledgerRead<number>("status", [p.core_hash])).toBe(1); // credited
    expect(await ledgerRead<bigint>("balances", [w.sub.safe, 0, 8453n, usdc])).toBe(250n * E6);
    // check_status reads the indexer's tables, which do not follow this file's own chain: it
    // answers for the hash, and can only say it does not know it
    const s = await readAnswer<{ status: string; core_hash: string }>(await app.request(p.status_url));
    expect(s.status).toBe(200);
    expect(s.body).toMatchObject({ core_hash: p.core_hash.toLowerCase(), status: "unknown" });
  });

  it("bridge B: a deposit to spot, credited to the Safe's spot account under its core_hash", async () => {
    const r = await perp("b", { amount: "100", token: usdc, destination: "spot" });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const p = r.body;
    expect(p.bridge).toBe(w.p.perp.bridgeB);
    expect(p.nonce).toBe("0");
    expect(p.core_hash).toBe(coreHash(8453, w.p.perp.bridgeB, w.sub.safe, 0n));
    expect(p.destination).toBe("spot");
    const ev = await deposited(p);
    expect([ev.amount, ev.destination]).toEqual([100n * E6, 1]);
    await relay();
    expect(await ledgerRead<number>("status", [p.core_hash])).toBe(1);
    expect(await ledgerRead<bigint>("balances", [w.sub.safe, 1, 8453n, usdc])).toBe(100n * E6);
    // the next deposit on bridge A gets the next nonce's hash
    const next = await perp("a", { amount: "10" });
    expect(next.body.nonce).toBe("1");
    expect(next.body.core_hash).toBe(coreHash(8453, w.p.perp.bridgeA, w.sub.safe, 1n));
  });

  it("two deposits built before either is sent: the second is pinned to the same core_hash and reverts", async () => {
    const first = (await perp("a", { amount: "20" })).body;
    const second = (await perp("a", { amount: "30" })).body;
    expect([second.nonce, second.core_hash]).toEqual([first.nonce, first.core_hash]);
    await deposited(first);
    const held = await balance(usdc);
    // the second, sent as built: the bridge would give it the next nonce's hash, so it reverts
    const hash = await rpc<Hex>(w.anvil.rpcUrl, "eth_sendTransaction", [
      {
        from: second.from,
        to: second.target,
        data: second.data,
        gas: toHex(BigInt(second.gas_limit)),
        gasPrice: "0x0",
      },
    ]);
    const client = createPublicClient({ transport: http(w.anvil.rpcUrl) });
    const receipt = await client.waitForTransactionReceipt({ hash, pollingInterval: 20 });
    await w.s.syncClock();
    expect(receipt.status).toBe("reverted");
    expect(parseEventLogs({ abi: PerpBridgeAAbi, eventName: "Deposited", logs: receipt.logs })).toEqual([]);
    expect(await balance(usdc)).toBe(held);
    expect(await read<bigint>(usdc, ERC20, "allowance", [w.sub.safe, w.p.perp.bridgeA])).toBe(0n);
    const next = BigInt(first.nonce) + 1n;
    expect(await read<bigint>(w.p.perp.bridgeA, PerpBridgeAAbi as Abi, "nonces", [w.sub.safe])).toBe(next);
    // the revert names the hash it would have had and the one it was built for
    const why = await readAnswer<{ universal_subaccount_errors: { name: string; args: string[]; message: string }[] }>(
      await app.request(`/api/v1/revert_reason?tx_hash=${hash}&chain=8453`),
    );
    expect(why.status, JSON.stringify(why.body)).toBe(200);
    const [err] = why.body.universal_subaccount_errors;
    expect(err).toMatchObject({ name: "UnexpectedResult" });
    expect(err!.args).toEqual([coreHash(8453, w.p.perp.bridgeA, w.sub.safe, next), first.core_hash]);
    expect(err!.message).toMatch(/build it again$/);
    // built again, it gets the next hash and lands under it
    const again = (await perp("a", { amount: "30" })).body;
    expect([again.nonce, again.core_hash]).toEqual([next.toString(), err!.args[0]]);
    expect((await deposited(again)).amount).toBe(30n * E6);
  });

  it("refuses, recorded and with nothing sent: below the minimum, a token the bridge does not take, not the trader", async () => {
    // a token bridge B does not take
    const dai = await w.s.deploy(w.deployer, "MockERC20", ["Dai", "DAI", 18]);
    const before = await head();
    const min = BigInt(w.p.perp.minimumA);
    const below = await refused(await perp("a", { amount_raw: (min - 1n).toString() }), 422, "below_minimum", before);
    expect((below.detail as { msg: string; loc: string[] }[])[0]).toMatchObject({ loc: ["body", "amount_raw"] });
    await refused(await perp("b", { amount: "1", token: dai }), 422, "token_not_supported", before);
    await refused(await perp("b", { amount: "1000000", token: usdc }), 422, "insufficient_balance", before);
    const nt = await refused(await perp("a", { amount: "10", from: actor("x") }), 409, "simulation_failed", before);
    expect(nt.reasons![0]).toMatchObject({ name: "NotTrader" });
    // one body for both bridges: bridge A refuses what only bridge B does, by name
    const notUsdc = await refused(await perp("a", { amount: "10", token: dai }), 422, "token_not_supported", before);
    expect((notUsdc.detail as { loc: string[] }[])[0]!.loc).toEqual(["body", "token"]);
    const spot = await refused(
      await perp("a", { amount: "10", destination: "spot" }),
      422,
      "destination_not_supported",
      before,
    );
    expect((spot.detail as { loc: string[] }[])[0]!.loc).toEqual(["body", "destination"]);
    expect(await head()).toBe(before);
  });

  it("takes the same body on both bridges: USDC to the perp account unless it says otherwise", async () => {
    const body = { amount: "10", token: usdc, destination: "perp" };
    for (const which of ["a", "b"] as const) {
      for (const b of [body, { amount: "10" }]) {
        const r = await perp(which, b);
        expect(r.status, `${which} ${JSON.stringify(b)}: ${JSON.stringify(r.body)}`).toBe(200);
        expect(r.body).toMatchObject({ relayer: `perp_relayer_${which}`, destination: "perp" });
        expect(r.body.token.address).toBe(usdc);
        expect(r.body.amount.raw).toBe((10n * E6).toString());
      }
    }
  });
});

/**
 * check_status reads the indexer's tables, which follow the shared devnet's chains (not this
 * file's world): there, a deposit built for a devnet subaccount (its trader taken from the
 * indexed module roles: no `from`), sent by that trader, is followed by check_status from
 * unknown to pending (indexed deposit) to credited (indexed ledger event) as the relayer worker
 * credits it on chain 1's core ledger.
 */
describe("perp deposit followed by check_status on the indexed devnet", () => {
  let devRelayer: RelayerHandle | undefined;
  afterAll(async () => {
    await devRelayer?.close();
  });

  it("unknown, pending once indexed, credited once relayed: with the returned core_hash", async () => {
    const manifest = loadManifest(h.devnet.manifestFile);
    const chain1 = manifest.chains.find((c) => c.chainId === 1)!;
    const url = h.devnet.chains.find((c) => c.chainId === 1)!.rpcUrl;
    const sub = chain1.world.subaccounts.find((x) => x.role === "trader" && x.registered)!;
    const usdc1 = chain1.world.protocols.perp.usdc;
    const client = createPublicClient({ transport: http(url) });
    const sendRaw = async (from: Address, to: Address, data: Hex, gas = "0x1c9c380") => {
      const hash = await rpc<Hex>(url, "eth_sendTransaction", [{ from, to, data, gas, gasPrice: "0x0" }]);
      const r = await client.waitForTransactionReceipt({ hash, pollingInterval: 20 });
      expect(r.status).toBe("success");
      return r;
    };
    await sendRaw(sub.trader, usdc1, call(ERC20_ABI, "mint", [sub.safe, 300n * E6]));
    const status = async (hash: string) =>
      (
        await readAnswer<{ status: string; deposit: { tx_hash: string } | null; core: { tx_hash: string } | null }>(
          await h.app.request(`/api/v1/integrations/perp_relayer_a/check_status?core_hash=${hash}`),
        )
      ).body;
    const until = async (want: string, hash: string) => {
      const end = Date.now() + 60_000;
      for (;;) {
        const s2 = await status(hash);
        if (s2.status === want || Date.now() > end) return s2;
        await sleep(250);
      }
    };

    const r = await readAnswer<Perp & Refused>(
      await h.app.request("/api/v1/integrations/perp_relayer_a/deposit", {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": key },
        body: JSON.stringify({ subaccount: sub.safe, chain: 1, amount: "300" }),
      }),
    );
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const p = r.body;
    expect(p.from).toBe(sub.trader); // the indexed TRADER
    expect(p.core).toEqual({ chain_id: 1, ledger: chain1.world.protocols.core!.ledger });
    expect((await status(p.core_hash)).status).toBe("unknown");
    await rpc(url, "evm_setNextBlockTimestamp", [p.simulation.timestamp]);
    const receipt = await sendRaw(p.from as Address, p.target as Address, p.data, toHex(BigInt(p.gas_limit)));
    const [ev] = parseEventLogs({ abi: PerpBridgeAAbi, eventName: "Deposited", logs: receipt.logs });
    expect(ev!.args.coreHash).toBe(p.core_hash);

    const pending = await until("pending", p.core_hash);
    expect(pending.status).toBe("pending");
    expect(pending.deposit?.tx_hash).toBe(receipt.transactionHash.toLowerCase());

    devRelayer = await startRelayer(
      {
        ...relayerConfig({
          PONDER_RPC_URL_1: url,
          PONDER_RPC_URL_8453: h.devnet.chains.find((c) => c.chainId === 8453)!.rpcUrl,
          DEVNET_MANIFEST: h.devnet.manifestFile,
          RELAYER_DELAY_S: "0",
          RELAYER_POLL_MS: "600000",
        }),
        redisUrl: h.redisUrl,
      },
      () => {},
    );
    await devRelayer.runOnce();
    const credited = await until("credited", p.core_hash);
    expect(credited.status).toBe("credited");
    const logs = await client.getLogs({ address: chain1.world.protocols.core!.ledger, fromBlock: receipt.blockNumber });
    const [c] = parseEventLogs({ abi: CoreLedgerAbi, eventName: "Credited", logs }).filter(
      (e) => e.args.coreHash === p.core_hash,
    );
    expect(c!.args).toMatchObject({ depositor: sub.safe, amount: 300n * E6 });
    expect(credited.core?.tx_hash).toBe(c!.transactionHash.toLowerCase());
  }, 180_000);
});
