/**
 * The simulated protocol world is real (contracts/devnet/world.ts), read from the shared test
 * devnet at its head: the subaccounts are Safes with SubaccountModule at the same address on both
 * chains and hold Aave, Morpho and Uniswap v3 positions; the pools and the Morpho oracle sit at
 * the feeds' prices; every deliberately failed transaction of the manifest is mined, reverted,
 * and reverts with the reason the manifest records.
 */
import { type Abi, type Address, decodeFunctionResult, encodeFunctionData, getAddress, type Hex } from "viem";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { MorphoLendingVaultAbi } from "../../abis/MorphoLendingVaultAbi.js";
import { SubaccountModuleAbi } from "../../abis/SubaccountModuleAbi.js";
import type { Manifest } from "../../contracts/devnet/index.js";
import {
  aave as aaveArt,
  morphoArtifacts,
  safe as safeArt,
  uniswap as uniArt,
} from "../../contracts/devnet/protocols/artifacts.js";
import { morphoOraclePrice, sqrtPriceX96 } from "../../contracts/devnet/protocols/index.js";
import { ERC20_ABI, PRICE_FEED_ABI } from "../../contracts/devnet/protocols/tx.js";
import type { ChainResult } from "../../contracts/devnet/simulate.js";
import { decodeRevert, type WorldSubaccount } from "../../contracts/devnet/world.js";
import { loadManifest, rpcCall } from "../helpers.js";

const devnet = inject("devnet");
let manifest: Manifest;

beforeAll(() => {
  manifest = loadManifest(devnet.manifestFile);
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
      expect(kinds).toEqual(["aave-36", "module-not-trader", "module-token-not-allowed", "safe-gs025", "slippage"]);
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
