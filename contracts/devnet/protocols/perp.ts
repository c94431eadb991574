/**
 * Perp deposits: two bridges per chain (A like Hyperliquid's Bridge2: USDC only, a minimum below
 * which a deposit is lost; B like a deposit wallet: several tokens, perp or spot destination), one
 * core ledger (on one chain) credited by a relayer, and the relayer's core step `relayOnce`: read
 * bridge deposits since a block, and credit (or reject, below the minimum) each one on the ledger
 * once it is `delaySeconds` old. The BullMQ worker around it lives elsewhere.
 *
 * A deposit's core hash is known before it is mined (see `coreHash`):
 *   keccak256(abi.encode(uint256 chainId, address bridge, address depositor, uint256 nonce))
 * with `nonce` = the bridge's `nonces(depositor)` before the deposit.
 */
import {
  type Abi,
  type Address,
  encodeAbiParameters,
  getAddress,
  type Hex,
  keccak256,
  type PublicClient,
  parseEventLogs,
  type WalletClient,
} from "viem";
import { CoreLedgerAbi } from "../../../abis/CoreLedgerAbi.js";
import { PerpBridgeAAbi } from "../../../abis/PerpBridgeAAbi.js";
import { logsInRange } from "../../../onchain/logs.js";
import { coreLedger, perpBridgeA, perpBridgeB } from "./artifacts.js";
import type { AllowedCall } from "./safe.js";
import { type Ctx, deploy, PRICE_FEED_ABI, read, write } from "./tx.js";
import type { TokenInput } from "./types.js";

export const PERP_DESTINATION = { perp: 0, spot: 1 } as const;
export type PerpDestination = keyof typeof PERP_DESTINATION;

export interface PerpBridgesDeployment {
  chainId: number;
  /** Bridge2-like: `deposit(uint256)`, USDC to perp */
  bridgeA: Address;
  /** deposit wallet: `deposit(address,uint256,uint8)`, destination 0 perp, 1 spot */
  bridgeB: Address;
  usdc: Address;
  /** bridge A's minimum, raw USDC units (decimal string) */
  minimumA: string;
  /** bridge B's tokens and their minimums (raw units, decimal strings) */
  tokensB: { address: Address; symbol: string; minimum: string }[];
}

export interface CoreLedgerDeployment {
  chainId: number;
  ledger: Address;
  owner: Address;
  relayer: Address;
}

export interface PerpBridgesOptions {
  usdc: TokenInput;
  /** bridge B's tokens (default: the USDC alone) */
  tokensB?: TokenInput[];
  /** the minimum deposit in USD, priced through each token's feed (default 5, as on Hyperliquid) */
  minimumUsd?: number;
  /** bridge B's owner (default the deployer) */
  owner?: Address;
}

/** The smallest raw amount worth `usd` at the feed's price (8 decimals). */
async function minimumOf(ctx: Ctx, t: TokenInput, usd: number): Promise<bigint> {
  const price = await read<bigint>(ctx, t.feed, PRICE_FEED_ABI, "latestAnswer");
  const num = BigInt(Math.round(usd * 1e8)) * 10n ** BigInt(t.decimals);
  return (num + price - 1n) / price;
}

export async function deployPerpBridges(ctx: Ctx, opts: PerpBridgesOptions): Promise<PerpBridgesDeployment> {
  const usd = opts.minimumUsd ?? 5;
  const usdc = getAddress(opts.usdc.address);
  const minimumA = await minimumOf(ctx, opts.usdc, usd);
  const bridgeA = await deploy(ctx, perpBridgeA(), [usdc, minimumA], "PerpBridgeA");
  const owner = getAddress(opts.owner ?? ctx.from);
  const bridgeB = await deploy(ctx, perpBridgeB(), [owner], "PerpBridgeB");
  const tokensB: PerpBridgesDeployment["tokensB"] = [];
  for (const t of opts.tokensB ?? [opts.usdc]) {
    const minimum = await minimumOf(ctx, t, usd);
    await write(ctx, bridgeB, perpBridgeB().abi, "setToken", [t.address, minimum], owner);
    tokensB.push({ address: getAddress(t.address), symbol: t.symbol, minimum: minimum.toString() });
  }
  return { chainId: ctx.s.chainId, bridgeA, bridgeB, usdc, minimumA: minimumA.toString(), tokensB };
}

/** The core ledger, credited only by `relayer` (its owner may add others with `setRelayer`). */
export async function deployCoreLedger(
  ctx: Ctx,
  opts: { relayer: Address; owner?: Address },
): Promise<CoreLedgerDeployment> {
  const owner = getAddress(opts.owner ?? ctx.from);
  const relayer = getAddress(opts.relayer);
  const ledger = await deploy(ctx, coreLedger(), [owner, relayer], "CoreLedger");
  return { chainId: ctx.s.chainId, ledger, owner, relayer };
}

/** The deposit calls a subaccount needs (no recipient argument: the depositor is the Safe itself). */
export function perpSubaccountCalls(p: PerpBridgesDeployment): AllowedCall[] {
  return [
    { target: p.bridgeA, signatures: ["deposit(uint256)"] },
    { target: p.bridgeB, signatures: ["deposit(address,uint256,uint8)"] },
  ];
}

/** keccak256(abi.encode(chainId, bridge, depositor, nonce)): what PerpBridgeBase.coreHashOf returns. */
export function coreHash(chainId: number | bigint, bridge: Address, depositor: Address, nonce: number | bigint): Hex {
  return keccak256(
    encodeAbiParameters(
      [{ type: "uint256" }, { type: "address" }, { type: "address" }, { type: "uint256" }],
      [BigInt(chainId), bridge, depositor, BigInt(nonce)],
    ),
  );
}

/** The core hash the depositor's next deposit on `bridge` will get (reads its nonce). */
export async function nextCoreHash(client: PublicClient, bridge: Address, depositor: Address): Promise<Hex> {
  const [chainId, nonce] = await Promise.all([
    client.getChainId(),
    client.readContract({ address: bridge, abi: PerpBridgeAAbi, functionName: "nonces", args: [depositor] }),
  ]);
  return coreHash(chainId, bridge, depositor, nonce);
}

// ---- the relayer's core step -----------------------------------------------------------------

export const LEDGER_STATUS = ["none", "credited", "rejected"] as const;
export type LedgerStatus = (typeof LEDGER_STATUS)[number];

export interface BridgeDeposit {
  chainId: number;
  bridge: Address;
  coreHash: Hex;
  depositor: Address;
  token: Address;
  amount: bigint;
  destination: number;
  nonce: bigint;
  /** the bridge's minimum for the token at the deposit's block */
  minimum: bigint;
  blockNumber: bigint;
  logIndex: number;
  txHash: Hex;
  timestamp: number;
}

export interface RelaySource {
  client: PublicClient;
  /** bridge addresses on this chain */
  bridges: Address[];
  /** first block to read (inclusive) */
  fromBlock: bigint;
  /** last block to read (default: latest, less `confirmations`) */
  toBlock?: bigint;
  /**
   * Blocks a deposit's block must have on top of it before it is read (default 0): a deposit in
   * a block a reorg may still drop is neither credited nor passed by the cursor.
   */
  confirmations?: number;
}

export interface RelayOptions {
  sources: RelaySource[];
  core: {
    client: PublicClient;
    /** the relayer's key (RELAYER on the ledger); not needed by planRelay */
    wallet?: WalletClient;
    ledger: Address;
  };
  /** a deposit is processed once it is this many seconds old */
  delaySeconds: number;
  /** the clock deposits are aged against (default: the core chain's latest block timestamp) */
  now?: number;
  /**
   * A source whose chain does not answer is left out of this call (its next block stays its
   * `fromBlock`) and named in `failed`, instead of failing the call: one bridge chain down does not
   * hold back the others' credits. The core chain failing still fails the call. Default false.
   */
  skipFailedSources?: boolean;
}

export interface RelayAction {
  kind: "credit" | "reject";
  deposit: BridgeDeposit;
  /** why a deposit is rejected */
  reason?: string;
  /** the ledger transaction (relayOnce only) */
  txHash?: Hex;
}

export interface RelayPlan {
  now: number;
  /** due, not processed yet: what to send */
  actions: RelayAction[];
  /** seen, not old enough yet */
  pending: BridgeDeposit[];
  /** seen, already credited or rejected on the ledger */
  processed: { deposit: BridgeDeposit; status: LedgerStatus }[];
  /** where the next call should start reading, per source (the oldest pending deposit's block) */
  nextFromBlock: bigint[];
  /** per source, the hash of the block before `nextFromBlock` as read, when it was read */
  nextHash: (Hex | undefined)[];
  /** the sources left out because their chain failed (`skipFailedSources`), by index, with what it threw */
  failed: { source: number; error: unknown }[];
}

export interface RelayResult extends RelayPlan {
  credited: RelayAction[];
  rejected: RelayAction[];
}

const DEPOSITED_EVENT = PerpBridgeAAbi.filter((x) => x.type === "event" && x.name === "Deposited");

/** Every Deposited event of the source's bridges in its block range, with timestamps and minimums. */
export async function readDeposits(
  source: RelaySource,
): Promise<{ deposits: BridgeDeposit[]; toBlock: bigint; toHash?: Hex }> {
  const { client } = source;
  const toBlock = source.toBlock ?? (await client.getBlockNumber({ cacheTime: 0 })) - BigInt(source.confirmations ?? 0);
  if (source.bridges.length === 0 || toBlock < source.fromBlock) return { deposits: [], toBlock };
  // the last block's hash before its logs: a reorg between the two reads is seen by the next call
  const toHash = (await client.getBlock({ blockNumber: toBlock })).hash;
  const chainId = await client.getChainId();
  // a first pass reads from block 0: a range a hosted provider refuses is read in halves
  const logs = await logsInRange(
    (fromBlock, to) =>
      client.getLogs({
        address: source.bridges,
        event: DEPOSITED_EVENT[0] as (typeof DEPOSITED_EVENT)[number],
        fromBlock,
        toBlock: to,
      }),
    source.fromBlock,
    toBlock,
  );
  const parsed = parseEventLogs({ abi: DEPOSITED_EVENT, logs });
  const times = new Map<bigint, number>();
  for (const n of new Set(parsed.map((l) => l.blockNumber))) {
    times.set(n, Number((await client.getBlock({ blockNumber: n })).timestamp));
  }
  const deposits: BridgeDeposit[] = [];
  for (const l of parsed) {
    const minimum = await client.readContract({
      address: l.address,
      abi: PerpBridgeAAbi,
      functionName: "minimumDepositOf",
      args: [l.args.token],
      blockNumber: l.blockNumber,
    });
    deposits.push({
      chainId,
      bridge: getAddress(l.address),
      coreHash: l.args.coreHash,
      depositor: l.args.depositor,
      token: l.args.token,
      amount: l.args.amount,
      destination: l.args.destination,
      nonce: l.args.nonce,
      minimum,
      blockNumber: l.blockNumber,
      logIndex: l.logIndex,
      txHash: l.transactionHash,
      timestamp: times.get(l.blockNumber) as number,
    });
  }
  return { deposits, toBlock, toHash };
}

/** What the ledger has done with a core hash. */
export async function ledgerStatus(client: PublicClient, ledger: Address, hash: Hex): Promise<LedgerStatus> {
  const n = await client.readContract({ address: ledger, abi: CoreLedgerAbi, functionName: "status", args: [hash] });
  return LEDGER_STATUS[n] as LedgerStatus;
}

/** What the core side decides for a deposit: credit, or reject with a reason. */
export function decide(d: BridgeDeposit): { kind: "credit" } | { kind: "reject"; reason: string } {
  if (d.minimum === 0n) return { kind: "reject", reason: `token ${d.token} not supported by bridge ${d.bridge}` };
  if (d.amount < d.minimum) {
    return { kind: "reject", reason: `deposit below minimum: ${d.amount} < ${d.minimum} (raw units of ${d.token})` };
  }
  return { kind: "credit" };
}

/** Reads deposits and the ledger, sends nothing: what relayOnce would do now. */
export async function planRelay(opts: RelayOptions): Promise<RelayPlan> {
  const now = opts.now ?? Number((await opts.core.client.getBlock()).timestamp);
  const plan: RelayPlan = {
    now,
    actions: [],
    pending: [],
    processed: [],
    nextFromBlock: [],
    nextHash: [],
    failed: [],
  };
  for (const [i, source] of opts.sources.entries()) {
    let read: Awaited<ReturnType<typeof readDeposits>>;
    try {
      read = await readDeposits(source);
    } catch (err) {
      if (!opts.skipFailedSources) throw err;
      plan.failed.push({ source: i, error: err });
      plan.nextFromBlock.push(source.fromBlock);
      plan.nextHash.push(undefined);
      continue;
    }
    const { deposits, toBlock, toHash } = read;
    // past what was read; never back before where this call started (a head not yet confirmed)
    let next = toBlock + 1n > source.fromBlock ? toBlock + 1n : source.fromBlock;
    for (const d of deposits) {
      const status = await ledgerStatus(opts.core.client, opts.core.ledger, d.coreHash);
      if (status !== "none") {
        plan.processed.push({ deposit: d, status });
      } else if (d.timestamp + opts.delaySeconds > now) {
        plan.pending.push(d);
        if (d.blockNumber < next) next = d.blockNumber;
      } else {
        const decision = decide(d);
        plan.actions.push(
          decision.kind === "credit"
            ? { kind: "credit", deposit: d }
            : { kind: "reject", deposit: d, reason: decision.reason },
        );
      }
    }
    plan.nextFromBlock.push(next);
    plan.nextHash.push(next === toBlock + 1n ? toHash : undefined);
  }
  return plan;
}

/**
 * One relayer pass: every deposit of the sources' bridges since `fromBlock` that is at least
 * `delaySeconds` old and not yet processed is credited on the core ledger, or rejected with a
 * reason when below its bridge's minimum. Transactions are sent one by one from `core.wallet` and
 * awaited; a hash the ledger already processed is never sent again (the ledger would refuse it:
 * `AlreadyProcessed`). Returns what it saw and did, and where to read from next time.
 */
export async function relayOnce(opts: RelayOptions): Promise<RelayResult> {
  const wallet = opts.core.wallet;
  if (!wallet?.account) throw new Error("relayOnce: core.wallet with an account (the relayer key) is required");
  const plan = await planRelay(opts);
  const result: RelayResult = { ...plan, credited: [], rejected: [] };
  const abi = CoreLedgerAbi as Abi;
  for (const action of plan.actions) {
    const d = action.deposit;
    const call =
      action.kind === "credit"
        ? {
            functionName: "credit",
            args: [d.coreHash, d.bridge, BigInt(d.chainId), d.depositor, d.token, d.amount, d.destination],
          }
        : { functionName: "reject", args: [d.coreHash, action.reason ?? ""] };
    let txHash: Hex;
    try {
      txHash = await wallet.writeContract({
        address: opts.core.ledger,
        abi,
        ...call,
        account: wallet.account,
        chain: wallet.chain ?? null,
      });
    } catch (err) {
      // another relayer got there first (the ledger refuses with AlreadyProcessed): not an error,
      // whether the refusal comes from the estimate or from the mined transaction
      const status = await ledgerStatus(opts.core.client, opts.core.ledger, d.coreHash);
      if (status === "none") throw err;
      result.processed.push({ deposit: d, status });
      continue;
    }
    const receipt = await opts.core.client.waitForTransactionReceipt({ hash: txHash });
    if (receipt.status !== "success") {
      const status = await ledgerStatus(opts.core.client, opts.core.ledger, d.coreHash);
      if (status === "none") throw new Error(`relayOnce: ${call.functionName} ${d.coreHash} reverted in ${txHash}`);
      result.processed.push({ deposit: d, status });
      continue;
    }
    const done = { ...action, txHash };
    if (action.kind === "credit") result.credited.push(done);
    else result.rejected.push(done);
  }
  return result;
}
