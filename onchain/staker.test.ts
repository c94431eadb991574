/**
 * stakerIncentives against a local HTTP server playing a JSON-RPC node (eth_blockNumber and the
 * staker's IncentiveCreated logs): the keys decoded, the kept scan used within its age and
 * refreshed in the background from half of it, one refresh shared by the builds that find it too
 * old together, and the head read whenever a caller asks for it.
 */
import { createServer, type Server } from "node:http";
import type { AddressInfo } from "node:net";
import { createPublicClient, encodeAbiParameters, http, pad, toEventSelector, toHex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type IncentiveKey, incentivesThrough, REREAD_BLOCKS, stakerIncentives } from "./staker.js";

const STAKER = "0x1111111111111111111111111111111111111111";
const TOKEN = "0x2222222222222222222222222222222222222222";
const POOL = "0x3333333333333333333333333333333333333333";
const REFUNDEE = "0x4444444444444444444444444444444444444444";
const CREATED = toEventSelector("IncentiveCreated(address,address,uint256,uint256,address,uint256)");

let server: Server;
let url: string;
let head = 100;
/** the blocks that created an incentive, its start time being the block number */
const created: number[] = [];
const calls: { method: string; params: unknown[] }[] = [];
/** the staker's deployment block on this node, and whether its eth_getCode fails (no old state) */
const DEPLOYED = 7;
let codeFails = false;
/** whether its eth_getLogs fails */
let logsFail = false;
/** how many calls the node has answered */
let answered = 0;

/** top-ups: a block's second IncentiveCreated of the key created in block `start` */
const toppedUp: { block: number; start: number }[] = [];

function log(block: number, start = block) {
  return {
    address: STAKER,
    blockNumber: toHex(block),
    blockHash: pad(toHex(block)),
    transactionHash: pad(toHex(block + 1_000_000)),
    transactionIndex: "0x0",
    logIndex: "0x0",
    removed: false,
    topics: [CREATED, pad(TOKEN), pad(POOL)],
    data: encodeAbiParameters(
      [{ type: "uint256" }, { type: "uint256" }, { type: "address" }, { type: "uint256" }],
      [BigInt(start), BigInt(start) + 86_400n, REFUNDEE, 10n ** 18n],
    ),
  };
}

beforeAll(async () => {
  server = createServer((req, res) => {
    let text = "";
    req.on("data", (c: Buffer) => {
      text += c.toString("utf8");
    });
    req.on("end", () => {
      const body = JSON.parse(text) as { id: number; method: string; params: unknown[] };
      calls.push({ method: body.method, params: body.params });
      let result: unknown = null;
      if (body.method === "eth_blockNumber") result = toHex(head);
      if (body.method === "eth_getCode") {
        const [who, tag] = body.params as [string, string];
        if (codeFails) {
          setTimeout(() => {
            res.writeHead(200, { "content-type": "application/json" });
            res.end(
              JSON.stringify({ jsonrpc: "2.0", id: body.id, error: { code: -32000, message: "missing trie node" } }),
            );
          }, 5);
          return;
        }
        result = who.toLowerCase() === STAKER && Number(tag) >= DEPLOYED ? "0x6080" : "0x";
      }
      if (body.method === "eth_getLogs" && logsFail) {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", id: body.id, error: { code: -32005, message: "query timeout" } }));
        return;
      }
      if (body.method === "eth_getLogs") {
        const f = body.params[0] as { fromBlock: string; toBlock: string };
        const [from, to] = [Number(f.fromBlock), Number(f.toBlock)];
        const inRange = (b: number) => b >= from && b <= to;
        result = [
          ...created.filter(inRange).map((b) => log(b)),
          ...toppedUp.filter((t) => inRange(t.block)).map((t) => log(t.block, t.start)),
        ];
      }
      // answered a little later, so calls made together are in flight together
      setTimeout(() => {
        res.writeHead(200, { "content-type": "application/json" });
        res.end(JSON.stringify({ jsonrpc: "2.0", id: body.id, result }));
        answered++;
      }, 20);
    });
  });
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", () => r()));
  url = `http://127.0.0.1:${(server.address() as AddressInfo).port}`;
});
afterAll(async () => {
  server.closeAllConnections();
  await new Promise((r) => server.close(r));
});

const count = (method: string) => calls.filter((c) => c.method === method).length;

describe("stakerIncentives", () => {
  it("decodes the keys, keeps the scan within its age, and shares one refresh once it is older", async () => {
    const client = createPublicClient({ transport: http(url, { retryCount: 0 }) });
    created.push(10, 50);
    calls.length = 0;
    const keys = await stakerIncentives(client, STAKER, 60_000);
    expect(keys).toEqual(
      [10n, 50n].map((t) => ({
        rewardToken: TOKEN,
        pool: POOL,
        startTime: t,
        endTime: t + 86_400n,
        refundee: REFUNDEE,
      })),
    );
    expect([count("eth_blockNumber"), count("eth_getLogs")]).toEqual([1, 1]);
    // read from the staker's deployment block, found by a binary search on its code
    const first = calls.find((c) => c.method === "eth_getLogs")!;
    expect((first.params[0] as { fromBlock: string }).fromBlock).toBe(toHex(DEPLOYED));
    expect(count("eth_getCode")).toBeLessThanOrEqual(Math.ceil(Math.log2(head)) + 2);

    // within its age: nothing read
    const n = calls.length;
    await stakerIncentives(client, STAKER, 60_000);
    expect(calls).toHaveLength(n);

    // too old for eight builds at once: one refresh, from the block after the last one read
    created.push(120);
    head = 130;
    calls.length = 0;
    await new Promise((r) => setTimeout(r, 5));
    const all = await Promise.all(Array.from({ length: 8 }, () => stakerIncentives(client, STAKER, 1)));
    expect([count("eth_blockNumber"), count("eth_getLogs")]).toEqual([1, 1]);
    // read again from REREAD_BLOCKS before the last block read (100): a reorg there is caught
    expect((calls[1]!.params[0] as { fromBlock: string }).fromBlock).toBe(toHex(100n - REREAD_BLOCKS + 1n));
    for (const k of all) expect(k.map((x) => x.startTime)).toEqual([10n, 50n, 120n]);

    // a reorg replaced block 120's incentive by one in block 125, the head unchanged: dropped, read
    created.splice(created.indexOf(120), 1, 125);
    calls.length = 0;
    expect((await stakerIncentives(client, STAKER, 0)).map((x) => x.startTime)).toEqual([10n, 50n, 125n]);
    // a provider whose head lags behind the last block read: no rescan from the deployment block
    head = 128;
    calls.length = 0;
    expect((await stakerIncentives(client, STAKER, 0)).map((x) => x.startTime)).toEqual([10n, 50n, 125n]);
    expect((calls[1]!.params[0] as { fromBlock: string }).fromBlock).toBe(toHex(128n - REREAD_BLOCKS + 1n));
    expect(count("eth_getCode")).toBe(0);
    head = 130;
  });

  it("a caller asking for the head (maxAgeMs 0) reads it, however young the kept scan", async () => {
    const client = createPublicClient({ transport: http(url, { retryCount: 0 }) });
    head = 140;
    await stakerIncentives(client, STAKER, 60_000);
    created.push(145);
    head = 150;
    calls.length = 0;
    expect((await stakerIncentives(client, STAKER, 60_000)).map((x) => x.startTime)).not.toContain(145n);
    expect(calls).toHaveLength(0);
    expect((await stakerIncentives(client, STAKER, 0)).map((x) => x.startTime)).toContain(145n);
    expect([count("eth_blockNumber"), count("eth_getLogs")]).toEqual([1, 1]);
    expect((calls[1]!.params[0] as { fromBlock: string }).fromBlock).toBe(toHex(140n - REREAD_BLOCKS + 1n));
  });

  it("from half its age on, the kept scan is served at once while one refresh replaces it", async () => {
    const client = createPublicClient({ transport: http(url, { retryCount: 0 }) });
    const AGE = 400;
    head = 160;
    await stakerIncentives(client, STAKER, AGE);
    // a scan's age counts from its start: read the head again, so it is not the first scan's
    // (which searched the staker's deployment block first)
    await stakerIncentives(client, STAKER, 0);
    created.push(165);
    head = 170;
    calls.length = 0;
    await new Promise((r) => setTimeout(r, AGE / 2 + 10));
    const before = answered;
    const served = await Promise.all(Array.from({ length: 8 }, () => stakerIncentives(client, STAKER, AGE)));
    expect(answered).toBe(before); // served before the node answered the refresh's first call
    for (const k of served) expect(k.map((x) => x.startTime)).not.toContain(165n);
    await new Promise((r) => setTimeout(r, 100));
    expect([count("eth_blockNumber"), count("eth_getLogs")]).toEqual([1, 1]);
    expect((await stakerIncentives(client, STAKER, AGE)).map((x) => x.startTime)).toContain(165n);
    expect(calls).toHaveLength(2);
  });

  it("a node without the old state is read from block 0; a staker without code has no incentives", async () => {
    codeFails = true;
    calls.length = 0;
    try {
      const keys = await stakerIncentives(createPublicClient({ transport: http(url, { retryCount: 0 }) }), STAKER);
      expect(keys.length).toBe(created.length);
      const logs = calls.filter((c) => c.method === "eth_getLogs");
      expect((logs[0]!.params[0] as { fromBlock: string }).fromBlock).toBe(toHex(0));
    } finally {
      codeFails = false;
    }
    calls.length = 0;
    const other = "0x9999999999999999999999999999999999999999";
    const none = await stakerIncentives(createPublicClient({ transport: http(url, { retryCount: 0 }) }), other);
    expect(none).toEqual([]);
    expect(count("eth_getLogs")).toBe(0);
  });

  it("incentivesThrough: the kept scan up to its block, else a refresh that reaches it", async () => {
    const client = createPublicClient({ transport: http(url, { retryCount: 0 }) });
    head = 200;
    expect((await incentivesThrough(client, STAKER, 150n)).length).toBe(created.length);
    calls.length = 0;
    // a past block the scan covers: nothing read
    await incentivesThrough(client, STAKER, 180n);
    expect(calls).toHaveLength(0);
    // a block past it: read on
    created.push(205);
    head = 210;
    expect((await incentivesThrough(client, STAKER, 210n)).map((x) => x.startTime)).toContain(205n);
    expect(count("eth_getLogs")).toBe(1);
    // the node failing on: the kept scan, not a failed read
    logsFail = true;
    try {
      head = 220;
      expect((await incentivesThrough(client, STAKER, 220n)).map((x) => x.startTime)).toContain(205n);
      // without a kept scan the failure is the caller's
      const fresh = createPublicClient({ transport: http(url, { retryCount: 0 }) });
      await expect(incentivesThrough(fresh, STAKER, 220n)).rejects.toThrow();
    } finally {
      logsFail = false;
    }
  });

  it("a first scan starts from the indexed incentives: only the blocks from their checkpoint read", async () => {
    const client = createPublicClient({ transport: http(url, { retryCount: 0 }) });
    head = 300;
    const keyAt = (start: number): IncentiveKey => ({
      rewardToken: TOKEN,
      pool: POOL,
      startTime: BigInt(start),
      endTime: BigInt(start) + 86_400n,
      refundee: REFUNDEE,
    });
    // indexed from block 0 up to 250: what the logs hold there (the node is not asked for them)
    const indexed = created.filter((b) => b <= 250);
    let asked = 0;
    const seed = async () => {
      asked++;
      return { from: 0n, through: 250n, keys: indexed.map(keyAt), blocks: indexed.map(BigInt) };
    };
    calls.length = 0;
    const keys = await stakerIncentives(client, STAKER, 0, seed);
    expect(keys.map((k) => Number(k.startTime))).toEqual([...new Set(created)].sort((a, b) => a - b));
    const logs = calls.filter((c) => c.method === "eth_getLogs");
    expect(logs.map((c) => (c.params[0] as { fromBlock: string }).fromBlock)).toEqual([
      toHex(250n - REREAD_BLOCKS + 1n),
    ]);
    expect(count("eth_getCode")).toBe(0);
    // kept from then on: the seed is not asked again
    await stakerIncentives(client, STAKER, 0, seed);
    expect(asked).toBe(1);

    // indexed from block 100 only: the staker's blocks before it (from its deployment) read once
    const late = createPublicClient({ transport: http(url, { retryCount: 0 }) });
    const after = created.filter((b) => b >= 100 && b <= 250);
    calls.length = 0;
    const lateKeys = await incentivesThrough(late, STAKER, 300n, async () => ({
      from: 100n,
      through: 250n,
      keys: after.map(keyAt),
      blocks: after.map(BigInt),
    }));
    expect(lateKeys.map((k) => Number(k.startTime))).toEqual(keys.map((k) => Number(k.startTime)));
    const ranges = calls
      .filter((c) => c.method === "eth_getLogs")
      .map((c) => c.params[0] as { fromBlock: string; toBlock: string });
    expect(ranges).toEqual([
      { address: STAKER, fromBlock: toHex(DEPLOYED), toBlock: toHex(99), topics: expect.anything() },
      { address: STAKER, fromBlock: toHex(250n - REREAD_BLOCKS + 1n), toBlock: toHex(300), topics: expect.anything() },
    ]);

    // a seed that fails, or has nothing indexed: the logs from the deployment block
    for (const failing of [async () => null, async () => Promise.reject(new Error("db down"))]) {
      const other = createPublicClient({ transport: http(url, { retryCount: 0 }) });
      calls.length = 0;
      expect(await stakerIncentives(other, STAKER, 0, failing)).toEqual(keys);
      const first = calls.find((c) => c.method === "eth_getLogs")!;
      expect((first.params[0] as { fromBlock: string }).fromBlock).toBe(toHex(DEPLOYED));
    }
  });

  it("a key created again (a top-up) is one incentive, at its first block", async () => {
    const client = createPublicClient({ transport: http(url, { retryCount: 0 }) });
    created.push(230);
    toppedUp.push({ block: 235, start: 230 });
    head = 240;
    const starts = (keys: { startTime: bigint }[]) => keys.map((x) => Number(x.startTime));
    const first = starts(await stakerIncentives(client, STAKER, 0));
    expect(first.filter((t) => t === 230)).toHaveLength(1);
    expect(first).toEqual([...new Set(first)]);
    // topped up again long after: the kept key (before the blocks read again) and the new log
    toppedUp.push({ block: 400, start: 230 });
    head = 410;
    const later = starts(await stakerIncentives(client, STAKER, 0));
    expect(later).toEqual(first);
    expect(await incentivesThrough(client, STAKER, 410n)).toHaveLength(first.length);
  });
});
