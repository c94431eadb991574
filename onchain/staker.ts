/**
 * The Uniswap v3 staker's incentives, for the dex_pool builders and the valuation of staked
 * positions (onchain/positions.ts). An incentive is named by its key (reward token, pool, start,
 * end, refundee), which the staker does not enumerate: the keys are read from the staker's own
 * `IncentiveCreated` logs (first from what the indexer holds of them up to its checkpoint, or
 * without it from the staker's deployment block, in narrower windows where the provider refuses
 * the range; then only the last blocks again and those after them, cached per RPC client and
 * staker, and used without a new read for as long as the caller allows), and a position's
 * stakes are the keys of its pool whose `stakes(tokenId, id)` holds liquidity.
 */
import {
  type Address,
  encodeAbiParameters,
  type GetLogsReturnType,
  getAddress,
  type Hex,
  keccak256,
  type PublicClient,
  parseAbi,
} from "viem";
import { IncentiveKeyTuple, StakerIncentiveAbi } from "../abis/ProtocolEventsAbi.js";
import { deploymentBlock } from "./blocks.js";
import { logsInRange, MIN_SPLIT } from "./logs.js";

export interface IncentiveKey {
  rewardToken: Address;
  pool: Address;
  startTime: bigint;
  endTime: bigint;
  refundee: Address;
}

export const STAKER_ABI = parseAbi([
  "struct IncentiveKey { address rewardToken; address pool; uint256 startTime; uint256 endTime; address refundee; }",
  "function stakeToken(IncentiveKey key, uint256 tokenId)",
  "function unstakeToken(IncentiveKey key, uint256 tokenId)",
  "function claimReward(address rewardToken, address to, uint256 amountRequested) returns (uint256 reward)",
  "function withdrawToken(uint256 tokenId, address to, bytes data)",
  "function deposits(uint256 tokenId) view returns (address owner, uint48 numberOfStakes, int24 tickLower, int24 tickUpper)",
  "function stakes(uint256 tokenId, bytes32 incentiveId) view returns (uint160 secondsPerLiquidityInsideInitialX128, uint128 liquidity)",
  "function rewards(address rewardToken, address owner) view returns (uint256)",
  "function getRewardInfo(IncentiveKey key, uint256 tokenId) view returns (uint256 reward, uint160 secondsInsideX128)",
]);

/** The staker's IncentiveCreated, as the indexer reads it too. */
const CREATED = StakerIncentiveAbi[0];

/** The staker's id of an incentive: keccak256(abi.encode(key)). */
export function incentiveId(key: IncentiveKey): Hex {
  return keccak256(encodeAbiParameters([IncentiveKeyTuple], [key]));
}

/** The data of a deposit that stakes in `keys` (one key: the 160-byte struct; several: an array). */
export function stakeData(keys: readonly IncentiveKey[]): Hex {
  if (keys.length === 1) return encodeAbiParameters([IncentiveKeyTuple], [keys[0]!]);
  return encodeAbiParameters([{ type: "tuple[]", components: IncentiveKeyTuple.components }], [keys as IncentiveKey[]]);
}

/**
 * The incentives an indexer has read from the staker's logs (db/staker-incentives.ts): those of
 * the blocks `from` to `through`, each key at the block that created it.
 */
export interface IndexedIncentives {
  from: bigint;
  through: bigint;
  keys: IncentiveKey[];
  blocks: bigint[];
}
/**
 * Where a first scan may start from instead of the staker's logs: asked only when nothing is kept
 * for the client and staker; null (or a failure) is a scan from the logs.
 */
export type IncentiveSeed = () => Promise<IndexedIncentives | null>;

interface Scan {
  to: bigint;
  keys: IncentiveKey[];
  /** the block each key was created in */
  blocks: bigint[];
  /** when the scan was begun (ms): its head is at least that recent */
  at: number;
}
interface Kept {
  /** the staker's deployment block, once a search found it */
  deployed?: bigint;
  scan?: Scan;
  /** the refresh callers that accept a kept scan share */
  refreshing?: Promise<Scan>;
}
const scans = new WeakMap<PublicClient, Map<string, Kept>>();

/** What is kept of `staker`'s scan for `client` (empty at first). */
function keptOf(client: PublicClient, staker: Address): Kept {
  let byStaker = scans.get(client);
  if (!byStaker) {
    byStaker = new Map();
    scans.set(client, byStaker);
  }
  const id = staker.toLowerCase();
  let kept = byStaker.get(id);
  if (!kept) {
    kept = {};
    byStaker.set(id, kept);
  }
  return kept;
}

/**
 * Every incentive the staker has created, from its logs: the kept scan when it is younger than
 * `maxAgeMs`, else read on from the last block seen. Callers that accept a kept scan
 * (`maxAgeMs` > 0) share one refresh: from half that age on it runs in the background while the
 * kept scan is still served, so builds in steady use never wait on it; builds arriving together
 * after it expired wait on one scan, not one each. A caller that asks for the head (`maxAgeMs` 0)
 * reads its own.
 */
export async function stakerIncentives(
  client: PublicClient,
  staker: Address,
  maxAgeMs = 0,
  seed?: IncentiveSeed,
): Promise<IncentiveKey[]> {
  const kept = keptOf(client, staker);
  if (maxAgeMs === 0) return (await refresh(client, staker, kept, seed)).keys;
  const age = kept.scan ? Date.now() - kept.scan.at : Number.POSITIVE_INFINITY;
  if (age < maxAgeMs) {
    if (age >= maxAgeMs / 2) sharedRefresh(client, staker, kept, seed).catch(() => {}); // the next caller's
    return kept.scan!.keys;
  }
  return (await sharedRefresh(client, staker, kept, seed)).keys;
}

/**
 * Every incentive created up to `block` at least (some created later may be among them): the
 * kept scan when it reaches that block, else one refresh shared with the callers that accept a
 * kept scan (the kept scan still, when that refresh fails). For reads at a past block, which a
 * scan of the head always covers.
 */
export async function incentivesThrough(
  client: PublicClient,
  staker: Address,
  block: bigint,
  seed?: IncentiveSeed,
): Promise<IncentiveKey[]> {
  const kept = keptOf(client, staker);
  if (kept.scan && kept.scan.to >= block) return kept.scan.keys;
  try {
    let scan = await sharedRefresh(client, staker, kept, seed);
    // the refresh joined may have read its head before `block` was mined: then one of its own
    if (scan.to < block) scan = await sharedRefresh(client, staker, kept, seed);
    return scan.keys;
  } catch (err) {
    // a failed read on (a provider's refusal, a timeout): the kept scan, short of the last
    // blocks at most; without one, the read fails
    if (kept.scan) return kept.scan.keys;
    throw err;
  }
}

/**
 * Blocks of the last scan read again by the next one: keys of blocks a reorg replaced are dropped
 * and those of the blocks replacing them read, and a provider whose head lags behind the last
 * one read costs no rescan.
 */
export const REREAD_BLOCKS = 64n;

/** The refresh in flight for callers that accept a kept scan, else a new one. */
function sharedRefresh(client: PublicClient, staker: Address, kept: Kept, seed?: IncentiveSeed): Promise<Scan> {
  if (kept.refreshing) return kept.refreshing;
  const p = refresh(client, staker, kept, seed);
  kept.refreshing = p;
  p.then(
    () => undefined,
    () => undefined,
  ).finally(() => {
    if (kept.refreshing === p) kept.refreshing = undefined;
  });
  return p;
}

/**
 * Reads the staker's logs from the kept scan's last blocks (REREAD_BLOCKS of them) to the head,
 * and keeps the result. A first scan starts from what `seed` says is indexed, as if it were a
 * kept scan to the indexer's checkpoint, with the blocks before the indexer's start read once
 * where the staker is older. Without one (or it failing), from the staker's deployment block,
 * found once (a provider capping log ranges then reads the staker's years of blocks, not the
 * chain's); at 0 while the search fails (a node without the old state; searched again by the
 * next scan); none while the address has no code.
 */
async function refresh(client: PublicClient, staker: Address, kept: Kept, seed?: IncentiveSeed): Promise<Scan> {
  const at = Date.now();
  const head = await client.getBlockNumber({ cacheTime: 0 });
  const prev = kept.scan ?? (seed ? await seeded(client, staker, kept, head, seed) : undefined);
  let from: bigint | null;
  if (prev) {
    // (bigints: no Math.min) the lower of the last block read and the head, less the window
    let last = prev.to;
    if (head < last) last = head;
    from = last - REREAD_BLOCKS + 1n;
    if (from < 0n) from = 0n;
  } else from = await deployedFrom(client, staker, kept, head);
  const keys: IncentiveKey[] = [];
  const blocks: bigint[] = [];
  if (prev && from != null) {
    prev.blocks.forEach((b, i) => {
      if (b < from!) {
        keys.push(prev.keys[i]!);
        blocks.push(b);
      }
    });
  }
  if (from != null && from <= head) {
    for (const l of await createdLogs(client, staker, from, head)) {
      keys.push(keyOf(l.args));
      blocks.push(l.blockNumber ?? head);
    }
  }
  // each scan is whole (its keys are those of its blocks), so the last one to finish is kept
  const scan = { to: head, ...once(keys, blocks), at };
  kept.scan = scan;
  return scan;
}

/** The staker's deployment block (searched once, kept); 0 while the search fails; null without code. */
async function deployedFrom(client: PublicClient, staker: Address, kept: Kept, head: bigint): Promise<bigint | null> {
  if (kept.deployed != null) return kept.deployed;
  const found = await deploymentBlock(client, staker, head).catch(() => 0n as bigint | null);
  if (found != null && found > 0n) kept.deployed = found;
  return found;
}

/**
 * A first scan from the indexed incentives: the indexer's keys to its checkpoint, after those of
 * the blocks before its start (read from the logs, from the deployment block) where the staker
 * is older. Undefined where nothing is indexed or the seed fails: then a scan from the logs.
 */
async function seeded(
  client: PublicClient,
  staker: Address,
  kept: Kept,
  head: bigint,
  seed: IncentiveSeed,
): Promise<Scan | undefined> {
  const s = await seed().catch(() => null);
  if (!s) return undefined;
  const keys: IncentiveKey[] = [];
  const blocks: bigint[] = [];
  if (s.from > 0n) {
    const deployed = await deployedFrom(client, staker, kept, head);
    if (deployed != null && deployed < s.from) {
      for (const l of await createdLogs(client, staker, deployed, s.from - 1n)) {
        keys.push(keyOf(l.args));
        blocks.push(l.blockNumber ?? s.from);
      }
    }
  }
  return { to: s.through, ...once([...keys, ...s.keys], [...blocks, ...s.blocks]), at: 0 };
}

/** An incentive's key from its IncentiveCreated log's arguments. */
function keyOf(args: unknown): IncentiveKey {
  const a = args as { rewardToken: Address; pool: Address; startTime: bigint; endTime: bigint; refundee: Address };
  return {
    rewardToken: getAddress(a.rewardToken),
    pool: getAddress(a.pool),
    startTime: a.startTime,
    endTime: a.endTime,
    refundee: getAddress(a.refundee),
  };
}

/**
 * Each key once, at its first block. The staker takes `createIncentive` again for a key that
 * exists (until its start), adding to its reward and logging IncentiveCreated again: it is still
 * one incentive, whose rewards a position earns once and which it can be staked in once.
 */
function once(keys: IncentiveKey[], blocks: bigint[]): { keys: IncentiveKey[]; blocks: bigint[] } {
  const first = new Map<Hex, number>();
  keys.forEach((k, i) => {
    const id = incentiveId(k);
    const j = first.get(id);
    if (j === undefined || blocks[i]! < blocks[j]!) first.set(id, i);
  });
  const kept = [...first.values()].sort((a, b) => a - b);
  return { keys: kept.map((i) => keys[i]!), blocks: kept.map((i) => blocks[i]!) };
}

/**
 * The staker's IncentiveCreated logs over [from, to], in narrower windows where a provider
 * refuses the range (onchain/logs.ts), down to `minSplit` blocks.
 */
export function createdLogs(
  client: PublicClient,
  staker: Address,
  from: bigint,
  to: bigint,
  minSplit: bigint = MIN_SPLIT,
): Promise<GetLogsReturnType<typeof CREATED>> {
  const read = (fromBlock: bigint, toBlock: bigint) =>
    client.getLogs({ address: staker, event: CREATED, fromBlock, toBlock });
  return logsInRange(read, from, to, minSplit);
}

/** Whether an incentive accepts stakes at `now` (unix seconds). */
export const isActive = (k: IncentiveKey, now: bigint) => k.startTime <= now && now < k.endTime;
