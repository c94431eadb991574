/**
 * The simulated protocol world is real (contracts/devnet/world.ts), read from the shared test
 * devnet at its head: the subaccounts are Safes with SubaccountModule at the same address on both
 * chains and hold Aave, Morpho and Uniswap v3 positions; the pools and the Morpho oracle sit at
 * the feeds' prices; every deliberately failed transaction of the manifest is mined, reverted,
 * and reverts with the reason the manifest records; the registry loans and the perp deposits with
 * their core-ledger outcomes are on chain as the manifest records them.
 */
import {
  type Abi,
  type Address,
  createPublicClient,
  decodeFunctionResult,
  encodeFunctionData,
  getAddress,
  type Hex,
  http,
  parseEventLogs,
} from "viem";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { CoreLedgerAbi } from "../../abis/CoreLedgerAbi.js";
import { LoanAbi } from "../../abis/LoanAbi.js";
import { LoanRegistryAbi } from "../../abis/LoanRegistryAbi.js";
import { MorphoLendingVaultAbi } from "../../abis/MorphoLendingVaultAbi.js";
import { PerpBridgeAAbi } from "../../abis/PerpBridgeAAbi.js";
import { SubaccountModuleAbi } from "../../abis/SubaccountModuleAbi.js";
import { loadRegistry, type Registry } from "../../config/registry.js";
import type { Manifest } from "../../contracts/devnet/index.js";
import {
  aave as aaveArt,
  morphoArtifacts,
  safe as safeArt,
  uniswap as uniArt,
} from "../../contracts/devnet/protocols/artifacts.js";
import { morphoOraclePrice, readLoan, sqrtPriceX96 } from "../../contracts/devnet/protocols/index.js";
import { ERC20_ABI, PRICE_FEED_ABI } from "../../contracts/devnet/protocols/tx.js";
import type { ChainResult } from "../../contracts/devnet/simulate.js";
import { decodeRevert, type WorldSubaccount } from "../../contracts/devnet/world.js";
import { loadManifest, rpcCall } from "../helpers.js";

const devnet = inject("devnet");
let manifest: Manifest;
let registry: Registry;

beforeAll(() => {
  manifest = loadManifest(devnet.manifestFile);
  registry = loadRegistry(devnet.registryFile);
});

function rpcUrl(chainId: number): string {
  return devnet.chains.find((c) => c.chainId === chainId)!.rpcUrl;
}

async function read<T>(c: ChainResult, to: Address, abi: Abi, functionName: string, args: readonly unknown[] = []) {
  const data = encodeFunctionData({ abi, functionName, args: args as unknown[] });
  const ret = await rpcCall<Hex>(rpcUrl(c.chainId), "eth_call", [{ to, data }, "latest"]);
  return decodeFunctionResult({ abi, functionName, data: ret }) as T;
}

const role = (c: ChainResult, r: WorldSubaccount["role"]) => c.world.subaccounts.find((x) => x.role === r)!;
const reserve = (c: ChainResult, symbol: string) => c.world.protocols.aave.reserves.find((r) => r.symbol === symbol)!;

describe("the simulated protocol world", () => {
  it("subaccounts are Safes with their module, the same addresses on both chains, named by the registry", async () => {
    const [a, b] = manifest.chains as [ChainResult, ChainResult];
    const pairs = (c: ChainResult) => c.world.subaccounts.map((x) => [x.label, x.safe, x.module]);
    expect(pairs(b)).toEqual(pairs(a));
    expect(a.governance.safe).toBe(b.governance.safe);
    const safeAbi = safeArt.singletonL2().abi;
    for (const c of manifest.chains) {
      expect(await read<string>(c, c.governance.safe, safeAbi, "VERSION")).toBe("1.5.0");
      expect(await read<bigint>(c, c.governance.safe, safeAbi, "getThreshold")).toBe(2n);
      for (const v of c.vaults) {
        const subs = c.world.subaccounts.filter((x) => x.vault.address === getAddress(v.address) && x.registered);
        expect(v.subaccounts).toEqual(subs.map((x) => x.safe.toLowerCase()));
        expect(v.subaccounts.length).toBe(2);
      }
      for (const x of c.world.subaccounts) {
        const [modules] = await read<[Address[], Address]>(c, x.safe, safeAbi, "getModulesPaginated", [
          "0x0000000000000000000000000000000000000001",
          10n,
        ]);
        expect(modules, x.label).toEqual([x.module]);
        expect(await read<Address>(c, x.module, SubaccountModuleAbi as Abi, "safe")).toBe(x.safe);
      }
    }
  });

  it("the subaccounts hold Aave aTokens and debt, lending-vault shares, a Morpho loan and v3 positions", async () => {
    for (const c of manifest.chains) {
      const lev = role(c, "leveraged");
      const lender = role(c, "lender");
      const trader = role(c, "trader");
      const bal = (t: Address, who: Address) => read<bigint>(c, t, ERC20_ABI, "balanceOf", [who]);
      expect(await bal(reserve(c, "WETH").aToken, lev.safe)).toBeGreaterThan(0n);
      expect(await bal(reserve(c, "USDC").variableDebtToken, lev.safe)).toBeGreaterThan(0n);
      expect(await bal(reserve(c, "USDC").aToken, lender.safe)).toBeGreaterThan(0n);
      const m = c.world.protocols.morpho;
      expect(await bal(m.lendingVault, lender.safe)).toBeGreaterThan(0n);
      const shares = await read<bigint>(c, m.lendingVault, MorphoLendingVaultAbi as Abi, "balanceOf", [lender.safe]);
      expect(shares).toBeGreaterThan(0n);
      const pos = await read<readonly [bigint, bigint, bigint]>(c, m.morpho, morphoArtifacts().Morpho.abi, "position", [
        m.marketId,
        trader.safe,
      ]);
      expect(pos[1], "Morpho borrow shares").toBeGreaterThan(0n);
      expect(pos[2], "Morpho collateral").toBeGreaterThan(0n);
      // the leveraged subaccount's health factor stays near (above, mostly) its minimum
      const account = await read<readonly bigint[]>(
        c,
        c.world.protocols.aave.pool,
        aaveArt.pool().abi,
        "getUserAccountData",
        [lev.safe],
      );
      const hf = Number(account[5]! / 10n ** 14n) / 10_000;
      expect(lev.minHealthFactor).toBe(1.15);
      // the registry gives it that minimum under its vault, on whichever chain the vault is
      const safe = lev.safe.toLowerCase() as Address;
      const entry = registry.evm.find((v) => v.subaccounts.includes(safe));
      expect(entry?.subaccountSettings?.[safe]?.minHealthFactor).toBe(1.15);
      expect(hf).toBeGreaterThan(1.0);
      expect(hf).toBeLessThan(1.5);
      // a held position owned by the Safe, a staked one deposited for it
      const npm = c.world.protocols.uniswap.positionManager;
      const held = c.world.positions.filter((p) => p.subaccount === trader.safe);
      expect(held.map((p) => p.staked).sort()).toEqual([false, true]);
      for (const p of held) {
        if (p.staked) {
          const d = await read<readonly unknown[]>(
            c,
            c.world.protocols.uniswap.staker,
            uniArt.staker().abi,
            "deposits",
            [BigInt(p.tokenId)],
          );
          expect(d[0]).toBe(trader.safe);
        } else {
          expect(await read<Address>(c, npm, uniArt.positionManager().abi, "ownerOf", [BigInt(p.tokenId)])).toBe(
            trader.safe,
          );
          const position = await read<readonly unknown[]>(c, npm, uniArt.positionManager().abi, "positions", [
            BigInt(p.tokenId),
          ]);
          expect(position[7] as bigint, "liquidity").toBeGreaterThan(0n);
        }
      }
      expect(c.world.actions.swap ?? 0).toBeGreaterThan(0);
    }
  });

  it("every pool's price is within 0.1 % of the feeds, and the Morpho oracle equals them", async () => {
    for (const c of manifest.chains) {
      const tokens = c.world.protocols.tokens;
      const feed = new Map<Address, bigint>();
      for (const t of tokens) feed.set(t.address, await read<bigint>(c, t.feed, PRICE_FEED_ABI, "latestAnswer"));
      for (const pool of c.world.protocols.uniswap.pools) {
        const t0 = tokens.find((t) => t.address === pool.token0)!;
        const t1 = tokens.find((t) => t.address === pool.token1)!;
        const target = sqrtPriceX96(feed.get(t0.address)!, t0.decimals, feed.get(t1.address)!, t1.decimals);
        const [sqrtP] = await read<readonly [bigint]>(c, pool.address, uniArt.pool().abi, "slot0");
        // price ratio = (sqrtP / target)^2, in parts per million
        const ratioPpm = (sqrtP * sqrtP * 1_000_000n) / (target * target);
        expect(Math.abs(Number(ratioPpm) - 1_000_000), `${c.chainId} pool ${pool.address}`).toBeLessThan(1_000);
      }
      const m = c.world.protocols.morpho;
      const col = tokens.find((t) => t.address === m.market.collateralToken)!;
      const loan = tokens.find((t) => t.address === m.market.loanToken)!;
      const expected = morphoOraclePrice(feed.get(col.address)!, col.decimals, feed.get(loan.address)!, loan.decimals);
      expect(await read<bigint>(c, m.oracle, morphoArtifacts().OracleMock.abi, "price")).toBe(expected);
    }
  });

  it("every failed transaction of the manifest is mined, reverted, with the reason the manifest records", async () => {
    for (const c of manifest.chains) {
      const kinds = c.world.failures.map((f) => f.kind).sort();
      expect(kinds).toEqual([
        "aave-36",
        "module-not-trader",
        "module-token-not-allowed",
        "safe-gs025",
        "slippage",
        "v2-slippage",
      ]);
      for (const f of c.world.failures) {
        const url = rpcUrl(c.chainId);
        const receipt = await rpcCall<{ status: Hex; blockNumber: Hex }>(url, "eth_getTransactionReceipt", [f.txHash]);
        expect(receipt.status, f.kind).toBe("0x0");
        expect(Number(BigInt(receipt.blockNumber))).toBe(f.blockNumber);
        const tx = await rpcCall<{ gas: Hex; from: Address; to: Address }>(url, "eth_getTransactionByHash", [f.txHash]);
        expect([BigInt(tx.gas).toString(), getAddress(tx.from), getAddress(tx.to)]).toEqual([f.gas, f.from, f.to]);
        const trace = await rpcCall<{ output?: Hex; error?: string }>(url, "debug_traceTransaction", [
          f.txHash,
          { tracer: "callTracer" },
        ]);
        expect(trace.error, f.kind).toBeDefined();
        expect(decodeRevert(trace.output ?? "0x"), f.kind).toBe(f.display);
      }
    }
  });

  it("the registry loans are on chain as the manifest says: lent and borrowed, repaid, called, late", async () => {
    for (const c of manifest.chains) {
      const client = createPublicClient({ transport: http(rpcUrl(c.chainId)) });
      const loans = c.world.loans;
      expect(loans.map((l) => l.key).sort()).toEqual([
        "borrowed-active",
        "borrowed-late",
        "borrowed-repaid",
        "lent-active",
        "lent-called",
        "lent-repaid",
      ]);
      const safes = new Map(c.world.subaccounts.map((x) => [x.label, x.safe]));
      const registry = c.world.protocols.loans.registry;
      const registered = parseEventLogs({
        abi: LoanRegistryAbi,
        eventName: "LoanRegistered",
        logs: await client.getLogs({ address: registry, fromBlock: 0n }),
      });
      for (const l of loans) {
        const v = await readLoan(client, l.address);
        const what = `${c.chainId} ${l.key}`;
        // the subaccount is the side the manifest says, and the registry announced the loan
        const safe = safes.get(l.subaccount);
        expect(l.side === "lent" ? v.lender : v.borrower, what).toBe(safe);
        expect([v.lender, v.borrower, v.principalToken], what).toEqual([l.lender, l.borrower, l.principalToken]);
        expect(
          registered.some((e) => getAddress(e.args.loan) === l.address),
          what,
        ).toBe(true);
        expect(v.initialPrincipalAmount.toString(), what).toBe(l.principal);
        expect(Number(v.apr), what).toBe(l.apr);
        expect(v.paymentIntervalInSeconds, what).toBe(l.paymentIntervalInSeconds);
        // the views now agree with the manifest's final ones (nothing acted on them since)
        expect(v.state, what).toBe(l.final.state);
        expect(v.called, what).toBe(l.final.called);
        expect(v.totalInterestRepaid.toString(), what).toBe(l.final.totalInterestRepaid);
        expect(v.principalAmount.toString(), what).toBe(l.final.principalAmount);
        if (v.state === "active") {
          expect(v.interestOwed + v.principalDebtOwed, what).toBeGreaterThan(0n);
          expect(v.principalDebtOwed.toString(), what).toBe(l.principal);
        }
        if (v.state === "closed") expect(v.principalDebtOwed, what).toBe(0n);
        for (const a of l.actions) {
          const r = await client.getTransactionReceipt({ hash: a.txHash });
          expect([r.status, Number(r.blockNumber)], `${what} ${a.kind}`).toEqual(["success", a.blockNumber]);
        }
      }
      const by = (key: string) => loans.find((l) => l.key === key)!;
      expect(["lent-repaid", "borrowed-repaid"].map((k) => by(k).final.state)).toEqual(["closed", "closed"]);
      expect(["lent-active", "borrowed-active", "lent-called"].map((k) => by(k).final.state)).toEqual([
        "active",
        "active",
        "active",
      ]);
      expect(by("lent-called").final.called).toBe(true);
      const late = by("borrowed-late");
      expect(late.final.late).toBe(true);
      expect(await client.readContract({ address: late.address, abi: LoanAbi, functionName: "isLate" })).toBe(true);
      expect(BigInt(late.final.totalInterestRepaid)).toBeGreaterThan(0n);
      for (const k of ["lent-active", "borrowed-active", "lent-called"]) {
        const isLate = await client.readContract({ address: by(k).address, abi: LoanAbi, functionName: "isLate" });
        expect(isLate, k).toBe(false);
      }
    }
  });

  it("perp deposits went through the modules on both bridges; the core ledger did what the manifest says", async () => {
    const core = manifest.chains.find((c) => c.world.protocols.core)!;
    const ledger = core.world.protocols.core!;
    expect(ledger.chainId).toBe(1);
    expect(ledger.relayer).toBe(core.world.perp.relayer);
    const coreClient = createPublicClient({ transport: http(rpcUrl(core.chainId)) });
    const ledgerLogs = await coreClient.getLogs({ address: ledger.ledger, fromBlock: 0n });
    const credited = parseEventLogs({ abi: CoreLedgerAbi, eventName: "Credited", logs: ledgerLogs });
    const rejected = parseEventLogs({ abi: CoreLedgerAbi, eventName: "Rejected", logs: ledgerLogs });
    for (const c of manifest.chains) {
      const client = createPublicClient({ transport: http(rpcUrl(c.chainId)) });
      const deposits = c.world.perp.deposits;
      const perp = c.world.protocols.perp;
      expect(new Set(deposits.map((d) => d.bridgeKind))).toEqual(new Set(["A", "B"]));
      expect(deposits.filter((d) => BigInt(d.amount) < BigInt(d.minimum))).toHaveLength(1);
      const logs = parseEventLogs({
        abi: PerpBridgeAAbi,
        eventName: "Deposited",
        logs: await client.getLogs({ address: [perp.bridgeA, perp.bridgeB], fromBlock: 0n }),
      });
      for (const d of deposits) {
        const what = `${c.chainId} ${d.coreHash}`;
        const ev = logs.find((l) => l.args.coreHash === d.coreHash);
        expect(ev, what).toBeDefined();
        expect([getAddress(ev!.address), ev!.args.depositor, ev!.args.token, ev!.args.amount.toString()], what).toEqual(
          [d.bridge, d.depositor, d.token, d.amount],
        );
        expect([Number(ev!.blockNumber), ev!.transactionHash], what).toEqual([d.blockNumber, d.txHash]);
        expect(ev!.args.destination, what).toBe(d.destination === "spot" ? 1 : 0);
        expect(c.world.subaccounts.find((x) => x.label === d.subaccount)?.safe, what).toBe(d.depositor);
        const status = await coreClient.readContract({
          address: ledger.ledger,
          abi: CoreLedgerAbi,
          functionName: "status",
          args: [d.coreHash],
        });
        const o = d.outcome;
        if (o.status === "pending") {
          // only a deposit too young at the end of the history
          expect(d.timestamp + c.world.perp.delaySeconds, what).toBeGreaterThan(core.headTimestamp - 86_400);
          continue;
        }
        expect(o.timestamp - d.timestamp, what).toBeGreaterThanOrEqual(c.world.perp.delaySeconds);
        if (o.status === "credited") {
          expect(status, what).toBe(1);
          const e = credited.find((x) => x.args.coreHash === d.coreHash)!;
          expect([Number(e.blockNumber), e.transactionHash], what).toEqual([o.blockNumber, o.txHash]);
          expect([e.args.amount.toString(), e.args.depositor, Number(e.args.chainId)], what).toEqual([
            d.amount,
            d.depositor,
            c.chainId,
          ]);
          expect(BigInt(d.amount) >= BigInt(d.minimum), what).toBe(true);
        } else {
          expect(status, what).toBe(2);
          const e = rejected.find((x) => x.args.coreHash === d.coreHash)!;
          expect([Number(e.blockNumber), e.transactionHash, e.args.reason], what).toEqual([
            o.blockNumber,
            o.txHash,
            o.reason,
          ]);
          expect(o.reason, what).toMatch(/below minimum/);
        }
      }
      expect(deposits.filter((d) => d.outcome.status === "rejected")).toHaveLength(1);
    }
    // each core hash is processed once
    const hashes = [...credited, ...rejected].map((e) => e.args.coreHash);
    expect(new Set(hashes).size).toBe(hashes.length);
  });

  it("the manifest's events are the vaults' history only: nothing from the protocol world", () => {
    for (const c of manifest.chains) {
      const world = new Set<string>(
        [
          ...c.world.protocols.aave.reserves.flatMap((r) => [r.aToken, r.variableDebtToken]),
          ...c.world.protocols.uniswap.pools.map((p) => p.address),
          c.world.protocols.morpho.lendingVault,
          ...c.world.addedTokens.map((t) => t.address),
        ].map((a) => a.toLowerCase()),
      );
      expect(c.events.filter((e) => world.has(e.address))).toEqual([]);
      const worldTx = new Set(c.world.failures.map((f) => f.txHash));
      expect(c.events.filter((e) => worldTx.has(e.txHash))).toEqual([]);
    }
  });
});
