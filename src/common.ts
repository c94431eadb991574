/** Helpers shared by the handlers: common event columns, snapshots, JSON-safe args. */
import type { Context } from "ponder:registry";
import { governance_event, share_ratio_snapshot, vault } from "ponder:schema";
import { type Address, createPublicClient, erc20Abi, http, type PublicClient } from "viem";
import { Erc4626Abi } from "../abis/Erc4626Abi";
import { LendingPoolAbi } from "../abis/LendingPoolAbi";
import { PriceFeedAbi } from "../abis/PriceFeedAbi";
import { TokenizedVaultV2Abi } from "../abis/TokenizedVaultV2Abi";
import { multicallEach } from "../config/multicall3";
import type { EvmVault } from "../config/registry";
import { FlowPrefetcher, type ReadAt } from "./prefetch";
import { readAtBlock } from "./read-at-block";
import { chainOf, rpcUrlOf, vaultsOnChain } from "./registry";

interface LogEvent {
  id: string;
  block: { number: bigint; timestamp: bigint; hash: `0x${string}` };
  transaction: { hash: `0x${string}` };
  log: { logIndex: number; address: `0x${string}` };
}

/** The columns every event table has. */
export function eventColumns(event: LogEvent, chainId: number) {
  return {
    id: event.id,
    chain_id: chainId,
    block_number: event.block.number,
    timestamp: event.block.timestamp,
    tx_hash: event.transaction.hash,
    log_index: event.log.logIndex,
  };
}

export function jsonArgs(
  args: Record<string, unknown> | readonly unknown[] | undefined,
): Record<string, string | boolean> {
  const out: Record<string, string | boolean> = {};
  for (const [k, v] of Object.entries(args ?? {})) {
    if (typeof v === "boolean") out[k] = v;
    else if (typeof v === "string") out[k] = v.startsWith("0x") ? v.toLowerCase() : v;
    else out[k] = String(v);
  }
  return out;
}

const SCALE = 10n ** 18n;

/** a / b with 18 decimals, as an exact decimal string (truncated), or null when b is 0. */
export function ratio18(a: bigint, b: bigint): string | null {
  if (b === 0n) return null;
  return fixed18((a * SCALE) / b);
}

export function fixed18(scaled: bigint): string {
  const neg = scaled < 0n;
  const abs = neg ? -scaled : scaled;
  const whole = abs / SCALE;
  const frac = (abs % SCALE).toString().padStart(18, "0");
  return `${neg ? "-" : ""}${whole}.${frac}`;
}

/** A raw feed answer with `decimals` as an 18-decimal string. */
export function priceToFixed18(answer: bigint, decimals: number): string {
  const scaled = decimals <= 18 ? answer * 10n ** BigInt(18 - decimals) : answer / 10n ** BigInt(decimals - 18);
  return fixed18(scaled);
}

export interface VaultState {
  totalAssets: bigint;
  totalSupply: bigint;
  idle: bigint;
  /** Sum of the asset's balanceOf over the registry's subaccounts (0 when it lists none). */
  subaccountAssets: bigint;
  /**
   * Of `idle`, what is already owed: accrued fees (lendingPool, tokenizedVaultV2) and a
   * lendingPool's processed redemptions not yet claimed (`claimableAssets`); 0 for erc4626; null
   * when the vault does not answer those views.
   */
  reserved: bigint | null;
  price: string | null;
  /** The alt asset's balanceOf the vault plus its registry subaccounts; null without an alt asset. */
  altAssets: bigint | null;
  /** The alt asset's USD price (18 decimals); null without an alt asset feed. */
  altPrice: string | null;
  /**
   * erc4626: the vault's own price of a share, convertToAssets(SHARE_PROBE) / SHARE_PROBE (raw
   * assets per raw share, 18 decimals; null without supply or when the call fails). Other
   * families: undefined, and the ratio is totalAssets / totalSupply.
   */
  convertedRatio?: string | null;
}

/**
 * The shares an erc4626 snapshot prices with convertToAssets: large, so the answer (rounded down
 * to a raw asset unit) keeps 36 digits of the price whatever the decimals; OpenZeppelin's
 * mulDiv cannot overflow on it, and a vault multiplying plainly overflows only past 1e41 raw
 * assets.
 */
export const SHARE_PROBE = 10n ** 36n;

/**
 * State reads for snapshots go to the node through a client of their own, not through Ponder's
 * request queue: during a backfill that queue holds thousands of block and log requests, and a
 * handler waiting behind them stalls indexing (docs/performance.md: ratio 0.69 -> 0.83). Reads
 * are pinned to a block number, so their answers never change; Ponder's RPC cache is not used
 * for them, and viem retries failed requests (429 and 5xx included).
 */
const clients = new Map<number, PublicClient>();
export function directClient(chainId: number): PublicClient {
  let c = clients.get(chainId);
  if (!c) {
    c = createPublicClient({ transport: http(rpcUrlOf(chainId), { retryCount: 5, retryDelay: 200, timeout: 20_000 }) });
    clients.set(chainId, c);
  }
  return c;
}

const warned = new Set<string>();
/** One warning per key for the life of the process (a failing feed fails at every snapshot). */
function warnOnce(key: string, message: string) {
  if (warned.has(key)) return;
  warned.add(key);
  console.warn(message);
}

/**
 * Reads a vault's totals, idle asset balance, the asset balances of its registry subaccounts, the
 * asset USD price, and for a vault with an alt asset the alt asset's balances (vault and
 * subaccounts) and USD price, at the end of a block, in one multicall: by block number, or
 * (prefetched reads, src/prefetch.ts) by the hash of the block the flow's log was in.
 */
export async function readVaultState(v: EvmVault, at: ReadAt): Promise<VaultState> {
  const isPool = v.family === "lendingPool";
  const isErc4626 = v.family === "erc4626";
  const subaccounts = v.subaccounts ?? [];
  const alt = v.altAsset ?? null;
  const altFeed = alt?.priceFeed ?? null;
  const balance = (token: `0x${string}`, holder: `0x${string}`) => ({
    address: token,
    abi: erc20Abi,
    functionName: "balanceOf" as const,
    args: [holder] as const,
  });
  // Call order: totalAssets, totalSupply, balanceOf(vault), balanceOf(sub) per subaccount, the
  // price feed if any, then the alt asset's balanceOf(vault), balanceOf(sub) per subaccount and
  // its feed if any, then what is reserved of the idle balance (not erc4626); results are read
  // back with the same offsets.
  const contracts = [
    isErc4626
      ? { address: v.address, abi: Erc4626Abi, functionName: "totalAssets" as const }
      : isPool
        ? { address: v.address, abi: LendingPoolAbi, functionName: "totalAssets" as const }
        : { address: v.address, abi: TokenizedVaultV2Abi, functionName: "getTotalAssets" as const },
    isErc4626
      ? { address: v.address, abi: Erc4626Abi, functionName: "totalSupply" as const }
      : isPool
        ? { address: v.address, abi: LendingPoolAbi, functionName: "totalSupply" as const }
        : { address: v.address, abi: TokenizedVaultV2Abi, functionName: "totalSupply" as const },
    balance(v.asset.address, v.address),
    ...subaccounts.map((sub) => balance(v.asset.address, sub)),
    ...(v.priceFeed
      ? [{ address: v.priceFeed.address, abi: PriceFeedAbi, functionName: "latestRoundData" as const }]
      : []),
    ...(alt ? [v.address, ...subaccounts].map((holder) => balance(alt.address, holder)) : []),
    ...(altFeed ? [{ address: altFeed.address, abi: PriceFeedAbi, functionName: "latestRoundData" as const }] : []),
    // what of the idle balance is already owed: fees, and a lendingPool's processed claims
    ...(isPool
      ? [
          { address: v.address, abi: LendingPoolAbi, functionName: "accruedFees" as const },
          { address: v.address, abi: LendingPoolAbi, functionName: "claimableAssets" as const },
        ]
      : isErc4626
        ? []
        : [{ address: v.address, abi: TokenizedVaultV2Abi, functionName: "accruedFees" as const }]),
    // erc4626, last: the vault's own share price (a vault may revert on it; that one call may fail)
    ...(isErc4626
      ? [{ address: v.address, abi: Erc4626Abi, functionName: "convertToAssets" as const, args: [SHARE_PROBE] }]
      : []),
  ];
  const what =
    `snapshot of ${v.chainId}:${v.address} at ` +
    `${JSON.stringify(at, (_k, x) => (typeof x === "bigint" ? String(x) : x))}`;
  const answers = await readAtBlock(
    async (atBlock) =>
      multicallEach(directClient(v.chainId), { contracts: contracts as never, ...(atBlock ? at : {}) }),
    what,
  );
  const firstSub = 3;
  const feedAt = firstSub + subaccounts.length;
  const altAt = feedAt + (v.priceFeed ? 1 : 0);
  const altFeedAt = altAt + (alt ? 1 + subaccounts.length : 0);
  const reservedAt = altFeedAt + (altFeed ? 1 : 0);
  const reservedEnd = reservedAt + (isPool ? 2 : isErc4626 ? 0 : 1);
  // calls a vault may not answer: erc4626's convertToAssets; the reserved amounts (our contracts
  // have them, the original's views do not list them)
  const optional = (i: number) => (isErc4626 ? i === answers.length - 1 : i >= reservedAt && i < reservedEnd);
  // a price feed that does not answer (deployed after this block, or reverting) leaves the price
  // null: the snapshot's amounts stand without it
  const feeds = new Map<number, Address>();
  if (v.priceFeed) feeds.set(feedAt, v.priceFeed.address);
  if (altFeed) feeds.set(altFeedAt, altFeed.address);
  const results = answers.map((a, i) => {
    if (a.status === "success") return a.result;
    if (optional(i)) return null;
    const feed = feeds.get(i);
    if (feed) {
      warnOnce(`${v.chainId}:${feed}`, `${what}: price feed ${feed} failed, price left null: ${a.error.message}`);
      return null;
    }
    throw new Error(`${what}: ${(contracts[i] as { functionName: string }).functionName} failed: ${a.error.message}`);
  });
  const sum = (from: number, to: number) =>
    results.slice(from, to).reduce<bigint>((total, b) => total + (b as bigint), 0n);
  const answer = (i: number) => (results[i] as readonly [bigint, bigint, bigint, bigint, bigint] | null)?.[1];
  const priceAt = (i: number, decimals: number) => {
    const a = answer(i);
    return a == null ? null : priceToFixed18(a, decimals);
  };
  return {
    totalAssets: results[0] as bigint,
    totalSupply: results[1] as bigint,
    idle: results[2] as bigint,
    subaccountAssets: sum(firstSub, feedAt),
    reserved: results.slice(reservedAt, reservedEnd).includes(null) ? null : sum(reservedAt, reservedEnd),
    price: v.priceFeed ? priceAt(feedAt, v.priceFeed.decimals) : null,
    altAssets: alt ? sum(altAt, altFeedAt) : null,
    altPrice: altFeed ? priceAt(altFeedAt, altFeed.decimals) : null,
    ...(isErc4626
      ? {
          convertedRatio:
            (results[1] as bigint) === 0n || results.at(-1) == null
              ? null
              : ratio18(results.at(-1) as bigint, SHARE_PROBE),
        }
      : {}),
  };
}

/**
 * Flow reads go through a look-ahead prefetch per chain (src/prefetch.ts): during a backfill the
 * reads of the next blocks with flows run in the background while the handlers work, instead of
 * one round trip after another (bench:index: nearly every flow read a hit; ratio 0.82-0.90, the rest
 * bound by handler CPU, docs/performance.md). Near the head, and on any miss, they are read directly.
 * 16 reads in flight and 256 started ahead: with 6 and 64, the tokenizedVaultV2 deposit handlers
 * (larger multicalls) still waited 8.4 s in all for reads not yet back; with 16 and 256, 1.4 s.
 */
const prefetchers = new Map<number, FlowPrefetcher<VaultState>>();
function prefetcherOf(chainId: number): FlowPrefetcher<VaultState> {
  let p = prefetchers.get(chainId);
  if (!p) {
    p = new FlowPrefetcher({
      chainId,
      client: directClient(chainId),
      vaults: vaultsOnChain(chainId),
      read: readVaultState,
      windowBlocks: chainOf(chainId).flowPrefetchBlocks,
      concurrency: 16,
      maxAhead: 256,
    });
    prefetchers.set(chainId, p);
  }
  return p;
}

/** Id of the snapshot taken for the deposits and withdraws of one block. */
export function flowSnapshotId(v: EvmVault, blockNumber: bigint): string {
  return `${v.chainId}:${v.address}:${blockNumber}:flow`;
}

/**
 * Records a snapshot (state at the end of `block`) and keeps the vault row's latest figures.
 * Deposits and withdraws of the same block share one snapshot (`flow`): reads at a block give
 * the same state for all of them.
 */
export async function snapshot(
  context: Context,
  v: EvmVault,
  id: string,
  source: "interval" | "flow",
  block: { number: bigint; timestamp: bigint; hash: `0x${string}` },
  tx: { hash: `0x${string}`; logIndex: number } | null,
  /** the state at `block`, when the caller read it already */
  state?: VaultState,
): Promise<void> {
  if (source === "flow" && (await context.db.find(share_ratio_snapshot, { id }))) return;
  const s =
    state ??
    (source === "flow"
      ? await prefetcherOf(v.chainId).get(v, block)
      : await readVaultState(v, { blockNumber: block.number }));
  const ratio = s.convertedRatio !== undefined ? s.convertedRatio : ratio18(s.totalAssets, s.totalSupply);
  await context.db.insert(share_ratio_snapshot).values({
    id,
    chain_id: v.chainId,
    vault: v.address,
    source,
    total_assets: s.totalAssets,
    total_supply: s.totalSupply,
    asset_share_ratio: ratio,
    idle_assets: s.idle,
    subaccount_assets: s.subaccountAssets,
    reserved_assets: s.reserved,
    asset_usd_price: s.price,
    alt_assets: s.altAssets,
    alt_asset_usd_price: s.altPrice,
    block_number: block.number,
    timestamp: block.timestamp,
    tx_hash: tx?.hash ?? null,
    log_index: tx?.logIndex ?? null,
  });
  await context.db.update(vault, { chain_id: v.chainId, address: v.address }).set({
    total_assets: s.totalAssets,
    total_supply: s.totalSupply,
    asset_share_ratio: ratio,
    last_snapshot_block: block.number,
    last_snapshot_timestamp: block.timestamp,
  });
}

type Category = "role" | "ownership" | "config" | "fee" | "pause" | "subaccount" | "emergency" | "timelock";

/** A governance event of a vault or of the timelock that governs it (one writer: this). */
export async function governance(
  context: Context,
  event: LogEvent & { args: Record<string, unknown> | readonly unknown[] },
  name: string,
  category: Category,
  vaultAddress: string | null,
) {
  await context.db.insert(governance_event).values({
    ...eventColumns(event, context.chain.id),
    vault: vaultAddress as `0x${string}` | null,
    contract: event.log.address.toLowerCase() as `0x${string}`,
    category,
    event: name,
    args: jsonArgs(event.args),
  });
}
