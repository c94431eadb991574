/**
 * The subaccount reads on a real protocol world (an anvil of the test's own): a subaccount Safe
 * that supplies and borrows on Aave, deposits in the Morpho lending vault, holds a Uniswap v3
 * position and lends and borrows loans of the chain's registry. The routes' figures are held to
 * the protocols' own views: Aave's health factor, balances, the vault's convertToAssets, the
 * loans' getDebt.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { type Abi, type Address, createPublicClient, type Hex, http, parseAbi, toFunctionSelector } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LoanAbi } from "../../abis/LoanAbi.js";
import { aave as aaveArt } from "../../contracts/devnet/protocols/artifacts.js";
import { createLoan, loanSubaccountCalls } from "../../contracts/devnet/protocols/loans.js";
import { ERC20_ABI } from "../../contracts/devnet/protocols/tx.js";
import { useRpcUrlLists } from "../../onchain/rpc-fetch.js";
import { type ApiHarness, setupApi } from "../api-harness.js";
import { freePorts, PORT_OFFSET } from "../helpers.js";
import { actor, buildWorld, call, moduleCall, openPositions, registerWorld, type World } from "../protocol-world.js";

let h: ApiHarness;
let w: World;
let drop: () => Promise<void>;
let usdc: Address;
let weth: Address;
const LENDER = actor("subaccounts-test:lender");
const BORROWER = actor("subaccounts-test:borrower");

const read = async <T>(to: Address, abi: Abi, fn: string, args: readonly unknown[] = []): Promise<T> =>
  (await createPublicClient({ transport: http(w.anvil.rpcUrl) }).readContract({
    address: to,
    abi,
    functionName: fn,
    args: args as unknown[],
  })) as T;

beforeAll(async () => {
  h = await setupApi();
  w = await buildWorld(`subaccounts-test-${PORT_OFFSET}`, 18_740 + PORT_OFFSET);
  [usdc, weth] = [w.token("USDC"), w.token("WETH")];
  await openPositions(w, { lender: LENDER, borrower: BORROWER });
  // a month passes: interest accrues on both loans and on Aave
  await w.s.rpc("evm_increaseTime", [30 * 86_400]);
  await w.s.rpc("evm_mine", []);
  await w.s.syncClock();
  drop = await registerWorld(h, w, 1.3);
}, 600_000);

afterAll(async () => {
  await drop?.();
  await w?.anvil.stop();
  await h?.close();
});

// the devnet's chains, and this world's in place of the devnet's chain 8453 (a subaccount is read
// on every chain with a protocols entry)
const app = () =>
  h.appWith({
    rpcUrls: new Map([...h.devnet.chains.map((c) => [c.chainId, c.rpcUrl] as const), [w.s.chainId, w.anvil.rpcUrl]]),
  });
async function get<T>(path: string, key: string | null = h.key) {
  const res = await app().request(`/api/v1${path}`, { headers: key ? { "x-api-key": key } : {} });
  return { status: res.status, body: (await res.json()) as T };
}

type Health = {
  id: string;
  health_factor: number | null;
  total_collateral_value: number;
  total_loan_value: number;
  total_account_value: number;
  net_account_value: number;
  min_health_factor: number | null;
  maintenance_margin_fraction: number | null;
  chains: {
    chain_id: number;
    health_factor: number | null;
    total_loan_value: number;
    venue_loan_value: number;
    borrowed_loan_value: number;
  }[];
};

describe("GET /api/v1/subaccounts", () => {
  it("lists the registry's subaccounts once each, with their chains and minimum health factor", async () => {
    const r =
      await get<{ address: string; chains: { chain_id: number }[]; min_health_factor: number | null }[]>(
        "/subaccounts",
      );
    expect(r.status).toBe(200);
    const mine = r.body.filter((x) => x.address === w.sub.safe.toLowerCase());
    expect(mine).toHaveLength(1);
    expect(mine[0]).toMatchObject({ chains: [{ chain_id: 8453 }], min_health_factor: 1.3 });
    expect(new Set(r.body.map((x) => x.address)).size).toBe(r.body.length);
  });

  it("needs a key (the spec marks it): 401 without, 403 with a bad one", async () => {
    expect((await get("/subaccounts", null)).status).toBe(401);
    expect((await get("/subaccounts", "nope")).status).toBe(403);
  });
});

describe("GET /api/v1/subaccounts/health_factor", () => {
  it("matches the protocols' own figures: Aave's account data, the loans' debts", async () => {
    const pool = w.p.aave.pool;
    const [collateralBase, debtBase, , threshold] = await read<readonly bigint[]>(
      pool,
      aaveArt.pool().abi as Abi,
      "getUserAccountData",
      [w.sub.safe],
    );
    const [interestOwed, principalOwed] = await read<readonly bigint[]>(
      (
        await read<Address[]>(
          w.p.loans.registry,
          parseAbi(["function loansOf(address) view returns (address[])"]),
          "loansOf",
          [w.sub.safe],
        )
      )[1]!,
      LoanAbi as Abi,
      "getDebt",
    );
    const borrowedLoan = Number(interestOwed! + principalOwed!) / 1e6; // USDC at 1 USD
    const r = await get<Health>(`/subaccounts/health_factor?address=${w.sub.safe}`);
    expect(r.status).toBe(200);
    // HealthFactorMinimal's id is the subaccount's address (the original client's type)
    expect(r.body.id).toBe(w.sub.safe.toLowerCase());
    const aaveCollateral = Number(collateralBase) / 1e8;
    const aaveDebt = Number(debtBase) / 1e8;
    expect(r.body.total_collateral_value).toBeCloseTo(aaveCollateral, 6);
    expect(r.body.total_loan_value).toBeCloseTo(aaveDebt + borrowedLoan, 4);
    // the lower of Aave's (its collateral at its threshold over its debt) and the loan's (what the
    // account holds less the Aave debt, over what it owes on the loan it borrows)
    const venue = (aaveCollateral * Number(threshold)) / 10_000 / aaveDebt;
    const loans = (r.body.total_account_value - aaveDebt) / borrowedLoan;
    expect(r.body.health_factor).toBeCloseTo(Math.min(venue, loans), 6);
    // and the margin fraction where the first of them reaches 1
    const liquidation = (aaveCollateral * Number(threshold)) / 10_000;
    expect(r.body.maintenance_margin_fraction).toBeCloseTo(
      Math.max(1 - (liquidation + borrowedLoan) / r.body.total_account_value, 0),
      9,
    );
    // on its own chain, without the loans, it is Aave's health factor
    const aaveHf = (
      await read<readonly bigint[]>(pool, aaveArt.pool().abi as Abi, "getUserAccountData", [w.sub.safe])
    )[5]!;
    const own = r.body.chains.find((c) => c.chain_id === 8453)!;
    expect(own.health_factor).toBeCloseTo(Number(aaveHf) / 1e18, 6);
    expect(venue).toBeCloseTo(Number(aaveHf) / 1e18, 6);
    // the chain's debts: Aave's and the loan it borrows there, which the chains sum to
    expect(own.venue_loan_value).toBeCloseTo(aaveDebt, 4);
    expect(own.borrowed_loan_value).toBeCloseTo(borrowedLoan, 4);
    expect(own.total_loan_value).toBeCloseTo(aaveDebt + borrowedLoan, 4);
    const sum = r.body.chains.reduce((t, c) => t + c.total_loan_value, 0);
    expect(sum).toBeCloseTo(r.body.total_loan_value, 6);
    expect(r.body.min_health_factor).toBe(1.3);
    expect(r.body.net_account_value).toBeCloseTo(r.body.total_account_value - r.body.total_loan_value, 6);
  });

  it("unknown subaccount 404, bad address 422, no RPC for its chain 503", async () => {
    expect((await get(`/subaccounts/health_factor?address=0x${"77".repeat(20)}`)).status).toBe(404);
    expect((await get("/subaccounts/health_factor?address=nope")).status).toBe(422);
    const noRpc = await h
      .appWith({ rpcUrls: new Map() })
      .request(`/api/v1/subaccounts/health_factor?address=${w.sub.safe}`, { headers: { "x-api-key": h.key } });
    expect(noRpc.status).toBe(503);
  });
});

type Summary = {
  tokens: { address: string; raw_balance: string; value: number | null; price: number | null }[];
  portfolio: { defi_positions: { protocol: string; value: number | null }[]; total_value: number };
  loanbook: {
    loans: {
      is_borrow: boolean;
      book: { address: string; state: string; apr: number; principal_token: { price: number | null } };
    }[];
    total_debt: number;
    total_credit: number;
    aggregates_by_token: { token: string; chain_id: number; symbol: string }[];
  };
  total_account_value: number;
  total_loan_value: number;
  health_factor: number | null;
  denomination: { symbol: string };
};

describe("GET /api/v1/subaccounts/summary", () => {
  it("tokens, positions of every venue and the loan book, valued through the feeds", async () => {
    const r = await get<Summary>(`/subaccounts/summary?address=${w.sub.safe}`);
    expect(r.status).toBe(200);
    const usdcRow = r.body.tokens.find((t) => t.address === usdc.toLowerCase())!;
    expect(BigInt(usdcRow.raw_balance)).toBe(await read<bigint>(usdc, ERC20_ABI as Abi, "balanceOf", [w.sub.safe]));
    expect(usdcRow.price).toBe(1);
    const protocols = new Set(r.body.portfolio.defi_positions.map((p) => p.protocol));
    expect([...protocols].sort()).toEqual(["aave_v3", "lending_vault", "uniswap_v3"]);
    const vaultRow = r.body.portfolio.defi_positions.find((p) => p.protocol === "lending_vault")!;
    const shares = await read<bigint>(w.p.morpho.lendingVault, ERC20_ABI as Abi, "balanceOf", [w.sub.safe]);
    const assets = await read<bigint>(
      w.p.morpho.lendingVault,
      parseAbi(["function convertToAssets(uint256) view returns (uint256)"]),
      "convertToAssets",
      [shares],
    );
    expect(vaultRow.value).toBeCloseTo(Number(assets) / 1e6, 6);
    const uni = r.body.portfolio.defi_positions.find((p) => p.protocol === "uniswap_v3")!;
    expect(uni.value).toBeGreaterThan(6_000); // 3,200 USDC + 1 WETH at 3,200
    expect(uni.value).toBeLessThan(6_500);
    expect(r.body.loanbook.loans.map((l) => [l.is_borrow, l.book.state, l.book.apr])).toEqual([
      [false, "active", 12],
      [true, "active", 8],
    ]);
    expect(r.body.loanbook.total_credit).toBeGreaterThan(10_000); // principal and a month's interest
    expect(r.body.loanbook.total_debt).toBeGreaterThan(4_000);
    // both loans are in this world's USDC: one aggregate, which names its chain
    expect(r.body.loanbook.aggregates_by_token).toMatchObject([{ token: usdc.toLowerCase(), chain_id: 8453 }]);
    expect(r.body.total_account_value).toBeCloseTo(r.body.portfolio.total_value, 6);
  });

  it("in WETH: every value over WETH's price; a token without a feed 422", async () => {
    const usd = await get<Summary>(`/subaccounts/summary?address=${w.sub.safe}`);
    const inWeth = await get<Summary>(
      `/subaccounts/summary?address=${w.sub.safe}&denomination_address=${weth}&denomination_chain=8453`,
    );
    expect(inWeth.status).toBe(200);
    expect(inWeth.body.denomination.symbol).toBe("WETH");
    expect(inWeth.body.total_account_value).toBeCloseTo(usd.body.total_account_value / 3200, 6);
    expect(inWeth.body.health_factor).toBeCloseTo(usd.body.health_factor!, 9);
    // prices too: the loans' USDC at 1/3200 WETH, like the token rows'
    const usdcInWeth = inWeth.body.tokens.find((t) => t.address === usdc.toLowerCase())!.price!;
    expect(usdcInWeth).toBeCloseTo(1 / 3200, 9);
    for (const l of inWeth.body.loanbook.loans) expect(l.book.principal_token.price).toBe(usdcInWeth);
    const bad = await get(`/subaccounts/summary?address=${w.sub.safe}&denomination_address=0x${"99".repeat(20)}`);
    expect(bad.status).toBe(422);
    // null as a client puts it in a query, empty, or usd in lower case: USD
    for (const v of ["null", "", "usd", "USD"]) {
      const r = await get<Summary>(`/subaccounts/summary?address=${w.sub.safe}&denomination_address=${v}`);
      expect(r.status, v).toBe(200);
      expect(r.body.denomination.symbol, v).toBe("USD");
      expect(r.body.total_account_value).toBeCloseTo(usd.body.total_account_value, 2);
    }
    const junk = await get(`/subaccounts/summary?address=${w.sub.safe}&denomination_address=nil`);
    expect(junk.status).toBe(422);
    for (const chain of ["99999999999999999999999", "12345"]) {
      const q = `address=${w.sub.safe}&denomination_address=${weth}&denomination_chain=${chain}`;
      const r = await get<{ detail: { loc: string[] }[] }>(`/subaccounts/summary?${q}`);
      expect(r.status).toBe(422);
      expect(r.body.detail[0]!.loc).toEqual(["query", "denomination_chain"]);
    }
  });
});

describe("GET /api/v1/integrations/lending_vault/apy", () => {
  it("the vault's share price and the subaccount's position in it, read at the head", async () => {
    const lv = w.p.morpho.lendingVault;
    const r = await get<{
      apy: number | null;
      window_days: number | null;
      apy_as_of: string | null;
      share_price: number;
      vault_positions: { subaccount: string; shares: string; assets: number; value: number | null }[];
      token: { symbol: string };
    }>(`/integrations/lending_vault/apy?vault_address=${lv}&subaccount_address=${w.sub.safe}&chain=8453`, null);
    expect(r.status).toBe(200);
    expect(r.body.token.symbol).toBe("USDC");
    // a month passed with the market half borrowed: the shares earned interest
    expect(r.body.share_price).toBeGreaterThan(1);
    // the APY is the job's series of indexed snapshots (5-api-portfolio checks it on the devnet);
    // this world's chain was never indexed, so there is none, and the answer says so
    expect(r.body).toMatchObject({ apy: null, window_days: null, apy_as_of: null });
    const shares = await read<bigint>(lv, ERC20_ABI as Abi, "balanceOf", [w.sub.safe]);
    const assets = await read<bigint>(
      lv,
      parseAbi(["function convertToAssets(uint256) view returns (uint256)"]),
      "convertToAssets",
      [shares],
    );
    expect(r.body.vault_positions[0]).toMatchObject({
      subaccount: w.sub.safe.toLowerCase(),
      shares: shares.toString(),
    });
    expect(r.body.vault_positions[0]!.assets).toBeCloseTo(Number(assets) / 1e6, 6);
    expect(r.body.vault_positions[0]!.value).toBeCloseTo(Number(assets) / 1e6, 6);
    const notVault = await get(
      `/integrations/lending_vault/apy?vault_address=${w.sub.safe}&subaccount_address=${w.sub.safe}&chain=8453`,
    );
    expect(notVault.status).toBe(404);
  });
});

/** A JSON-RPC proxy in front of the world's anvil that records every method it forwards. */
async function countingProxy() {
  const methods: string[] = [];
  const server = createServer((req, res) => {
    const chunks: Buffer[] = [];
    req.on("data", (c: Buffer) => chunks.push(c));
    req.on("end", async () => {
      const body = Buffer.concat(chunks).toString();
      const parsed = JSON.parse(body) as { method: string } | { method: string }[];
      for (const m of Array.isArray(parsed) ? parsed : [parsed]) methods.push(m.method);
      const up = await fetch(w.anvil.rpcUrl, { method: "POST", headers: { "content-type": "application/json" }, body });
      res.writeHead(up.status, { "content-type": "application/json" });
      res.end(await up.text());
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const { port } = server.address() as AddressInfo;
  return { url: `http://127.0.0.1:${port}`, methods, close: () => new Promise((r) => server.close(r)) };
}

describe("live reads shared by concurrent requests (api/lib/chain-reads.ts)", () => {
  it("two requests about one subaccount at one head read its state once; a new block reads it afresh", async () => {
    const proxy = await countingProxy();
    try {
      // one app (its chain reads are its own), the response cache off: every request reaches the
      // handlers and reads the head
      const one = h.appWith({
        responseCacheMs: 0,
        rpcUrls: new Map([...h.devnet.chains.map((c) => [c.chainId, c.rpcUrl] as const), [w.s.chainId, proxy.url]]),
      });
      const ask = async <T>(path: string) => {
        const res = await one.request(`/api/v1${path}`, { headers: { "x-api-key": h.key } });
        expect(res.status).toBe(200);
        return (await res.json()) as T;
      };
      const health = `/subaccounts/health_factor?address=${w.sub.safe}`;
      const summary = `/subaccounts/summary?address=${w.sub.safe}`;
      const blockOf = (x: { chains: { chain_id: number; block_number: number }[] }) =>
        x.chains.find((c) => c.chain_id === w.s.chainId)!.block_number;
      const calls = (m: string) => proxy.methods.filter((x) => x === m).length;
      await ask(health); // the client's first use checks Multicall3 once
      // a new block: one read of the state at it (mined at anvil's clock: the session follows it,
      // or the next test's transaction would be timed before it)
      await w.s.rpc("evm_mine", []);
      await w.s.syncClock();
      proxy.methods.length = 0;
      const alone = await ask<Health & { chains: { chain_id: number; block_number: number }[] }>(health);
      const oneRead = calls("eth_call");
      expect(oneRead).toBeGreaterThan(0);
      expect(blockOf(alone)).toBe(Number(await w.s.rpc<string>("eth_blockNumber", [])));
      // another block; the health factor and the summary at once: still one read of the state
      await w.s.rpc("evm_mine", []);
      await w.s.syncClock();
      proxy.methods.length = 0;
      const [hf] = await Promise.all([
        ask<{ chains: { chain_id: number; block_number: number }[] }>(health),
        ask(summary),
      ]);
      expect(calls("eth_call")).toBe(oneRead);
      expect(calls("eth_getBlockByNumber")).toBeLessThanOrEqual(2);
      expect(blockOf(hf)).toBe(blockOf(alone) + 1);
      // no new block: the head is read, the state is not
      proxy.methods.length = 0;
      expect(blockOf(await ask(health))).toBe(blockOf(hf));
      expect(calls("eth_call")).toBe(0);
      expect(calls("eth_getBlockByNumber")).toBe(1);
    } finally {
      await proxy.close();
    }
  });
});

describe("a chain given several URLs (PONDER_RPC_URL_<id>=a,b)", () => {
  it("its first URL down: the live reads fail over to the second", async () => {
    const proxy = await countingProxy();
    try {
      const dead = `http://127.0.0.1:${await freePorts(1)}`; // nothing listens there
      useRpcUrlLists([[w.s.chainId, [dead, proxy.url]]]);
      const app = h.appWith({
        responseCacheMs: 0,
        rpcUrls: new Map([...h.devnet.chains.map((c) => [c.chainId, c.rpcUrl] as const), [w.s.chainId, dead]]),
      });
      for (const path of [
        `/subaccounts/health_factor?address=${w.sub.safe}`,
        `/subaccounts/summary?address=${w.sub.safe}`,
      ]) {
        const res = await app.request(`/api/v1${path}`, { headers: { "x-api-key": h.key } });
        expect(res.status, path).toBe(200);
      }
      expect(proxy.methods).toContain("eth_call");
      // the dead URL's failures, by its index in the chain's list
      const metrics = await (await app.request("/metrics")).text();
      const line = new RegExp(`^vaults_rpc_url_failures_total\\{chain_id="${w.s.chainId}",url="0"\\} (\\d+)$`, "m");
      expect(Number(line.exec(metrics)?.[1])).toBeGreaterThan(0);
      expect(metrics).not.toMatch(new RegExp(`chain_id="${w.s.chainId}",url="1"`));
    } finally {
      await proxy.close();
    }
  });
});

describe("a loan the subaccount borrows and has not drawn", () => {
  it("counts in its debt and, still in the loan for it to draw, in its value; drawing moves nothing", async () => {
    const before = await get<Health>(`/subaccounts/health_factor?address=${w.sub.safe}`);
    const discounted = async () =>
      (await get<{ portfolio: { discounted_value: number } }>(`/subaccounts/summary?address=${w.sub.safe}`)).body
        .portfolio.discounted_value;
    const discountedBefore = await discounted();
    const loan = await createLoan({ s: w.s, from: w.deployer }, w.p.loans.registry, {
      lender: LENDER,
      borrower: w.sub.safe,
      principalToken: usdc,
      principal: 3_000_000_000n,
      aprWithTwoDecimals: 600n,
      termDays: 30n,
    });
    const selectors = loanSubaccountCalls(loan, "borrower").signatures.map((sig) => toFunctionSelector(sig));
    await w.s.send(w.governance, w.sub.module, moduleCall("setCalls", [loan, selectors, true]), "setCalls");
    const trade = (data: Hex) => w.s.send(w.trader, w.sub.module, data, "module call");
    await trade(moduleCall("execute", [loan, 0n, call(LoanAbi as Abi, "borrowerCommitment")]));
    await w.s.send(w.deployer, usdc, call(ERC20_ABI as Abi, "mint", [LENDER, 3_000_000_000n]), "mint");
    await w.s.send(LENDER, usdc, call(ERC20_ABI as Abi, "approve", [loan, 3_000_000_000n]), "approve");
    await w.s.send(LENDER, loan, call(LoanAbi as Abi, "fund"), "fund");
    const undrawn = await get<Health>(`/subaccounts/health_factor?address=${w.sub.safe}`);
    expect(undrawn.status).toBe(200);
    // 3,000 owed (and a few seconds' interest on the others), 3,000 its own in the loan
    expect(undrawn.body.total_loan_value - before.body.total_loan_value).toBeCloseTo(3_000, 0);
    expect(undrawn.body.total_account_value - before.body.total_account_value).toBeCloseTo(3_000, 0);
    const summary = await get<{ loanbook: { loans: { book: { address: string }; debt_info: Debt }[] } }>(
      `/subaccounts/summary?address=${w.sub.safe}`,
    );
    const entry = summary.body.loanbook.loans.find((l) => l.book.address === loan.toLowerCase())!;
    expect(entry.debt_info).toMatchObject({ principal_debt_owed: 3_000, principal_undrawn: 3_000 });
    // the discounted value counts it as the total value does (a deposit's seconds of interest apart)
    expect((await discounted()) - discountedBefore).toBeCloseTo(3_000, 0);
    // drawing 1,000: from the loan to its wallet, the same account value and debt
    await trade(moduleCall("execute", [loan, 0n, call(LoanAbi as Abi, "borrowerWithdraw", [1_000_000_000n])]));
    const drawn = await get<Health>(`/subaccounts/health_factor?address=${w.sub.safe}`);
    expect(drawn.body.total_account_value).toBeCloseTo(undrawn.body.total_account_value, 0);
    expect(drawn.body.total_loan_value).toBeCloseTo(undrawn.body.total_loan_value, 0);
    const after = await get<{ loanbook: { loans: { book: { address: string }; debt_info: Debt }[] } }>(
      `/subaccounts/summary?address=${w.sub.safe}`,
    );
    const again = after.body.loanbook.loans.find((l) => l.book.address === loan.toLowerCase())!;
    expect(again.debt_info.principal_undrawn).toBe(2_000);
  });
});

type Debt = { principal_debt_owed: number; principal_undrawn: number };

describe("a loan in a token outside the catalogue, with no feed", () => {
  it("is read in the token's own decimals; its debt listed unpriced, the health factor unknown", async () => {
    const offc = await w.s.deploy(w.deployer, "MockERC20", ["Off Catalogue", "OFFC", 6]);
    const principal = 5_000n * 10n ** 6n;
    const loan = await createLoan({ s: w.s, from: w.deployer }, w.p.loans.registry, {
      lender: LENDER,
      borrower: w.sub.safe,
      principalToken: offc,
      principal,
      aprWithTwoDecimals: 600n,
      termDays: 30n,
    });
    const selectors = loanSubaccountCalls(loan, "borrower").signatures.map((sig) => toFunctionSelector(sig));
    await w.s.send(w.governance, w.sub.module, moduleCall("setCalls", [loan, selectors, true]), "setCalls");
    const commit = moduleCall("execute", [loan, 0n, call(LoanAbi as Abi, "borrowerCommitment")]);
    await w.s.send(w.trader, w.sub.module, commit, "module call");
    await w.s.send(w.deployer, offc, call(ERC20_ABI as Abi, "mint", [LENDER, principal]), "mint");
    await w.s.send(LENDER, offc, call(ERC20_ABI as Abi, "approve", [loan, principal]), "approve");
    await w.s.send(LENDER, loan, call(LoanAbi as Abi, "fund"), "fund");

    type Unpriced = { chain_id: number; token: string; symbol: string | null; amount: number }[];
    const health = await get<Health & { unpriced_debts: Unpriced }>(`/subaccounts/health_factor?address=${w.sub.safe}`);
    expect(health.status).toBe(200);
    // 5,000 OFFC owed, no price for it: not as if there were no debt
    expect(health.body.health_factor).toBeNull();
    expect(health.body.unpriced_debts).toEqual([
      { chain_id: w.s.chainId, token: offc.toLowerCase(), symbol: "OFFC", amount: expect.closeTo(5_000, 0) },
    ]);
    const summary = await get<{
      health_factor: number | null;
      unpriced_debts: Unpriced;
      loanbook: {
        loans: { book: { address: string; principal_token: { symbol: string; decimals: number } }; debt_info: Debt }[];
      };
    }>(`/subaccounts/summary?address=${w.sub.safe}`);
    const entry = summary.body.loanbook.loans.find((l) => l.book.address === loan.toLowerCase())!;
    // the token's own 6 decimals, not 18 (which read 5,000 as 0.000000005)
    expect(entry.book.principal_token).toMatchObject({ symbol: "OFFC", decimals: 6 });
    expect(entry.debt_info.principal_debt_owed).toBe(5_000);
    expect(summary.body.health_factor).toBeNull();
    expect(summary.body.unpriced_debts).toHaveLength(1);
  });
});
