/**
 * Flow-read prefetch (src/prefetch.ts; its tests live here because Ponder loads every file under
 * src/ as indexing code): which (vault, block) pairs a window of logs gives, when and how far it scans,
 * that a handler gets the prefetched answer only for the same block hash and otherwise the direct
 * read, that failures never reach the handler, and that the cache stays bounded. The node is a
 * viem client over a custom transport that answers eth_blockNumber and eth_getLogs from a list of
 * logs, filtering by range, address and topic0 as a node does; `read` records where it was pinned.
 */

import {
  type AbiEvent,
  type Address,
  createPublicClient,
  custom,
  encodeAbiParameters,
  encodeEventTopics,
  getAbiItem,
  type Hex,
  keccak256,
  toHex,
} from "viem";
import { describe, expect, it, vi } from "vitest";
import { LendingPoolAbi } from "../../abis/LendingPoolAbi";
import { TokenizedVaultV2Abi } from "../../abis/TokenizedVaultV2Abi";
import { type EvmVault, evmVaultSchema } from "../../config/registry";
import { FLOW_EVENTS, FlowPrefetcher, finalityBlocks, flowsInLogs, type ReadAt } from "../../src/prefetch";

const vault = (address: Address, family: EvmVault["family"]): EvmVault =>
  evmVaultSchema.parse({
    chainId: 1,
    address,
    family,
    kind: "stablecoin",
    name: address,
    symbol: "V",
    startBlock: 1,
    asset: { address: "0x00000000000000000000000000000000000000a5", symbol: "USDC", decimals: 6 },
  });

const POOL = vault("0x1000000000000000000000000000000000000001", "lendingPool");
const V2 = vault("0x2000000000000000000000000000000000000002", "tokenizedVaultV2");
const VAULTS = [POOL, V2];
const BY_ADDRESS = new Map(VAULTS.map((v) => [v.address, v]));

/** The canonical hash of a block in these tests; `fork` gives another block of the same number. */
const hashOf = (n: number | bigint, fork = "") => keccak256(toHex(`block ${n}${fork}`));
const blk = (n: number, fork = "") => ({ number: BigInt(n), hash: hashOf(n, fork) });

interface RpcLog {
  address: Address;
  blockNumber: Hex;
  blockHash: Hex;
  topics: Hex[];
  data: Hex;
  logIndex: Hex;
  transactionIndex: Hex;
  transactionHash: Hex;
  removed: boolean;
}

let logIndex = 0;
/** A log as a node returns it: real topics and data of `event` (zero arguments). */
function rpcLog(address: Address, event: AbiEvent, block: number, blockHash = hashOf(block)): RpcLog {
  const topics = encodeEventTopics({ abi: [event], eventName: event.name } as never) as Hex[];
  const indexed = event.inputs.filter((i) => i.indexed);
  const zero = (type: string) =>
    type === "address" ? "0x0000000000000000000000000000000000000000" : type === "bool" ? false : 0n;
  const fullTopics = [topics[0]!, ...indexed.map(() => toHex(0n, { size: 32 }))];
  const plain = event.inputs.filter((i) => !i.indexed);
  return {
    address,
    blockNumber: toHex(block),
    blockHash,
    topics: fullTopics,
    data: encodeAbiParameters(plain, plain.map((i) => zero(i.type)) as never),
    logIndex: toHex(logIndex++),
    transactionIndex: "0x0",
    transactionHash: keccak256(toHex(`tx ${logIndex}`)),
    removed: false,
  };
}

const poolDeposit = getAbiItem({ abi: LendingPoolAbi, name: "Deposit" }) as AbiEvent;
const poolWithdraw = getAbiItem({ abi: LendingPoolAbi, name: "Withdraw" }) as AbiEvent;
const poolTransfer = getAbiItem({ abi: LendingPoolAbi, name: "Transfer" }) as AbiEvent;
const v2Deposit = getAbiItem({ abi: TokenizedVaultV2Abi, name: "Deposit" }) as AbiEvent;
const v2Withdraw = getAbiItem({ abi: TokenizedVaultV2Abi, name: "Withdraw" }) as AbiEvent;

/** A node holding `logs`, at head `head`; records the eth_getLogs filters it was asked. */
function fakeNode(opts: { head: number; logs: RpcLog[]; failGetLogs?: number }) {
  const getLogs: { fromBlock: number; toBlock: number; address: string[]; topics: string[][] }[] = [];
  let failures = opts.failGetLogs ?? 0;
  let blockNumberCalls = 0;
  const client = createPublicClient({
    transport: custom(
      {
        async request({ method, params }: { method: string; params: unknown[] }) {
          if (method === "eth_blockNumber") {
            blockNumberCalls++;
            return toHex(opts.head);
          }
          if (method === "eth_getLogs") {
            const f = params[0] as { fromBlock: Hex; toBlock: Hex; address: string[]; topics: string[][] };
            const from = Number(f.fromBlock);
            const to = Number(f.toBlock);
            getLogs.push({ fromBlock: from, toBlock: to, address: f.address, topics: f.topics });
            if (failures > 0) {
              failures--;
              throw new Error("query exceeds max block range");
            }
            return opts.logs.filter(
              (l) =>
                Number(l.blockNumber) >= from &&
                Number(l.blockNumber) <= to &&
                f.address.includes(l.address) &&
                f.topics[0]!.includes(l.topics[0]!),
            );
          }
          throw new Error(`unexpected ${method}`);
        },
      },
      { retryCount: 0 },
    ),
  });
  return { client, getLogs, blockNumberCalls: () => blockNumberCalls };
}

type Answer = string;
/** A read that answers "<vault>@<where>" after `delayMs`; records every call and the most prefetched (by hash) in flight. */
function recordingRead(opts: { delayMs?: number; fail?: (v: EvmVault, at: ReadAt) => boolean } = {}) {
  const calls: string[] = [];
  let inFlight = 0;
  let maxInFlight = 0;
  const read = async (v: EvmVault, at: ReadAt): Promise<Answer> => {
    const where = "blockNumber" in at ? `#${at.blockNumber}` : at.blockHash;
    calls.push(`${v.address.slice(0, 3)}@${where}`);
    const prefetched = "blockHash" in at;
    if (prefetched) inFlight++;
    maxInFlight = Math.max(maxInFlight, inFlight);
    try {
      await new Promise((r) => setTimeout(r, opts.delayMs ?? 1));
      if (opts.fail?.(v, at)) throw new Error("execution reverted: header not found");
      return `${v.address.slice(0, 3)}@${where}`;
    } finally {
      if (prefetched) inFlight--;
    }
  };
  return { read, calls, maxInFlight: () => maxInFlight };
}

/** Lets the background head fetch, scans and reads run. */
const settle = async () => {
  for (let i = 0; i < 20; i++) await new Promise((r) => setTimeout(r, 2));
};

/** A prefetcher whose head is already known (one direct read at block 1 fetched it). */
async function warmed(node: ReturnType<typeof fakeNode>, read: ReturnType<typeof recordingRead>, over: object = {}) {
  const warn = vi.fn();
  const info = vi.fn();
  const p = new FlowPrefetcher<Answer>({
    chainId: 1,
    client: node.client,
    vaults: VAULTS,
    read: read.read,
    warn,
    info,
    ...over,
  });
  await p.get(POOL, blk(1));
  await settle();
  read.calls.length = 0;
  return { p, warn, info };
}

describe("flowsInLogs", () => {
  it("gives each vault's blocks with a Deposit or Withdraw of its own family once, in block order", () => {
    const logs = [
      rpcLog(V2.address, v2Withdraw, 9),
      rpcLog(POOL.address, poolDeposit, 7),
      rpcLog(POOL.address, poolWithdraw, 7), // same vault and block: one pair
      rpcLog(V2.address, v2Deposit, 7), // another vault, same block: its own pair
      rpcLog(POOL.address, poolTransfer, 8), // not a flow
      rpcLog(V2.address, poolDeposit, 8), // the other family's Deposit: no handler receives it
      rpcLog("0x3000000000000000000000000000000000000003", poolDeposit, 8), // not registered
      { ...rpcLog(POOL.address, poolDeposit, 10), removed: true },
    ].map((l) => ({
      ...l,
      address: l.address.toUpperCase().replace("0X", "0x") as Address,
      blockNumber: BigInt(l.blockNumber),
    }));
    expect(flowsInLogs(logs, BY_ADDRESS)).toEqual([
      { vault: POOL.address, blockNumber: 7n, blockHash: hashOf(7) },
      { vault: V2.address, blockNumber: 7n, blockHash: hashOf(7) },
      { vault: V2.address, blockNumber: 9n, blockHash: hashOf(9) },
    ]);
  });

  it("uses Ponder's finality depths", () => {
    expect(finalityBlocks(1)).toBe(65);
    expect(finalityBlocks(137)).toBe(200);
    expect(finalityBlocks(42161)).toBe(240);
    expect(finalityBlocks(8453)).toBe(30);
  });
});

describe("FlowPrefetcher", () => {
  it("scans one window ahead for both families' flow topics and serves those reads prefetched, by block hash", async () => {
    const node = fakeNode({
      head: 5000,
      logs: [
        rpcLog(POOL.address, poolDeposit, 100),
        rpcLog(POOL.address, poolDeposit, 150),
        rpcLog(POOL.address, poolWithdraw, 150),
        rpcLog(V2.address, v2Deposit, 150),
        rpcLog(POOL.address, poolTransfer, 160),
        rpcLog(V2.address, v2Withdraw, 900),
        rpcLog(POOL.address, poolDeposit, 1300),
      ],
    });
    const read = recordingRead();
    const { p, info } = await warmed(node, read, { windowBlocks: 1000, initialWindowBlocks: 1000 });

    // The first flow read is direct (nothing scanned yet) and starts the scan of [101, 1100].
    expect(await p.get(POOL, blk(100))).toBe(`0x1@#100`);
    await settle();
    expect(node.getLogs).toHaveLength(1);
    const scan = node.getLogs[0]!;
    expect([scan.fromBlock, scan.toBlock]).toEqual([101, 1100]);
    expect(scan.address.sort()).toEqual([POOL.address, V2.address]);
    expect(new Set(scan.topics[0])).toEqual(
      new Set(
        [...FLOW_EVENTS.lendingPool, ...FLOW_EVENTS.tokenizedVaultV2].map(
          (e) => encodeEventTopics({ abi: [e] } as never)[0],
        ),
      ),
    );
    // Its three pairs were read in the background, pinned to the logs' block hashes.
    expect(read.calls.sort()).toEqual(
      [`0x1@#100`, `0x1@${hashOf(150)}`, `0x2@${hashOf(150)}`, `0x2@${hashOf(900)}`].sort(),
    );
    read.calls.length = 0;

    expect(await p.get(POOL, blk(150))).toBe(`0x1@${hashOf(150)}`);
    expect(await p.get(V2, blk(150))).toBe(`0x2@${hashOf(150)}`);
    // Under half a window scanned ahead of 900: the next window [1101, 2100] is scanned.
    expect(await p.get(V2, blk(900))).toBe(`0x2@${hashOf(900)}`);
    await settle();
    expect(node.getLogs.map((g) => [g.fromBlock, g.toBlock])).toEqual([
      [101, 1100],
      [1101, 2100],
    ]);
    expect(await p.get(POOL, blk(1300))).toBe(`0x1@${hashOf(1300)}`);
    // No read was made twice: the handlers' answers all came from the prefetched reads.
    expect(read.calls.sort()).toEqual([`0x1@${hashOf(1300)}`]);
    expect(p.stats).toMatchObject({ hits: 4, misses: 1, mismatches: 0, failures: 0, scans: 2 });
    expect(p.size).toBe(0);
    // The summary comes once the reads pause, after hits as well as misses.
    expect(info).not.toHaveBeenCalled();
    await vi.waitFor(() => expect(info).toHaveBeenCalledTimes(1), { timeout: 6000 });
    expect(info.mock.calls[0]![0]).toMatch(/chain 1: 4 reads prefetched and used, 1 missed/);
  }, 10_000);

  it("reads directly near the head: scans stop at the finality depth and nothing within it is prefetched", async () => {
    const node = fakeNode({
      head: 1000,
      logs: [rpcLog(POOL.address, poolDeposit, 900), rpcLog(POOL.address, poolDeposit, 950)],
    });
    const read = recordingRead();
    const { p, info } = await warmed(node, read, { initialWindowBlocks: 1000, summaryIdleMs: 400 });
    await p.get(POOL, blk(800));
    await settle();
    // safe head = 1000 - 65
    expect(node.getLogs.map((g) => [g.fromBlock, g.toBlock])).toEqual([[801, 935]]);
    expect(await p.get(POOL, blk(900))).toBe(`0x1@${hashOf(900)}`);
    expect(await p.get(POOL, blk(950))).toBe(`0x1@#950`);
    expect(await p.get(POOL, blk(960))).toBe(`0x1@#960`);
    await settle();
    expect(node.getLogs).toHaveLength(1);
    expect(p.stats).toMatchObject({ hits: 1, nearHead: 3, misses: 1 });
    // One summary line once the flow reads pause, and no other until something new was prefetched.
    expect(info).not.toHaveBeenCalled();
    await new Promise((r) => setTimeout(r, 450));
    expect(info).toHaveBeenCalledTimes(1);
    expect(info.mock.calls[0]![0]).toMatch(/chain 1: 1 reads prefetched and used, 1 missed/);
    await p.get(POOL, blk(970));
    await new Promise((r) => setTimeout(r, 450));
    expect(info).toHaveBeenCalledTimes(1);
  });

  it("never hands a prefetched answer to a block of another hash (reorg): it reads that block directly", async () => {
    const node = fakeNode({
      head: 5000,
      logs: [rpcLog(POOL.address, poolDeposit, 150), rpcLog(POOL.address, poolDeposit, 151)],
    });
    const read = recordingRead();
    const { p } = await warmed(node, read);
    await p.get(POOL, blk(100));
    await settle();
    expect(await p.get(POOL, blk(150, "reorged"))).toBe(`0x1@#150`);
    expect(await p.get(POOL, blk(151))).toBe(`0x1@${hashOf(151)}`);
    expect(p.stats).toMatchObject({ hits: 1, mismatches: 1 });
  });

  it("falls back to the direct read when a prefetched read fails, and never rejects outside the handler", async () => {
    const unhandled = vi.fn();
    process.on("unhandledRejection", unhandled);
    try {
      const node = fakeNode({
        head: 5000,
        logs: [rpcLog(POOL.address, poolDeposit, 150), rpcLog(V2.address, v2Deposit, 160)],
      });
      // Reads by hash of block 150 fail, the direct read of 150 works.
      const read = recordingRead({ fail: (_v, at) => "blockHash" in at && at.blockHash === hashOf(150) });
      const { p, warn } = await warmed(node, read, { backoffMs: 1 });
      await p.get(POOL, blk(100));
      await settle();
      expect(await p.get(POOL, blk(150))).toBe(`0x1@#150`);
      // A failed read that nobody asks for (its block is skipped) rejects nowhere either.
      await settle();
      expect(p.stats.failures).toBe(1);
      expect(warn).toHaveBeenCalledTimes(1);
      expect(warn.mock.calls[0]![0]).toMatch(/read of 0x1.* at 150 failed \(execution reverted: header not found\)/);
      expect(await p.get(V2, blk(160))).toBe(`0x2@${hashOf(160)}`);
      await settle();
      expect(unhandled).not.toHaveBeenCalled();
    } finally {
      process.off("unhandledRejection", unhandled);
    }
  });

  it("after a failed eth_getLogs halves the window, pauses, then scans again; handlers read directly meanwhile", async () => {
    const node = fakeNode({ head: 5000, logs: [rpcLog(POOL.address, poolDeposit, 300)], failGetLogs: 1 });
    const read = recordingRead();
    const { p, warn } = await warmed(node, read, { windowBlocks: 1000, initialWindowBlocks: 1000, backoffMs: 400 });
    expect(await p.get(POOL, blk(100))).toBe(`0x1@#100`);
    await settle();
    expect(warn).toHaveBeenCalledTimes(1);
    expect(warn.mock.calls[0]![0]).toMatch(/eth_getLogs 101\.\.1100 failed/);
    // Paused: no new scan yet.
    expect(await p.get(POOL, blk(101))).toBe(`0x1@#101`);
    expect(node.getLogs).toHaveLength(1);
    await new Promise((r) => setTimeout(r, 400));
    await p.get(POOL, blk(102));
    await settle();
    expect(node.getLogs.map((g) => [g.fromBlock, g.toBlock])).toEqual([
      [101, 1100],
      [103, 602],
    ]);
    expect(await p.get(POOL, blk(300))).toBe(`0x1@${hashOf(300)}`);
    // (the third scan: [103, 602] found one pair, so the window widened back to 1000)
    expect(p.stats).toMatchObject({ scans: 3, scanFailures: 1, hits: 1 });
  });

  it("keeps at most maxAhead answers and concurrency reads in flight, and drops what the handlers went past", async () => {
    const logs = Array.from({ length: 400 }, (_, i) => rpcLog(POOL.address, poolDeposit, 101 + i));
    const node = fakeNode({ head: 100_000, logs });
    const read = recordingRead({ delayMs: 3 });
    const { p } = await warmed(node, read, {
      windowBlocks: 1000,
      initialWindowBlocks: 1000,
      concurrency: 3,
      maxAhead: 10,
    });
    await p.get(POOL, blk(100));
    await settle();
    // 400 pairs planned; only 10 were read ahead, never more than 3 at once.
    expect(read.calls).toHaveLength(1 + 10);
    expect(read.maxInFlight()).toBeLessThanOrEqual(3);
    expect(p.size).toBe(400);
    // A used answer is gone: asked again (as a second event would, were there no row), it is read directly.
    expect(await p.get(POOL, blk(101))).toBe(`0x1@${hashOf(101)}`);
    expect(await p.get(POOL, blk(101))).toBe(`0x1@#101`);
    // Jumping to block 300 drops the 198 pairs of blocks 102-299, started or not.
    await p.get(POOL, blk(300));
    expect(p.stats.dropped).toBe(198);
    await settle();
    expect(p.size).toBeLessThanOrEqual(200);
    for (let b = 300; b <= 500; b++) await p.get(POOL, blk(b));
    await settle();
    expect(p.size).toBe(0);
    expect(read.maxInFlight()).toBe(3);
  });

  it("shrinks the window where every block has flows and widens it up to windowBlocks where none do", async () => {
    const dense = fakeNode({
      head: 100_000,
      logs: Array.from({ length: 400 }, (_, i) => rpcLog(POOL.address, poolDeposit, 101 + i)),
    });
    const a = await warmed(dense, recordingRead(), { windowBlocks: 1000, maxAhead: 8 });
    await a.p.get(POOL, blk(100));
    await settle();
    // 128 pairs in 128 blocks, 4 * maxAhead = 32 wanted per scan: the next window is 32 blocks.
    for (let b = 101; b <= 214; b++) await a.p.get(POOL, blk(b));
    await settle();
    expect(dense.getLogs.map((g) => [g.fromBlock, g.toBlock])).toEqual([
      [101, 228],
      [229, 260],
    ]);

    const sparse = fakeNode({ head: 100_000, logs: [] });
    const b = await warmed(sparse, recordingRead(), { windowBlocks: 1000 });
    for (const n of [100, 200, 400, 900]) {
      await b.p.get(POOL, blk(n));
      await settle();
    }
    expect(sparse.getLogs.map((g) => [g.fromBlock, g.toBlock])).toEqual([
      [101, 228],
      [229, 484],
      [485, 996],
      [997, 1996],
    ]);
  });

  it("does nothing ahead with a window of 0", async () => {
    const node = fakeNode({ head: 5000, logs: [rpcLog(POOL.address, poolDeposit, 150)] });
    const read = recordingRead();
    const p = new FlowPrefetcher<Answer>({
      chainId: 1,
      client: node.client,
      vaults: VAULTS,
      read: read.read,
      windowBlocks: 0,
    });
    expect(await p.get(POOL, blk(100))).toBe(`0x1@#100`);
    expect(await p.get(POOL, blk(150))).toBe(`0x1@#150`);
    await settle();
    expect(node.getLogs).toHaveLength(0);
    expect(node.blockNumberCalls()).toBe(0);
    expect(p.size).toBe(0);
  });
});
