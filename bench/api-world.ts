/**
 * The chain side of bench:api: the protocol world (scripts/lib/protocol-world.ts) on an anvil of
 * its own, with a history: it starts `days` ago, its subaccount opens a position in every venue
 * (Aave, the Morpho lending vault, Uniswap v3, a loan lent and one borrowed), a lending pool's
 * loans are deployed one after another over the days in every state a loan book shows, one of
 * the subaccount's transactions is mined reverting, and blocks are mined up to now. Then the
 * chain lives on: a block every `blockSeconds`, as a live chain would.
 */
import type { Abi, Address, Hex } from "viem";
import { LoanAbi } from "../abis/LoanAbi.js";
import { LoanRegistryAbi } from "../abis/LoanRegistryAbi.js";
import type { ChainProtocols } from "../config/registry.js";
import { aave as aaveArt } from "../contracts/devnet/protocols/artifacts.js";
import { createLoan } from "../contracts/devnet/protocols/loans.js";
import { ERC20_ABI } from "../contracts/devnet/protocols/tx.js";
import { rpcClient } from "../onchain/client.js";
import {
  actor,
  buildWorld,
  call,
  mineRaw,
  moduleCall,
  openPositions,
  protocolsEntry,
  type World,
} from "../scripts/lib/protocol-world.js";

export interface PoolLoan {
  address: Address;
  borrower: Address;
  principalToken: Address;
  principal: bigint;
  aprBps: bigint;
  termDays: bigint;
  state: string;
  blockNumber: bigint;
  timestamp: bigint;
  txHash: Hex;
  logIndex: number;
}

export interface ApiBenchWorld {
  world: World;
  chainId: number;
  rpcUrl: string;
  /** the registry's protocols entry of the chain, with the perp bridges */
  protocols: ChainProtocols;
  /** the subaccount Safe, lower-case */
  subaccount: Address;
  lendingVault: Address;
  poolLoans: PoolLoan[];
  /** a transaction of the subaccount's module that reverted (a stranger's call: NotTrader) */
  revertedTx: Hex;
  /** stops the live blocks (the anvil stops with the bench's other processes) */
  stopBlocks(): void;
}

export interface ApiBenchWorldOptions {
  port: number;
  chainId: number;
  /** the lending pool whose loans these are (a vault of the bench's registry on `chainId`) */
  pool: Address;
  loans: number;
  days: number;
  /** blocks mined over the history, besides those of the transactions */
  blocks: number;
  blockSeconds: number;
}

const E18 = 10n ** 18n;
const E6 = 10n ** 6n;

export async function buildApiBenchWorld(o: ApiBenchWorldOptions, log: (m: string) => void): Promise<ApiBenchWorld> {
  const now = Math.floor(Date.now() / 1000);
  const w = await buildWorld("bench-api/world", o.port, o.chainId, { genesisTimestamp: now - o.days * 86_400 });
  const lc = (a: string) => a.toLowerCase() as Address;
  const [usdc, weth] = [w.token("USDC"), w.token("WETH")];
  await openPositions(w, { lender: actor("bench:lender"), borrower: actor("bench:borrower") });
  log(`world on chain ${o.chainId}: protocols deployed, subaccount ${w.sub.safe} in every venue`);

  // the pool's loans, one every few hours of the history, in the loan book's states
  const ctx = { s: w.s, from: w.deployer };
  const pool = o.pool;
  const mint = (t: Address, to: Address, amount: bigint) =>
    w.s.send(w.deployer, t, call(ERC20_ABI, "mint", [to, amount]), "mint");
  const step = Math.max(1, Math.floor(o.blocks / (o.loans + 1)));
  // the transactions' blocks are a second apart: the mined ones share the rest of the history
  const txBlocks = 5 * o.loans + 2;
  const interval = Math.max(1, Math.floor((now - 120 - w.s.clock - txBlocks) / o.blocks));
  const mineSteps = async (n: number) => {
    await w.s.rpc("anvil_mine", [`0x${n.toString(16)}`, `0x${interval.toString(16)}`]);
    await w.s.syncClock();
  };
  const states = ["active", "active", "active", "funded", "preapproved", "cancelled"] as const;
  const created: { address: Address; spec: Omit<PoolLoan, "blockNumber" | "timestamp" | "txHash" | "logIndex"> }[] = [];
  for (let i = 0; i < o.loans; i++) {
    await mineSteps(step);
    const inWeth = i % 4 === 3;
    const token = inWeth ? weth : usdc;
    const principal = inWeth ? BigInt(5 + (i % 7)) * E18 : BigInt(20_000 + 5_000 * (i % 9)) * E6;
    const spec = {
      borrower: actor(`bench:pool-borrower-${i % 7}`),
      principalToken: lc(token),
      principal,
      aprBps: BigInt(600 + 50 * (i % 11)),
      termDays: BigInt(90 + 30 * (i % 10)),
      state: states[i % states.length]!,
    };
    const loan = await createLoan(ctx, w.p.loans.registry, {
      lender: pool,
      borrower: spec.borrower,
      principalToken: token,
      principal,
      aprWithTwoDecimals: spec.aprBps,
      termDays: spec.termDays,
    });
    if (spec.state !== "preapproved") {
      await mint(token, pool, principal);
      await w.s.send(pool, token, call(ERC20_ABI, "approve", [loan, principal]), "approve");
      await w.s.send(pool, loan, call(LoanAbi as Abi, "fund"), "fund");
    }
    if (spec.state === "active") {
      await w.s.send(spec.borrower, loan, call(LoanAbi as Abi, "borrowerCommitment"), "commit");
      await w.s.send(spec.borrower, loan, call(LoanAbi as Abi, "borrowerWithdraw", [principal]), "draw");
    }
    if (spec.state === "cancelled") await w.s.send(pool, loan, call(LoanAbi as Abi, "cancel"), "cancel");
    created.push({ address: lc(loan), spec: { address: lc(loan), ...spec } });
  }
  // where each loan was registered (its indexed row's block, transaction and log)
  const client = rpcClient(w.anvil.rpcUrl);
  const events = await client.getContractEvents({
    address: w.p.loans.registry,
    abi: LoanRegistryAbi,
    eventName: "LoanRegistered",
    fromBlock: 0n,
  });
  const registered = new Map(events.map((l) => [lc(l.args.loan!), l]));
  const poolLoans: PoolLoan[] = [];
  for (const c of created) {
    const ev = registered.get(c.address);
    if (!ev) throw new Error(`loan ${c.address}: no LoanRegistered`);
    const block = await client.getBlock({ blockNumber: ev.blockNumber });
    poolLoans.push({
      ...c.spec,
      blockNumber: ev.blockNumber,
      timestamp: block.timestamp,
      txHash: ev.transactionHash,
      logIndex: ev.logIndex,
    });
  }
  // a stranger's call through the subaccount's module, mined reverting (NotTrader)
  const pl = w.p.aave.pool;
  const revertedTx = await mineRaw(
    w,
    actor("bench:stranger"),
    w.sub.module,
    moduleCall("execute", [pl, 0n, call(aaveArt.pool().abi, "borrow", [usdc, 1_000n * E6, 2n, 0, w.sub.safe])]),
  );
  await mineSteps(Math.max(1, o.blocks - step * o.loans));
  // the head at the clock: from here on anvil times its blocks by the clock
  await w.s.mineAt([Math.floor(Date.now() / 1000)]);
  const head = await w.s.rpc<{ number: Hex; timestamp: Hex }>("eth_getBlockByNumber", ["latest", false]);
  log(
    `world: ${o.loans} pool loans, head ${Number(head.number)} at ` +
      `${new Date(Number(head.timestamp) * 1000).toISOString()}`,
  );
  // from now on a block every blockSeconds, timestamped by the clock
  let mining = false;
  const timer = setInterval(() => {
    if (mining) return;
    mining = true;
    w.s
      .rpc("evm_mine", [])
      .catch(() => {})
      .finally(() => {
        mining = false;
      });
  }, o.blockSeconds * 1000);
  timer.unref();
  const protocols: ChainProtocols = {
    ...protocolsEntry(w),
    perp: { bridgeA: lc(w.p.perp.bridgeA), bridgeB: lc(w.p.perp.bridgeB), core: null },
  };
  return {
    world: w,
    chainId: o.chainId,
    rpcUrl: w.anvil.rpcUrl,
    protocols,
    subaccount: lc(w.sub.safe),
    lendingVault: lc(w.p.morpho.lendingVault),
    poolLoans,
    revertedTx,
    stopBlocks: () => clearInterval(timer),
  };
}
