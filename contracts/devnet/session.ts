/**
 * One simulated chain: sends transactions from impersonated addresses at chosen timestamps
 * (anvil --auto-impersonate, base fee 0), mines padding blocks, and records every log our
 * contracts emit, decoded, for the manifest.
 */
import {
  type Abi,
  type Address,
  type ContractFunctionArgs,
  type ContractFunctionName,
  decodeEventLog,
  decodeFunctionResult,
  encodeDeployData,
  encodeFunctionData,
  getAddress,
  type Hex,
  toEventSelector,
} from "viem";
import { rpcFetch } from "../../onchain/rpc-fetch.js";
import { ABIS, ALL_EVENTS_ABI, bytecode, type ContractName } from "./artifacts.js";

export interface ManifestEvent {
  chainId: number;
  address: Address; // lower-case
  event: string; // name
  signature: string; // e.g. WithdrawalProcessed(uint256,uint256,address,uint256,bool)
  args: Record<string, string | boolean | number>;
  blockNumber: number;
  timestamp: number;
  txHash: Hex;
  logIndex: number;
}

export interface RpcReceipt {
  status: Hex;
  contractAddress: Address | null;
  blockNumber: Hex;
  transactionHash: Hex;
  logs: { address: Address; topics: [Hex, ...Hex[]]; data: Hex; logIndex: Hex }[];
}

type Json = null | boolean | number | string | Json[] | { [k: string]: Json };

export interface PlannedTx {
  from: Address;
  to: Address;
  data: Hex;
  /** explicit gas: several transactions share a block (30 M gas) */
  gas: bigint;
  what: string;
}

export class ChainSession {
  readonly events: ManifestEvent[] = [];
  /**
   * Events of our contracts (token Transfer and Approval, mostly) caused by transactions sent inside
   * `offManifest`: the protocol world's activity, kept out of `events` (the manifest the indexer is
   * compared with).
   */
  readonly offManifestEvents: ManifestEvent[] = [];
  private sink: ManifestEvent[] = this.events;
  private lastTimestamp = 0;
  private id = 0;
  txCount = 0;
  blockCount = 0;
  /** milliseconds spent sending transactions, mining padding blocks and reading */
  readonly timing = { send: 0, mine: 0, read: 0 };

  constructor(
    readonly chainId: number,
    readonly rpcUrl: string,
  ) {}

  /**
   * POSTs a JSON-RPC request (or batch) and parses the answer: through the service's undici agent
   * (onchain/rpc-fetch.ts), which costs a fifth of the CPU of `fetch` per request, and a history
   * is tens of thousands of them.
   */
  async post(payload: Json): Promise<unknown> {
    const res = await rpcFetch(this.rpcUrl, { method: "POST", body: JSON.stringify(payload) });
    const text = await res.text();
    if (!res.ok) throw new Error(`chain ${this.chainId}: HTTP ${res.status} ${res.statusText}: ${text.slice(0, 300)}`);
    return JSON.parse(text);
  }

  async rpc<T = unknown>(method: string, params: Json[] = []): Promise<T> {
    const body = (await this.post({ jsonrpc: "2.0", id: ++this.id, method, params })) as {
      result?: T;
      error?: { message: string; data?: unknown };
    };
    if (body.error) throw new Error(`${method} on chain ${this.chainId}: ${body.error.message}`);
    return body.result as T;
  }

  async batch(calls: { method: string; params: Json[] }[]): Promise<unknown[]> {
    if (calls.length === 0) return [];
    const body = (await this.post(calls.map((c, i) => ({ jsonrpc: "2.0", id: i, ...c })))) as {
      id: number;
      result?: unknown;
      error?: { message: string };
    }[];
    body.sort((a, b) => a.id - b.id);
    return body.map((r, i) => {
      if (r.error) throw new Error(`${calls[i]!.method} on chain ${this.chainId}: ${r.error.message}`);
      return r.result;
    });
  }

  /** Timestamp of the latest block; the next block must be later. */
  async syncClock(): Promise<number> {
    const block = await this.rpc<{ timestamp: Hex }>("eth_getBlockByNumber", ["latest", false]);
    this.lastTimestamp = Number(BigInt(block.timestamp));
    return this.lastTimestamp;
  }

  get clock(): number {
    return this.lastTimestamp;
  }

  private nextTimestamp(at: number): number {
    const ts = Math.max(at, this.lastTimestamp + 1);
    this.lastTimestamp = ts;
    return ts;
  }

  /** Mines empty blocks at the given timestamps (each after the previous block). */
  async mineAt(timestamps: number[]): Promise<void> {
    const t0 = performance.now();
    const calls: { method: string; params: Json[] }[] = [];
    for (const t of timestamps) {
      calls.push({ method: "evm_mine", params: [this.nextTimestamp(t)] });
    }
    for (let i = 0; i < calls.length; i += 500) await this.batch(calls.slice(i, i + 500));
    this.blockCount += timestamps.length;
    this.timing.mine += performance.now() - t0;
  }

  /** Sends one transaction in its own block at `at` (or just after the previous block). */
  async send(from: Address, to: Address | null, data: Hex, what: string, at = 0): Promise<RpcReceipt> {
    const t0 = performance.now();
    const ts = this.nextTimestamp(at);
    const tx: Record<string, Json> = { from, data, gas: "0x1c9c380", gasPrice: "0x0" };
    if (to) tx.to = to;
    const receipt = await this.sendSync(ts, tx);
    this.txCount++;
    this.blockCount++;
    if (receipt.status !== "0x1") {
      const reason = await this.revertReason(from, to, data, receipt.blockNumber);
      throw new Error(`chain ${this.chainId}: ${what} reverted (${reason}) in tx ${receipt.transactionHash}`);
    }
    this.record(receipt, ts);
    this.timing.send += performance.now() - t0;
    return receipt;
  }

  /**
   * One request: the next block's timestamp, then the transaction, answered with its receipt once
   * automine has mined it (`eth_sendTransactionSync`, EIP-7966; anvil keeps a batch's order).
   */
  private async sendSync(ts: number, tx: Record<string, Json>): Promise<RpcReceipt> {
    const [, receipt] = (await this.batch([
      { method: "evm_setNextBlockTimestamp", params: [ts] },
      { method: "eth_sendTransactionSync", params: [tx] },
    ])) as [unknown, RpcReceipt];
    return receipt;
  }

  /**
   * Runs `fn` with the events of every transaction it sends recorded in `offManifestEvents`
   * instead of `events`. Calls on one session are sequential, so the switch is never shared.
   */
  async offManifest<T>(fn: () => Promise<T>): Promise<T> {
    const before = this.sink;
    this.sink = this.offManifestEvents;
    try {
      return await fn();
    } finally {
      this.sink = before;
    }
  }

  /**
   * Sends a transaction that must fail, with explicit gas (no estimate, which would refuse it), in
   * its own block at `at`; throws if it succeeds. Returns the receipt (status 0x0).
   */
  async sendReverting(from: Address, to: Address, data: Hex, gas: bigint, what: string, at = 0): Promise<RpcReceipt> {
    const t0 = performance.now();
    const ts = this.nextTimestamp(at);
    const tx: Record<string, Json> = { from, to, data, gas: `0x${gas.toString(16)}`, gasPrice: "0x0" };
    const receipt = await this.sendSync(ts, tx);
    this.txCount++;
    this.blockCount++;
    this.timing.send += performance.now() - t0;
    if (receipt.status === "0x1") {
      throw new Error(`chain ${this.chainId}: ${what} was meant to fail: tx ${receipt.transactionHash}`);
    }
    return receipt;
  }

  /**
   * Sends several transactions in one block at `at` (automine off while they are pooled; each
   * with its explicit gas, so they must fit the block's 30 M together). Every one must succeed.
   * From one sender they are mined in the order given.
   */
  async sendBlock(txs: PlannedTx[], at = 0): Promise<RpcReceipt[]> {
    if (txs.length === 0) return [];
    const t0 = performance.now();
    const ts = this.nextTimestamp(at);
    await this.rpc("evm_setAutomine", [false]);
    let hashes: Hex[];
    try {
      hashes = (await this.batch(
        txs.map((t) => ({
          method: "eth_sendTransaction",
          params: [{ from: t.from, to: t.to, data: t.data, gas: `0x${t.gas.toString(16)}`, gasPrice: "0x0" }],
        })),
      )) as Hex[];
      await this.rpc("evm_mine", [ts]);
    } finally {
      await this.rpc("evm_setAutomine", [true]);
    }
    const receipts = await this.receipts(hashes, txs);
    for (const [i, r] of receipts.entries()) {
      if (r.status !== "0x1") {
        const reason = await this.revertReason(txs[i]!.from, txs[i]!.to, txs[i]!.data, r.blockNumber);
        throw new Error(`chain ${this.chainId}: ${txs[i]!.what} reverted (${reason}) in tx ${hashes[i]}`);
      }
      this.record(r, ts);
    }
    if (new Set(receipts.map((r) => r.blockNumber)).size !== 1) {
      throw new Error(`chain ${this.chainId}: a block of ${txs.length} transactions was split (gas?)`);
    }
    this.txCount += txs.length;
    this.blockCount++;
    this.timing.send += performance.now() - t0;
    return receipts;
  }

  /** The receipts of transactions in a block evm_mine has mined, in one request. */
  private async receipts(hashes: Hex[], txs: PlannedTx[]): Promise<RpcReceipt[]> {
    const got = (await this.batch(
      hashes.map((h) => ({ method: "eth_getTransactionReceipt", params: [h] })),
    )) as (RpcReceipt | null)[];
    return got.map((r, i) => {
      if (!r) throw new Error(`chain ${this.chainId}: ${txs[i]!.what}: no receipt for ${hashes[i]}`);
      return r;
    });
  }

  private async revertReason(from: Address, to: Address | null, data: Hex, block: Hex): Promise<string> {
    try {
      const parent = `0x${(BigInt(block) - 1n).toString(16)}`;
      await this.rpc("eth_call", [{ from, ...(to ? { to } : {}), data, gas: "0x1c9c380" }, parent]);
      return "no reason: the call succeeds on the parent block";
    } catch (err) {
      return (err as Error).message;
    }
  }

  private record(receipt: RpcReceipt, timestamp: number): void {
    for (const log of receipt.logs) {
      const event = EVENTS_BY_TOPIC.get(log.topics[0]);
      if (!event) continue; // not one of our contracts' events
      let decoded: { eventName: string; args: unknown };
      try {
        decoded = decodeEventLog({ abi: [event.item], topics: log.topics, data: log.data }) as typeof decoded;
      } catch {
        continue; // the same signature with other indexed arguments: not ours
      }
      this.sink.push({
        chainId: this.chainId,
        address: log.address.toLowerCase() as Address,
        event: decoded.eventName,
        signature: event.signature,
        args: normaliseArgs(decoded.args),
        blockNumber: Number(BigInt(receipt.blockNumber)),
        timestamp,
        txHash: receipt.transactionHash,
        logIndex: Number(BigInt(log.logIndex)),
      });
    }
  }

  async deploy<N extends ContractName>(from: Address, name: N, args: readonly unknown[], at = 0): Promise<Address> {
    const data = encodeDeployData({ abi: ABIS[name] as Abi, bytecode: bytecode(name), args: args as unknown[] });
    const receipt = await this.send(from, null, data, `deploy ${name}`, at);
    if (!receipt.contractAddress) throw new Error(`deploy ${name}: no contract address`);
    return getAddress(receipt.contractAddress);
  }

  async call<N extends ContractName, F extends ContractFunctionName<(typeof ABIS)[N], "nonpayable" | "payable">>(
    from: Address,
    name: N,
    to: Address,
    functionName: F,
    args: ContractFunctionArgs<(typeof ABIS)[N], "nonpayable" | "payable", F>,
    at = 0,
  ): Promise<RpcReceipt> {
    const data = encodeFunctionData({ abi: ABIS[name] as Abi, functionName, args: args as unknown[] } as never);
    return this.send(from, to, data, `${name}.${String(functionName)}`, at);
  }

  async read<N extends ContractName, F extends ContractFunctionName<(typeof ABIS)[N], "view" | "pure">>(
    name: N,
    to: Address,
    functionName: F,
    args: ContractFunctionArgs<(typeof ABIS)[N], "view" | "pure", F>,
  ): Promise<unknown> {
    const abi = ABIS[name] as Abi;
    const data = encodeFunctionData({ abi, functionName, args: args as unknown[] } as never);
    const t0 = performance.now();
    const ret = await this.rpc<Hex>("eth_call", [{ to, data }, "latest"]);
    this.timing.read += performance.now() - t0;
    return decodeFunctionResult({ abi, functionName, data: ret } as never);
  }

  async readBig<N extends ContractName, F extends ContractFunctionName<(typeof ABIS)[N], "view" | "pure">>(
    name: N,
    to: Address,
    functionName: F,
    args: ContractFunctionArgs<(typeof ABIS)[N], "view" | "pure", F>,
  ): Promise<bigint> {
    return (await this.read(name, to, functionName, args)) as bigint;
  }

  async blockNumber(): Promise<number> {
    return Number(BigInt(await this.rpc<Hex>("eth_blockNumber")));
  }
}

/**
 * topic0 -> the first of our events with that selector (the one decodeEventLog would pick from
 * ALL_EVENTS_ABI) and its signature, hashed once rather than for every log.
 */
const EVENTS_BY_TOPIC = new Map<Hex, { item: Abi[number]; signature: string }>();
for (const item of ALL_EVENTS_ABI) {
  if (item.type !== "event") continue;
  const signature = eventSignature(item);
  const topic = toEventSelector(signature);
  if (!EVENTS_BY_TOPIC.has(topic)) EVENTS_BY_TOPIC.set(topic, { item, signature });
}

export function eventSignature(item: Abi[number]): string {
  if (item.type !== "event") throw new Error("not an event");
  return `${item.name}(${item.inputs.map((i) => i.type).join(",")})`;
}

function normaliseArgs(args: unknown): Record<string, string | boolean | number> {
  const out: Record<string, string | boolean | number> = {};
  if (!args || typeof args !== "object") return out;
  for (const [k, v] of Object.entries(args as Record<string, unknown>)) {
    if (typeof v === "bigint") out[k] = v.toString();
    else if (typeof v === "string") out[k] = v.startsWith("0x") && v.length === 42 ? v.toLowerCase() : v;
    else if (typeof v === "boolean" || typeof v === "number") out[k] = v;
    else out[k] = String(v);
  }
  return out;
}
