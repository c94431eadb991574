/**
 * Bulk vault activity for the indexer benchmark: after the devnet simulator has deployed the
 * vaults, many wallets deposit into every vault of the chain and pass shares around. Transactions
 * are packed into few blocks (automine off, a batch of eth_sendTransaction from impersonated
 * wallets, then evm_mine at a chosen timestamp), because anvil keeps every block's state in memory.
 */
import { type Address, encodeFunctionData, type Hex, maxUint256, parseUnits } from "viem";
import { LendingPoolAbi } from "../abis/LendingPoolAbi.js";
import { MockERC20Abi } from "../abis/MockERC20Abi.js";
import { TokenizedVaultV2Abi } from "../abis/TokenizedVaultV2Abi.js";
import type { ChainResult } from "../contracts/devnet/index.js";
import { actorAddress, Rng } from "../contracts/devnet/random.js";
import { VAULT_SPECS } from "../contracts/devnet/scenario.js";
import { ChainSession } from "../contracts/devnet/session.js";

export interface BulkOptions {
  chain: ChainResult;
  rpcUrl: string;
  seed: string;
  /** distinct sender wallets; each sends at most one transaction per block */
  wallets: number;
  /** blocks of bulk activity (wallet setup blocks come on top) */
  blocks: number;
  txsPerBlock: number;
  /** share of transactions that are deposits once wallets hold shares (the rest are share transfers) */
  depositShare: number;
  /** seconds between consecutive blocks */
  blockSpacing: number;
  /** empty blocks mined at the end, so every event is older than Ponder's finality window */
  paddingBlocks: number;
  /** whether a log reaches one of the indexer's handlers */
  isIndexed: (address: Address, topic0: Hex | undefined) => boolean;
  log: (msg: string) => void;
}

export interface BulkResult {
  chainId: number;
  blocks: number;
  txs: number;
  deposits: number;
  transfers: number;
  /** logs of the bulk phase that reach the indexer's handlers */
  indexedLogs: number;
  headBlock: number;
  seconds: number;
}

interface Receipt {
  status: Hex;
  transactionHash: Hex;
  logs: { address: Address; topics: Hex[]; data: Hex }[];
}

interface Tx {
  from: Address;
  to: Address;
  data: Hex;
}

const TRANSFER_TOPIC: Hex = "0xddf252ad1be2c89b69c2b068fc378daa952ba7f163c4a11628f55a4df523b3ef";
const SETUP_TXS_PER_BLOCK = 200;

const lc = (a: string) => a.toLowerCase() as Address;
const hex = (n: number | bigint) => `0x${n.toString(16)}` as Hex;

export async function bulkActivity(opts: BulkOptions): Promise<BulkResult> {
  const t0 = performance.now();
  const { chain } = opts;
  const s = new ChainSession(chain.chainId, opts.rpcUrl);
  const rng = new Rng(`${opts.seed}:bench:${chain.chainId}`);
  if (opts.wallets < opts.txsPerBlock)
    throw new Error(`bench: need at least txsPerBlock (${opts.txsPerBlock}) wallets`);

  const vaults = chain.vaults.map((reg) => {
    const spec = VAULT_SPECS.find((v) => v.chainId === chain.chainId && v.family === reg.family);
    if (!spec) throw new Error(`bench: no devnet spec for ${reg.family} on chain ${chain.chainId}`);
    const [lo, hi] = spec.depositRange;
    const max = Math.max(lo, hi / 20);
    return { reg, shareToken: lc(reg.receiptToken ?? reg.address), lo, max, decimals: reg.asset.decimals };
  });
  const wallets = Array.from({ length: opts.wallets }, (_, i) => actorAddress(opts.seed, "bench-wallet", i));
  const nonces = new Map<Address, number>(wallets.map((w) => [w, 0]));
  const balances = new Map<string, bigint>(); // `${shareToken}:${wallet}` (lower case) -> shares
  const units = (whole: number, decimals: number) => parseUnits(whole.toFixed(Math.min(decimals, 6)), decimals);

  let ts = await s.syncClock();
  let head = await s.blockNumber();
  let txs = 0;
  let deposits = 0;
  let transfers = 0;
  let indexedLogs = 0;
  let blocks = 0;

  /** Sends the transactions into the pool, mines one block with them, checks and returns receipts. */
  const mineBlock = async (list: Tx[]): Promise<Receipt[]> => {
    for (const tx of list) {
      if (!nonces.has(tx.from))
        nonces.set(tx.from, Number(BigInt(await s.rpc<Hex>("eth_getTransactionCount", [tx.from, "latest"]))));
    }
    const calls = list.map((tx) => {
      const nonce = nonces.get(tx.from) ?? 0;
      nonces.set(tx.from, nonce + 1);
      return {
        method: "eth_sendTransaction",
        params: [{ from: tx.from, to: tx.to, data: tx.data, gas: "0x7a120", gasPrice: "0x0", nonce: hex(nonce) }],
      };
    });
    await s.batch(calls);
    ts += opts.blockSpacing;
    await s.rpc("evm_mine", [ts]);
    head += 1;
    blocks += 1;
    const receipts = await s.rpc<Receipt[] | null>("eth_getBlockReceipts", [hex(head)]);
    if (!receipts || receipts.length !== list.length) {
      throw new Error(
        `chain ${chain.chainId}: block ${head} holds ${receipts?.length ?? 0} of the ${list.length} transactions sent`,
      );
    }
    const failed = receipts.findIndex((r) => r.status !== "0x1");
    if (failed >= 0) {
      const tx = list[failed]!;
      let reason = "no reason: the call succeeds on the parent block";
      try {
        await s.rpc("eth_call", [{ from: tx.from, to: tx.to, data: tx.data, gas: "0x7a120" }, hex(head - 1)]);
      } catch (err) {
        reason = (err as Error).message;
      }
      throw new Error(
        `chain ${chain.chainId}: transaction ${receipts[failed]!.transactionHash} (block ${head}, from ${tx.from} ` +
          `to ${tx.to}) reverted: ${reason}`,
      );
    }
    txs += list.length;
    for (const r of receipts) {
      for (const l of r.logs) {
        if (opts.isIndexed(l.address, l.topics[0])) indexedLogs++;
        const token = lc(l.address);
        if (l.topics[0] !== TRANSFER_TOPIC || !vaults.some((v) => v.shareToken === token)) continue;
        const from = lc(`0x${l.topics[1]!.slice(26)}`);
        const to = lc(`0x${l.topics[2]!.slice(26)}`);
        const value = BigInt(l.data);
        balances.set(`${token}:${from}`, (balances.get(`${token}:${from}`) ?? 0n) - value);
        balances.set(`${token}:${to}`, (balances.get(`${token}:${to}`) ?? 0n) + value);
      }
    }
    return receipts;
  };

  await s.rpc("evm_setAutomine", [false]);
  try {
    // The simulated history may end inside a pause (its calendar is compressed for short
    // histories): the operator reopens such vaults first.
    const setup: Tx[] = [];
    for (const v of vaults) {
      const abi = v.reg.family === "lendingPool" ? LendingPoolAbi : TokenizedVaultV2Abi;
      const raw = await s.rpc<Hex>("eth_call", [
        { to: v.reg.address, data: encodeFunctionData({ abi, functionName: "depositsPaused" }) },
        "latest",
      ]);
      if (BigInt(raw) === 0n) continue;
      opts.log(
        `chain ${chain.chainId}: ${v.reg.name} is paused at the end of the simulated history; its operator unpauses it`,
      );
      setup.push({
        from: v.reg.operator,
        to: v.reg.address,
        data: encodeFunctionData({ abi, functionName: "pauseDepositsAndWithdrawals", args: [false, false] }),
      });
    }
    // Wallet setup: asset for all their deposits, and allowances.
    const expected = (opts.blocks * opts.txsPerBlock * opts.depositShare) / opts.wallets / vaults.length;
    for (const w of wallets) {
      for (const v of vaults) {
        const amount = units(v.max * Math.ceil(expected * 2 + 10), v.decimals);
        setup.push({
          from: w,
          to: v.reg.asset.address,
          data: encodeFunctionData({ abi: MockERC20Abi, functionName: "mint", args: [w, amount] }),
        });
        setup.push({
          from: w,
          to: v.reg.asset.address,
          data: encodeFunctionData({ abi: MockERC20Abi, functionName: "approve", args: [v.reg.address, maxUint256] }),
        });
      }
    }
    for (let i = 0; i < setup.length; i += SETUP_TXS_PER_BLOCK)
      await mineBlock(setup.slice(i, i + SETUP_TXS_PER_BLOCK));
    const setupBlocks = blocks;
    const setupIndexed = indexedLogs;

    for (let b = 0; b < opts.blocks; b++) {
      const list: Tx[] = [];
      for (let k = 0; k < opts.txsPerBlock; k++) {
        const w = wallets[(b * opts.txsPerBlock + k) % wallets.length]!;
        const held = vaults.filter((v) => (balances.get(`${v.shareToken}:${lc(w)}`) ?? 0n) > 0n);
        if (held.length > 0 && !rng.chance(opts.depositShare)) {
          const v = rng.pick(held);
          const amount = (balances.get(`${v.shareToken}:${lc(w)}`) ?? 0n) / BigInt(rng.int(4, 20));
          if (amount > 0n) {
            let to = rng.pick(wallets);
            if (to === w) to = wallets[(wallets.indexOf(w) + 1) % wallets.length]!;
            list.push({
              from: w,
              to: v.shareToken,
              data: encodeFunctionData({ abi: MockERC20Abi, functionName: "transfer", args: [to, amount] }),
            });
            transfers++;
            continue;
          }
        }
        const v = rng.pick(vaults);
        const amount = units(v.lo + (v.max - v.lo) * rng.next(), v.decimals);
        const data =
          v.reg.family === "lendingPool"
            ? encodeFunctionData({ abi: LendingPoolAbi, functionName: "deposit", args: [amount, w] })
            : encodeFunctionData({
                abi: TokenizedVaultV2Abi,
                functionName: "deposit",
                args: [v.reg.asset.address, amount, w],
              });
        list.push({ from: w, to: v.reg.address, data });
        deposits++;
      }
      await mineBlock(list);
      if ((b + 1) % 200 === 0 || b + 1 === opts.blocks) {
        opts.log(
          `chain ${chain.chainId}: bulk block ${b + 1}/${opts.blocks} (head ${head}), ${deposits} deposits, ` +
            `${transfers} share transfers, ` +
            `${indexedLogs} indexed events, ${((performance.now() - t0) / 1000).toFixed(1)} s`,
        );
      }
    }
    if (setupIndexed !== 0)
      opts.log(
        `chain ${chain.chainId}: note: wallet setup (${setupBlocks} blocks) emitted ${setupIndexed} indexed events`,
      );

    // Padding: empty blocks so that the whole history is older than the finality window.
    const padding = Array.from({ length: opts.paddingBlocks }, () => {
      ts += opts.blockSpacing;
      return { method: "evm_mine", params: [ts] };
    });
    for (let i = 0; i < padding.length; i += 200) await s.batch(padding.slice(i, i + 200));
    head += opts.paddingBlocks;
    blocks += opts.paddingBlocks;
  } finally {
    await s.rpc("evm_setAutomine", [true]).catch(() => {});
  }
  const actualHead = await s.blockNumber();
  if (actualHead !== head) throw new Error(`chain ${chain.chainId}: head is ${actualHead}, expected ${head}`);
  return {
    chainId: chain.chainId,
    blocks,
    txs,
    deposits,
    transfers,
    indexedLogs,
    headBlock: head,
    seconds: (performance.now() - t0) / 1000,
  };
}
