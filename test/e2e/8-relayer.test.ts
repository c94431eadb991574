/**
 * The perp relayer worker (jobs/relayer) on the shared devnet, started in-process: a deposit on a
 * running chain is credited once it is RELAYER_DELAY_S old on the core chain's clock (not before),
 * one below the bridge's minimum is rejected with its reason, and a restarted worker, even with
 * its cursor lost, credits nothing twice; a Redis back without its data gets the same schedule
 * again, and a bridge chain that stops answering holds back only its own deposits. With
 * RELAYER_CONFIRMATIONS a deposit waits for that many blocks on top of its own; a reorg that
 * replaces the blocks under the cursor (evm_snapshot, evm_revert) is seen, and the new branch's
 * deposit credited. The chains' clocks are moved with evm_mine, so the delay is a minute of chain
 * time and no wall-clock waiting.
 */
import { createServer } from "node:http";
import type { AddressInfo } from "node:net";
import { join } from "node:path";
import { Queue } from "bullmq";
import {
  type Abi,
  type Address,
  createPublicClient,
  encodeFunctionData,
  getAddress,
  type Hex,
  http,
  parseEventLogs,
} from "viem";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { CoreLedgerAbi } from "../../abis/CoreLedgerAbi.js";
import { PerpBridgeAAbi } from "../../abis/PerpBridgeAAbi.js";
import { PerpBridgeBAbi } from "../../abis/PerpBridgeBAbi.js";
import type { Manifest } from "../../contracts/devnet/index.js";
import { coreHash } from "../../contracts/devnet/protocols/perp.js";
import { ERC20_ABI } from "../../contracts/devnet/protocols/tx.js";
import type { ChainResult } from "../../contracts/devnet/simulate.js";
import { PREFIX } from "../../jobs/queues.js";
import { relayerConfig } from "../../jobs/relayer/config.js";
import {
  cursorKey,
  parseCursor,
  RELAYER_QUEUE,
  RELAYER_SCHEDULER_ID,
  type RelayerHandle,
  startRelayer,
} from "../../jobs/relayer/worker.js";
import { redisConnection } from "../../jobs/runtime.js";
import { type RedisInstance, startRedis } from "../../scripts/lib/redis.js";
import { loadManifest, PORT_OFFSET, rpcCall, sleep } from "../helpers.js";

const devnet = inject("devnet");
const REDIS_PORT = 63797 + PORT_OFFSET;
const DELAY = 60;
const DEPOSITOR = getAddress("0x00000000000000000000000000000000000d3b05");

let manifest: Manifest;
let redis: RedisInstance;
let relayer: RelayerHandle | undefined;
const lines: string[] = [];

const rpcUrl = (chainId: number) => devnet.chains.find((c) => c.chainId === chainId)!.rpcUrl;
const chain = (id: number) => manifest.chains.find((c) => c.chainId === id) as ChainResult;
const client = (id: number) => createPublicClient({ transport: http(rpcUrl(id)) });
const ledger = () => chain(1).world.protocols.core!.ledger;

function config(extra: Record<string, string> = {}) {
  return relayerConfig({
    PONDER_RPC_URL_1: rpcUrl(1),
    PONDER_RPC_URL_8453: rpcUrl(8453),
    DEVNET_MANIFEST: devnet.manifestFile,
    RELAYER_DELAY_S: String(DELAY),
    RELAYER_POLL_MS: "300",
    REDIS_URL: redis.url,
    ...extra,
  });
}

async function start(extra: Record<string, string> = {}): Promise<RelayerHandle> {
  return startRelayer({ ...config(extra), redisUrl: redis.url }, (l) => lines.push(l));
}

/** Chain 8453's cursor key (its two bridges). */
async function baseCursorKey(): Promise<string> {
  const p = chain(8453).world.protocols.perp;
  const genesis = (await client(8453).getBlock({ blockNumber: 0n })).hash;
  return cursorKey(ledger(), 8453, genesis, [p.bridgeA, p.bridgeB]);
}

async function latest(chainId: number): Promise<number> {
  const b = await rpcCall<{ timestamp: Hex }>(rpcUrl(chainId), "eth_getBlockByNumber", ["latest", false]);
  return Number(BigInt(b.timestamp));
}

/** A transaction from an impersonated address at gas price 0, its receipt once mined. */
async function send(chainId: number, from: Address, to: Address, data: Hex, at?: number) {
  const url = rpcUrl(chainId);
  if (at !== undefined) await rpcCall(url, "evm_setNextBlockTimestamp", [at]);
  const hash = await rpcCall<Hex>(url, "eth_sendTransaction", [{ from, to, data, gas: "0x1c9c380", gasPrice: "0x0" }]);
  for (let i = 0; i < 200; i++) {
    const r = await rpcCall<{ status: Hex; blockNumber: Hex } | null>(url, "eth_getTransactionReceipt", [hash]);
    if (r) {
      expect(r.status, `${to} ${data.slice(0, 10)}`).toBe("0x1");
      return r;
    }
    await sleep(10);
  }
  throw new Error(`no receipt for ${hash}`);
}

/**
 * A deposit on a bridge of `chainId`, mined at a timestamp ahead of both chains' clocks; its
 * core hash and timestamp.
 */
async function deposit(
  chainId: number,
  bridge: "A" | "B",
  amount: bigint,
): Promise<{ hash: Hex; at: number; block: bigint }> {
  const p = chain(chainId).world.protocols.perp;
  const address = bridge === "A" ? p.bridgeA : p.bridgeB;
  const usdc = p.usdc;
  await send(
    chainId,
    DEPOSITOR,
    usdc,
    encodeFunctionData({ abi: ERC20_ABI, functionName: "mint", args: [DEPOSITOR, amount] }),
  );
  await send(
    chainId,
    DEPOSITOR,
    usdc,
    encodeFunctionData({ abi: ERC20_ABI, functionName: "approve", args: [address, amount] }),
  );
  const nonce = await client(chainId).readContract({
    address,
    abi: PerpBridgeAAbi,
    functionName: "nonces",
    args: [DEPOSITOR],
  });
  const at = Math.max(await latest(1), await latest(8453), Math.floor(Date.now() / 1000)) + 5;
  const data =
    bridge === "A"
      ? encodeFunctionData({ abi: PerpBridgeAAbi as Abi, functionName: "deposit", args: [amount] })
      : encodeFunctionData({ abi: PerpBridgeBAbi as Abi, functionName: "deposit", args: [usdc, amount, 0] });
  const r = await send(chainId, DEPOSITOR, address, data, at);
  return { hash: coreHash(chainId, address, DEPOSITOR, nonce), at, block: BigInt(r.blockNumber) };
}

async function status(hash: Hex): Promise<number> {
  return client(1).readContract({ address: ledger(), abi: CoreLedgerAbi, functionName: "status", args: [hash] });
}

async function mineCore(at: number): Promise<void> {
  await rpcCall(rpcUrl(1), "evm_mine", [at]);
}

async function until<T>(what: string, ms: number, f: () => Promise<T | undefined>): Promise<T> {
  const end = Date.now() + ms;
  for (;;) {
    const v = await f();
    if (v !== undefined) return v;
    if (Date.now() > end) throw new Error(`${what}: not within ${ms} ms\n${lines.join("\n")}`);
    await sleep(200);
  }
}

async function ledgerEvents() {
  const logs = await client(1).getLogs({ address: ledger(), fromBlock: 0n });
  return {
    credited: parseEventLogs({ abi: CoreLedgerAbi, eventName: "Credited", logs }),
    rejected: parseEventLogs({ abi: CoreLedgerAbi, eventName: "Rejected", logs }),
  };
}

const relayerNonce = async () =>
  client(1).getTransactionCount({ address: chain(1).world.perp.relayer, blockTag: "latest" });

beforeAll(async () => {
  manifest = loadManifest(devnet.manifestFile);
  redis = await startRedis({
    port: REDIS_PORT,
    dataDir: join(devnet.dir, "redis-relayer"),
    logFile: join(devnet.dir, "redis-relayer.log"),
  });
  relayer = await start();
  // the history's deposits were all relayed by the simulator: a pass sends nothing
  const first = await relayer.runOnce();
  expect([first.credited, first.rejected]).toEqual([[], []]);
}, 60_000);

afterAll(async () => {
  await relayer?.close();
  await redis?.stop();
});

describe("the perp relayer worker", () => {
  let sent = 0;
  let before = 0;

  it("credits a deposit on a running chain once it is the delay old on the core chain, not before", async () => {
    before = await relayerNonce();
    expect(relayer?.address).toBe(chain(1).world.perp.relayer);
    const { hash, at } = await deposit(8453, "B", 1_250n * 10n ** 6n);
    await mineCore(at + DELAY - 5);
    await sleep(1500); // several passes
    expect(await status(hash)).toBe(0);
    await mineCore(at + DELAY + 1);
    await until("the credit", 20_000, async () => ((await status(hash)) === 1 ? true : undefined));
    sent++;
    const { credited } = await ledgerEvents();
    const e = credited.filter((x) => x.args.coreHash === hash);
    expect(e).toHaveLength(1);
    expect([e[0]!.args.amount, e[0]!.args.depositor, e[0]!.args.chainId]).toEqual([
      1_250n * 10n ** 6n,
      DEPOSITOR,
      8453n,
    ]);
    const block = await client(1).getBlock({ blockNumber: e[0]!.blockNumber });
    expect(Number(block.timestamp)).toBeGreaterThanOrEqual(at + DELAY);
    // the pass logs its credits once their receipts are in (after the ledger shows them)
    await until("the credit's log line", 10_000, async () =>
      lines.some((l) => l.startsWith(`credited ${hash}`)) ? true : undefined,
    );
  });

  it("rejects a deposit below the bridge's minimum with its reason", async () => {
    const minimum = BigInt(chain(1).world.protocols.perp.minimumA);
    const { hash, at } = await deposit(1, "A", minimum - 1n);
    await mineCore(at + DELAY + 1);
    await until("the rejection", 20_000, async () => ((await status(hash)) === 2 ? true : undefined));
    sent++;
    const { rejected } = await ledgerEvents();
    const e = rejected.filter((x) => x.args.coreHash === hash);
    expect(e).toHaveLength(1);
    expect(e[0]!.args.reason).toBe(
      `deposit below minimum: ${minimum - 1n} < ${minimum} (raw units of ${chain(1).world.protocols.perp.usdc})`,
    );
    // logged and counted once the pass has the receipt (after the ledger shows it)
    await until("the rejection's log line", 10_000, async () =>
      lines.some((l) => l.startsWith(`rejected ${hash}`)) ? true : undefined,
    );
  });

  it("its metrics count what it credited and rejected, by chain, and when its last pass ended", async () => {
    const text = await relayer!.metrics.metrics();
    const value = (name: string, labels = "") => {
      const line = text.split("\n").find((l) => l.startsWith(`${name}${labels} `));
      return line === undefined ? undefined : Number(line.split(" ")[1]);
    };
    expect(value("vaults_relayer_deposits_total", '{chain_id="8453",outcome="credited"}')).toBeGreaterThanOrEqual(1);
    expect(value("vaults_relayer_deposits_total", '{chain_id="1",outcome="rejected"}')).toBeGreaterThanOrEqual(1);
    expect(value("vaults_relayer_pass_failures_total")).toBe(0);
    expect(value("vaults_relayer_pending_deposits")).toBeGreaterThanOrEqual(0);
    const last = value("vaults_relayer_last_pass_timestamp_seconds")!;
    expect(Math.abs(last - Date.now() / 1000)).toBeLessThan(60);
    expect(text).toContain("process_cpu_seconds_total"); // and the process's own
  });

  it("credits nothing twice after a restart, even with its cursor lost", async () => {
    await relayer?.close();
    relayer = undefined;
    // a deposit while it is down, due by the time it is back
    const { hash, at } = await deposit(8453, "A", 40n * 10n ** 6n);
    await mineCore(at + DELAY + 1);
    expect(await status(hash)).toBe(0);
    // the cursors it saved, then lost (as if it crashed after its credits, before saving them)
    const conn = redisConnection(redis.url);
    const key = await baseCursorKey();
    expect(parseCursor(await conn.get(key)).next).toBeGreaterThan(0n);
    await conn.del(key);
    conn.disconnect();
    relayer = await start();
    await until("the credit after the restart", 20_000, async () => ((await status(hash)) === 1 ? true : undefined));
    sent++;
    const again = await relayer.runOnce();
    expect([again.credited, again.rejected]).toEqual([[], []]);
    await sleep(1000);
    // every core hash once on the ledger, and the relayer sent exactly one transaction per deposit
    const { credited, rejected } = await ledgerEvents();
    const hashes = [...credited, ...rejected].map((e) => e.args.coreHash);
    expect(new Set(hashes).size).toBe(hashes.length);
    expect((await relayerNonce()) - before).toBe(sent);
  });

  it("declares its schedule again, with its retries and retention, when Redis comes back empty", async () => {
    const conn = redisConnection(redis.url);
    const queue = new Queue(RELAYER_QUEUE.name, { connection: conn, prefix: PREFIX });
    try {
      const opts = (await queue.getJobScheduler(RELAYER_SCHEDULER_ID))?.template?.opts;
      expect(opts).toMatchObject({
        attempts: 5,
        backoff: { type: "exponential", delay: 1000 },
        removeOnComplete: { age: 3600, count: 100 },
        removeOnFail: { age: 7 * 24 * 3600, count: 1000 },
      });
      // as a Redis that restarted without its data: the schedule gone, the relayer reconnecting
      const killedAt = Date.now();
      await queue.removeJobScheduler(RELAYER_SCHEDULER_ID);
      await conn.call("CLIENT", "KILL", "TYPE", "normal", "SKIPME", "yes");
      const back = await until(
        "the schedule declared again",
        10_000,
        async () => (await queue.getJobScheduler(RELAYER_SCHEDULER_ID)) ?? undefined,
      );
      expect(back.every).toBe(300);
      expect(back.template?.opts).toEqual(opts);
      // and it runs: the next passes complete
      await until("a scheduled pass after the reconnect", 10_000, async () => {
        const [last] = await queue.getJobs(["completed"], 0, 0);
        return (last?.finishedOn ?? 0) > killedAt ? true : undefined;
      });
    } finally {
      await queue.close();
      conn.disconnect();
    }
  });

  it("leaves out a bridge chain that does not answer, relays the others, and takes it back", async () => {
    await relayer?.close();
    // chain 8453 reached through a pass-through that drops every connection until `up`
    let up = false;
    const proxy = createServer((req, res) => {
      if (!up) return void req.socket.destroy();
      const chunks: Buffer[] = [];
      req.on("data", (c: Buffer) => chunks.push(c));
      req.on("end", async () => {
        const body = Buffer.concat(chunks).toString("utf8");
        const headers = { "content-type": "application/json" };
        const r = await fetch(rpcUrl(8453), { method: "POST", headers, body });
        res.writeHead(r.status, headers).end(await r.text());
      });
    });
    await new Promise<void>((r) => proxy.listen(0, "127.0.0.1", r));
    const viaProxy = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`;
    lines.length = 0;
    const cfg = relayerConfig({
      PONDER_RPC_URL_1: rpcUrl(1),
      PONDER_RPC_URL_8453: viaProxy,
      DEVNET_MANIFEST: devnet.manifestFile,
      RELAYER_DELAY_S: String(DELAY),
      RELAYER_POLL_MS: "300",
      REDIS_URL: redis.url,
    });
    relayer = await startRelayer({ ...cfg, redisUrl: redis.url }, (l) => lines.push(l));
    try {
      const onCore = await deposit(1, "A", 75n * 10n ** 6n);
      const onBase = await deposit(8453, "B", 80n * 10n ** 6n);
      await mineCore(Math.max(onCore.at, onBase.at) + DELAY + 1);
      await until("chain 1's credit", 20_000, async () => ((await status(onCore.hash)) === 1 ? true : undefined));
      const pass = await relayer.runOnce();
      expect(pass.unreachable).toEqual([8453]);
      expect(await status(onBase.hash)).toBe(0); // waits for its chain
      const metrics = await relayer.metrics.metrics();
      expect(metrics).toContain('vaults_relayer_source_up{chain_id="8453"} 0');
      expect(metrics).toContain('vaults_relayer_source_up{chain_id="1"} 1');
      // said once, however many passes left it out, and not as a failed pass
      const said = lines.filter((l) => l.startsWith("chain 8453 does not answer; relaying the other chains:"));
      expect(said, lines.join("\n")).toHaveLength(1);
      expect(said[0]!.split("\n")).toHaveLength(1);
      expect(lines.filter((l) => l.startsWith("pass failed"))).toEqual([]);

      up = true;
      await until("chain 8453's credit", 20_000, async () => ((await status(onBase.hash)) === 1 ? true : undefined));
      // said by the pass once its credits are in (after the ledger shows them)
      await until("the line saying chain 8453 answers again", 10_000, async () =>
        lines.includes("chain 8453 answers again: relaying its deposits") ? true : undefined,
      );
      const after = await relayer.runOnce();
      expect(after.unreachable).toEqual([]);
      expect(await relayer.metrics.metrics()).toContain('vaults_relayer_source_up{chain_id="8453"} 1');
    } finally {
      await relayer.close();
      relayer = undefined;
      proxy.closeAllConnections();
      await new Promise((r) => proxy.close(r));
    }
    relayer = await start();
  });
  it("relays a deposit only once RELAYER_CONFIRMATIONS blocks are on top of its own", async () => {
    await relayer?.close();
    relayer = await start({ RELAYER_CONFIRMATIONS: "3" });
    try {
      const { hash, at, block } = await deposit(8453, "A", 60n * 10n ** 6n);
      await mineCore(at + DELAY + 1);
      await relayer.runOnce();
      expect(await status(hash)).toBe(0); // old enough, but in the head block
      await rpcCall(rpcUrl(8453), "evm_mine", []);
      await rpcCall(rpcUrl(8453), "evm_mine", []);
      await relayer.runOnce();
      expect(await status(hash)).toBe(0); // two blocks on top of it
      // nor has the cursor passed it: it is still to be read
      const conn = redisConnection(redis.url);
      expect(parseCursor(await conn.get(await baseCursorKey())).next).toBeLessThanOrEqual(block);
      conn.disconnect();
      await rpcCall(rpcUrl(8453), "evm_mine", []);
      await until("the credit at three confirmations", 20_000, async () =>
        (await status(hash)) === 1 ? true : undefined,
      );
    } finally {
      await relayer.close();
      relayer = await start();
    }
  });

  it("reads again under its cursor when a reorg changed the block there, and credits the new branch's deposit", async () => {
    const url = rpcUrl(8453);
    const snapshot = await rpcCall<string>(url, "evm_snapshot");
    for (let i = 0; i < 3; i++) await rpcCall(url, "evm_mine", []);
    await relayer!.runOnce(); // its cursor past the three blocks, with the hash of the last
    const conn = redisConnection(redis.url);
    const before = parseCursor(await conn.get(await baseCursorKey()));
    expect(before.hash).toMatch(/^0x[0-9a-f]{64}$/);
    // the three blocks replaced by three others, the last holding a deposit: under the cursor
    lines.length = 0;
    expect(await rpcCall<boolean>(url, "evm_revert", [snapshot])).toBe(true);
    const { hash, at } = await deposit(8453, "B", 90n * 10n ** 6n);
    expect(await client(8453).getBlockNumber({ cacheTime: 0 })).toBeLessThan(before.next);
    await mineCore(at + DELAY + 1);
    await until("the credit of the deposit under the cursor", 20_000, async () =>
      (await status(hash)) === 1 ? true : undefined,
    );
    expect(lines.some((l) => /^chain 8453: block \d+ is not the one the last pass read \(a reorg\)/.test(l))).toBe(
      true,
    );
    // once the pass that credited it is done (it awaits the receipt), the cursor holds the new branch
    await relayer!.runOnce();
    const after = parseCursor(await conn.get(await baseCursorKey()));
    const block = await client(8453).getBlock({ blockNumber: after.next - 1n });
    expect(after.hash).toBe(block.hash);
    conn.disconnect();
  });
});
