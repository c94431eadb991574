/**
 * The subaccount reads on a real protocol world (an anvil of the test's own): a subaccount Safe
 * that supplies and borrows on Aave, deposits in the Morpho lending vault, holds a Uniswap v3
 * position and lends and borrows loans of the chain's registry. The routes' figures are held to
 * the protocols' own views: Aave's health factor, balances, the vault's convertToAssets, the
 * loans' getDebt.
 */
import { type Abi, type Address, createPublicClient, http, parseAbi, toFunctionSelector } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { LoanAbi } from "../../abis/LoanAbi.js";
import { aave as aaveArt, uniswap as uniArt } from "../../contracts/devnet/protocols/artifacts.js";
import { createLoan, loanSubaccountCalls } from "../../contracts/devnet/protocols/loans.js";
import { ERC20_ABI } from "../../contracts/devnet/protocols/tx.js";
import { type ApiHarness, setupApi } from "../api-harness.js";
import { actor, buildWorld, call, moduleCall, registerWorld, type World } from "../protocol-world.js";

const OFFSET = Number(process.env.TEST_PORT_OFFSET ?? 0);
const E18 = 10n ** 18n;
const E6 = 10n ** 6n;

let h: ApiHarness;
let w: World;
let drop: () => Promise<void>;
let usdc: Address;
let weth: Address;
const LENDER = actor("subaccounts-test:lender");
const BORROWER = actor("subaccounts-test:borrower");

const trade = (data: `0x${string}`) => w.s.send(w.trader, w.sub.module, data, "module call");
const read = async <T>(to: Address, abi: Abi, fn: string, args: readonly unknown[] = []): Promise<T> =>
  (await createPublicClient({ transport: http(w.anvil.rpcUrl) }).readContract({
    address: to,
    abi,
    functionName: fn,
    args: args as unknown[],
  })) as T;

beforeAll(async () => {
  h = await setupApi();
  w = await buildWorld(`subaccounts-test-${OFFSET}`, 18_740 + OFFSET);
  [usdc, weth] = [w.token("USDC"), w.token("WETH")];
  const mint = (t: Address, to: Address, amount: bigint) =>
    w.s.send(w.deployer, t, call(ERC20_ABI, "mint", [to, amount]), "mint");
  await mint(usdc, w.sub.safe, 50_000n * E6);
  await mint(weth, w.sub.safe, 20n * E18);
  // Aave: 10 WETH supplied, 8,000 USDC borrowed
  const pool = w.p.aave.pool;
  const poolAbi = aaveArt.pool().abi;
  await trade(
    moduleCall("executeWithApprovals", [
      [{ token: weth, spender: pool, amount: 10n * E18 }],
      pool,
      0n,
      call(poolAbi, "supply", [weth, 10n * E18, w.sub.safe, 0]),
    ]),
  );
  await trade(moduleCall("execute", [pool, 0n, call(poolAbi, "borrow", [usdc, 8_000n * E6, 2n, 0, w.sub.safe])]));
  // the Morpho lending vault: 5,000 USDC
  const lv = w.p.morpho.lendingVault;
  await trade(
    moduleCall("executeWithApprovals", [
      [{ token: usdc, spender: lv, amount: 5_000n * E6 }],
      lv,
      0n,
      call(parseAbi(["function deposit(uint256,address) returns (uint256)"]), "deposit", [5_000n * E6, w.sub.safe]),
    ]),
  );
  // a Uniswap v3 position in the WETH/USDC 0.3 % pool, full range
  const npm = w.p.uniswap.positionManager;
  const pl = w.p.uniswap.pools.find((x) => x.fee === 3000 && [x.token0, x.token1].includes(usdc));
  if (!pl) throw new Error("no WETH/USDC 0.3 % pool");
  const amounts = pl.token0 === usdc ? [3_200n * E6, 1n * E18] : [1n * E18, 3_200n * E6];
  const top = Math.floor(887272 / pl.tickSpacing) * pl.tickSpacing;
  await trade(
    moduleCall("executeWithApprovals", [
      [
        { token: pl.token0, spender: npm, amount: amounts[0] },
        { token: pl.token1, spender: npm, amount: amounts[1] },
      ],
      npm,
      0n,
      call(uniArt.positionManager().abi, "mint", [
        {
          token0: pl.token0,
          token1: pl.token1,
          fee: 3000,
          tickLower: -top,
          tickUpper: top,
          amount0Desired: amounts[0],
          amount1Desired: amounts[1],
          amount0Min: 0n,
          amount1Min: 0n,
          recipient: w.sub.safe,
          deadline: BigInt(w.s.clock + 3600),
        },
      ]),
    ]),
  );
  // a loan the subaccount lends (funded and drawn) and one it borrows (drawn)
  const ctx = { s: w.s, from: w.deployer };
  const lent = await createLoan(ctx, w.p.loans.registry, {
    lender: w.sub.safe,
    borrower: BORROWER,
    principalToken: usdc,
    principal: 10_000n * E6,
    aprWithTwoDecimals: 1_200n,
    termDays: 90n,
  });
  const borrowed = await createLoan(ctx, w.p.loans.registry, {
    lender: LENDER,
    borrower: w.sub.safe,
    principalToken: usdc,
    principal: 4_000n * E6,
    aprWithTwoDecimals: 800n,
    termDays: 60n,
  });
  for (const [loan, role] of [
    [lent, "lender"],
    [borrowed, "borrower"],
  ] as const) {
    const allowed = loanSubaccountCalls(loan, role);
    const selectors = allowed.signatures.map((sig) => toFunctionSelector(sig));
    await w.s.send(w.governance, w.sub.module, moduleCall("setCalls", [loan, selectors, true]), "setCalls");
  }
  await trade(
    moduleCall("executeWithApprovals", [
      [{ token: usdc, spender: lent, amount: 10_000n * E6 }],
      lent,
      0n,
      call(LoanAbi as Abi, "fund"),
    ]),
  );
  await w.s.send(BORROWER, lent, call(LoanAbi as Abi, "borrowerCommitment"), "commit");
  await w.s.send(BORROWER, lent, call(LoanAbi as Abi, "borrowerWithdraw", [10_000n * E6]), "draw");
  await trade(moduleCall("execute", [borrowed, 0n, call(LoanAbi as Abi, "borrowerCommitment")]));
  await mint(usdc, LENDER, 4_000n * E6);
  await w.s.send(LENDER, usdc, call(ERC20_ABI, "approve", [borrowed, 4_000n * E6]), "approve");
  await w.s.send(LENDER, borrowed, call(LoanAbi as Abi, "fund"), "fund");
  await trade(moduleCall("execute", [borrowed, 0n, call(LoanAbi as Abi, "borrowerWithdraw", [4_000n * E6])]));
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
  chains: { chain_id: number; health_factor: number | null }[];
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
    const aaveCollateral = Number(collateralBase) / 1e8;
    const aaveDebt = Number(debtBase) / 1e8;
    expect(r.body.total_collateral_value).toBeCloseTo(aaveCollateral, 6);
    expect(r.body.total_loan_value).toBeCloseTo(aaveDebt + borrowedLoan, 4);
    expect(r.body.health_factor).toBeCloseTo(
      (aaveCollateral * Number(threshold)) / 10_000 / (aaveDebt + borrowedLoan),
      6,
    );
    // on its own chain, without the loans, it is Aave's health factor
    const aaveHf = (
      await read<readonly bigint[]>(pool, aaveArt.pool().abi as Abi, "getUserAccountData", [w.sub.safe])
    )[5]!;
    expect(r.body.chains.find((c) => c.chain_id === 8453)!.health_factor).toBeCloseTo(Number(aaveHf) / 1e18, 6);
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
    loans: { is_borrow: boolean; book: { address: string; state: string; apr: number } }[];
    total_debt: number;
    total_credit: number;
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
    const bad = await get(`/subaccounts/summary?address=${w.sub.safe}&denomination_address=0x${"99".repeat(20)}`);
    expect(bad.status).toBe(422);
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
