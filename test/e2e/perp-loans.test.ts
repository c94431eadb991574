/**
 * Perp deposits and loans on fresh anvils: a subaccount (a Safe with SubaccountModule) deposits
 * through both bridges, the core hash computed before mining is the one the core ledger credits,
 * the relayer step credits after its delay, rejects the deposit below the minimum and never
 * credits twice; loans lent and borrowed by the subaccount register per chain and their views
 * follow time, repayments and a call. Starts its own two anvils; needs nothing from the devnet.
 */
import { mkdirSync } from "node:fs";
import { join } from "node:path";
import {
  type Abi,
  type Address,
  createPublicClient,
  createWalletClient,
  decodeErrorResult,
  encodeFunctionData,
  getAddress,
  type Hex,
  http,
  keccak256,
  type PublicClient,
  parseEventLogs,
  toFunctionSelector,
  toHex,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CoreLedgerAbi } from "../../abis/CoreLedgerAbi.js";
import { LoanAbi } from "../../abis/LoanAbi.js";
import { LoanRegistryAbi } from "../../abis/LoanRegistryAbi.js";
import { PerpBridgeAAbi } from "../../abis/PerpBridgeAAbi.js";
import { PerpBridgeBAbi } from "../../abis/PerpBridgeBAbi.js";
import { SubaccountModuleAbi } from "../../abis/SubaccountModuleAbi.js";
import { MULTICALL3 } from "../../config/multicall3.js";
import {
  type CoreLedgerDeployment,
  coreHash,
  createLoan,
  createSubaccount,
  deployCoreLedger,
  deployLoanRegistry,
  deployPerpBridges,
  deploySafe,
  type LoansDeployment,
  loanInterest,
  loanSubaccountCalls,
  nextCoreHash,
  PERP_DESTINATION,
  type PerpBridgesDeployment,
  perpSubaccountCalls,
  planRelay,
  type RelaySource,
  readDeposits,
  readLoan,
  relayOnce,
  type Subaccount,
  type TokenInput,
} from "../../contracts/devnet/protocols/index.js";
import { type Ctx, ERC20_ABI } from "../../contracts/devnet/protocols/tx.js";
import { ChainSession } from "../../contracts/devnet/session.js";
import { type AnvilInstance, RpcError, rpc, startAnvil } from "../../scripts/lib/anvil.js";
import { REPO_ROOT } from "../../scripts/lib/indexer.js";
import { PORT_OFFSET } from "../helpers.js";
import { limitedRpc } from "../limited-rpc.js";

const CHAINS = [
  { chainId: 1, port: 19_570 + PORT_OFFSET },
  { chainId: 8453, port: 19_571 + PORT_OFFSET }, // also the core chain
];
const actor = (name: string): Address => getAddress(`0x${keccak256(toHex(`perp-loans-test:${name}`)).slice(26)}`);
const DEPLOYER = actor("deployer");
const GOVERNANCE = actor("governance");
const TRADER = actor("trader");
const STRANGER = actor("stranger");
const BORROWER = actor("borrower");
const LENDER = actor("lender");
const RELAYER_KEY = keccak256(toHex("perp-loans-test:relayer-key"));
const relayerAccount = privateKeyToAccount(RELAYER_KEY);
const DELAY = 600;
const DAY = 86_400;
const E6 = 10n ** 6n;
const E18 = 10n ** 18n;

interface World {
  anvil: AnvilInstance;
  s: ChainSession;
  ctx: Ctx;
  client: PublicClient;
  tokens: Record<"USDC" | "WETH", Address>;
  perp: PerpBridgesDeployment;
  loans: LoansDeployment;
  sub: Subaccount;
}

const worlds: World[] = [];
let core: CoreLedgerDeployment;

async function tokensAndFeeds(s: ChainSession): Promise<TokenInput[]> {
  const specs = [
    { name: "USD Coin", symbol: "USDC", decimals: 6, usd: 1 },
    { name: "Wrapped Ether", symbol: "WETH", decimals: 18, usd: 3200 },
  ];
  const out: TokenInput[] = [];
  for (const t of specs) {
    const address = await s.deploy(DEPLOYER, "MockERC20", [t.name, t.symbol, t.decimals]);
    const feed = await s.deploy(DEPLOYER, "PriceFeed", [8, `${t.symbol} / USD`, BigInt(t.usd * 1e8)]);
    out.push({ address, symbol: t.symbol, decimals: t.decimals, feed });
  }
  return out;
}

async function buildWorld(chainId: number, port: number, dir: string): Promise<World> {
  const anvil = await startAnvil({ chainId, port, logFile: join(dir, `anvil-${chainId}.log`) });
  const s = new ChainSession(chainId, anvil.rpcUrl);
  await s.syncClock();
  // Multicall3 at its canonical address, as on every real chain (the loan reads batch through it)
  const mc = await s.deploy(DEPLOYER, "Multicall3", []);
  await s.rpc("anvil_setCode", [MULTICALL3, await s.rpc<Hex>("eth_getCode", [mc, "latest"])]);
  const ctx: Ctx = { s, from: DEPLOYER };
  const inputs = await tokensAndFeeds(s);
  const [usdc, weth] = inputs as [TokenInput, TokenInput];
  const safe = await deploySafe(ctx);
  const perp = await deployPerpBridges(ctx, { usdc, tokensB: [usdc, weth] });
  const loans = await deployLoanRegistry(ctx);
  const sub = await createSubaccount(ctx, safe, {
    label: "vault-1/subaccount-perp",
    owner: GOVERNANCE,
    trader: TRADER,
    tokens: [usdc.address, weth.address],
    calls: perpSubaccountCalls(perp),
  });
  const client = createPublicClient({ transport: http(anvil.rpcUrl) }) as PublicClient;
  return { anvil, s, ctx, client, tokens: { USDC: usdc.address, WETH: weth.address }, perp, loans, sub };
}

beforeAll(async () => {
  const dir = join(REPO_ROOT, ".data", `perp-loans-test-${PORT_OFFSET}`);
  mkdirSync(dir, { recursive: true });
  worlds.push(...(await Promise.all(CHAINS.map((c) => buildWorld(c.chainId, c.port, dir)))));
  const c = worlds[1] as World;
  core = await deployCoreLedger(c.ctx, { relayer: relayerAccount.address });
  await c.s.rpc("anvil_setBalance", [relayerAccount.address, toHex(10n * E18)]);
}, 300_000);

afterAll(async () => {
  await Promise.all(worlds.map((w) => w.anvil.stop()));
});

// ---- helpers ---------------------------------------------------------------------------------

const wA = () => worlds[0] as World;
const wCore = () => worlds[1] as World;

function call(abi: Abi, functionName: string, args: readonly unknown[] = []): Hex {
  return encodeFunctionData({ abi, functionName, args: args as unknown[] });
}

function moduleCall(functionName: string, args: readonly unknown[]): Hex {
  return call(SubaccountModuleAbi as Abi, functionName, args);
}

/** The trader's module call, mined at `at` (0: next second). */
async function trade(w: World, data: Hex, at = 0) {
  return w.s.send(TRADER, w.sub.module, data, "module call", at);
}

/** A call from the Safe through the module with exact approvals of `token` to `target`. */
async function viaModule(w: World, target: Address, data: Hex, approve?: { token: Address; amount: bigint }, at = 0) {
  if (!approve) return trade(w, moduleCall("execute", [target, 0n, data]), at);
  return trade(w, moduleCall("executeWithApprovals", [[{ ...approve, spender: target }], target, 0n, data]), at);
}

async function allowCalls(w: World, target: Address, signatures: string[]) {
  const selectors = signatures.map((sig) => toFunctionSelector(sig));
  await w.s.send(GOVERNANCE, w.sub.module, moduleCall("setCalls", [target, selectors, true]), "setCalls");
}

async function mintTo(w: World, token: Address, to: Address, amount: bigint) {
  await w.s.send(DEPLOYER, token, call(ERC20_ABI, "mint", [to, amount]), "mint");
}

async function revertData(w: World, from: Address, to: Address, data: Hex): Promise<Hex> {
  try {
    await rpc(w.anvil.rpcUrl, "eth_call", [{ from, to, data }, "latest"]);
  } catch (err) {
    if (err instanceof RpcError && typeof err.data === "string") return err.data as Hex;
    throw err;
  }
  throw new Error("the call did not revert");
}

function depositedIn(receipt: { logs: readonly unknown[] }) {
  return parseEventLogs({ abi: PerpBridgeAAbi, eventName: "Deposited", logs: receipt.logs as never });
}

/** Deposits made by the tests, as the builder knew them before mining. */
const expected: { chainId: number; bridge: Address; coreHash: Hex; amount: bigint; credit: boolean }[] = [];
let firstBlock: bigint[] = [];

// ---- perp deposits ---------------------------------------------------------------------------

describe("perp deposits", () => {
  it("deposits through bridge A and B via the module; the core hash is known before mining", async () => {
    firstBlock = await Promise.all(worlds.map(async (w) => BigInt(await w.s.blockNumber())));
    for (const w of worlds) {
      const { USDC, WETH } = w.tokens;
      await mintTo(w, USDC, w.sub.safe, 1_000n * E6);
      await mintTo(w, WETH, w.sub.safe, 2n * E18);
      const deposits = [
        {
          bridge: w.perp.bridgeA,
          token: USDC,
          amount: 100n * E6,
          data: call(PerpBridgeAAbi as Abi, "deposit", [100n * E6]),
        },
        // below bridge A's 5 USDC minimum: accepted here, lost on the core side
        {
          bridge: w.perp.bridgeA,
          token: USDC,
          amount: 2n * E6,
          data: call(PerpBridgeAAbi as Abi, "deposit", [2n * E6]),
        },
        {
          bridge: w.perp.bridgeB,
          token: WETH,
          amount: E18 / 2n,
          data: call(PerpBridgeBAbi as Abi, "deposit", [WETH, E18 / 2n, PERP_DESTINATION.spot]),
        },
      ];
      for (const [i, d] of deposits.entries()) {
        const nonce = BigInt(i === 1 ? 1 : 0); // per depositor and bridge
        const hash = coreHash(w.s.chainId, d.bridge, w.sub.safe, nonce);
        expect(await nextCoreHash(w.client, d.bridge, w.sub.safe)).toBe(hash);
        const receipt = await viaModule(w, d.bridge, d.data, { token: d.token, amount: d.amount });
        const [ev] = depositedIn(receipt);
        expect(ev?.args).toMatchObject({
          coreHash: hash,
          depositor: w.sub.safe,
          token: d.token,
          amount: d.amount,
          nonce,
        });
        expected.push({ chainId: w.s.chainId, bridge: d.bridge, coreHash: hash, amount: d.amount, credit: i !== 1 });
      }
      // the tokens sit in the bridges, no approval is left behind
      for (const b of [w.perp.bridgeA, w.perp.bridgeB]) {
        const left = await w.client.readContract({
          address: USDC,
          abi: ERC20_ABI,
          functionName: "allowance",
          args: [w.sub.safe, b],
        });
        expect(left).toBe(0n);
      }
    }
    // same Safe, same nonce, another chain or bridge: another hash
    expect(new Set(expected.map((e) => e.coreHash)).size).toBe(expected.length);
    expect(worlds[0]?.sub.safe).toBe(worlds[1]?.sub.safe);
  });

  it("refuses a deposit of a token the bridge does not take, and a destination that does not exist", async () => {
    const w = wA();
    const notSupported = call(PerpBridgeBAbi as Abi, "deposit", [w.sub.module, 1n, 0]);
    const err = decodeErrorResult({
      abi: PerpBridgeBAbi as Abi,
      data: await revertData(w, TRADER, w.sub.module, moduleCall("execute", [w.perp.bridgeB, 0n, notSupported])),
    });
    expect(err.errorName).toBe("TokenNotSupported");
    const badDest = call(PerpBridgeBAbi as Abi, "deposit", [w.tokens.USDC, 10n * E6, 2]);
    const err2 = decodeErrorResult({
      abi: PerpBridgeBAbi as Abi,
      data: await revertData(
        w,
        TRADER,
        w.sub.module,
        moduleCall("executeWithApprovals", [
          [{ token: w.tokens.USDC, spender: w.perp.bridgeB, amount: 10n * E6 }],
          w.perp.bridgeB,
          0n,
          badDest,
        ]),
      ),
    });
    expect(err2).toMatchObject({ errorName: "InvalidDestination", args: [2] });
  });

  it("relays after the delay: credits what is due, rejects the deposit below the minimum, never twice", async () => {
    const c = wCore();
    const wallet = createWalletClient({ account: relayerAccount, transport: http(c.anvil.rpcUrl) });
    const sources = (): RelaySource[] =>
      worlds.map((w, i) => ({
        client: w.client,
        bridges: [w.perp.bridgeA, w.perp.bridgeB],
        fromBlock: firstBlock[i]!,
      }));
    const opts = () => ({
      sources: sources(),
      core: { client: c.client, wallet, ledger: core.ledger },
      delaySeconds: DELAY,
    });

    // every deposit is younger than the delay on the core clock: nothing is sent
    const latestDeposit = Math.max(...(await Promise.all(worlds.map((w) => w.s.syncClock()))));
    await c.s.mineAt([latestDeposit]);
    const early = await relayOnce(opts());
    expect(early.credited).toHaveLength(0);
    expect(early.rejected).toHaveLength(0);
    expect(early.pending.map((d) => d.coreHash).sort()).toEqual(expected.map((e) => e.coreHash).sort());
    // the next pass reads again from the oldest pending deposit
    expect(early.nextFromBlock.every((b, i) => b > firstBlock[i]!)).toBe(true);

    // past the delay: each deposit is credited or rejected once
    await c.s.syncClock();
    await c.s.mineAt([latestDeposit + DELAY + 1]);
    const due = await relayOnce(opts());
    const credited = due.credited.map((a) => a.deposit.coreHash).sort();
    const rejected = due.rejected.map((a) => a.deposit.coreHash).sort();
    expect(credited).toEqual(
      expected
        .filter((e) => e.credit)
        .map((e) => e.coreHash)
        .sort(),
    );
    expect(rejected).toEqual(
      expected
        .filter((e) => !e.credit)
        .map((e) => e.coreHash)
        .sort(),
    );
    for (const r of due.rejected) expect(r.reason).toMatch(/^deposit below minimum: 2000000 < 5000000/);

    // the ledger's own events carry the hashes computed before mining
    const logs = await c.client.getLogs({ address: core.ledger, fromBlock: 0n });
    const evs = parseEventLogs({ abi: CoreLedgerAbi, logs });
    const creditedOnLedger = evs.filter((e) => e.eventName === "Credited");
    expect(creditedOnLedger.map((e) => e.args.coreHash).sort()).toEqual(credited);
    for (const e of creditedOnLedger) {
      const x = expected.find((d) => d.coreHash === e.args.coreHash)!;
      expect(e.args).toMatchObject({ bridge: x.bridge, chainId: BigInt(x.chainId), amount: x.amount });
      expect(e.args.depositor).toBe(wA().sub.safe);
    }
    const rejectedOnLedger = evs.filter((e) => e.eventName === "Rejected");
    expect(rejectedOnLedger.map((e) => e.args.coreHash).sort()).toEqual(rejected);
    const balance = await c.client.readContract({
      address: core.ledger,
      abi: CoreLedgerAbi,
      functionName: "balances",
      args: [wA().sub.safe, PERP_DESTINATION.perp, 1n, wA().tokens.USDC],
    });
    expect(balance).toBe(100n * E6); // the 2 USDC deposit is lost

    // a second pass over the same blocks sends nothing: all were processed
    await c.s.syncClock();
    const again = await relayOnce(opts());
    expect(again.credited.length + again.rejected.length + again.pending.length).toBe(0);
    expect(again.processed).toHaveLength(expected.length);

    // the ledger itself refuses a second credit, and anyone but the relayer
    const [first] = due.credited;
    const d = first!.deposit;
    const creditArgs = [d.coreHash, d.bridge, BigInt(d.chainId), d.depositor, d.token, d.amount, d.destination];
    const twice = await revertData(
      c,
      relayerAccount.address,
      core.ledger,
      call(CoreLedgerAbi as Abi, "credit", creditArgs),
    );
    expect(decodeErrorResult({ abi: CoreLedgerAbi as Abi, data: twice })).toMatchObject({
      errorName: "AlreadyProcessed",
      args: [d.coreHash, 1],
    });
    const stranger = await revertData(
      c,
      STRANGER,
      core.ledger,
      call(CoreLedgerAbi as Abi, "reject", [d.coreHash, "x"]),
    );
    expect(decodeErrorResult({ abi: CoreLedgerAbi as Abi, data: stranger }).errorName).toBe("NotRelayer");
    await c.s.syncClock();
  });

  it("a deposit made after a pass stays pending until its own delay has passed", async () => {
    const w = wA();
    const c = wCore();
    const from = BigInt(await w.s.blockNumber()) + 1n;
    await w.s.syncClock();
    const receipt = await viaModule(w, w.perp.bridgeA, call(PerpBridgeAAbi as Abi, "deposit", [50n * E6]), {
      token: w.tokens.USDC,
      amount: 50n * E6,
    });
    const [ev] = depositedIn(receipt);
    const depositTime = w.s.clock;
    const plan = await planRelay({
      sources: [{ client: w.client, bridges: [w.perp.bridgeA], fromBlock: from }],
      core: { client: c.client, ledger: core.ledger },
      delaySeconds: DELAY,
      now: depositTime + DELAY - 1,
    });
    expect(plan.actions).toHaveLength(0);
    expect(plan.pending.map((d) => d.coreHash)).toEqual([ev?.args.coreHash]);
    expect(plan.nextFromBlock).toEqual([BigInt(receipt.blockNumber)]);
    const later = await planRelay({
      sources: [{ client: w.client, bridges: [w.perp.bridgeA], fromBlock: from }],
      core: { client: c.client, ledger: core.ledger },
      delaySeconds: DELAY,
      now: depositTime + DELAY,
    });
    expect(later.actions).toMatchObject([
      { kind: "credit", deposit: { coreHash: ev?.args.coreHash, amount: 50n * E6 } },
    ]);

    // two relayers race for it: one credits, the other finds it processed; the ledger credits once
    const second = actor("relayer-2");
    await c.s.syncClock();
    await c.s.send(DEPLOYER, core.ledger, call(CoreLedgerAbi as Abi, "setRelayer", [second, true]), "setRelayer");
    await c.s.rpc("anvil_setBalance", [second, toHex(E18)]);
    await c.s.mineAt([depositTime + DELAY]);
    const source = { client: w.client, bridges: [w.perp.bridgeA], fromBlock: from };
    const relayer = (wallet: ReturnType<typeof createWalletClient>) =>
      relayOnce({ sources: [source], core: { client: c.client, wallet, ledger: core.ledger }, delaySeconds: DELAY });
    const results = await Promise.all([
      relayer(createWalletClient({ account: relayerAccount, transport: http(c.anvil.rpcUrl) })),
      relayer(createWalletClient({ account: second, transport: http(c.anvil.rpcUrl) })),
    ]);
    expect(results.map((r) => r.credited.length).sort()).toEqual([0, 1]);
    expect(results.map((r) => r.processed.length).sort()).toEqual([0, 1]);
    const credits = parseEventLogs({
      abi: CoreLedgerAbi,
      eventName: "Credited",
      logs: await c.client.getLogs({ address: core.ledger, fromBlock: 0n }),
    }).filter((e) => e.args.coreHash === ev?.args.coreHash);
    expect(credits).toHaveLength(1);
    await c.s.syncClock();
  });

  it("a relayer's first pass reads from block 0 through a provider capping eth_getLogs ranges", async () => {
    const w = wA();
    // enough blocks that the whole range is refused and read in parts
    await w.s.rpc("anvil_mine", [toHex(300)]);
    await w.s.syncClock();
    const bridges = [w.perp.bridgeA, w.perp.bridgeB];
    const direct = await readDeposits({ client: w.client, bridges, fromBlock: 0n });
    expect(direct.deposits.length).toBeGreaterThan(0);
    const capped = await limitedRpc(w.anvil.rpcUrl, 128n);
    try {
      const client = createPublicClient({ transport: http(capped.url) }) as PublicClient;
      const split = await readDeposits({ client, bridges, fromBlock: 0n, toBlock: direct.toBlock });
      expect(capped.refusals).toBeGreaterThan(0);
      expect(split.deposits.map((d) => d.coreHash)).toEqual(direct.deposits.map((d) => d.coreHash));
    } finally {
      await capped.close();
    }
  });
});

// ---- loans -----------------------------------------------------------------------------------

describe("loans", () => {
  const PRINCIPAL = 10_000n * E6;
  const APR = 1_200n; // 12.00 %
  let lent: Address; // lender: the subaccount
  let borrowed: Address; // borrower: the subaccount

  it("a loan lent by the subaccount and one borrowed by it register in the chain's registry", async () => {
    const w = wA();
    const { USDC } = w.tokens;
    lent = await createLoan(w.ctx, w.loans.registry, {
      lender: w.sub.safe,
      borrower: BORROWER,
      principalToken: USDC,
      principal: PRINCIPAL,
      aprWithTwoDecimals: APR,
      termDays: 90n,
    });
    borrowed = await createLoan(w.ctx, w.loans.registry, {
      lender: LENDER,
      borrower: w.sub.safe,
      principalToken: USDC,
      principal: PRINCIPAL / 2n,
      aprWithTwoDecimals: 800n,
      termDays: 60n,
      paymentIntervalInSeconds: BigInt(7 * DAY),
    });
    const logs = await w.client.getLogs({ address: w.loans.registry, fromBlock: 0n });
    const regs = parseEventLogs({ abi: LoanRegistryAbi, eventName: "LoanRegistered", logs });
    expect(regs.map((r) => r.args)).toEqual([
      { loan: lent, lender: w.sub.safe, borrower: BORROWER },
      { loan: borrowed, lender: LENDER, borrower: w.sub.safe },
    ]);
    const mine = await w.client.readContract({
      address: w.loans.registry,
      abi: LoanRegistryAbi,
      functionName: "loansOf",
      args: [w.sub.safe],
    });
    expect(mine).toEqual([lent, borrowed]);
    // a stranger cannot create a loan in someone else's name
    const data = call(LoanRegistryAbi as Abi, "createLoan", [
      LENDER,
      BORROWER,
      USDC,
      1n,
      1n,
      1n,
      BigInt(DAY),
      w.sub.safe,
      0n,
    ]);
    const err = decodeErrorResult({
      abi: LoanRegistryAbi as Abi,
      data: await revertData(w, STRANGER, w.loans.registry, data),
    });
    expect(err).toMatchObject({ errorName: "NotAParty", args: [STRANGER] });
    expect((await readLoan(w.client, lent)).state).toBe("preapproved");
  });

  it("the subaccount funds the loan it lends and draws the one it borrows, through the module", async () => {
    const w = wA();
    const { USDC } = w.tokens;
    const lc = loanSubaccountCalls(lent, "lender");
    const bc = loanSubaccountCalls(borrowed, "borrower");
    await allowCalls(w, lc.target, lc.signatures);
    await allowCalls(w, bc.target, bc.signatures);
    await mintTo(w, USDC, w.sub.safe, PRINCIPAL);
    // lent: the Safe funds (pulled under an exact approval), the borrower commits and draws
    await viaModule(w, lent, call(LoanAbi as Abi, "fund"), { token: USDC, amount: PRINCIPAL });
    expect((await readLoan(w.client, lent)).state).toBe("funded");
    await w.s.send(BORROWER, lent, call(LoanAbi as Abi, "borrowerCommitment"), "commit");
    const activatedLent = w.s.clock;
    await w.s.send(BORROWER, lent, call(LoanAbi as Abi, "borrowerWithdraw", [PRINCIPAL]), "draw");
    // borrowed: the Safe commits first (funding required), the lender funds, the Safe draws
    await viaModule(w, borrowed, call(LoanAbi as Abi, "borrowerCommitment"));
    expect((await readLoan(w.client, borrowed)).state).toBe("funding_required");
    await mintTo(w, USDC, LENDER, PRINCIPAL / 2n);
    await w.s.send(LENDER, USDC, call(ERC20_ABI, "approve", [borrowed, PRINCIPAL / 2n]), "approve");
    await w.s.send(LENDER, borrowed, call(LoanAbi as Abi, "fund"), "fund");
    const activatedBorrowed = w.s.clock;
    const before = await w.client.readContract({
      address: USDC,
      abi: ERC20_ABI,
      functionName: "balanceOf",
      args: [w.sub.safe],
    });
    await viaModule(w, borrowed, call(LoanAbi as Abi, "borrowerWithdraw", [PRINCIPAL / 2n]));
    const after = await w.client.readContract({
      address: USDC,
      abi: ERC20_ABI,
      functionName: "balanceOf",
      args: [w.sub.safe],
    });
    expect(after - before).toBe(PRINCIPAL / 2n);

    const l = await readLoan(w.client, lent);
    expect(l).toMatchObject({
      state: "active",
      called: false,
      late: false,
      lender: w.sub.safe,
      borrower: BORROWER,
      collateralToken: "0x0000000000000000000000000000000000000000",
      maintenanceCollateralRatio: 0n,
      principalDebtOwed: PRINCIPAL,
      paymentIntervalInSeconds: 30 * DAY,
      nextPaymentDate: activatedLent + 30 * DAY,
    });
    expect(l.interestOwed).toBe(loanInterest(PRINCIPAL, APR, BigInt(w.s.clock - activatedLent)));
    const b = await readLoan(w.client, borrowed);
    expect(b).toMatchObject({
      state: "active",
      nextPaymentDate: activatedBorrowed + 7 * DAY,
      principalDebtOwed: PRINCIPAL / 2n,
    });
  });

  it("as time passes interest accrues, the lent loan falls late, the borrowed one is repaid on time", async () => {
    const w = wA();
    const { USDC } = w.tokens;
    const l0 = await readLoan(w.client, lent);
    const b0 = await readLoan(w.client, borrowed);
    const activatedLent = l0.nextPaymentDate - 30 * DAY;
    const activatedBorrowed = b0.nextPaymentDate - 7 * DAY;

    // a day before the borrowed loan's first due date: the Safe pays the interest owed at that block
    const t1 = activatedBorrowed + 6 * DAY;
    const owed1 = loanInterest(PRINCIPAL / 2n, 800n, BigInt(t1 - activatedBorrowed));
    await mintTo(w, USDC, w.sub.safe, 1_000n * E6);
    await viaModule(w, borrowed, call(LoanAbi as Abi, "repayInterests", [owed1]), { token: USDC, amount: owed1 }, t1);
    const b1 = await readLoan(w.client, borrowed);
    expect(b1).toMatchObject({ interestOwed: 0n, totalInterestRepaid: owed1, late: false });
    expect(b1.nextPaymentDate).toBe(activatedBorrowed + 14 * DAY);
    expect(b1.upcomingPayment.dueDate).toBe(b1.nextPaymentDate);
    expect(b1.upcomingPayment.amount).toBe(loanInterest(PRINCIPAL / 2n, 800n, BigInt(8 * DAY)));

    // the lent loan, 30 days in: interest owed and due, not yet late (5 days of grace)
    await w.s.mineAt([activatedLent + 30 * DAY]);
    const l1 = await readLoan(w.client, lent);
    expect(l1.interestOwed).toBe(loanInterest(PRINCIPAL, APR, BigInt(30 * DAY)));
    expect(l1.upcomingPayment).toEqual({ amount: l1.interestOwed, dueDate: activatedLent + 30 * DAY });
    expect(l1.late).toBe(false);
    // past the grace period without a payment: late
    await w.s.mineAt([activatedLent + 35 * DAY + 1]);
    expect((await readLoan(w.client, lent)).late).toBe(true);

    // the borrowed loan repaid in full: the interest up to the principal's block (a second later,
    // prepaid), then the principal; closed, nothing owed
    const t2 = w.s.clock + 60;
    const owed2 = loanInterest(PRINCIPAL / 2n, 800n, BigInt(t2 + 1 - activatedBorrowed)) - owed1;
    await viaModule(w, borrowed, call(LoanAbi as Abi, "repayInterests", [owed2]), { token: USDC, amount: owed2 }, t2);
    const principalData = call(LoanAbi as Abi, "repayPrincipal", [PRINCIPAL / 2n]);
    await viaModule(w, borrowed, principalData, { token: USDC, amount: PRINCIPAL / 2n }, t2 + 1);
    const b2 = await readLoan(w.client, borrowed);
    expect(b2).toMatchObject({
      state: "closed",
      interestOwed: 0n,
      principalDebtOwed: 0n,
      nextPaymentDate: 0,
      totalInterestRepaid: owed1 + owed2,
      totalRepaid: owed1 + owed2 + PRINCIPAL / 2n,
      late: false,
    });
    const lenderGot = await w.client.readContract({
      address: USDC,
      abi: ERC20_ABI,
      functionName: "balanceOf",
      args: [LENDER],
    });
    expect(lenderGot).toBe(owed1 + owed2 + PRINCIPAL / 2n);
  });

  it("the subaccount calls the loan it lends: due when the callback period ends, late after the grace", async () => {
    const w = wA();
    await viaModule(w, lent, call(LoanAbi as Abi, "callLoan", [10n, 2n]));
    const calledAt = w.s.clock;
    const l = await readLoan(w.client, lent);
    expect(l).toMatchObject({ state: "active", called: true, late: false, nextPaymentDate: calledAt + 10 * DAY });
    const activated = (await w.client.readContract({
      address: lent,
      abi: LoanAbi,
      functionName: "activatedOn",
    })) as bigint;
    // the whole debt falls due: interest to the deadline plus the principal
    expect(l.upcomingPayment.amount).toBe(
      loanInterest(PRINCIPAL, APR, BigInt(calledAt + 10 * DAY) - activated) + PRINCIPAL,
    );
    await w.s.mineAt([calledAt + 12 * DAY + 1]);
    const late = await readLoan(w.client, lent);
    expect(late).toMatchObject({ late: true, state: "active", principalDebtOwed: PRINCIPAL });
    expect(late.interestOwed).toBe(loanInterest(PRINCIPAL, APR, BigInt(w.s.clock) - activated));
  });

  it("a loan the lender walks away from before activation is cancelled and refunded", async () => {
    const w = wA();
    const { USDC } = w.tokens;
    const loan = await createLoan(w.ctx, w.loans.registry, {
      lender: LENDER,
      borrower: BORROWER,
      principalToken: USDC,
      principal: 100n * E6,
      aprWithTwoDecimals: 500n,
      termDays: 30n,
    });
    await mintTo(w, USDC, LENDER, 100n * E6);
    await w.s.send(LENDER, USDC, call(ERC20_ABI, "approve", [loan, 100n * E6]), "approve");
    await w.s.send(LENDER, loan, call(LoanAbi as Abi, "fund"), "fund");
    const before = await w.client.readContract({
      address: USDC,
      abi: ERC20_ABI,
      functionName: "balanceOf",
      args: [LENDER],
    });
    await w.s.send(LENDER, loan, call(LoanAbi as Abi, "cancel"), "cancel");
    const after = await w.client.readContract({
      address: USDC,
      abi: ERC20_ABI,
      functionName: "balanceOf",
      args: [LENDER],
    });
    expect(after - before).toBe(100n * E6);
    expect(await readLoan(w.client, loan)).toMatchObject({
      state: "cancelled",
      principalDebtOwed: 0n,
      nextPaymentDate: 0,
    });
  });

  it("a lending pool's loan works as before and joins the registry by the owner", async () => {
    const w = wA();
    const { USDC } = w.tokens;
    const OPERATOR = actor("operator");
    const pool = await w.s.deploy(DEPLOYER, "LendingPool", [
      USDC,
      "Pool",
      "POOL",
      DEPLOYER,
      OPERATOR,
      DEPLOYER,
      86_400n,
      500n,
      0n,
      0n,
      10n ** 15n,
    ]);
    await mintTo(w, USDC, LENDER, 100_000n * E6);
    await w.s.call(LENDER, "MockERC20", USDC, "approve", [pool, 100_000n * E6]);
    await w.s.call(LENDER, "LendingPool", pool, "deposit", [100_000n * E6, LENDER]);
    const receipt = await w.s.call(OPERATOR, "LendingPool", pool, "deployLoan", [BORROWER, 10_000n * E6, 1_100n, 90n]);
    const ev = w.s.events.find((e) => e.event === "NewLoanDeployedByPool" && e.txHash === receipt.transactionHash);
    const loan = getAddress(ev?.args.loanAddr as string);
    expect(await readLoan(w.client, loan)).toMatchObject({
      state: "funded",
      lender: pool,
      paymentIntervalInSeconds: 30 * DAY,
    });
    await w.s.call(DEPLOYER, "LoanRegistry", w.loans.registry, "register", [loan]);
    const regs = parseEventLogs({
      abi: LoanRegistryAbi,
      eventName: "LoanRegistered",
      logs: await w.client.getLogs({ address: w.loans.registry, fromBlock: 0n }),
    });
    expect(regs.at(-1)?.args).toEqual({ loan, lender: pool, borrower: BORROWER });
    await w.s.call(BORROWER, "Loan", loan, "borrowerCommitment", []);
    await w.s.call(BORROWER, "Loan", loan, "borrowerWithdraw", [10_000n * E6]);
    const external0 = await w.s.readBig("LendingPool", pool, "externalAssets", []);
    await w.s.call(BORROWER, "MockERC20", USDC, "approve", [loan, 10_000n * E6]);
    await w.s.call(BORROWER, "Loan", loan, "repayPrincipal", [4_000n * E6]);
    // the pool hears of the repayment (onPrincipalRepaid), as before
    expect(await w.s.readBig("LendingPool", pool, "externalAssets", [])).toBe(external0 - 4_000n * E6);
    expect(await readLoan(w.client, loan)).toMatchObject({ state: "active", principalDebtOwed: 6_000n * E6 });
  });
});
