/**
 * Deploys the devnet vaults on one anvil chain and gives them `days` of history ending at
 * `endTime`: deposits, share transfers, redemption requests and claims from many wallets, daily
 * total-assets reports (mostly gains, flat days, a loss), fees, a pause, loans, and governance
 * through a 2-of-3 multisig proposing to an OpenZeppelin TimelockController. Deterministic for a
 * seed and an end time; every emitted event is recorded for the manifest.
 */
import {
  type Abi,
  type Address,
  concat,
  encodeFunctionData,
  type Hex,
  keccak256,
  maxUint256,
  namehash,
  parseUnits,
  toHex,
  zeroHash,
} from "viem";
import { type PrivateKeyAccount, privateKeyToAccount } from "viem/accounts";
import { ABIS, bytecode } from "./artifacts.js";
import { PERP_RELAY_DELAY_S, PerpNetwork } from "./perp-sim.js";
import { safe as safeArtifacts } from "./protocols/artifacts.js";
import { createSafe, deploySafe } from "./protocols/index.js";
import { read as readAbi } from "./protocols/tx.js";
import { actorAddress, actorKey, Rng } from "./random.js";
import { type AssetSpec, VAULT_SPECS, type VaultSpec } from "./scenario.js";
import { ChainSession, type ManifestEvent, type PlannedTx } from "./session.js";
import {
  type FailedTx,
  subaccountExec,
  subaccountExecData,
  World,
  type WorldResult,
  type WorldSubaccount,
} from "./world.js";

export const DAY = 86_400;
export const MULTICALL3_ADDRESS: Address = "0xcA11bde05977b3631167028862bE2a173976CA11";

type Token = { address: Address; symbol: string; decimals: number };

export interface RegistryVault {
  chainId: number;
  address: Address;
  family: VaultSpec["family"];
  kind: VaultSpec["kind"];
  name: string;
  symbol: string;
  publicType: VaultSpec["publicType"];
  status: "active" | "closed" | "migrated";
  startBlock: number;
  startTimestamp: number;
  asset: Token;
  altAsset: (Token & { priceFeed: { address: Address; decimals: number } }) | null;
  receiptToken: Address | null;
  priceFeed: { address: Address; decimals: number };
  timelock: Address;
  multisig: Address;
  operator: Address;
  feeCollector: Address;
  strategist: { name: string; address: Address };
  subaccounts: Address[];
}

export interface ChainResult {
  chainId: number;
  rpcUrl: string;
  blockTime: number;
  snapshotInterval: number;
  headBlock: number;
  headTimestamp: number;
  txCount: number;
  vaults: RegistryVault[];
  loans: Address[];
  wallets: Address[];
  events: ManifestEvent[];
  /** what the simulator did, counted by kind (deposits, transfers, requests, ...) */
  actions: Record<string, number>;
  /** UTC day index (days since epoch) of every simulated day */
  firstDay: number;
  lastDay: number;
  lossDays: { vault: Address; day: number }[];
  flatDays: { vault: Address; day: number }[];
  pauses: { vault: Address; from: number; to: number }[];
  /** ENS on the devnet: a TestUniversalResolver and the names it resolves (lower-case addresses) */
  ens: EnsResult;
  /** the governance Safe (2 of 3) proposing to the timelock, and its owners */
  governance: { safe: Address; owners: Address[]; threshold: number };
  /**
   * The protocol world (world.ts): protocol addresses, the subaccount Safes and their modules, the
   * v3 positions and the deliberately failed transactions. Its transactions' events are not in
   * `events`.
   */
  world: WorldResult;
}

export interface EnsResult {
  /** the TestUniversalResolver (ENS_UNIVERSAL_RESOLVER_<chainId> for the API) */
  universalResolver: Address;
  /**
   * name -> address: `wallet<i>.eth` for the first ENS_HOLDER_NAMES wallets (by index i in
   * `wallets`) that hold vault shares at the head of this chain (so the lists may differ between
   * chains), `chain<chainId>.eth` for the first of them (a name only this chain resolves), and
   * `unranked.eth` for an address that never acts (it resolves, but earns no points)
   */
  names: Record<string, Address>;
}

/** how many share-holding wallets get an ENS name on each chain */
export const ENS_HOLDER_NAMES = 5;

export interface SimulateOptions {
  chainId: number;
  rpcUrl: string;
  blockTime: number;
  snapshotInterval: number;
  seed: string;
  days: number;
  /** unix seconds; the last simulated block is just before it */
  endTime: number;
  wallets: number;
  log?: (msg: string) => void;
  /**
   * Perp deposits shared with the other chains of the simulation (perp-sim.ts); without it the
   * chain is its own core chain.
   */
  perp?: PerpNetwork;
  /**
   * The vaults to deploy (default: the VAULT_SPECS of `chainId`); each spec's chainId must be
   * this chain's. bench:scale uses it to put the demo's vault pairs on more chains.
   */
  vaultSpecs?: readonly VaultSpec[];
}

const PRICE_DECIMALS = 8;

interface Vault {
  spec: VaultSpec;
  reg: RegistryVault;
  shareToken: Address; // the vault itself (lendingPool) or its receipt token
  operator: Address;
  holders: Set<Address>;
  paused: boolean;
  /** lendingPool: receivers with claimable assets per due day */
  dueReceivers: Map<number, Set<Address>>;
  dueDays: Set<number>;
  dailyApy: number;
}

/**
 * The simulator's own actions on a chain whose history is done, for activity after it
 * (contracts/devnet/live.ts). Each takes the unix second of its first block; the choices inside
 * (vault, wallet, amount) come from the simulation's seeded stream.
 */
export interface ChainActions {
  readonly session: ChainSession;
  /** a wallet deposits, moves shares or asks to redeem, as during the history */
  user(at: number): Promise<void>;
  /** one vault's operator reports total assets, with the yield of the time since its last report */
  report(at: number): Promise<void>;
  /** one vault's price feed moves by the volatility of the time since its last move */
  price(at: number): Promise<void>;
  /** redemptions that are due are processed, and processed ones claimed */
  redemptions(at: number): Promise<void>;
  /** the protocol world's morning: a trader's swap, then the pools and the Morpho oracle back at the feeds */
  world(at: number): Promise<void>;
  /** a subaccount's perp deposit on one of the chain's bridges (the relayer worker credits it); what it was */
  perp(at: number): Promise<string>;
}

export async function simulateChain(opts: SimulateOptions): Promise<ChainResult> {
  return (await simulateChainWithActions(opts)).result;
}

/** simulateChain, also handing back the simulator's actions for activity after the history. */
export async function simulateChainWithActions(
  opts: SimulateOptions,
): Promise<{ result: ChainResult; actions: ChainActions }> {
  const perp =
    opts.perp ?? new PerpNetwork(opts.chainId, PERP_RELAY_DELAY_S, [{ chainId: opts.chainId, rpcUrl: opts.rpcUrl }]);
  try {
    return await simulate({ ...opts, perp });
  } finally {
    // whatever happened, the core chain no longer waits for this one
    perp.finish(opts.chainId);
  }
}

async function simulate(
  opts: SimulateOptions & { perp: PerpNetwork },
): Promise<{ result: ChainResult; actions: ChainActions }> {
  const log = opts.log ?? (() => {});
  const s = new ChainSession(opts.chainId, opts.rpcUrl);
  const rng = new Rng(`${opts.seed}:${opts.chainId}`);
  // The alt assets' feeds draw from a stream of their own, so the rest of the history is the one
  // the seed gave before they had feeds.
  const pegRng = new Rng(`${opts.seed}:${opts.chainId}:alt-feeds`);
  const seed = opts.seed;
  const specs = opts.vaultSpecs ?? VAULT_SPECS.filter((v) => v.chainId === opts.chainId);
  for (const v of specs) {
    if (v.chainId !== opts.chainId)
      throw new Error(`chain ${opts.chainId}: vault spec ${v.name} is for chain ${v.chainId}`);
  }
  const slotsPerDay = Math.floor(DAY / opts.blockTime);
  const endDay = Math.floor(opts.endTime / DAY); // today (partially simulated)
  const firstDay = endDay - opts.days + 1;
  const actions: Record<string, number> = {};
  const count = (k: string) => (actions[k] = (actions[k] ?? 0) + 1);
  const lossDays: ChainResult["lossDays"] = [];
  const flatDays: ChainResult["flatDays"] = [];
  const pauses: ChainResult["pauses"] = [];

  // ---- actors -------------------------------------------------------------------------------
  const deployer = actorAddress(seed, "deployer");
  const owners: PrivateKeyAccount[] = [0, 1, 2].map((i) => privateKeyToAccount(actorKey(seed, "multisig-owner", i)));
  const wallets = Array.from({ length: opts.wallets }, (_, i) => actorAddress(seed, "wallet", i));
  const borrower = actorAddress(seed, "borrower");
  const lossSink = actorAddress(seed, "loss-sink");
  const guardian = actorAddress(seed, "guardian");
  const rescue = actorAddress(seed, "rescue");

  await s.syncClock();
  const setupStart = firstDay * DAY - 3 * 3600; // deployment happens the evening before day one
  let at = setupStart;
  const tick = () => (at += 1);

  // Multicall3 at its canonical address, so viem/Ponder batched reads work on the devnet.
  await s.rpc("anvil_setCode", [MULTICALL3_ADDRESS, await runtimeCode(s, deployer, "Multicall3", tick())]);

  // ---- deployment -------------------------------------------------------------------------
  // Governance is a Safe 1.5.0 (2 of 3), the same address on every chain of a seed; the Safe
  // contracts come through the CREATE2 deployer, so who sends them does not matter.
  const protocolsDeployer = actorAddress(seed, "protocols-deployer");
  const safeDeployment = await deploySafe({ s, from: protocolsDeployer });
  const multisig = await createSafe({ s, from: protocolsDeployer }, safeDeployment, {
    label: `${seed}:governance`,
    owners: owners.map((o) => o.address),
    threshold: 2,
  });
  const timelock = await s.deploy(
    deployer,
    "TimelockController",
    [BigInt(DAY), [multisig], [multisig], deployer],
    tick(),
  );
  let timelockDelay = BigInt(DAY);

  const vaults: Vault[] = [];
  for (const [i, spec] of specs.entries()) {
    const asset = await deployAsset(s, deployer, spec.asset, tick());
    const alt = spec.altAsset ? await deployAsset(s, deployer, spec.altAsset, tick()) : null;
    const feed = await s.deploy(
      deployer,
      "PriceFeed",
      [PRICE_DECIMALS, `${spec.asset.symbol} / USD`, usd(spec.asset.usdPrice)],
      tick(),
    );
    const altFeed = spec.altAsset
      ? await s.deploy(
          deployer,
          "PriceFeed",
          [PRICE_DECIMALS, `${spec.altAsset.symbol} / USD`, usd(spec.altAsset.usdPrice)],
          tick(),
        )
      : null;
    const operator = actorAddress(seed, `operator-${spec.kind}`);
    const feeCollector = actorAddress(seed, `fees-${spec.kind}`);
    const strategist = actorAddress(seed, `strategist-${spec.strategist}`);
    const dec = spec.asset.decimals;
    let address: Address;
    let receiptToken: Address | null = null;
    if (spec.family === "lendingPool") {
      address = await s.deploy(
        deployer,
        "LendingPool",
        [asset, spec.name, spec.symbol, deployer, operator, feeCollector, 3n * BigInt(DAY), 500n, 10n, 100n, 0n],
        tick(),
      );
    } else {
      address = await s.deploy(
        deployer,
        "TokenizedVaultV2",
        [asset, spec.name, spec.symbol, deployer, operator, feeCollector, 2n * BigInt(DAY), 500n, 150n, 1000n, 0n],
        tick(),
      );
      receiptToken = (await s.read("TokenizedVaultV2", address, "lpTokenAddress", [])) as Address;
    }
    const startBlock = await s.blockNumber();
    const reg: RegistryVault = {
      chainId: opts.chainId,
      address: address.toLowerCase() as Address,
      family: spec.family,
      kind: spec.kind,
      name: spec.name,
      symbol: spec.symbol,
      publicType: spec.publicType,
      status: "active",
      startBlock,
      startTimestamp: s.clock,
      asset: { address: lc(asset), symbol: spec.asset.symbol, decimals: dec },
      altAsset:
        alt && altFeed && spec.altAsset
          ? {
              address: lc(alt),
              symbol: spec.altAsset.symbol,
              decimals: spec.altAsset.decimals,
              priceFeed: { address: lc(altFeed), decimals: PRICE_DECIMALS },
            }
          : null,
      receiptToken: receiptToken ? lc(receiptToken) : null,
      priceFeed: { address: lc(feed), decimals: PRICE_DECIMALS },
      timelock: lc(timelock),
      multisig: lc(multisig),
      operator: lc(operator),
      feeCollector: lc(feeCollector),
      strategist: { name: spec.strategist, address: lc(strategist) },
      subaccounts: [], // the Safes, once the protocol world is deployed
    };
    vaults.push({
      spec,
      reg,
      shareToken: receiptToken ?? address,
      operator,
      holders: new Set(),
      paused: false,
      dueReceivers: new Map(),
      dueDays: new Set(),
      dailyApy: spec.baseApy,
    });
    log(`chain ${opts.chainId}: deployed ${spec.name} (${spec.family}) at ${address} block ${startBlock}`);
    void i;
  }

  // ---- the protocol world: Uniswap v3, Aave v3, Morpho, the subaccount Safes (world.ts) -------
  const world = await World.deploy(s, {
    seed,
    days: opts.days,
    perp: opts.perp,
    deployer: protocolsDeployer,
    safe: safeDeployment,
    vaults: vaults.map((v) => ({
      spec: v.spec,
      address: v.reg.address,
      asset: { ...v.reg.asset, feed: v.reg.priceFeed.address },
      alt: v.reg.altAsset ? { ...v.reg.altAsset, feed: v.reg.altAsset.priceFeed.address } : null,
    })),
  });
  const subsOf = (v: Vault) => world.result.subaccounts.filter((x) => x.vault.address?.toLowerCase() === v.reg.address);
  const subBySafe = new Map<Address, WorldSubaccount>(world.result.subaccounts.map((x) => [lc(x.safe), x]));
  for (const v of vaults)
    v.reg.subaccounts = subsOf(v)
      .filter((x) => x.registered)
      .map((x) => lc(x.safe));
  log(
    `chain ${opts.chainId}: protocol world deployed (${world.result.protocols.stats.transactions} transactions), ` +
      `${world.result.subaccounts.length} subaccount Safes`,
  );

  // ---- wiring: subaccounts, alt assets, funding, ownership to the timelock -----------------------
  for (const v of vaults) {
    const { reg } = v;
    for (const sub of reg.subaccounts) {
      const approve = encodeFunctionData({
        abi: ABIS.MockERC20,
        functionName: "approve",
        args: [reg.address, maxUint256],
      });
      await subaccountExec(s, subBySafe.get(sub)!, reg.asset.address, approve, tick());
    }
    if (v.spec.family === "lendingPool") {
      await s.call(deployer, "LendingPool", reg.address, "addWhitelistedSubaccount", [reg.subaccounts], tick());
      await s.call(deployer, "LendingPool", reg.address, "transferOwnership", [timelock], tick());
    } else {
      for (const sub of reg.subaccounts) {
        await s.call(deployer, "TokenizedVaultV2", reg.address, "enableSubAccount", [sub], tick());
      }
      if (reg.altAsset && v.spec.altAsset) {
        await s.call(
          deployer,
          "TokenizedVaultV2",
          reg.address,
          "setAssetRate",
          [reg.altAsset.address, parseUnits(String(v.spec.altAsset.rate), 18)],
          tick(),
        );
      }
      await s.call(deployer, "TokenizedVaultV2", reg.address, "transferOwnership", [timelock], tick());
    }
    for (const w of wallets) {
      await s.call(
        w,
        "MockERC20",
        reg.asset.address,
        "mint",
        [w, units(v.spec.depositRange[1] * 40, reg.asset.decimals)],
        tick(),
      );
      await s.call(w, "MockERC20", reg.asset.address, "approve", [reg.address, maxUint256], tick());
      if (reg.altAsset) {
        await s.call(
          w,
          "MockERC20",
          reg.altAsset.address,
          "mint",
          [w, units(v.spec.depositRange[1] * 5, reg.altAsset.decimals)],
          tick(),
        );
        await s.call(w, "MockERC20", reg.altAsset.address, "approve", [reg.address, maxUint256], tick());
      }
    }
  }

  // ---- governance helpers ------------------------------------------------------------------
  const sortedOwners = [...owners].sort((a, b) => (a.address.toLowerCase() < b.address.toLowerCase() ? -1 : 1));
  const safeAbi = safeArtifacts.singletonL2().abi;
  const ZERO_ADDRESS: Address = "0x0000000000000000000000000000000000000000";
  // `r` picks the signers and the sender: the main stream by default; a later addition to the
  // calendar passes a stream of its own, so that the history around it stays as it was
  const multisigExec = async (to: Address, data: Hex, when: number, what: string, r: Rng = rng) => {
    const ctx = { s, from: deployer };
    const nonce = await readAbi<bigint>(ctx, multisig, safeAbi, "nonce");
    const safeTx = [to, 0n, data, 0, 0n, 0n, 0n, ZERO_ADDRESS, ZERO_ADDRESS] as const;
    const hash = await readAbi<Hex>(ctx, multisig, safeAbi, "getTransactionHash", [...safeTx, nonce]);
    const signers = r.chance(0.5) ? [sortedOwners[0]!, sortedOwners[1]!] : [sortedOwners[0]!, sortedOwners[2]!];
    // eth_sign-free ECDSA over the Safe transaction hash (v 27/28), ordered by owner address
    const sigs = await Promise.all(signers.map((o) => o.sign({ hash })));
    const sender = owners[r.int(0, 2)]!.address;
    const calldata = encodeFunctionData({
      abi: safeAbi,
      functionName: "execTransaction",
      args: [...safeTx, concat(sigs)],
    });
    await s.send(sender, multisig, calldata, `governance Safe: ${what}`, when);
    count(`multisig:${what}`);
  };

  interface Op {
    target: Address;
    data: Hex;
    salt: Hex;
    what: string;
  }
  const schedule = async (op: Op, when: number) => {
    const data = encodeFunctionData({
      abi: ABIS.TimelockController,
      functionName: "schedule",
      args: [op.target, 0n, op.data, zeroHash, op.salt, timelockDelay],
    });
    await multisigExec(timelock, data, when, `schedule ${op.what}`);
    count("timelock:scheduled");
  };
  const execute = async (op: Op, when: number) => {
    const data = encodeFunctionData({
      abi: ABIS.TimelockController,
      functionName: "execute",
      args: [op.target, 0n, op.data, zeroHash, op.salt],
    });
    await multisigExec(timelock, data, when, `execute ${op.what}`);
    count("timelock:executed");
  };
  const cancel = async (op: Op, when: number) => {
    const id = (await s.read("TimelockController", timelock, "hashOperation", [
      op.target,
      0n,
      op.data,
      zeroHash,
      op.salt,
    ])) as Hex;
    const data = encodeFunctionData({ abi: ABIS.TimelockController, functionName: "cancel", args: [id] });
    await multisigExec(timelock, data, when, `cancel ${op.what}`);
    count("timelock:cancelled");
  };
  /** One request of several calls (scheduleBatch, then executeBatch): one operation id. */
  const batchRng = new Rng(`${opts.seed}:${opts.chainId}:batch`);
  const batchArgs = (calls: Op[], salt: Hex) =>
    [calls.map((c) => c.target), calls.map(() => 0n), calls.map((c) => c.data), zeroHash, salt] as const;
  const scheduleBatch = async (calls: Op[], salt: Hex, what: string, when: number) => {
    const data = encodeFunctionData({
      abi: ABIS.TimelockController,
      functionName: "scheduleBatch",
      args: [...batchArgs(calls, salt), timelockDelay],
    });
    await multisigExec(timelock, data, when, `schedule ${what}`, batchRng);
    count("timelock:scheduled");
  };
  const executeBatch = async (calls: Op[], salt: Hex, what: string, when: number) => {
    const data = encodeFunctionData({
      abi: ABIS.TimelockController,
      functionName: "executeBatch",
      args: batchArgs(calls, salt),
    });
    await multisigExec(timelock, data, when, `execute ${what}`, batchRng);
    count("timelock:executed");
  };
  let saltCounter = 0;
  const op = (target: Address, abi: Abi, functionName: string, args: unknown[], what: string, withSalt = true): Op => ({
    target,
    data: encodeFunctionData({ abi, functionName, args }),
    salt: withSalt ? keccak256(toHex(`${seed}:${opts.chainId}:salt:${++saltCounter}`)) : zeroHash,
    what,
  });

  const lp = vaults.find((v) => v.spec.family === "lendingPool")!;
  const v2 = vaults.find((v) => v.spec.family === "tokenizedVaultV2")!;

  // Governance calendar: day offset -> actions (offsets beyond the simulated range are skipped).
  type Plan = (when: number) => Promise<void>;
  const calendar = new Map<number, { fraction: number; fn: Plan }[]>();
  // The calendar below is written for a 125-day history; shorter ones compress it.
  const D = (day: number) => (opts.days >= 125 ? day : Math.round((day * opts.days) / 125));

  // Governance happens around 08:00 UTC; executions come an hour after, so a delay of whole days
  // has always passed by then.
  const plan = (dayOffset: number, fn: Plan, fraction = 0.33) => {
    if (dayOffset < 0 || dayOffset >= opts.days) return;
    const list = calendar.get(dayOffset) ?? [];
    list.push({ fraction, fn });
    calendar.set(dayOffset, list);
  };
  const scheduled = (dayOffset: number, o: Op, executeAfterDays: number | "cancel" | "pending") => {
    plan(dayOffset, (w) => schedule(o, w));
    if (executeAfterDays === "pending") return;
    if (executeAfterDays === "cancel") plan(dayOffset + 1, (w) => cancel(o, w));
    else plan(dayOffset + executeAfterDays, (w) => execute(o, w), 0.38);
  };

  // The vaultV2 ownership handover completes when the timelock accepts it.
  const accept = op(v2.reg.address, ABIS.TokenizedVaultV2 as Abi, "acceptOwnership", [], "acceptOwnership", false);
  await schedule(accept, tick());
  plan(1, (w) => execute(accept, w));
  plan(2, async (w) => {
    const admin = (await s.read("TimelockController", timelock, "DEFAULT_ADMIN_ROLE", [])) as Hex;
    await s.call(deployer, "TimelockController", timelock, "renounceRole", [admin, deployer], w);
    count("timelock:adminRenounced");
  });
  const lpAbi = ABIS.LendingPool as Abi;
  const v2Abi = ABIS.TokenizedVaultV2 as Abi;
  const tlAbi = ABIS.TimelockController as Abi;
  scheduled(D(10), op(lp.reg.address, lpAbi, "updateManagementFee", [150n], "LP management fee 1.5%"), 2);
  scheduled(D(25), op(v2.reg.address, v2Abi, "updateMaxChangePercent", [400n], "V2 max change 4%"), 2);
  const newLpOperator = actorAddress(seed, `operator-${lp.spec.kind}`, 1);
  scheduled(D(40), op(lp.reg.address, lpAbi, "updateOperator", [newLpOperator], "LP new operator"), 2);
  plan(
    D(40) + 2,
    async () => {
      lp.operator = newLpOperator;
      lp.reg.operator = lc(newLpOperator);
    },
    0.4,
  );
  // Cancelled, then scheduled again with the same id (same call and salt) and executed.
  const cancelled = op(lp.reg.address, lpAbi, "updateMaxSupply", [units(1, 30)], "LP max supply (cancelled)");
  scheduled(D(50), cancelled, "cancel");
  scheduled(D(50) + 3, cancelled, 2);
  const sub3 = subsOf(v2).find((x) => !x.registered)!.safe;
  scheduled(D(55), op(v2.reg.address, v2Abi, "enableSubAccount", [sub3], "V2 enable subaccount"), 2);
  scheduled(D(100), op(v2.reg.address, v2Abi, "disableSubAccount", [sub3], "V2 disable subaccount"), 2);
  // One request of two calls on two vaults, each set to what it already is (the V2 max change of
  // D(25), the LP's first fee collector, replaced only at D(70)): listed once for each vault.
  const batch = [
    op(v2.reg.address, v2Abi, "updateMaxChangePercent", [400n], "V2 max change 4% (batch)", false),
    op(lp.reg.address, lpAbi, "updateFeeCollector", [lp.reg.feeCollector], "LP fee collector (batch)", false),
  ];
  const batchSalt = keccak256(toHex(`${seed}:${opts.chainId}:batch:1`));
  plan(D(60), (w) => scheduleBatch(batch, batchSalt, "V2 max change and LP fee collector", w));
  plan(D(60) + 2, (w) => executeBatch(batch, batchSalt, "V2 max change and LP fee collector", w), 0.38);
  const newCollector = actorAddress(seed, `fees-${lp.spec.kind}`, 1);
  scheduled(D(70), op(lp.reg.address, lpAbi, "updateFeeCollector", [newCollector], "LP fee collector"), 2);
  plan(D(70) + 2, async () => {
    lp.reg.feeCollector = lc(newCollector);
  });
  scheduled(D(80), op(lp.reg.address, lpAbi, "updateMaxSupply", [units(1, 27)], "LP max supply"), 2);
  const canceller = (await s.read("TimelockController", timelock, "CANCELLER_ROLE", [])) as Hex;
  scheduled(D(90), op(timelock, tlAbi, "grantRole", [canceller, guardian], "grant canceller to guardian"), 2);
  scheduled(D(95), op(timelock, tlAbi, "updateDelay", [2n * BigInt(DAY)], "timelock delay 2 days"), 2);
  plan(D(97), async () => {
    timelockDelay = 2n * BigInt(DAY);
  });
  // A stray token (the other vault's asset) sent to the pool by mistake is rescued through the
  // timelock; it is not the pool's asset, so it never counts in the pool's total assets.
  const stray = units(1.5, v2.reg.asset.decimals);
  plan(D(108), async (w) => {
    await s.call(wallets[3]!, "MockERC20", v2.reg.asset.address, "transfer", [lp.reg.address, stray], w);
    count("strayTransfer");
  });
  scheduled(
    D(109),
    op(lp.reg.address, lpAbi, "emergencyWithdraw", [v2.reg.asset.address, rescue, stray], "rescue stray tokens"),
    2,
  );
  // Left pending at the end: one ready to execute, one still waiting.
  scheduled(opts.days - 3, op(lp.reg.address, lpAbi, "updateMaxChangePercent", [300n], "LP max change 3%"), "pending");
  scheduled(
    opts.days - 1,
    op(v2.reg.address, v2Abi, "updateManagementFee", [120n], "V2 management fee 1.2%"),
    "pending",
  );

  // ---- loans (lending pool) ----------------------------------------------------------------
  const loans: Address[] = [];
  const loanState = new Map<Address, { principal: bigint; apr: bigint }>();
  const deployLoan = async (principal: bigint, apr: bigint, when: number) => {
    const reserved =
      (await s.readBig("LendingPool", lp.reg.address, "claimableAssets", [])) +
      (await s.readBig("LendingPool", lp.reg.address, "accruedFees", []));
    await ensureLiquidity(lp, reserved + principal, when - 3);
    const receipt = await s.call(
      lp.operator,
      "LendingPool",
      lp.reg.address,
      "deployLoan",
      [borrower, principal, apr, 90n],
      when,
    );
    const ev = s.events.find((e) => e.event === "NewLoanDeployedByPool" && e.txHash === receipt.transactionHash);
    const loan = ev!.args.loanAddr as Address;
    loans.push(loan);
    loanState.set(loan, { principal, apr });
    await s.call(borrower, "MockERC20", lp.reg.asset.address, "approve", [loan, maxUint256], when + 1);
    count("loan:deployed");
    return loan;
  };
  plan(D(15), async (w) => {
    const ta = await s.readBig("LendingPool", lp.reg.address, "totalAssets", []);
    const loan = await deployLoan(ta / 10n, 1100n, w);
    await s.call(borrower, "Loan", loan, "borrowerCommitment", [], w + 2);
    await s.call(borrower, "Loan", loan, "borrowerWithdraw", [ta / 10n], w + 3);
  });
  plan(D(70), async (w) => {
    const ta = await s.readBig("LendingPool", lp.reg.address, "totalAssets", []);
    const loan = await deployLoan(ta / 20n, 950n, w);
    await s.call(borrower, "Loan", loan, "borrowerCommitment", [], w + 2);
    // drawn, as the first: a called loan's undrawn principal can no longer be drawn
    await s.call(borrower, "Loan", loan, "borrowerWithdraw", [ta / 20n], w + 3);
  });
  plan(D(60), async (w) => {
    const loan = loans[0];
    if (!loan) return;
    await s.call(lp.operator, "LendingPool", lp.reg.address, "proposeLoanApr", [loan, 1000n], w);
    await s.call(borrower, "Loan", loan, "acceptApr", [], w + 3600);
    loanState.get(loan)!.apr = 1000n;
  });
  plan(D(100), async (w) => {
    const loan = loans[1];
    if (loan) await s.call(lp.operator, "LendingPool", lp.reg.address, "callLoan", [loan, 30n, 7n], w);
  });
  plan(D(105), async (w) => {
    const loan = loans[0];
    if (!loan) return;
    const { principal, apr } = loanState.get(loan)!;
    // the interest owed first (and a day's more: the loan accrues until it closes), then the
    // principal: a loan closed on its principal alone would leave its interest unpaid for good
    const [owed] = (await s.read("Loan", loan, "getDebt", [])) as readonly [bigint, bigint];
    const interest = owed + (principal * apr) / (10_000n * 365n);
    await s.call(borrower, "MockERC20", lp.reg.asset.address, "mint", [borrower, principal + interest], w);
    await s.call(borrower, "Loan", loan, "repayInterests", [interest], w + 1);
    await s.call(borrower, "Loan", loan, "repayPrincipal", [principal], w + 2);
    count("loan:repaid");
  });

  // Pauses: the lending pool around day 60, the V2 vault around day 88.
  const pauseVault = (v: Vault, dayOffset: number, length: number) => {
    plan(dayOffset, async (w) => {
      const name = v.spec.family === "lendingPool" ? "LendingPool" : "TokenizedVaultV2";
      await s.call(v.operator, name, v.reg.address, "pauseDepositsAndWithdrawals", [true, true], w);
      v.paused = true;
      pauses.push({ vault: v.reg.address, from: firstDay + dayOffset, to: firstDay + dayOffset + length });
    });
    plan(dayOffset + length, async (w) => {
      const name = v.spec.family === "lendingPool" ? "LendingPool" : "TokenizedVaultV2";
      await s.call(v.operator, name, v.reg.address, "pauseDepositsAndWithdrawals", [false, false], w);
      v.paused = false;
    });
  };
  pauseVault(lp, D(60), 2);
  pauseVault(v2, D(88), 1);

  // Transactions that fail on purpose, one of each kind, spread over the history.
  const failures = new Map<number, FailedTx["kind"][]>();
  const failPlan: [number, FailedTx["kind"]][] = [
    [20, "module-not-trader"],
    [35, "module-token-not-allowed"],
    [50, "aave-36"],
    [65, "safe-gs025"],
    [80, "slippage"],
    [88, "v2-slippage"],
  ];
  for (const [day, kind] of failPlan) {
    const d = Math.min(D(day), opts.days - 1);
    failures.set(d, [...(failures.get(d) ?? []), kind]);
  }

  // ---- day by day ----------------------------------------------------------------------------
  const prices = new Map<Address, number>(vaults.map((v) => [v.reg.priceFeed.address, v.spec.asset.usdPrice]));
  const lossDay = new Map<Address, number>(
    vaults.map((v, i) => [v.reg.address, Math.min(opts.days - 5, D(77 + 9 * i))]),
  );
  // when each vault last reported and its feed last moved (live activity scales its steps by them)
  const lastReport = new Map<Vault, number>(vaults.map((v) => [v, v.reg.startTimestamp]));
  const lastPrice = new Map<Vault, number>(vaults.map((v) => [v, v.reg.startTimestamp]));

  for (let d = 0; d < opts.days; d++) {
    const day = firstDay + d;
    const dayStart = day * DAY;
    const isToday = day === endDay;
    const lastSlot = isToday
      ? Math.max(0, Math.floor((opts.endTime - 60 - dayStart) / opts.blockTime))
      : slotsPerDay - 1;
    const tasks = new Map<number, Plan[]>();
    const at2 = (slot: number, fn: Plan) => {
      const sl = Math.min(slot, lastSlot);
      const list = tasks.get(sl) ?? [];
      list.push(fn);
      tasks.set(sl, list);
    };
    const slotOf = (fraction: number) => Math.floor(fraction * (lastSlot + 1));

    // Price feeds move once a day; the protocol world follows (a swap, then the arbitrageur).
    for (const v of vaults) at2(0, (w) => movePrice(v, w));
    at2(0, (w) => world.morning(w));
    // Morning: redemptions due today are processed, then claimed through the day.
    for (const v of vaults) at2(slotOf(0.1), (w) => processRedemptions(v, day, w));
    // Users act through the day.
    const activity = d === 0 ? 14 : rng.int(3, 9);
    for (let k = 0; k < activity; k++)
      at2(slotOf(0.15 + 0.6 * rng.next()), (w) => userAction(day, d === 0 ? "deposit" : undefined, w));
    // LendingPool receivers claim what was processed (some a day late).
    at2(slotOf(0.5), (w) => claims(day, w));
    // Governance and loans of the day.
    for (const { fraction, fn } of calendar.get(d) ?? []) at2(slotOf(fraction), fn);
    if (d > D(15) && d % 7 === 0 && loans[0]) at2(slotOf(0.4), (w) => payInterest(w));
    // The subaccounts' institutional business of the day, and the failures planned for it.
    at2(slotOf(0.55), (w) => world.midday(d, w, failures.get(d)));
    // The core chain's relayer credits the perp deposits of every chain once they are old enough.
    if (world.relayDay(d)) at2(slotOf(0.8), (w) => world.relayPass(w));
    // Evening: the operator reports total assets, rebalances, and charges fees.
    for (const v of vaults) at2(slotOf(0.85), (w) => report(v, day, d, w));
    for (const v of vaults) at2(slotOf(0.9), (w) => rebalance(v, w));
    if (d % 7 === 6) for (const v of vaults) at2(slotOf(0.95), (w) => chargeFee(v, w));
    if (d % 30 === 29) for (const v of vaults) at2(slotOf(0.97), (w) => collectFees(v, w));

    const empty: number[] = [];
    for (let slot = 0; slot <= lastSlot; slot++) {
      const slotStart = dayStart + slot * opts.blockTime;
      const list = tasks.get(slot);
      if (!list) {
        empty.push(slotStart + 1);
        continue;
      }
      if (empty.length) await s.mineAt(empty.splice(0));
      for (const [k, fn] of list.entries()) await fn(slotStart + 1 + k * 2);
      // everything this chain sends up to the next slot is mined (the core chain's relayer waits on it)
      opts.perp.advance(opts.chainId, Math.max(s.clock, slotStart + opts.blockTime));
    }
    if (empty.length) await s.mineAt(empty);
    if (d % 10 === 0 || isToday)
      log(
        `chain ${opts.chainId}: day ${d + 1}/${opts.days} ` +
          `(${new Date(dayStart * 1000).toISOString().slice(0, 10)}), ${s.txCount} txs, ${s.events.length} events, ` +
          `ms send/mine/read ${Math.round(s.timing.send)}/${Math.round(s.timing.mine)}/${Math.round(s.timing.read)}`,
      );
  }

  // ---- actions ---------------------------------------------------------------------------------
  /** One move of a vault's price feed: a day's volatility, or `liveSpan` days' of it. */
  async function movePrice(v: Vault, w: number, liveSpan?: number): Promise<void> {
    const p0 = prices.get(v.reg.priceFeed.address)!;
    const vol = v.spec.asset.usdVolatility * Math.sqrt(liveSpan ?? 1);
    const p1 = Math.max(p0 * (1 + vol * rng.gauss()), p0 * 0.5);
    const p = v.spec.kind === "stablecoin" ? 1 + 0.0008 * rng.gauss() : p1;
    prices.set(v.reg.priceFeed.address, p);
    lastPrice.set(v, w);
    await s.call(deployer, "PriceFeed", v.reg.priceFeed.address, "setAnswer", [usd(p)], w);
    const alt = v.spec.altAsset;
    if (alt && v.reg.altAsset) {
      // The alt asset's feed follows the base asset's at the peg of their starting prices (a
      // deviation from it, not a walk: the same however long since the last move).
      const peg = alt.usdPrice / v.spec.asset.usdPrice;
      const pa = p * peg * (1 + alt.pegVolatility * pegRng.gauss());
      await s.call(deployer, "PriceFeed", v.reg.altAsset.priceFeed.address, "setAnswer", [usd(pa)], w + 1);
    }
  }

  async function userAction(_day: number, forced: "deposit" | undefined, w: number): Promise<void> {
    const open = vaults.filter((v) => !v.paused);
    if (open.length === 0) return;
    const v = rng.pick(open);
    const roll = forced ? 0 : rng.next();
    const holders = [...v.holders];
    if (roll < 0.55 || holders.length < 5) {
      const wallet = rng.pick(wallets);
      const [lo, hi] = v.spec.depositRange;
      const whole = lo + (hi - lo) * rng.next() ** 2;
      if (v.spec.family === "lendingPool") {
        await s.call(wallet, "LendingPool", v.reg.address, "deposit", [units(whole, v.reg.asset.decimals), wallet], w);
      } else {
        const useAlt = v.reg.altAsset && rng.chance(0.25);
        const asset = useAlt ? v.reg.altAsset!.address : v.reg.asset.address;
        const receiver = rng.chance(0.1) ? rng.pick(wallets) : wallet;
        await s.call(
          wallet,
          "TokenizedVaultV2",
          v.reg.address,
          "deposit",
          [asset, units(useAlt ? whole / 4 : whole, v.reg.asset.decimals), receiver],
          w,
        );
        v.holders.add(receiver);
      }
      v.holders.add(wallet);
      count("deposit");
      return;
    }
    const holder = rng.pick(holders);
    const balance = await s.readBig("MockERC20", v.shareToken, "balanceOf", [holder]);
    if (balance === 0n) {
      v.holders.delete(holder);
      return;
    }
    if (roll < 0.72) {
      const to = rng.pick(wallets.filter((x) => x !== holder));
      const amount = rng.chance(0.2) ? balance : (balance * BigInt(rng.int(10, 60))) / 100n;
      await s.call(holder, "MockERC20", v.shareToken, "transfer", [to, amount], w);
      v.holders.add(to);
      count("shareTransfer");
      return;
    }
    const shares = rng.chance(0.3) ? balance : (balance * BigInt(rng.int(10, 70))) / 100n;
    if (shares === 0n) return;
    const receiver = rng.chance(0.15) ? rng.pick(wallets) : holder;
    if (v.spec.family === "lendingPool") {
      const r = await s.call(holder, "LendingPool", v.reg.address, "requestRedeem", [shares, receiver, holder], w);
      const ev = s.events.find((e) => e.txHash === r.transactionHash && e.event === "WithdrawalRequested")!;
      const due = Date.UTC(Number(ev.args.year), Number(ev.args.month) - 1, Number(ev.args.day)) / 1000 / DAY;
      v.dueDays.add(due);
    } else {
      await s.call(holder, "TokenizedVaultV2", v.reg.address, "requestWithdrawal", [shares, receiver], w);
    }
    count("redeemRequest");
  }

  async function ensureLiquidity(v: Vault, needed: bigint, w: number): Promise<void> {
    const idle = await s.readBig("MockERC20", v.reg.asset.address, "balanceOf", [v.reg.address]);
    if (idle >= needed) return;
    let gap = needed - idle + needed / 20n;
    const name = v.spec.family === "lendingPool" ? "LendingPool" : "TokenizedVaultV2";
    // Brought back from the subaccounts that hold it, the fullest first. Only what they do not
    // hold between them is minted (into the last): minting what one subaccount lacks while the
    // other held it made assets out of nothing, an unrealized gain no report explained.
    const balanceOf = (sub: Address) => s.readBig("MockERC20", v.reg.asset.address, "balanceOf", [sub]);
    const held = await Promise.all(v.reg.subaccounts.map(async (sub) => ({ sub, held: await balanceOf(sub) })));
    held.sort((a, b) => (a.held > b.held ? -1 : a.held < b.held ? 1 : 0));
    for (const [i, { sub, held: h }] of held.entries()) {
      if (gap === 0n) break;
      const last = i === held.length - 1;
      if (last && h < gap) await s.call(deployer, "MockERC20", v.reg.asset.address, "mint", [sub, gap - h], w);
      const amount = last || h >= gap ? gap : h;
      if (amount === 0n) continue;
      await s.call(v.operator, name, v.reg.address, "withdrawFromSubaccount", [amount, sub], w + 1);
      gap -= amount;
      count("subaccount:withdraw");
    }
  }

  async function processRedemptions(v: Vault, day: number, w: number): Promise<void> {
    if (v.spec.family === "lendingPool") {
      for (const due of [...v.dueDays].filter((x) => x <= day).sort()) {
        const [y, m, dd] = ymd(due);
        const need = await s.readBig("LendingPool", v.reg.address, "getRequirementByDate", [y, m, dd]);
        if (need > 0n) {
          const owed =
            (await s.readBig("LendingPool", v.reg.address, "claimableAssets", [])) +
            (await s.readBig("LendingPool", v.reg.address, "accruedFees", []));
          await ensureLiquidity(v, owed + need, w);
          const requests = (await s.read("LendingPool", v.reg.address, "getScheduledTransactionsByDate", [
            y,
            m,
            dd,
          ])) as { receiver: Address }[];
          await s.call(v.operator, "LendingPool", v.reg.address, "processAllClaimsByDate", [y, m, dd, 500n], w + 2);
          const set = v.dueReceivers.get(due) ?? new Set<Address>();
          for (const r of requests) set.add(r.receiver);
          v.dueReceivers.set(due, set);
          count("redeemProcessed");
        }
        v.dueDays.delete(due);
      }
      return;
    }
    const pending = await s.readBig("TokenizedVaultV2", v.reg.address, "pendingRequests", []);
    if (pending === 0n) return;
    const escrow = await s.readBig("TokenizedVaultV2", v.reg.address, "escrowedShares", []);
    const price = await s.readBig("TokenizedVaultV2", v.reg.address, "getSharePrice", []);
    const fees = await s.readBig("TokenizedVaultV2", v.reg.address, "accruedFees", []);
    await ensureLiquidity(v, fees + (escrow * price) / 10n ** BigInt(v.reg.asset.decimals) + 1n, w);
    const before = s.events.length;
    await s.call(v.operator, "TokenizedVaultV2", v.reg.address, "processAllClaims", [500n], w + 2);
    if (s.events.length > before) count("redeemProcessed");
  }

  async function claims(day: number, w: number): Promise<void> {
    for (const v of vaults) {
      for (const [due, receivers] of v.dueReceivers) {
        if (due > day) continue;
        for (const r of [...receivers]) {
          if (due === day && rng.chance(0.3)) continue; // claims a day or more later
          const [y, m, dd] = ymd(due);
          const amount = await s.readBig("LendingPool", v.reg.address, "getClaimableAmountByReceiver", [y, m, dd, r]);
          if (amount > 0n) {
            await s.call(r, "LendingPool", v.reg.address, "claim", [y, m, dd, r], w);
            count("claim");
          }
          receivers.delete(r);
        }
        if (receivers.size === 0) v.dueReceivers.delete(due);
      }
    }
  }

  /**
   * The operator's total-assets report: a day's yield during the history; after it (`liveSpan`,
   * in days since the vault's previous report), yield for that span, never a loss day.
   */
  async function report(v: Vault, day: number, d: number, w: number, liveSpan?: number): Promise<void> {
    const name = v.spec.family === "lendingPool" ? "LendingPool" : "TokenizedVaultV2";
    const external = await s.readBig(name, v.reg.address, "externalAssets", []);
    if (external === 0n) return;
    lastReport.set(v, w);
    let r: number;
    if (liveSpan === undefined && d === lossDay.get(v.reg.address)) {
      r = -0.012 - 0.006 * rng.next();
      lossDays.push({ vault: v.reg.address, day });
    } else if (rng.chance(0.06)) {
      r = 0;
      if (liveSpan === undefined) flatDays.push({ vault: v.reg.address, day });
    } else {
      r = (v.dailyApy / 365) * (liveSpan ?? 1) * (1 + 0.6 * rng.gauss());
    }
    const ta = await s.readBig(name, v.reg.address, name === "LendingPool" ? "totalAssets" : "getTotalAssets", []);
    const delta = BigInt(Math.round(Number(ta) * r));
    const limit = (external * 490n) / 10_000n;
    const bounded = delta > limit ? limit : delta < -limit ? -limit : delta;
    if (bounded === 0n) {
      count("report:flat");
      await s.call(v.operator, name, v.reg.address, "updateTotalAssets", [external], w);
      return;
    }
    const sub = v.reg.subaccounts[rng.int(0, 1)]!;
    // What the subaccounts really hold follows the report, with some noise (unrealized PnL).
    const actual = (bounded * BigInt(Math.round(1000 + 80 * rng.gauss()))) / 1000n;
    // The subaccount's gain or loss and the report share a block: a snapshot between them would
    // see the loss (1-2 % of the vault) as unrealized PnL.
    const txs: PlannedTx[] = [];
    const token = v.reg.asset.address;
    if (actual > 0n) {
      const mint = encodeFunctionData({ abi: ABIS.MockERC20, functionName: "mint", args: [sub, actual] });
      txs.push({ from: deployer, to: token, data: mint, gas: 300_000n, what: "MockERC20.mint" });
    } else if (actual < 0n) {
      const held = await s.readBig("MockERC20", token, "balanceOf", [sub]);
      const out = -actual > held ? held : -actual;
      if (out > 0n) {
        const transfer = encodeFunctionData({ abi: ABIS.MockERC20, functionName: "transfer", args: [lossSink, out] });
        const safe = subBySafe.get(sub)!;
        const data = subaccountExecData(safe, token, transfer);
        txs.push({ from: safe.owner, to: safe.safe, data, gas: 500_000n, what: "subaccount loss" });
      }
    }
    const update = encodeFunctionData({
      abi: ABIS[name] as Abi,
      functionName: "updateTotalAssets",
      args: [external + bounded],
    });
    txs.push({ from: v.operator, to: v.reg.address, data: update, gas: 1_000_000n, what: `${name}.updateTotalAssets` });
    await s.sendBlock(txs, w);
    count(bounded < 0n ? "report:loss" : "report:gain");
  }

  async function rebalance(v: Vault, w: number): Promise<void> {
    const name = v.spec.family === "lendingPool" ? "LendingPool" : "TokenizedVaultV2";
    const ta = await s.readBig(name, v.reg.address, name === "LendingPool" ? "totalAssets" : "getTotalAssets", []);
    const idle = await s.readBig("MockERC20", v.reg.asset.address, "balanceOf", [v.reg.address]);
    let reserved = await s.readBig(name, v.reg.address, "accruedFees", []);
    if (name === "LendingPool") {
      reserved +=
        (await s.readBig("LendingPool", v.reg.address, "claimableAssets", [])) +
        (await s.readBig("LendingPool", v.reg.address, "pendingLiabilityAssets", []));
    }
    const free = idle > reserved ? idle - reserved : 0n;
    if (free * 4n <= ta) return; // keep up to a quarter idle
    const amount = free - ta / 10n;
    const sub = v.reg.subaccounts[rng.int(0, 1)]!;
    if (name === "LendingPool")
      await s.call(v.operator, "LendingPool", v.reg.address, "depositToSubaccount", [amount, sub], w);
    else
      await s.call(
        v.operator,
        "TokenizedVaultV2",
        v.reg.address,
        "depositToSubaccount",
        [v.reg.asset.address, amount, sub],
        w,
      );
    count("subaccount:deposit");
  }

  async function chargeFee(v: Vault, w: number): Promise<void> {
    const name = v.spec.family === "lendingPool" ? "LendingPool" : "TokenizedVaultV2";
    await s.call(v.operator, name, v.reg.address, "chargeManagementFee", [], w);
    count("fee:charged");
  }

  async function collectFees(v: Vault, w: number): Promise<void> {
    const name = v.spec.family === "lendingPool" ? "LendingPool" : "TokenizedVaultV2";
    const fees = await s.readBig(name, v.reg.address, "accruedFees", []);
    if (fees === 0n) return;
    let owed = fees;
    if (name === "LendingPool") owed += await s.readBig("LendingPool", v.reg.address, "claimableAssets", []);
    await ensureLiquidity(v, owed, w);
    await s.call(v.operator, name, v.reg.address, "collectFees", [], w + 2);
    count("fee:collected");
  }

  async function payInterest(w: number): Promise<void> {
    for (const loan of loans) {
      const st = loanState.get(loan)!;
      const state = Number(await s.read("Loan", loan, "state", []));
      if (state !== 2 && state !== 3) continue; // Active or Called
      const amount = (st.principal * st.apr * 7n) / (10_000n * 365n);
      await s.call(borrower, "MockERC20", lp.reg.asset.address, "mint", [borrower, amount], w);
      await s.call(borrower, "Loan", loan, "repayInterests", [amount], w + 1);
      count("loan:interest");
    }
  }

  // ---- after the history: the relayer's last pass, the loans' final views ------------------------
  opts.perp.finish(opts.chainId);
  await world.finish();

  // ---- ENS: a Universal Resolver and a few names, in the blocks after the simulated history -----
  // (after it, so the history's blocks are the same as without ENS; a separate deployer, so the
  // resolver has the same address on every chain of a seed)
  const ens = await registerEnsNames(
    s,
    seed,
    vaults.map((v) => v.shareToken),
    wallets,
  );
  log(`chain ${opts.chainId}: ENS resolver ${ens.universalResolver}, names ${Object.keys(ens.names).join(", ")}`);

  const headBlock = await s.blockNumber();
  const result: ChainResult = {
    chainId: opts.chainId,
    rpcUrl: opts.rpcUrl,
    blockTime: opts.blockTime,
    snapshotInterval: opts.snapshotInterval,
    headBlock,
    headTimestamp: s.clock,
    txCount: s.txCount,
    vaults: vaults.map((v) => v.reg),
    loans: loans.map(lc),
    wallets: wallets.map(lc),
    events: s.events,
    actions,
    firstDay,
    lastDay: endDay,
    lossDays,
    flatDays,
    pauses,
    ens,
    governance: { safe: lc(multisig), owners: owners.map((o) => lc(o.address)), threshold: 2 },
    world: world.result,
  };
  const spanDays = (last: Map<Vault, number>, v: Vault, at: number) =>
    Math.min(1, Math.max(0, at - last.get(v)!) / DAY);
  const dayOf = (at: number) => Math.floor(at / DAY);
  const liveActions: ChainActions = {
    session: s,
    user: (at) => userAction(dayOf(at), undefined, at),
    async report(at) {
      const v = rng.pick(vaults);
      await report(v, dayOf(at), opts.days, at, spanDays(lastReport, v, at));
    },
    async price(at) {
      const v = rng.pick(vaults);
      await movePrice(v, at, spanDays(lastPrice, v, at));
      await world.arbitrage(at);
    },
    world: (at) => world.morning(at, true),
    async perp(at) {
      const d = await world.livePerpDeposit(at);
      const below = BigInt(d.amount) < BigInt(d.minimum) ? ", below the minimum" : "";
      return `deposit ${d.coreHash} of ${d.amount} ${d.symbol} on bridge ${d.bridgeKind} to ${d.destination}${below}`;
    },
    async redemptions(at) {
      for (const v of vaults) await processRedemptions(v, dayOf(at), at);
      await claims(dayOf(at), at);
    },
  };
  return { result, actions: liveActions };
}

async function registerEnsNames(
  s: ChainSession,
  seed: string,
  shareTokens: Address[],
  wallets: Address[],
): Promise<EnsResult> {
  const admin = actorAddress(seed, "ens-admin");
  const universalResolver = await s.deploy(admin, "TestUniversalResolver", []);
  const names: Record<string, Address> = {};
  for (const [i, w] of wallets.entries()) {
    if (Object.keys(names).length >= ENS_HOLDER_NAMES) break;
    let held = 0n;
    for (const token of shareTokens) held += await s.readBig("MockERC20", token, "balanceOf", [w]);
    if (held > 0n) names[`wallet${i}.eth`] = lc(w);
  }
  // a name only this chain knows, so a resolution on the wrong chain shows
  const first = Object.values(names)[0];
  if (first) names[`chain${s.chainId}.eth`] = first;
  names["unranked.eth"] = lc(actorAddress(seed, "ens-unranked"));
  for (const [name, a] of Object.entries(names)) {
    await s.call(admin, "TestUniversalResolver", universalResolver, "setAddr", [namehash(name), a]);
  }
  return { universalResolver: lc(universalResolver), names };
}

// ---- helpers ---------------------------------------------------------------------------------

function lc(a: Address): Address {
  return a.toLowerCase() as Address;
}

function units(whole: number, decimals: number): bigint {
  const fixed = whole.toFixed(Math.min(decimals, 6));
  return parseUnits(fixed, decimals);
}

function usd(price: number): bigint {
  return parseUnits(price.toFixed(PRICE_DECIMALS), PRICE_DECIMALS);
}

function ymd(day: number): [bigint, bigint, bigint] {
  const d = new Date(day * DAY * 1000);
  return [BigInt(d.getUTCFullYear()), BigInt(d.getUTCMonth() + 1), BigInt(d.getUTCDate())];
}

type AssetToDeploy = Pick<AssetSpec, "name" | "symbol" | "decimals">;

async function deployAsset(s: ChainSession, from: Address, a: AssetToDeploy, at: number): Promise<Address> {
  return s.deploy(from, "MockERC20", [a.name, a.symbol, a.decimals], at);
}

/** Deploys a contract once to learn its runtime code (for anvil_setCode at a fixed address). */
async function runtimeCode(s: ChainSession, from: Address, name: "Multicall3", at: number): Promise<Hex> {
  void bytecode(name);
  const addr = await s.deploy(from, name, [], at);
  return s.rpc<Hex>("eth_getCode", [addr, "latest"]);
}
