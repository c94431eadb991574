/**
 * The protocol world of a simulated chain (issue 14): Uniswap v3 and v2, Aave v3, Morpho Blue with
 * our lending vault and Safe (contracts/devnet/protocols), the vaults' subaccounts as Safes with
 * SubaccountModule (the same addresses on both chains), and the actors that give them life:
 *
 * - an arbitrageur keeping every pool's price at the feeds' (a swap to the feed price as its limit;
 *   on a v2 pair, the amount that moves its reserves there) and the Morpho OracleMock in step with
 *   the feeds, in one block;
 * - the strategists (TRADER) swapping, providing liquidity, supplying and borrowing through the
 *   module: one subaccount keeps an Aave loan close to its minimum health factor, one lends on Aave
 *   and in the Morpho lending vault, one borrows on the Morpho market, swaps (on v3, every third
 *   day on the v2 pair) and holds v3 positions;
 * - a few transactions that fail on purpose (module refusals, Aave's '36', a Safe GS025, a slippage
 *   failure on each Uniswap), mined with explicit gas and recorded with the reason they revert with;
 * - perp deposits through the modules on both bridges (one below the minimum), credited or rejected
 *   on the core chain's ledger by the devnet's relayer key once they are the delay old (perp-sim.ts:
 *   the core chain's relay passes wait for the other chains, so the history stays the seed's);
 * - six loans of the chain's LoanRegistry lent or borrowed by subaccounts, funded and repaid through
 *   the modules: repaid and closed, active, one called, one late (`loanPlans`).
 *
 * The actors never change a subaccount's balance of its own vault's asset or alt asset on the
 * vault's chain (the indexer values those as the vault's assets): they trade other tokens, with
 * capital sent to the Safes from the operator's custody wallet (`custody`). Their transactions'
 * events are kept out of the manifest's `events` (ChainSession.offManifest). Randomness comes
 * from a stream of its own, so the vaults' history draws what it drew before the world existed.
 */
import {
  type Abi,
  type Address,
  createPublicClient,
  decodeErrorResult,
  decodeFunctionResult,
  encodeFunctionData,
  getAddress,
  type Hex,
  http,
  type PublicClient,
  parseEventLogs,
  toFunctionSelector,
} from "viem";
import { privateKeyToAccount } from "viem/accounts";
import { CoreLedgerAbi } from "../../abis/CoreLedgerAbi.js";
import { LoanAbi } from "../../abis/LoanAbi.js";
import { LoanRegistryAbi } from "../../abis/LoanRegistryAbi.js";
import { MorphoLendingVaultAbi } from "../../abis/MorphoLendingVaultAbi.js";
import { PerpBridgeAAbi } from "../../abis/PerpBridgeAAbi.js";
import { PerpBridgeBAbi } from "../../abis/PerpBridgeBAbi.js";
import { SubaccountModuleAbi } from "../../abis/SubaccountModuleAbi.js";
import { stakeData } from "../../onchain/staker.js";
import type { PerpDepositRecord, PerpNetwork, WorldPerp } from "./perp-sim.js";
import {
  aave as aaveArt,
  morphoArtifacts,
  safe as safeArt,
  uniswap as uniArt,
  uniswapV2 as uniV2Art,
} from "./protocols/artifacts.js";
import {
  coreHash,
  createSubaccount,
  defaultSubaccountCalls,
  deployProtocols,
  loanInterest,
  loanSubaccountCalls,
  morphoOraclePrice,
  type ProtocolsManifest,
  planRelay,
  prevalidatedSignature,
  type RelaySource,
  readLoan,
  type SafeDeployment,
  sqrtPriceX96,
  type TokenInput,
  v2Rebalance,
} from "./protocols/index.js";
import { ERC20_ABI, PRICE_FEED_ABI } from "./protocols/tx.js";
import { mintedTokenId, type UniswapPool } from "./protocols/uniswap.js";
import { actorAddress, actorKey, Rng } from "./random.js";
import { VAULT_SPECS, type VaultSpec } from "./scenario.js";
import type { ChainSession, PlannedTx } from "./session.js";

const E8 = 10n ** 8n;
const E18 = 10n ** 18n;
const MAX_UINT128 = 2n ** 128n - 1n;
const ZERO: Address = "0x0000000000000000000000000000000000000000";
/** gas of a transaction that fails on purpose (no estimate: it would refuse it) */
const FAIL_GAS = 1_500_000n;
/** gas of each arbitrage swap in the shared block */
const ARB_GAS = 1_000_000n;
/** pools within this relative price distance of the feeds are left alone (sqrt price: half of it) */
const ARB_TOLERANCE_PPM = 250n;

export type SubaccountRole = "leveraged" | "lender" | "trader";

export interface WorldSubaccount {
  label: string;
  safe: Address;
  module: Address;
  /** the Safe's owner and the module's OWNER (the vault's governance key) */
  owner: Address;
  /** the module's TRADER: the vault's strategist */
  trader: Address;
  relayer: Address;
  /** the vault it belongs to; `address` only on the vault's own chain (null elsewhere) */
  vault: { chainId: number; kind: VaultSpec["kind"]; name: string; address: Address | null };
  /** whether the vault whitelists it (false for the one enabled and disabled through the timelock) */
  registered: boolean;
  /** what the actors do with it on this chain (null: nothing beyond the vault's own moves) */
  role: SubaccountRole | null;
  /** the health factor its strategist keeps it above (the leveraged one) */
  minHealthFactor: number | null;
  /** tokens the module allows on this chain */
  tokens: Address[];
  /** the vault's asset and alt asset on this chain: the actors never change the Safe's balance of them */
  protectedTokens: Address[];
}

/** The reason a deliberately failed transaction reverts with. */
export type ExpectedRevert =
  | { type: "custom"; contract: "SubaccountModule"; name: string; args: string[] }
  | { type: "error"; contract: "AavePool" | "Safe" | "SwapRouter" | "UniswapV2Router"; message: string };

export interface FailedTx {
  kind: "module-not-trader" | "module-token-not-allowed" | "aave-36" | "safe-gs025" | "slippage" | "v2-slippage";
  description: string;
  txHash: Hex;
  blockNumber: number;
  timestamp: number;
  from: Address;
  to: Address;
  gas: string;
  reason: ExpectedRevert;
  /** the reason as one line: `NotTrader(0x…)`, `36`, `GS025`, `Too little received` */
  display: string;
}

export interface WorldPosition {
  subaccount: Address;
  tokenId: string;
  pool: Address;
  /** deposited in the v3 staker's incentive (owned by the staker, deposited for the Safe) */
  staked: boolean;
}

/** A loan of the chain's LoanRegistry with a subaccount on one side (the story it plays in the history). */
export interface WorldLoan {
  key: LoanPlan["key"];
  address: Address;
  /** the subaccount lends (its Safe is the lender) or borrows */
  side: "lent" | "borrowed";
  lender: Address;
  borrower: Address;
  /** the subaccount's label */
  subaccount: string;
  principalToken: Address;
  /** raw units, decimal string */
  principal: string;
  /** two decimals (1100 = 11.00 %) */
  apr: number;
  termDays: number;
  paymentIntervalInSeconds: number;
  createdBlock: number;
  /** what the history did with it, in order: created, funded, committed, drawn, interest, called, repaid */
  actions: { kind: string; blockNumber: number; timestamp: number; txHash: Hex; amount?: string }[];
  /** the loan's views at the end of the history */
  final: {
    state: string;
    called: boolean;
    late: boolean;
    principalAmount: string;
    interestOwed: string;
    principalDebtOwed: string;
    totalRepaid: string;
    totalInterestRepaid: string;
    nextPaymentDate: number;
    blockNumber: number;
  };
}

export interface WorldResult {
  /** the deployment (its `stats` without the wall-clock time, so a seed gives the same manifest) */
  protocols: Omit<ProtocolsManifest, "stats"> & { stats: { transactions: number } };
  /** tokens deployed for the world where no vault of the chain has them (WETH, a stablecoin) */
  addedTokens: TokenInput[];
  arbitrageur: Address;
  /**
   * The operator's custody wallet: every token the actors put into a Safe comes from it (the
   * registry lists it as the subaccounts' funding, so their net deposits count it)
   */
  custody: Address;
  subaccounts: WorldSubaccount[];
  positions: WorldPosition[];
  failures: FailedTx[];
  /** what the actors did, by kind */
  actions: Record<string, number>;
  /** perp deposits through the subaccounts' modules, and what the core ledger did with them */
  perp: WorldPerp;
  /** the registry's loans between subaccounts and others */
  loans: WorldLoan[];
}

export interface WorldVault {
  spec: VaultSpec;
  address: Address;
  asset: TokenInput;
  alt: TokenInput | null;
}

export interface WorldOptions {
  seed: string;
  /** this chain's vaults, deployed */
  vaults: WorldVault[];
  /** the Safe contracts (deployed already, for the governance Safe) */
  safe: SafeDeployment;
  deployer: Address;
  /** the history's length in days (the loans' and perp deposits' calendar is scaled to it) */
  days: number;
  /** perp deposits shared with the other chains; the core chain deploys the core ledger */
  perp?: PerpNetwork;
}

/** The devnet's relayer key: RELAYER on the core ledger and on every subaccount module. */
export function relayerKey(seed: string): Hex {
  return actorKey(seed, "relayer");
}

/** Subaccount label of a vault's j-th subaccount (j = 2: the one only the timelock enables). */
export function subaccountLabel(seed: string, kind: VaultSpec["kind"], j: number): string {
  return `${seed}:${kind}/subaccount-${j}`;
}

const moduleAbi = SubaccountModuleAbi as Abi;
const fn = (abi: Abi, functionName: string, args: readonly unknown[]): Hex =>
  encodeFunctionData({ abi, functionName, args: args as unknown[] });

export class World {
  readonly result: WorldResult;
  private readonly rng: Rng;
  private readonly tokens: TokenInput[];
  private readonly weth: TokenInput;
  private readonly stable: TokenInput;
  private readonly disallowed: TokenInput;
  /** the added tokens' feeds walk on their own (the vaults' feeds are moved by the simulator) */
  private readonly walks: { token: TokenInput; usd: number; vol: number; stable: boolean }[];
  private readonly count: (k: string) => void;
  private readonly client: PublicClient;
  /** the core chain's relay cursor: the first block to read, per source chain */
  private readonly relayFrom = new Map<number, bigint>();
  /** the registry loans, with what the history still has to do with them */
  private readonly loanBook = new Map<LoanPlan["key"], LoanEntry>();
  private readonly clients = new Map<string, PublicClient>();

  private constructor(
    private readonly s: ChainSession,
    private readonly seed: string,
    private readonly deployer: Address,
    result: WorldResult,
    tokens: TokenInput[],
    walks: World["walks"],
    disallowed: TokenInput,
    private readonly net: PerpNetwork | null,
    private readonly days: number,
  ) {
    this.result = result;
    this.client = createPublicClient({ transport: http(s.rpcUrl) });
    this.rng = new Rng(`${seed}:${s.chainId}:world`);
    this.tokens = tokens;
    this.weth = bySymbol(tokens, "WETH");
    this.stable = bySymbol(tokens, "USDC");
    this.walks = walks;
    this.disallowed = disallowed;
    this.count = (k) => (result.actions[k] = (result.actions[k] ?? 0) + 1);
  }

  // ---- deployment ------------------------------------------------------------------------------

  /**
   * Deploys the protocols over the chain's tokens (adding WETH and a stablecoin where no vault has
   * them), every vault's subaccounts of both chains as Safes, and opens the actors' positions.
   */
  static async deploy(s: ChainSession, o: WorldOptions): Promise<World> {
    return s.offManifest(async () => {
      const ctx = { s, from: o.deployer };
      const tokens: TokenInput[] = [];
      const norm = (t: TokenInput) => ({ ...t, address: getAddress(t.address), feed: getAddress(t.feed) });
      for (const v of o.vaults) tokens.push(norm(v.asset), ...(v.alt ? [norm(v.alt)] : []));
      const walks: World["walks"] = [];
      for (const t of [
        { name: "Wrapped Ether", symbol: "WETH", decimals: 18, usd: 3200, vol: 0.025 },
        { name: "USD Coin", symbol: "USDC", decimals: 6, usd: 1, vol: 0 },
      ]) {
        if (tokens.some((x) => x.symbol === t.symbol)) continue;
        const address = await s.deploy(o.deployer, "MockERC20", [t.name, t.symbol, t.decimals]);
        const feed = await s.deploy(o.deployer, "PriceFeed", [8, `${t.symbol} / USD`, usd8(t.usd)]);
        const token = { address, symbol: t.symbol, decimals: t.decimals, feed };
        tokens.push(token);
        walks.push({ token, usd: t.usd, vol: t.vol, stable: t.vol === 0 });
      }
      const relayer = privateKeyToAccount(relayerKey(o.seed)).address;
      const isCore = o.perp?.coreChainId === s.chainId;
      const protocols = await deployProtocols(s, o.deployer, {
        tokens,
        weth: "WETH",
        stable: "USDC",
        ...(isCore ? { core: { relayer } } : {}),
      });
      o.perp?.registerBridges(s.chainId, [protocols.perp.bridgeA, protocols.perp.bridgeB]);
      // the relayer pays for its own transactions after the history (the simulator sends at gas price 0)
      if (isCore) await s.rpc("anvil_setBalance", [relayer, `0x${(100n * E18).toString(16)}`]);
      // the token the modules refuse: the chain's first alt asset (a vault's LST), else the last token
      const alt = o.vaults.find((v) => v.alt)?.alt;
      const disallowed = alt ? byAddress(tokens, alt.address) : (tokens.at(-1) as TokenInput);
      const allowed = tokens.filter((t) => t.address !== disallowed.address).map((t) => t.address);

      const owner = actorAddress(o.seed, "subaccount-owner");
      const calls = defaultSubaccountCalls(protocols);
      const subaccounts: WorldSubaccount[] = [];
      for (const spec of VAULT_SPECS) {
        // a vault deployed here from a copy of the spec on another chain id (bench:scale) is its vault
        const here = o.vaults.find((v) => v.spec === spec || v.spec.name === spec.name);
        const trader = actorAddress(o.seed, `strategist-${spec.strategist}`);
        const count = spec.family === "tokenizedVaultV2" ? 3 : 2;
        for (let j = 0; j < count; j++) {
          const label = subaccountLabel(o.seed, spec.kind, j);
          const sub = await createSubaccount(ctx, protocols.safe, {
            label,
            owner,
            trader,
            relayer,
            ...(here ? { vault: getAddress(here.address) } : {}),
            tokens: allowed,
            calls,
          });
          subaccounts.push({
            label,
            safe: sub.safe,
            module: sub.module,
            owner: sub.owner,
            trader: sub.trader,
            relayer,
            vault: {
              chainId: here ? here.spec.chainId : spec.chainId,
              kind: spec.kind,
              name: spec.name,
              address: here ? getAddress(here.address) : null,
            },
            registered: j < 2,
            role: null,
            minHealthFactor: null,
            tokens: allowed,
            protectedTokens: here
              ? [getAddress(here.asset.address), ...(here.alt ? [getAddress(here.alt.address)] : [])]
              : [],
          });
        }
      }
      // Roles on this chain: subaccounts of the other chain's vaults are free to use any token here.
      const free = subaccounts.filter((x) => x.registered && x.protectedTokens.length === 0);
      const stable = bySymbol(tokens, "USDC");
      const weth = bySymbol(tokens, "WETH");
      const lender = subaccounts.find(
        (x) =>
          x.registered &&
          x.protectedTokens.length > 0 &&
          !x.protectedTokens.includes(stable.address) &&
          x.label.endsWith("-1"),
      );
      if (free.length < 2 || !lender) throw new Error(`chain ${s.chainId}: not enough subaccounts for the actors`);
      Object.assign(free[0] as WorldSubaccount, { role: "leveraged", minHealthFactor: 1.15 });
      (free[1] as WorldSubaccount).role = "trader";
      lender.role = "lender";
      for (const x of subaccounts) {
        const uses = x.role === "lender" ? [stable.address] : [stable.address, weth.address];
        if (x.role && x.protectedTokens.some((t) => uses.includes(t))) {
          throw new Error(`chain ${s.chainId}: ${x.label} would trade its vault's asset`);
        }
      }

      const arbitrageur = actorAddress(o.seed, "arbitrageur");
      const result: WorldResult = {
        protocols: { ...protocols, stats: { transactions: protocols.stats.transactions } },
        addedTokens: walks.map((w) => w.token),
        arbitrageur,
        custody: actorAddress(o.seed, "custody"),
        subaccounts,
        positions: [],
        failures: [],
        actions: {},
        perp: {
          relayer,
          coreChainId: o.perp?.coreChainId ?? null,
          ledger: protocols.core?.ledger ?? null,
          delaySeconds: o.perp?.delaySeconds ?? 0,
          deposits: [],
          relayPasses: 0,
        },
        loans: [],
      };
      const world = new World(s, o.seed, o.deployer, result, tokens, walks, disallowed, o.perp ?? null, o.days);
      await world.open();
      return world;
    });
  }

  private sub(role: SubaccountRole): WorldSubaccount {
    return this.result.subaccounts.find((x) => x.role === role) as WorldSubaccount;
  }

  /** Capital and the first positions: the arbitrageur's inventory, each actor's loans and deposits. */
  private async open(): Promise<void> {
    const { s } = this;
    const p = this.result.protocols;
    const arb = this.result.arbitrageur;
    for (const t of this.tokens) {
      await this.mint(t, arb, await this.units(t, 2_000_000_000));
      await s.send(arb, t.address, fn(ERC20_ABI, "approve", [p.uniswap.swapRouter, 2n ** 256n - 1n]), "arb approve");
      await s.send(arb, t.address, fn(ERC20_ABI, "approve", [p.uniswapV2.router, 2n ** 256n - 1n]), "arb approve");
    }
    // the custody wallet's reserve, from which every Safe is funded (fund)
    for (const t of [this.weth, this.stable])
      await this.mint(t, this.result.custody, await this.units(t, 100_000_000_000));
    // the leveraged subaccount: WETH on Aave, a stable loan kept near its minimum health factor
    const lev = this.sub("leveraged");
    const collateral = await this.units(this.weth, 1_500_000);
    await this.fund(this.weth, lev.safe, collateral);
    await this.fund(this.stable, lev.safe, await this.units(this.stable, 300_000));
    await this.aaveSupply(lev, this.weth, collateral, 0);
    await this.keepHealthFactor(0, true);
    // the lender: stable on Aave and in the Morpho lending vault
    const lender = this.sub("lender");
    await this.fund(this.stable, lender.safe, await this.units(this.stable, 700_000));
    await this.aaveSupply(lender, this.stable, await this.units(this.stable, 300_000), 0);
    await this.vaultDeposit(lender, await this.units(this.stable, 200_000), 0);
    // the trader: WETH collateral and a stable loan on the Morpho market, two v3 positions, swaps
    const trader = this.sub("trader");
    await this.fund(this.weth, trader.safe, await this.units(this.weth, 1_200_000));
    await this.fund(this.stable, trader.safe, await this.units(this.stable, 1_000_000));
    await this.morphoCollateral(trader, await this.units(this.weth, 300_000), 0);
    await this.morphoBorrow(trader, await this.units(this.stable, 120_000), 0);
    const pools = p.uniswap.pools;
    const incentivePool = pools.find((x) => x.address === p.uniswap.incentive.pool) as UniswapPool;
    const other = pools.find((x) => x !== incentivePool && this.isWethStable(x)) as UniswapPool;
    await this.mintPosition(trader, other, 150_000, 1200, 0);
    const staked = await this.mintPosition(trader, incentivePool, 60_000, null, 0);
    await this.stake(trader, staked, 0);
  }

  // ---- daily life ------------------------------------------------------------------------------

  /**
   * The morning after the vaults' feeds moved: the added tokens' feeds move, the trader may swap
   * (at the pools' stale prices), then the arbitrageur brings every pool and the Morpho oracle back
   * to the feeds.
   */
  async morning(at: number, trade = this.rng.chance(0.6)): Promise<void> {
    await this.s.offManifest(async () => {
      let w = at;
      for (const walk of this.walks) {
        const p = walk.stable
          ? 1 + 0.0008 * this.rng.gauss()
          : Math.max(walk.usd * (1 + walk.vol * this.rng.gauss()), 1);
        if (!walk.stable) walk.usd = p;
        await this.s.send(this.deployer, walk.token.feed, fn(PRICE_FEED_ABI_W, "setAnswer", [usd8(p)]), "feed", w++);
        this.count("feed");
      }
      if (trade) await this.swap(w++);
      await this.arbitrage(w);
    });
  }

  /**
   * The day's institutional business after the morning: the leveraged subaccount's health factor
   * kept in its band, and now and then a deposit, a loan change or fees collected; then the
   * failures of the kinds given.
   */
  async midday(dayOffset: number, at: number, fails: FailedTx["kind"][] = []): Promise<void> {
    await this.s.offManifest(async () => {
      let w = at;
      await this.keepHealthFactor(w++);
      const trader = this.sub("trader");
      if (dayOffset % 7 === 3) {
        const held = this.result.positions.find((x) => !x.staked && x.subaccount === trader.safe);
        if (held) await this.collect(trader, BigInt(held.tokenId), w++);
      }
      if (dayOffset % 10 === 5) {
        // the lender moves some of its Aave supply into the Morpho lending vault, in two steps
        const lender = this.sub("lender");
        const amount = await this.units(this.stable, 10_000 + 30_000 * this.rng.next());
        const held = await this.balance(this.stable, lender.safe);
        if (held >= amount) await this.vaultDeposit(lender, amount, w++);
        else await this.aaveWithdraw(lender, this.stable, amount, w++);
      }
      if (dayOffset % 15 === 8) {
        const amount = await this.units(this.stable, 5_000 + 15_000 * this.rng.next());
        if (this.rng.chance(0.5)) await this.morphoBorrow(trader, amount, w++);
        else await this.morphoRepay(trader, amount, w++);
      }
      for (const kind of fails) await this.fail(kind, w++);
      w = await this.loansOfDay(dayOffset, w);
      for (const p of perpPlans(this.days, this.s.chainId === this.net?.coreChainId).filter(
        (x) => x.day === dayOffset,
      )) {
        await this.perpDeposit(p, w);
        w += 3;
      }
    });
  }

  // ---- perp deposits and the relayer --------------------------------------------------------------

  /** Whether the core chain runs a relay pass on this day (a deposit of the plan may be due). */
  relayDay(dayOffset: number): boolean {
    if (!this.net || this.result.perp.ledger === null) return false;
    const span = Math.ceil(this.net.delaySeconds / DAY);
    return perpPlans(this.days, true).some((p) => dayOffset >= p.day && dayOffset <= p.day + span);
  }

  /**
   * A deposit through a subaccount's module on one of the chain's bridges (sent to the Safe from
   * the custody wallet first: the actors never spend what the subaccount holds for its vault).
   * Recorded in the manifest during the history; live ones (`record` false) only logged.
   */
  async perpDeposit(p: PerpPlan, at: number, record = true): Promise<PerpDepositRecord> {
    return this.s.offManifest(async () => {
      const sub = this.sub(p.by);
      const perp = this.result.protocols.perp;
      const token = p.symbol === "WETH" ? this.weth : this.stable;
      const bridge = p.bridge === "A" ? perp.bridgeA : perp.bridgeB;
      const minimum =
        p.bridge === "A"
          ? BigInt(perp.minimumA)
          : BigInt(perp.tokensB.find((t) => t.address === token.address)?.minimum ?? "0");
      const amount = p.below ? (minimum * 3n) / 5n : await this.units(token, p.usd);
      const nonce = await this.read<bigint>(bridge, PerpBridgeAAbi as Abi, "nonces", [sub.safe]);
      await this.fund(token, sub.safe, amount, at);
      const data =
        p.bridge === "A"
          ? fn(PerpBridgeAAbi as Abi, "deposit", [amount])
          : fn(PerpBridgeBAbi as Abi, "deposit", [token.address, amount, p.destination === "spot" ? 1 : 0]);
      const receipt = await this.trade(sub, [[token, bridge, amount]], bridge, data, `perp:deposit${p.bridge}`, at + 1);
      const rec: PerpDepositRecord = {
        chainId: this.s.chainId,
        bridge,
        bridgeKind: p.bridge,
        coreHash: coreHash(this.s.chainId, bridge, sub.safe, nonce),
        depositor: sub.safe,
        subaccount: sub.label,
        token: token.address,
        symbol: token.symbol,
        amount: amount.toString(),
        minimum: minimum.toString(),
        destination: p.destination,
        nonce: nonce.toString(),
        blockNumber: Number(BigInt(receipt.blockNumber)),
        timestamp: this.s.clock,
        txHash: receipt.transactionHash,
        outcome: { status: "pending" },
      };
      if (record) {
        this.result.perp.deposits.push(rec);
        this.net?.record(rec);
      }
      return rec;
    });
  }

  /** A live deposit after the history: a random bridge and amount, now and then below the minimum. */
  async livePerpDeposit(at: number): Promise<PerpDepositRecord> {
    const bridge = this.rng.chance(0.5) ? "A" : "B";
    const symbol = bridge === "B" && this.rng.chance(0.4) ? "WETH" : "USDC";
    const p: PerpPlan = {
      day: 0,
      bridge,
      symbol,
      usd: Math.round(1_000 + 19_000 * this.rng.next()),
      destination: bridge === "B" && this.rng.chance(0.5) ? "spot" : "perp",
      below: this.rng.chance(0.15),
      by: "trader",
    };
    return this.perpDeposit(p, at, false);
  }

  /**
   * The relayer's pass on the core chain at `at` (planRelay over every chain's bridges): each
   * deposit at least the delay old and not yet processed is credited, or rejected below its
   * bridge's minimum, from the relayer's key. It first waits until the other chains have mined
   * everything up to `at - delay`, so what it sees depends only on the seed. `final`: the pass
   * after the history, once every other chain is done.
   */
  async relayPass(at: number, final = false): Promise<void> {
    const net = this.net;
    const ledger = this.result.perp.ledger;
    if (!net || !ledger) return;
    await this.s.offManifest(async () => {
      const now = Math.max(at, this.s.clock + 1);
      const sources: RelaySource[] = [];
      for (const c of net.chains) {
        const own = c.chainId === this.s.chainId;
        if (!own) await net.waitUntil(c.chainId, final ? Number.POSITIVE_INFINITY : now - net.delaySeconds);
        sources.push({
          client: own ? this.client : this.clientOf(c.rpcUrl),
          bridges: await net.bridgesOf(c.chainId),
          fromBlock: this.relayFrom.get(c.chainId) ?? 0n,
        });
      }
      const plan = await planRelay({
        sources,
        core: { client: this.client, ledger },
        delaySeconds: net.delaySeconds,
        now,
      });
      for (const [i, b] of plan.nextFromBlock.entries()) this.relayFrom.set(net.chains[i]?.chainId ?? 0, b);
      let w = now;
      for (const a of plan.actions) {
        const d = a.deposit;
        const data =
          a.kind === "credit"
            ? fn(CoreLedgerAbi as Abi, "credit", [
                d.coreHash,
                d.bridge,
                BigInt(d.chainId),
                d.depositor,
                d.token,
                d.amount,
                d.destination,
              ])
            : fn(CoreLedgerAbi as Abi, "reject", [d.coreHash, a.reason ?? ""]);
        const r = await this.s.send(this.result.perp.relayer, ledger, data, `relayer: ${a.kind} ${d.coreHash}`, w++);
        const mined = {
          chainId: this.s.chainId,
          blockNumber: Number(BigInt(r.blockNumber)),
          timestamp: this.s.clock,
          txHash: r.transactionHash,
        };
        const rec = net.recordOf(d.coreHash);
        if (rec) {
          rec.outcome =
            a.kind === "credit"
              ? { status: "credited", ...mined }
              : { status: "rejected", reason: a.reason ?? "", ...mined };
        }
        this.count(`perp:${a.kind}`);
      }
      this.result.perp.relayPasses++;
    });
  }

  private clientOf(rpcUrl: string): PublicClient {
    let c = this.clients.get(rpcUrl);
    if (!c) {
      c = createPublicClient({ transport: http(rpcUrl) });
      this.clients.set(rpcUrl, c);
    }
    return c;
  }

  /** After the history: the core chain's last relay pass, and every loan's views at the head. */
  async finish(): Promise<void> {
    await this.relayPass(this.s.clock + 1, true);
    for (const { loan } of this.loanBook.values()) {
      const v = await readLoan(this.client, loan.address);
      loan.final = {
        state: v.state,
        called: v.called,
        late: v.late,
        principalAmount: v.principalAmount.toString(),
        interestOwed: v.interestOwed.toString(),
        principalDebtOwed: v.principalDebtOwed.toString(),
        totalRepaid: v.totalRepaid.toString(),
        totalInterestRepaid: v.totalInterestRepaid.toString(),
        nextPaymentDate: v.nextPaymentDate,
        blockNumber: Number(v.blockNumber),
      };
    }
  }

  // ---- loans of the registry -----------------------------------------------------------------------

  /** The day's loan business: loans opened, interest paid when due, a call, repayments. */
  private async loansOfDay(dayOffset: number, at: number): Promise<number> {
    let w = at;
    for (const p of loanPlans(this.days).filter((x) => x.open === dayOffset)) w = await this.openLoan(p, w);
    for (const e of this.loanBook.values()) {
      if (e.plan.repay === dayOffset) w = await this.repayLoan(e, w);
      else if (e.plan.call === dayOffset) w = await this.callLoan(e, w);
      else if (e.due > 0 && w + DAY / 2 >= e.due) {
        w = await this.payInterest(e, w);
        if (e.plan.pays === "first") e.due = 0;
      }
    }
    return w;
  }

  /** The subaccount that borrows: a free one (another chain's vault's) with no actor role. */
  private loanBorrowerSub(): WorldSubaccount {
    const free = this.result.subaccounts.find((x) => x.registered && x.protectedTokens.length === 0 && !x.role);
    return free ?? this.sub("trader");
  }

  private loanAction(e: LoanEntry, kind: string, r: { blockNumber: Hex; transactionHash: Hex }, amount?: bigint) {
    e.loan.actions.push({
      kind,
      blockNumber: Number(BigInt(r.blockNumber)),
      timestamp: this.s.clock,
      txHash: r.transactionHash,
      ...(amount !== undefined ? { amount: amount.toString() } : {}),
    });
    this.count(`loan:${kind}`);
  }

  private async openLoan(p: LoanPlan, at: number): Promise<number> {
    const { s } = this;
    let w = at;
    const lent = p.side === "lent";
    const sub = lent ? this.sub("lender") : this.loanBorrowerSub();
    const other = actorAddress(this.seed, lent ? "loan-borrower" : "loan-lender", this.loanBook.size);
    const principal = await this.units(this.stable, p.usd);
    const [lender, borrower] = lent ? [sub.safe, other] : [other, sub.safe];
    const registry = this.result.protocols.loans.registry;
    const interval = BigInt(p.intervalDays * DAY);
    const created = await s.send(
      this.deployer,
      registry,
      fn(LoanRegistryAbi as Abi, "createLoan", [
        lender,
        borrower,
        this.stable.address,
        principal,
        p.apr,
        p.termDays,
        interval,
        ZERO,
        0n,
      ]),
      `loan ${p.key}: create`,
      w++,
    );
    const [ev] = parseEventLogs({
      abi: LoanRegistryAbi,
      eventName: "LoanRegistered",
      logs: created.logs.map((l) => ({ ...l, topics: l.topics })) as never,
    });
    if (!ev) throw new Error(`chain ${s.chainId}: loan ${p.key}: no LoanRegistered`);
    const address = getAddress(ev.args.loan);
    const loan: WorldLoan = {
      key: p.key,
      address,
      side: p.side,
      lender,
      borrower,
      subaccount: sub.label,
      principalToken: this.stable.address,
      principal: principal.toString(),
      apr: Number(p.apr),
      termDays: Number(p.termDays),
      paymentIntervalInSeconds: Number(interval),
      createdBlock: Number(BigInt(created.blockNumber)),
      actions: [],
      final: {
        state: "preapproved",
        called: false,
        late: false,
        principalAmount: principal.toString(),
        interestOwed: "0",
        principalDebtOwed: "0",
        totalRepaid: "0",
        totalInterestRepaid: "0",
        nextPaymentDate: 0,
        blockNumber: 0,
      },
    };
    const e: LoanEntry = { loan, plan: p, sub, due: 0 };
    this.loanBook.set(p.key, e);
    this.result.loans.push(loan);
    this.loanAction(e, "created", created);
    // the subaccount's module learns the loan's calls (its owner, the vault's governance)
    const calls = loanSubaccountCalls(address, lent ? "lender" : "borrower");
    const selectors = calls.signatures.map((sig) => toFunctionSelector(sig));
    await s.send(sub.owner, sub.module, fn(moduleAbi, "setCalls", [address, selectors, true]), "loan calls", w++);
    const loanAbi = LoanAbi as Abi;
    if (lent) {
      await this.fund(this.stable, sub.safe, principal, w++);
      const f = await this.trade(
        sub,
        [[this.stable, address, principal]],
        address,
        fn(loanAbi, "fund", []),
        "fund",
        w++,
      );
      this.loanAction(e, "funded", f, principal);
      // the borrower's own capital, half the principal: an institution borrows against its equity
      // (its health factor, which a loan book's reader checks, about 1.5 rather than 1)
      await this.mint(this.stable, borrower, principal / 2n, w++);
      const c = await s.send(borrower, address, fn(loanAbi, "borrowerCommitment", []), "commit", w++);
      this.loanAction(e, "committed", c);
      const d = await s.send(borrower, address, fn(loanAbi, "borrowerWithdraw", [principal]), "draw", w++);
      this.loanAction(e, "drawn", d, principal);
    } else {
      const c = await this.trade(sub, [], address, fn(loanAbi, "borrowerCommitment", []), "commit", w++);
      this.loanAction(e, "committed", c);
      await this.mint(this.stable, lender, principal, w++);
      await s.send(lender, this.stable.address, fn(ERC20_ABI, "approve", [address, principal]), "approve", w++);
      const f = await s.send(lender, address, fn(loanAbi, "fund", []), "fund", w++);
      this.loanAction(e, "funded", f, principal);
      const d = await this.trade(sub, [], address, fn(loanAbi, "borrowerWithdraw", [principal]), "draw", w++);
      this.loanAction(e, "drawn", d, principal);
    }
    e.due = Number(await this.read<bigint>(address, loanAbi, "getNextPaymentDate"));
    return w;
  }

  /** The borrower pays the interest owed at the payment's block (a few minutes' worth more: prepaid). */
  private async payInterest(e: LoanEntry, at: number): Promise<number> {
    let w = Math.max(at, this.s.clock + 1);
    const loanAbi = LoanAbi as Abi;
    const address = e.loan.address;
    const [owed] = await this.read<readonly [bigint, bigint]>(address, loanAbi, "getDebt");
    const principal = await this.read<bigint>(address, loanAbi, "principalAmount");
    const apr = await this.read<bigint>(address, loanAbi, "apr");
    const amount = owed + loanInterest(principal, apr, BigInt(w - this.s.clock + 600));
    const data = fn(loanAbi, "repayInterests", [amount]);
    let r: { blockNumber: Hex; transactionHash: Hex };
    if (e.loan.side === "lent") {
      const b = e.loan.borrower;
      await this.mint(this.stable, b, amount, w++);
      await this.s.send(b, this.stable.address, fn(ERC20_ABI, "approve", [address, amount]), "approve", w++);
      r = await this.s.send(b, address, data, "interest", w++);
    } else {
      await this.fund(this.stable, e.sub.safe, amount, w++);
      r = await this.trade(e.sub, [[this.stable, address, amount]], address, data, "interest", w++);
    }
    this.loanAction(e, "interest", r, amount);
    e.due = Number(await this.read<bigint>(address, loanAbi, "getNextPaymentDate"));
    return w;
  }

  /** The interest owed, then the whole principal: the loan closes. */
  private async repayLoan(e: LoanEntry, at: number): Promise<number> {
    let w = await this.payInterest(e, at);
    const loanAbi = LoanAbi as Abi;
    const address = e.loan.address;
    const principal = await this.read<bigint>(address, loanAbi, "principalAmount");
    const data = fn(loanAbi, "repayPrincipal", [principal]);
    let r: { blockNumber: Hex; transactionHash: Hex };
    if (e.loan.side === "lent") {
      const b = e.loan.borrower;
      await this.mint(this.stable, b, principal, w++);
      await this.s.send(b, this.stable.address, fn(ERC20_ABI, "approve", [address, principal]), "approve", w++);
      r = await this.s.send(b, address, data, "repay", w++);
    } else {
      const held = await this.balance(this.stable, e.sub.safe);
      if (held < principal) await this.fund(this.stable, e.sub.safe, principal - held, w++);
      r = await this.trade(e.sub, [[this.stable, address, principal]], address, data, "repay", w++);
    }
    this.loanAction(e, "repaid", r, principal);
    e.due = 0;
    return w;
  }

  /** The subaccount lender calls the loan back: 30 days to repay, 7 days' grace. */
  private async callLoan(e: LoanEntry, at: number): Promise<number> {
    const w = Math.max(at, this.s.clock + 1);
    const data = fn(LoanAbi as Abi, "callLoan", [30n, 7n]);
    const r = await this.trade(e.sub, [], e.loan.address, data, "call", w);
    this.loanAction(e, "called", r);
    e.due = 0;
    return w + 1;
  }

  /** Brings every pool whose price strays from the feeds back to them, and the Morpho oracle, in one block. */
  async arbitrage(at: number): Promise<void> {
    await this.s.offManifest(async () => {
      const p = this.result.protocols;
      const arb = this.result.arbitrageur;
      const price = new Map<Address, bigint>();
      for (const t of this.tokens) price.set(t.address, await this.feed(t));
      const txs: PlannedTx[] = [];
      for (const pool of p.uniswap.pools) {
        const t0 = byAddress(this.tokens, pool.token0);
        const t1 = byAddress(this.tokens, pool.token1);
        const target = sqrtPriceX96(
          price.get(t0.address) as bigint,
          t0.decimals,
          price.get(t1.address) as bigint,
          t1.decimals,
        );
        const current = await this.slot0(pool);
        const diff = target > current ? target - current : current - target;
        if (diff * 1_000_000n <= (target * ARB_TOLERANCE_PPM) / 2n) continue;
        // price (token1 per token0) too low: buy token0 with token1, up to the target price
        const [tokenIn, tokenOut] = target > current ? [t1, t0] : [t0, t1];
        const amountIn = await this.units(tokenIn, 100_000_000);
        const data = fn(uniArt.swapRouter().abi, "exactInputSingle", [
          {
            tokenIn: tokenIn.address,
            tokenOut: tokenOut.address,
            fee: pool.fee,
            recipient: arb,
            deadline: BigInt(at + 3600),
            amountIn,
            amountOutMinimum: 0n,
            sqrtPriceLimitX96: target,
          },
        ]);
        txs.push({ from: arb, to: p.uniswap.swapRouter, data, gas: ARB_GAS, what: `arbitrage ${pool.address}` });
      }
      for (const pair of p.uniswapV2.pairs) {
        const t0 = byAddress(this.tokens, pair.token0);
        const t1 = byAddress(this.tokens, pair.token1);
        const [p0, p1] = [price.get(t0.address) as bigint, price.get(t1.address) as bigint];
        const [r0, r1] = await this.read<readonly [bigint, bigint, number]>(
          pair.address,
          uniV2Art.pair().abi,
          "getReserves",
        );
        // token1 per token0 at the reserves against the feeds, both scaled alike
        const at0 = r1 * p1 * 10n ** BigInt(t0.decimals);
        const feed0 = r0 * p0 * 10n ** BigInt(t1.decimals);
        const diff = at0 > feed0 ? at0 - feed0 : feed0 - at0;
        if (diff * 1_000_000n <= feed0 * ARB_TOLERANCE_PPM) continue;
        const move = v2Rebalance({ r0, r1 }, p0, t0.decimals, p1, t1.decimals);
        if (move.amountIn === 0n) continue;
        const path = move.in0 ? [t0.address, t1.address] : [t1.address, t0.address];
        const data = fn(uniV2Art.router02().abi, "swapExactTokensForTokens", [
          move.amountIn,
          0n,
          path,
          arb,
          BigInt(at + 3600),
        ]);
        txs.push({ from: arb, to: p.uniswapV2.router, data, gas: ARB_GAS, what: `arbitrage ${pair.address}` });
      }
      const m = p.morpho;
      const col = byAddress(this.tokens, m.market.collateralToken);
      const loan = byAddress(this.tokens, m.market.loanToken);
      const oraclePrice = morphoOraclePrice(
        price.get(col.address) as bigint,
        col.decimals,
        price.get(loan.address) as bigint,
        loan.decimals,
      );
      const oracleAbi = morphoArtifacts().OracleMock.abi;
      const current = await this.read<bigint>(m.oracle, oracleAbi, "price");
      if (current !== oraclePrice) {
        txs.push({
          from: arb,
          to: m.oracle,
          data: fn(oracleAbi, "setPrice", [oraclePrice]),
          gas: 100_000n,
          what: "Morpho oracle",
        });
      }
      if (txs.length === 0) return;
      await this.s.sendBlock(txs, at);
      this.count("arbitrage:block");
      for (let i = 0; i < txs.length; i++) this.count("arbitrage:tx");
    });
  }

  /**
   * The trader swaps between WETH and the stable, selling what it holds more of: on a v3 pool, or
   * every third day on the v2 pair.
   */
  async swap(at: number): Promise<void> {
    const trader = this.sub("trader");
    const p = this.result.protocols;
    const pools = p.uniswap.pools.filter((x) => this.isWethStable(x));
    const pool = this.rng.pick(pools);
    const wethUsd = ((await this.balance(this.weth, trader.safe)) * (await this.feed(this.weth))) / E18;
    const stableUsd =
      ((await this.balance(this.stable, trader.safe)) * (await this.feed(this.stable))) /
      10n ** BigInt(this.stable.decimals);
    const [tokenIn, tokenOut] = wethUsd > stableUsd ? [this.weth, this.stable] : [this.stable, this.weth];
    const amountIn = await this.units(tokenIn, 10_000 + 40_000 * this.rng.next());
    // the venue by the day, after the draws: the seed's draws are the same on either venue
    if (Math.floor(at / 86_400) % 3 === 0) {
      const quote = await this.quoteV2(tokenIn, tokenOut, amountIn);
      const router = p.uniswapV2.router;
      const data = this.swapDataV2(trader, tokenIn, tokenOut, amountIn, (quote * 995n) / 1000n, at);
      await this.trade(trader, [[tokenIn, router, amountIn]], router, data, "swap", at);
      return;
    }
    const quote = await this.quote(tokenIn, tokenOut, pool.fee, amountIn);
    await this.trade(
      trader,
      [[tokenIn, p.uniswap.swapRouter, amountIn]],
      p.uniswap.swapRouter,
      this.swapData(trader, tokenIn, tokenOut, pool.fee, amountIn, (quote * 995n) / 1000n, at),
      "swap",
      at,
    );
  }

  // ---- deliberate failures ---------------------------------------------------------------------

  /** Sends a transaction that fails with a known reason, checked by eth_call first, and records it. */
  async fail(kind: FailedTx["kind"], at: number): Promise<void> {
    const p = this.result.protocols;
    const trader = this.sub("trader");
    const lev = this.sub("leveraged");
    const router = p.uniswap.swapRouter;
    /** the trader's module call of `swap` on `target`, approving it `amount` of `token` */
    const traderSwap = (token: TokenInput, target: Address, amount: bigint, swap: Hex) => ({
      from: trader.trader,
      to: trader.module,
      data: fn(moduleAbi, "executeWithApprovals", [
        [{ token: token.address, spender: target, amount }],
        target,
        0n,
        swap,
      ]),
    });
    let tx: { from: Address; to: Address; data: Hex; description: string; reason: ExpectedRevert };
    if (kind === "module-not-trader") {
      const stranger = actorAddress(this.seed, "stranger");
      const amount = await this.units(this.stable, 1_000);
      tx = {
        from: stranger,
        to: trader.module,
        data: fn(moduleAbi, "execute", [
          router,
          0n,
          this.swapData(trader, this.stable, this.weth, 500, amount, 0n, at),
        ]),
        description: "a stranger asks the trader's module for a swap",
        reason: { type: "custom", contract: "SubaccountModule", name: "NotTrader", args: [stranger] },
      };
    } else if (kind === "module-token-not-allowed") {
      const amount = await this.units(this.weth, 1_000);
      const swap = this.swapData(trader, this.weth, this.disallowed, 3000, amount, 0n, at);
      tx = {
        ...traderSwap(this.weth, router, amount, swap),
        description: `the trader swaps into ${this.disallowed.symbol}, a token its module does not allow`,
        reason: {
          type: "custom",
          contract: "SubaccountModule",
          name: "TokenNotAllowed",
          args: [this.disallowed.address],
        },
      };
    } else if (kind === "aave-36") {
      const [collateralBase] = await this.accountData(lev.safe);
      const amount = (collateralBase * 10n ** BigInt(this.stable.decimals)) / (await this.feed(this.stable));
      tx = {
        from: lev.trader,
        to: lev.module,
        data: fn(moduleAbi, "execute", [
          p.aave.pool,
          0n,
          fn(aaveArt.pool().abi, "borrow", [this.stable.address, amount, 2n, 0, lev.safe]),
        ]),
        description: "the leveraged subaccount borrows as much as its whole collateral is worth",
        reason: { type: "error", contract: "AavePool", message: "36" },
      };
    } else if (kind === "safe-gs025") {
      const stranger = actorAddress(this.seed, "stranger");
      const lender = this.sub("lender");
      const safeAbi = safeArt.singletonL2().abi;
      const inner = fn(ERC20_ABI, "approve", [stranger, 1n]);
      tx = {
        from: stranger,
        to: lender.safe,
        data: fn(safeAbi, "execTransaction", [
          this.stable.address,
          0n,
          inner,
          0,
          0n,
          0n,
          0n,
          ZERO,
          ZERO,
          prevalidatedSignature(lender.owner),
        ]),
        description: "a stranger sends a Safe transaction carrying the owner's pre-validated signature",
        reason: { type: "error", contract: "Safe", message: "GS025" },
      };
    } else if (kind === "slippage") {
      const amount = await this.units(this.stable, 5_000);
      const quote = await this.quote(this.stable, this.weth, 500, amount);
      const swap = this.swapData(trader, this.stable, this.weth, 500, amount, quote * 2n, at);
      tx = {
        ...traderSwap(this.stable, router, amount, swap),
        description: "the trader swaps with a minimum twice the quote",
        reason: { type: "error", contract: "SwapRouter", message: "Too little received" },
      };
    } else {
      const amount = await this.units(this.stable, 5_000);
      const v2 = p.uniswapV2.router;
      const quote = await this.quoteV2(this.stable, this.weth, amount);
      const swap = this.swapDataV2(trader, this.stable, this.weth, amount, quote * 2n, at);
      tx = {
        ...traderSwap(this.stable, v2, amount, swap),
        description: "the trader swaps on Uniswap v2 with a minimum twice the quote",
        reason: { type: "error", contract: "UniswapV2Router", message: "UniswapV2Router: INSUFFICIENT_OUTPUT_AMOUNT" },
      };
    }
    const display = revertDisplay(tx.reason);
    const got = await this.callRevert(tx.from, tx.to, tx.data);
    if (got !== display) {
      throw new Error(`chain ${this.s.chainId}: ${kind} would revert with ${got}, not ${display}`);
    }
    const receipt = await this.s.sendReverting(tx.from, tx.to, tx.data, FAIL_GAS, kind, at);
    this.result.failures.push({
      kind,
      description: tx.description,
      txHash: receipt.transactionHash,
      blockNumber: Number(BigInt(receipt.blockNumber)),
      timestamp: this.s.clock,
      from: getAddress(tx.from),
      to: getAddress(tx.to),
      gas: FAIL_GAS.toString(),
      reason: tx.reason,
      display,
    });
    this.count(`fail:${kind}`);
  }

  /** The reason an eth_call reverts with, as in FailedTx.display ("none" when it succeeds). */
  private async callRevert(from: Address, to: Address, data: Hex): Promise<string> {
    const body = (await this.s.post({
      jsonrpc: "2.0",
      id: 1,
      method: "eth_call",
      params: [{ from, to, data }, "latest"],
    })) as { result?: Hex; error?: { data?: Hex } };
    if (!body.error) return "none";
    return decodeRevert(body.error.data ?? "0x");
  }

  // ---- actions through the module ---------------------------------------------------------------

  /** A module call by the subaccount's trader, with exact approvals when given. */
  private async trade(
    sub: WorldSubaccount,
    approvals: [TokenInput, Address, bigint][],
    target: Address,
    data: Hex,
    what: string,
    at: number,
  ) {
    for (const [t] of approvals) {
      if (sub.protectedTokens.includes(t.address)) throw new Error(`${what}: ${sub.label} spends its vault's asset`);
    }
    const call =
      approvals.length === 0
        ? fn(moduleAbi, "execute", [target, 0n, data])
        : fn(moduleAbi, "executeWithApprovals", [
            approvals.map(([t, spender, amount]) => ({ token: t.address, spender, amount })),
            target,
            0n,
            data,
          ]);
    const receipt = await this.s.send(sub.trader, sub.module, call, `${sub.label}: ${what}`, at);
    this.count(what);
    return receipt;
  }

  private swapData(
    sub: WorldSubaccount,
    tokenIn: TokenInput,
    tokenOut: TokenInput,
    fee: number,
    amountIn: bigint,
    min: bigint,
    at: number,
  ): Hex {
    return fn(uniArt.swapRouter().abi, "exactInputSingle", [
      {
        tokenIn: tokenIn.address,
        tokenOut: tokenOut.address,
        fee,
        recipient: sub.safe,
        deadline: BigInt(Math.max(at, this.s.clock) + 3600),
        amountIn,
        amountOutMinimum: min,
        sqrtPriceLimitX96: 0n,
      },
    ]);
  }

  /** Router02's exact-input swap of one hop, paying the Safe. */
  private swapDataV2(
    sub: WorldSubaccount,
    tokenIn: TokenInput,
    tokenOut: TokenInput,
    amountIn: bigint,
    min: bigint,
    at: number,
  ): Hex {
    const deadline = BigInt(Math.max(at, this.s.clock) + 3600);
    return fn(uniV2Art.router02().abi, "swapExactTokensForTokens", [
      amountIn,
      min,
      [tokenIn.address, tokenOut.address],
      sub.safe,
      deadline,
    ]);
  }

  private async aaveSupply(sub: WorldSubaccount, t: TokenInput, amount: bigint, at: number) {
    const pool = this.result.protocols.aave.pool;
    const data = fn(aaveArt.pool().abi, "supply", [t.address, amount, sub.safe, 0]);
    await this.trade(sub, [[t, pool, amount]], pool, data, "aave:supply", at);
  }

  private async aaveWithdraw(sub: WorldSubaccount, t: TokenInput, amount: bigint, at: number) {
    const pool = this.result.protocols.aave.pool;
    const data = fn(aaveArt.pool().abi, "withdraw", [t.address, amount, sub.safe]);
    await this.trade(sub, [], pool, data, "aave:withdraw", at);
  }

  /** Keeps the leveraged subaccount's health factor between 1.17 and 1.35, back to 1.22 when outside. */
  private async keepHealthFactor(at: number, force = false): Promise<void> {
    const lev = this.sub("leveraged");
    const pool = this.result.protocols.aave.pool;
    const [collateral, debt, , threshold, , hf] = await this.accountData(lev.safe);
    const hfNum = debt === 0n ? Number.POSITIVE_INFINITY : Number((hf * 1000n) / E18) / 1000;
    if (!force && hfNum >= 1.17 && hfNum <= 1.35) return;
    const target = (collateral * threshold * 100n) / (10_000n * 122n); // debt (base units) at 1.22
    const price = await this.feed(this.stable);
    const scale = 10n ** BigInt(this.stable.decimals);
    const abi = aaveArt.pool().abi;
    if (target > debt) {
      const amount = ((target - debt) * scale) / price;
      await this.trade(
        lev,
        [],
        pool,
        fn(abi, "borrow", [this.stable.address, amount, 2n, 0, lev.safe]),
        "aave:borrow",
        at,
      );
    } else {
      let amount = ((debt - target) * scale) / price;
      const held = await this.balance(this.stable, lev.safe);
      if (amount > held) amount = held;
      if (amount === 0n) return;
      const data = fn(abi, "repay", [this.stable.address, amount, 2n, lev.safe]);
      await this.trade(lev, [[this.stable, pool, amount]], pool, data, "aave:repay", at);
    }
  }

  private async vaultDeposit(sub: WorldSubaccount, amount: bigint, at: number) {
    const vault = this.result.protocols.morpho.lendingVault;
    const data = fn(MorphoLendingVaultAbi as Abi, "deposit", [amount, sub.safe]);
    await this.trade(sub, [[this.stable, vault, amount]], vault, data, "lendingVault:deposit", at);
  }

  private morphoParams() {
    const m = this.result.protocols.morpho.market;
    return { ...m, lltv: BigInt(m.lltv) };
  }

  private async morphoCollateral(sub: WorldSubaccount, amount: bigint, at: number) {
    const morpho = this.result.protocols.morpho.morpho;
    const data = fn(morphoArtifacts().Morpho.abi, "supplyCollateral", [this.morphoParams(), amount, sub.safe, "0x"]);
    await this.trade(sub, [[this.weth, morpho, amount]], morpho, data, "morpho:supplyCollateral", at);
  }

  private async morphoBorrow(sub: WorldSubaccount, amount: bigint, at: number) {
    const morpho = this.result.protocols.morpho.morpho;
    const data = fn(morphoArtifacts().Morpho.abi, "borrow", [this.morphoParams(), amount, 0n, sub.safe, sub.safe]);
    await this.trade(sub, [], morpho, data, "morpho:borrow", at);
  }

  private async morphoRepay(sub: WorldSubaccount, amount: bigint, at: number) {
    const morpho = this.result.protocols.morpho.morpho;
    const data = fn(morphoArtifacts().Morpho.abi, "repay", [this.morphoParams(), amount, 0n, sub.safe, "0x"]);
    await this.trade(sub, [[this.stable, morpho, amount]], morpho, data, "morpho:repay", at);
  }

  /** A position of `usd` a side: within `halfWidthTicks` of the price, or full range (null). */
  private async mintPosition(
    sub: WorldSubaccount,
    pool: UniswapPool,
    usd: number,
    halfWidthTicks: number | null,
    at: number,
  ): Promise<bigint> {
    const npm = this.result.protocols.uniswap.positionManager;
    const t0 = byAddress(this.tokens, pool.token0);
    const t1 = byAddress(this.tokens, pool.token1);
    const [a0, a1] = [await this.units(t0, usd), await this.units(t1, usd)];
    const spacing = pool.tickSpacing;
    let lower: number;
    let upper: number;
    if (halfWidthTicks === null) {
      upper = Math.floor(887272 / spacing) * spacing;
      lower = -upper;
    } else {
      const tick = await this.tick(pool);
      lower = Math.floor((tick - halfWidthTicks) / spacing) * spacing;
      upper = Math.ceil((tick + halfWidthTicks) / spacing) * spacing;
    }
    const data = fn(uniArt.positionManager().abi, "mint", [
      {
        token0: t0.address,
        token1: t1.address,
        fee: pool.fee,
        tickLower: lower,
        tickUpper: upper,
        amount0Desired: a0,
        amount1Desired: a1,
        amount0Min: 0n,
        amount1Min: 0n,
        recipient: sub.safe,
        deadline: BigInt(Math.max(at, this.s.clock) + 3600),
      },
    ]);
    const receipt = await this.trade(
      sub,
      [
        [t0, npm, a0],
        [t1, npm, a1],
      ],
      npm,
      data,
      "uniswap:mint",
      at,
    );
    const tokenId = mintedTokenId(receipt as never, npm);
    this.result.positions.push({
      subaccount: sub.safe,
      tokenId: tokenId.toString(),
      pool: pool.address,
      staked: false,
    });
    return tokenId;
  }

  private async stake(sub: WorldSubaccount, tokenId: bigint, at: number) {
    const u = this.result.protocols.uniswap;
    const inc = u.incentive;
    const key = stakeData([{ ...inc, startTime: BigInt(inc.startTime), endTime: BigInt(inc.endTime) }]);
    const data = fn(uniArt.positionManager().abi, "safeTransferFrom", [sub.safe, u.staker, tokenId, key]);
    await this.trade(sub, [], u.positionManager, data, "uniswap:stake", at);
    const pos = this.result.positions.find((x) => x.tokenId === tokenId.toString());
    if (pos) pos.staked = true;
  }

  private async collect(sub: WorldSubaccount, tokenId: bigint, at: number) {
    const npm = this.result.protocols.uniswap.positionManager;
    const data = fn(uniArt.positionManager().abi, "collect", [
      { tokenId, recipient: sub.safe, amount0Max: MAX_UINT128, amount1Max: MAX_UINT128 },
    ]);
    await this.trade(sub, [], npm, data, "uniswap:collect", at);
  }

  // ---- reads -----------------------------------------------------------------------------------

  private async read<T>(to: Address, abi: Abi, functionName: string, args: readonly unknown[] = []): Promise<T> {
    const ret = await this.s.rpc<Hex>("eth_call", [{ to, data: fn(abi, functionName, args) }, "latest"]);
    return decodeFunctionResult({ abi, functionName, data: ret }) as T;
  }

  private feed(t: TokenInput): Promise<bigint> {
    return this.read<bigint>(t.feed, PRICE_FEED_ABI, "latestAnswer");
  }

  private balance(t: TokenInput, who: Address): Promise<bigint> {
    return this.read<bigint>(t.address, ERC20_ABI, "balanceOf", [who]);
  }

  /** Raw units of `t` worth `usd` at its feed. */
  private async units(t: TokenInput, usd: number): Promise<bigint> {
    return (BigInt(Math.round(usd)) * 10n ** BigInt(t.decimals) * E8) / (await this.feed(t));
  }

  private async slot0(pool: UniswapPool): Promise<bigint> {
    const r = await this.read<readonly [bigint, number]>(pool.address, uniArt.pool().abi, "slot0");
    return r[0];
  }

  private async tick(pool: UniswapPool): Promise<number> {
    const r = await this.read<readonly [bigint, number]>(pool.address, uniArt.pool().abi, "slot0");
    return Number(r[1]);
  }

  private accountData(who: Address) {
    return this.read<readonly [bigint, bigint, bigint, bigint, bigint, bigint]>(
      this.result.protocols.aave.pool,
      aaveArt.pool().abi,
      "getUserAccountData",
      [who],
    );
  }

  private async quote(tokenIn: TokenInput, tokenOut: TokenInput, fee: number, amountIn: bigint): Promise<bigint> {
    const abi = uniArt.quoterV2().abi;
    const data = fn(abi, "quoteExactInputSingle", [
      { tokenIn: tokenIn.address, tokenOut: tokenOut.address, amountIn, fee, sqrtPriceLimitX96: 0n },
    ]);
    const ret = await this.s.rpc<Hex>("eth_call", [{ to: this.result.protocols.uniswap.quoterV2, data }, "latest"]);
    const [out] = decodeFunctionResult({ abi, functionName: "quoteExactInputSingle", data: ret }) as readonly [bigint];
    return out;
  }

  /** Router02's getAmountsOut of the one-hop v2 path. */
  private async quoteV2(tokenIn: TokenInput, tokenOut: TokenInput, amountIn: bigint): Promise<bigint> {
    const amounts = await this.read<readonly bigint[]>(
      this.result.protocols.uniswapV2.router,
      uniV2Art.router02().abi,
      "getAmountsOut",
      [amountIn, [tokenIn.address, tokenOut.address]],
    );
    return amounts[amounts.length - 1] as bigint;
  }

  private isWethStable(pool: UniswapPool): boolean {
    const pair = new Set([pool.token0, pool.token1]);
    return pair.has(this.weth.address) && pair.has(this.stable.address);
  }

  private async mint(t: TokenInput, to: Address, amount: bigint, at = 0) {
    await this.s.send(this.result.arbitrageur, t.address, fn(ERC20_ABI, "mint", [to, amount]), "mint", at);
  }

  /** Capital for a Safe, sent from the custody wallet (as an operator funds a subaccount). */
  private async fund(t: TokenInput, safe: Address, amount: bigint, at = 0) {
    await this.s.send(this.result.custody, t.address, fn(ERC20_ABI, "transfer", [safe, amount]), "fund", at);
  }
}

const DAY = 86_400;

/** A day of a 125-day history, compressed for shorter ones (and kept inside them). */
function scaledDay(days: number, day: number): number {
  return Math.min(days - 1, days >= 125 ? day : Math.round((day * days) / 125));
}

export interface PerpPlan {
  day: number;
  bridge: "A" | "B";
  symbol: "USDC" | "WETH";
  usd: number;
  destination: "perp" | "spot";
  /** three fifths of the bridge's minimum: the core side rejects it */
  below: boolean;
  by: "trader" | "leveraged";
}

/** The history's perp deposits on a chain (the same days on every chain; one below the minimum each). */
export function perpPlans(days: number, core: boolean): PerpPlan[] {
  const D = (d: number) => scaledDay(days, d);
  return [
    { day: D(12), bridge: "A", symbol: "USDC", usd: 25_000, destination: "perp", below: false, by: "trader" },
    { day: D(33), bridge: "B", symbol: "WETH", usd: 40_000, destination: "spot", below: false, by: "leveraged" },
    { day: D(57), bridge: core ? "A" : "B", symbol: "USDC", usd: 3, destination: "perp", below: true, by: "trader" },
    { day: D(84), bridge: "B", symbol: "USDC", usd: 15_000, destination: "perp", below: false, by: "leveraged" },
    { day: D(110), bridge: "A", symbol: "USDC", usd: 8_000, destination: "perp", below: false, by: "trader" },
  ];
}

export interface LoanPlan {
  key: "lent-repaid" | "lent-active" | "lent-called" | "borrowed-late" | "borrowed-repaid" | "borrowed-active";
  side: "lent" | "borrowed";
  usd: number;
  /** two decimals */
  apr: bigint;
  termDays: bigint;
  intervalDays: number;
  /** the day it is created, funded and drawn */
  open: number;
  /** interest paid whenever due, or only the first time (the loan then goes late) */
  pays: "due" | "first";
  repay?: number;
  call?: number;
}

/**
 * The registry loans of a chain: three lent by a subaccount (one repaid and closed, one active,
 * one called), three borrowed by one (one late: it paid once and stopped, one repaid, one active).
 */
export function loanPlans(days: number): LoanPlan[] {
  const D = (d: number) => scaledDay(days, d);
  const plans: LoanPlan[] = [
    {
      key: "lent-repaid",
      side: "lent",
      usd: 50_000,
      apr: 900n,
      termDays: 90n,
      intervalDays: 30,
      open: D(5),
      pays: "due",
      repay: D(60),
    },
    {
      key: "borrowed-late",
      side: "borrowed",
      usd: 40_000,
      apr: 1200n,
      termDays: 365n,
      intervalDays: 7,
      open: D(8),
      pays: "first",
    },
    {
      key: "lent-active",
      side: "lent",
      usd: 80_000,
      apr: 1100n,
      termDays: 240n,
      intervalDays: 30,
      open: D(20),
      pays: "due",
    },
    {
      key: "lent-called",
      side: "lent",
      usd: 30_000,
      apr: 1000n,
      termDays: 240n,
      intervalDays: 30,
      open: D(30),
      pays: "due",
      call: D(100),
    },
    {
      key: "borrowed-repaid",
      side: "borrowed",
      usd: 25_000,
      apr: 800n,
      termDays: 90n,
      intervalDays: 30,
      open: D(40),
      pays: "due",
      repay: D(95),
    },
    {
      key: "borrowed-active",
      side: "borrowed",
      usd: 60_000,
      apr: 750n,
      termDays: 240n,
      intervalDays: 30,
      open: D(50),
      pays: "due",
    },
  ];
  // an action on the day the loan opens would come before it: one day later
  for (const p of plans) {
    if (p.repay !== undefined && p.repay <= p.open) p.repay = p.open + 1;
    if (p.call !== undefined && p.call <= p.open) p.call = p.open + 1;
  }
  return plans;
}

interface LoanEntry {
  loan: WorldLoan;
  plan: LoanPlan;
  sub: WorldSubaccount;
  /** the next payment date the borrower pays by (0: no more payments) */
  due: number;
}

/** Sends `data` to `to` from a subaccount Safe as its owner (the vault's own moves: approvals, losses). */
export async function subaccountExec(s: ChainSession, sub: WorldSubaccount, to: Address, data: Hex, at: number) {
  return s.send(sub.owner, sub.safe, subaccountExecData(sub, to, data), `${sub.label}: exec`, at);
}

/** The Safe's execTransaction calldata for `subaccountExec`, to be sent by the owner. */
export function subaccountExecData(sub: WorldSubaccount, to: Address, data: Hex): Hex {
  const args = [to, 0n, data, 0, 0n, 0n, 0n, ZERO, ZERO, prevalidatedSignature(sub.owner)];
  return fn(safeArt.singletonL2().abi, "execTransaction", args);
}

/** Decodes revert data: a SubaccountModule error as `Name(arg,…)`, `Error(string)` as its message. */
export function decodeRevert(data: Hex): string {
  if (data === "0x") return "empty";
  try {
    const r = decodeErrorResult({ abi: moduleAbi, data });
    if (r.errorName === "Error") return String((r.args as readonly unknown[])[0]);
    return `${r.errorName}(${((r.args ?? []) as readonly unknown[]).map((a) => String(a)).join(",")})`;
  } catch {
    return data;
  }
}

export function revertDisplay(r: ExpectedRevert): string {
  return r.type === "custom" ? `${r.name}(${r.args.join(",")})` : r.message;
}

const PRICE_FEED_ABI_W = [
  {
    type: "function",
    name: "setAnswer",
    stateMutability: "nonpayable",
    inputs: [{ name: "answer", type: "int256" }],
    outputs: [],
  },
] as const satisfies Abi;

function usd8(p: number): bigint {
  return BigInt(Math.round(p * 1e8));
}

function bySymbol(tokens: TokenInput[], symbol: string): TokenInput {
  const t = tokens.find((x) => x.symbol === symbol);
  if (!t) throw new Error(`no token ${symbol}`);
  return t;
}

function byAddress(tokens: TokenInput[], address: Address): TokenInput {
  const t = tokens.find((x) => getAddress(x.address) === getAddress(address));
  if (!t) throw new Error(`no token ${address}`);
  return t;
}
