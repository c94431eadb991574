/**
 * The indexer's protocol-world tables against the simulated chains: every subaccount of the
 * registry with its module, owners and roles as the chain has them now; their module, Aave,
 * Morpho, position and staker events exactly as the chain's logs are (only the subaccounts'); the
 * sums of the indexed events equal the positions the chain holds now; lending-vault snapshots equal
 * eth_call at their block; perp deposits, core answers and registry loans equal the chain's logs;
 * a loan registered, funded and repaid in one block has the figures its views give.
 */
import {
  type Abi,
  type Address,
  createPublicClient,
  decodeEventLog,
  encodeFunctionData,
  erc20Abi,
  getAddress,
  getContractAddress,
  type Hex,
  http,
  type Log,
  type PublicClient,
  parseAbi,
  zeroAddress,
} from "viem";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { CoreLedgerAbi } from "../../abis/CoreLedgerAbi.js";
import { LoanAbi } from "../../abis/LoanAbi.js";
import { LoanRegistryAbi } from "../../abis/LoanRegistryAbi.js";
import { MorphoLendingVaultAbi } from "../../abis/MorphoLendingVaultAbi.js";
import { PerpBridgeAAbi } from "../../abis/PerpBridgeAAbi.js";
import {
  AavePoolEventsAbi,
  MorphoBlueEventsAbi,
  PositionLiquidityAbi,
  PositionTransferAbi,
  SafeEventsAbi,
  StakerDepositAbi,
  StakerEventsAbi,
  StakerIncentiveAbi,
} from "../../abis/ProtocolEventsAbi.js";
import { SubaccountModuleAbi } from "../../abis/SubaccountModuleAbi.js";
import { loadRegistry, type Registry } from "../../config/registry.js";
import type { Manifest } from "../../contracts/devnet/index.js";
import { ChainSession } from "../../contracts/devnet/session.js";
import type { ChainResult } from "../../contracts/devnet/simulate.js";
import { onClient } from "../../db/client.js";
import { indexedIncentives } from "../../db/staker-incentives.js";
import { indexedPositionIds } from "../../db/uniswap-positions.js";
import { type PositionHints, readPositions } from "../../onchain/positions.js";
import { incentiveId, REREAD_BLOCKS, stakerIncentives } from "../../onchain/staker.js";
import { deploymentBlock, logsSinceDeployment } from "../../src/module-logs.js";
import { key, loadManifest, rows, until, withDb } from "../helpers.js";
import { limitedRpc } from "../limited-rpc.js";

const devnet = inject("devnet");
let manifest: Manifest;
let registry: Registry;
let subs: Set<string>;
const clients = new Map<number, PublicClient>();

// biome-ignore lint/suspicious/noExplicitAny: rows of many tables, compared field by field
type Row = Record<string, any>;
type Decoded = { log: Log<bigint, number, false>; name: string; args: Record<string, unknown> };

beforeAll(() => {
  manifest = loadManifest(devnet.manifestFile);
  registry = loadRegistry(devnet.registryFile);
  subs = new Set(registry.evm.flatMap((v) => v.subaccounts));
  for (const c of devnet.chains) clients.set(c.chainId, createPublicClient({ transport: http(c.rpcUrl) }));
});

const client = (chainId: number) => clients.get(chainId)!;
const lc = (a: unknown) => String(a).toLowerCase();
function q<T = Row>(sql: string, params: unknown[] = []) {
  return withDb(devnet.analystUrl, (c) => rows<T>(c, sql, params));
}

/** Every log of `address` decoded with `abi` (the events it does not know are left out). */
async function logsOf(chainId: number, address: Address | Address[], abi: Abi): Promise<Decoded[]> {
  const list = Array.isArray(address) ? address : [address];
  if (list.length === 0) return [];
  const logs = await client(chainId).getLogs({ address: list, fromBlock: 0n, toBlock: "latest" });
  const out: Decoded[] = [];
  for (const log of logs) {
    try {
      const d = decodeEventLog({ abi, data: log.data, topics: log.topics });
      const args = d.args as unknown as Record<string, unknown>;
      out.push({ log: log as Log<bigint, number, false>, name: String(d.eventName), args });
    } catch {
      // another event of the contract
    }
  }
  return out;
}

const logKey = (chainId: number, d: Decoded) => key(chainId, d.log.transactionHash, d.log.logIndex);
const rowKey = (r: Row) => key(r.chain_id, r.tx_hash, r.log_index);

function byKey(list: Row[]): Map<string, Row> {
  const m = new Map<string, Row>();
  for (const r of list) {
    expect(m.has(rowKey(r)), `duplicate row ${rowKey(r)}`).toBe(false);
    m.set(rowKey(r), r);
  }
  return m;
}

const protocols = (chainId: number) => registry.protocols.get(chainId)!;
const world = (chainId: number): ChainResult => manifest.chains.find((c) => c.chainId === chainId)!;

describe("subaccounts", () => {
  it("every registry subaccount has a row per chain: module, owners, roles and vault as the chain says", async () => {
    const table = await q("SELECT * FROM indexer.subaccount");
    expect(subs.size).toBeGreaterThan(0);
    for (const c of devnet.chains) {
      const here = table.filter((r) => r.chain_id === c.chainId);
      expect(new Set(here.map((r) => r.safe))).toEqual(subs);
      for (const r of here) {
        const w = world(c.chainId).world.subaccounts.find((x) => lc(x.safe) === r.safe)!;
        expect(r.module, w.label).toBe(lc(w.module));
        expect(r.owners).toEqual([lc(w.owner)]);
        expect(r.threshold).toBe(1);
        expect(r.roles).toEqual({ OWNER: [lc(w.owner)], TRADER: [lc(w.trader)], RELAYER: [lc(w.relayer)] });
        const vault = await client(c.chainId).readContract({
          address: w.module,
          abi: SubaccountModuleAbi,
          functionName: "vault",
        });
        expect(r.vault).toBe(vault === zeroAddress ? null : lc(vault));
        expect(Number(r.created_block)).toBeGreaterThan(0);
      }
    }
  });

  it("subaccount_event: every event of their Safes and modules exactly once", async () => {
    const table = byKey(await q("SELECT * FROM indexer.subaccount_event"));
    let expected = 0;
    for (const c of devnet.chains) {
      const safes = [...subs].map((s) => getAddress(s));
      const modules = (await q("SELECT module FROM indexer.subaccount WHERE chain_id = $1", [c.chainId])).map(
        (r) => r.module as Address,
      );
      const safeLogs = await logsOf(c.chainId, safes, SafeEventsAbi);
      const moduleLogs = await logsOf(c.chainId, modules, SubaccountModuleAbi);
      expect(moduleLogs.some((d) => d.name === "Executed")).toBe(true);
      for (const [source, list] of [
        ["safe", safeLogs],
        ["module", moduleLogs],
      ] as const) {
        for (const d of list) {
          const r = table.get(logKey(c.chainId, d));
          expect(r, `${d.name} ${logKey(c.chainId, d)}`).toBeDefined();
          expect([r!.source, r!.event, r!.contract, Number(r!.block_number)]).toEqual([
            source,
            d.name,
            lc(d.log.address),
            Number(d.log.blockNumber),
          ]);
          expected++;
        }
      }
    }
    expect(table.size).toBe(expected);
  });

  it("a module's logs before it was enabled come from its deployment block on, in a range a capped provider takes", async () => {
    const LIMIT = 64n; // blocks one eth_getLogs may span
    for (const c of devnet.chains) {
      const [enabled] = await q<{ module: string; block: string }>(
        `SELECT s.module, min(e.block_number)::text AS block FROM indexer.subaccount s
         JOIN indexer.subaccount_event e ON e.chain_id = s.chain_id AND e.contract = s.safe AND e.event = 'EnabledModule'
         WHERE s.chain_id = $1 GROUP BY s.module ORDER BY 2 DESC LIMIT 1`,
        [c.chainId],
      );
      const module = enabled!.module as Address;
      const before = BigInt(enabled!.block) - 1n;
      expect(before).toBeGreaterThan(LIMIT); // one read from block 0 would be refused
      const direct = await client(c.chainId).getLogs({ address: module, fromBlock: 0n, toBlock: before });
      expect(direct.length).toBeGreaterThan(0); // at least the constructor's OWNER grant
      const capped = await limitedRpc(c.rpcUrl, LIMIT);
      try {
        const through = createPublicClient({ transport: http(capped.url, { retryCount: 0 }) });
        await expect(through.getLogs({ address: module, fromBlock: 0n, toBlock: before })).rejects.toThrow(
          /range too wide/,
        );
        const deployed = await deploymentBlock(through, module, 0n, before);
        expect(await client(c.chainId).getCode({ address: module, blockNumber: deployed! })).toBeDefined();
        expect(await client(c.chainId).getCode({ address: module, blockNumber: deployed! - 1n })).toBeUndefined();
        const got = await logsSinceDeployment(through, module, 0n, before);
        expect(got.map((l) => `${l.transactionHash}:${l.logIndex}`)).toEqual(
          direct.map((l) => `${l.transactionHash}:${l.logIndex}`),
        );
        // no code at the end of the range: nothing to read, and nothing asked
        expect(await logsSinceDeployment(through, module, 0n, deployed! - 1n)).toEqual([]);
        // a span wider than the cap since its deployment (a timelock made a vault's owner long
        // after): read in halves, every log once, in order
        const head = await client(c.chainId).getBlockNumber();
        expect(head - deployed!).toBeGreaterThan(4n * LIMIT);
        const all = await client(c.chainId).getLogs({ address: module, fromBlock: 0n, toBlock: head });
        const wide = await logsSinceDeployment(through, module, 0n, head);
        expect(wide.map((l) => `${l.transactionHash}:${l.logIndex}`)).toEqual(
          all.map((l) => `${l.transactionHash}:${l.logIndex}`),
        );
      } finally {
        await capped.close();
      }
    }
  });

  it("a module disabled and enabled again: followed on, none of its events stored twice", async () => {
    const c = devnet.chains[0]!;
    const [sub] = await q<{ safe: string; module: string }>(
      "SELECT safe, module FROM indexer.subaccount WHERE chain_id = $1 ORDER BY safe LIMIT 1",
      [c.chainId],
    );
    const safe = getAddress(sub!.safe);
    const module = getAddress(sub!.module);
    const SAFE = parseAbi([
      "function getModulesPaginated(address start, uint256 pageSize) view returns (address[] array, address next)",
      "function disableModule(address prevModule, address module)",
      "function enableModule(address module)",
    ]);
    const [list] = await client(c.chainId).readContract({
      address: safe,
      abi: SAFE,
      functionName: "getModulesPaginated",
      args: ["0x0000000000000000000000000000000000000001", 10n],
    });
    const at = list.findIndex((m) => getAddress(m) === module);
    const prev = at === 0 ? "0x0000000000000000000000000000000000000001" : list[at - 1]!;
    const s = new ChainSession(c.chainId, c.rpcUrl);
    await s.syncClock();
    const safeCall = (name: "disableModule" | "enableModule", args: readonly Address[]) =>
      s.send(safe, safe, encodeFunctionData({ abi: SAFE, functionName: name, args } as never), name);
    await safeCall("disableModule", [prev, module]);
    const enabled = await safeCall("enableModule", [module]);
    await s.mineAt([s.clock + 12]);
    await until("the enabling indexed", 120_000, async () => {
      const r = await q("SELECT 1 FROM indexer.subaccount_event WHERE tx_hash = $1", [enabled.transactionHash]);
      return r.length > 0 ? true : undefined;
    });
    const stored = await q("SELECT * FROM indexer.subaccount_event WHERE chain_id = $1 AND contract = $2", [
      c.chainId,
      lc(module),
    ]);
    byKey(stored); // each (tx, log index) once
    expect(stored.length).toBe((await logsOf(c.chainId, module, SubaccountModuleAbi)).length);
    const [row] = await q("SELECT module FROM indexer.subaccount WHERE chain_id = $1 AND safe = $2", [
      c.chainId,
      lc(safe),
    ]);
    expect(row!.module).toBe(lc(module));
  });
});

describe("the subaccounts' protocol events", () => {
  it("aave_event: exactly the pool's events where a subaccount is the user", async () => {
    const table = byKey(await q("SELECT * FROM indexer.aave_event"));
    let expected = 0;
    const userOf = (d: Decoded) => lc(d.name === "Supply" || d.name === "Borrow" ? d.args.onBehalfOf : d.args.user);
    for (const c of devnet.chains) {
      const logs = (await logsOf(c.chainId, protocols(c.chainId).aave!.pool, AavePoolEventsAbi)).filter((d) =>
        subs.has(userOf(d)),
      );
      expect(logs.some((d) => d.name === "Borrow")).toBe(true);
      for (const d of logs) {
        const r = table.get(logKey(c.chainId, d));
        expect(r, `${d.name} ${logKey(c.chainId, d)}`).toBeDefined();
        const kind = d.name === "LiquidationCall" ? "liquidation" : d.name.toLowerCase();
        const amount = d.name === "LiquidationCall" ? d.args.debtToCover : d.args.amount;
        expect([r!.kind, r!.subaccount, r!.amount]).toEqual([kind, userOf(d), String(amount)]);
        expected++;
      }
    }
    expect(table.size).toBe(expected);
  });

  it("Aave supplies minus withdrawals equal the aToken balance within interest; borrows the debt", async () => {
    const sums = await q(
      `SELECT chain_id, subaccount, reserve, kind, sum(amount)::text AS total FROM indexer.aave_event
       GROUP BY 1, 2, 3, 4`,
    );
    const total = (chainId: number, sub: string, reserve: string, kind: string) =>
      BigInt(
        sums.find((r) => r.chain_id === chainId && r.subaccount === sub && r.reserve === reserve && r.kind === kind)
          ?.total ?? 0,
      );
    let checked = 0;
    for (const c of devnet.chains) {
      const reserves = world(c.chainId).world.protocols.aave.reserves;
      for (const sub of subs) {
        for (const res of reserves) {
          const asset = lc(res.asset);
          const net = total(c.chainId, sub, asset, "supply") - total(c.chainId, sub, asset, "withdraw");
          const debt = total(c.chainId, sub, asset, "borrow") - total(c.chainId, sub, asset, "repay");
          const bal = (t: Address) =>
            client(c.chainId).readContract({
              address: t,
              abi: erc20Abi,
              functionName: "balanceOf",
              args: [sub as Address],
            });
          const [aBal, dBal] = await Promise.all([bal(res.aToken), bal(res.variableDebtToken)]);
          // interest only adds (30 days at the devnet's rates: well under 5 %)
          for (const [indexed, onChain] of [
            [net, aBal],
            [debt, dBal],
          ] as const) {
            expect(onChain >= indexed, `${sub} ${res.symbol}`).toBe(true);
            expect(onChain - indexed <= indexed / 20n + 1n, `${sub} ${res.symbol}: ${indexed} vs ${onChain}`).toBe(
              true,
            );
            if (indexed > 0n) checked++;
          }
        }
      }
    }
    expect(checked).toBeGreaterThanOrEqual(4);
  });

  it("morpho_event: exactly the registry markets' events for subaccounts; their sums equal the positions", async () => {
    const table = byKey(await q("SELECT * FROM indexer.morpho_event"));
    let expected = 0;
    const kinds: Record<string, string> = {
      Supply: "supply",
      Withdraw: "withdraw",
      Borrow: "borrow",
      Repay: "repay",
      SupplyCollateral: "supply_collateral",
      WithdrawCollateral: "withdraw_collateral",
    };
    for (const c of devnet.chains) {
      const m = protocols(c.chainId).morpho!;
      const markets = new Set(m.markets.map(lc));
      const logs = (await logsOf(c.chainId, m.address, MorphoBlueEventsAbi)).filter(
        (d) => markets.has(lc(d.args.id)) && subs.has(lc(d.args.onBehalf)),
      );
      expect(logs.some((d) => d.name === "SupplyCollateral")).toBe(true);
      for (const d of logs) {
        const r = table.get(logKey(c.chainId, d));
        expect(r, `${d.name} ${logKey(c.chainId, d)}`).toBeDefined();
        expect([r!.kind, r!.market_id, r!.subaccount, r!.assets, r!.shares]).toEqual([
          kinds[d.name],
          lc(d.args.id),
          lc(d.args.onBehalf),
          String(d.args.assets),
          d.args.shares === undefined ? null : String(d.args.shares),
        ]);
        expected++;
      }
      for (const sub of subs) {
        for (const id of m.markets) {
          const mine = [...table.values()].filter(
            (r) => r.chain_id === c.chainId && r.subaccount === sub && r.market_id === lc(id),
          );
          const sum = (kind: string, field: "assets" | "shares") =>
            mine.filter((r) => r.kind === kind).reduce((s, r) => s + BigInt(r[field]), 0n);
          const [supplyShares, borrowShares, collateral] = await client(c.chainId).readContract({
            address: m.address,
            abi: MorphoBlueEventsAbi,
            functionName: "position",
            args: [id as `0x${string}`, sub as Address],
          });
          expect(sum("supply", "shares") - sum("withdraw", "shares")).toBe(supplyShares);
          expect(sum("borrow", "shares") - sum("repay", "shares")).toBe(borrowShares);
          expect(sum("supply_collateral", "assets") - sum("withdraw_collateral", "assets")).toBe(collateral);
        }
      }
    }
    expect(table.size).toBe(expected);
  });

  it("uniswap_position: the positions subaccounts hold or staked, as ownerOf and the staker say", async () => {
    const table = await q("SELECT * FROM indexer.uniswap_position");
    for (const c of devnet.chains) {
      const u = protocols(c.chainId).uniswap!;
      const pm = u.positionManager;
      const here = table.filter((r) => r.chain_id === c.chainId && r.subaccount !== null);
      // the manifest's positions are the subaccounts' (the simulator's record of what it minted)
      const minted = world(c.chainId).world.positions.filter((p) => subs.has(lc(p.subaccount)));
      expect(here.map((r) => `${r.token_id}:${r.subaccount}:${r.staked}`).sort()).toEqual(
        minted.map((p) => `${p.tokenId}:${lc(p.subaccount)}:${p.staked}`).sort(),
      );
      // the Transfer-derived holdings equal ownerOf (held) and the staker's deposits (staked)
      for (const r of here) {
        const id = BigInt(r.token_id);
        const owner = await client(c.chainId).readContract({
          address: pm,
          abi: PositionLiquidityAbi,
          functionName: "ownerOf",
          args: [id],
        });
        const p = await client(c.chainId).readContract({
          address: pm,
          abi: PositionLiquidityAbi,
          functionName: "positions",
          args: [id],
        });
        expect([r.owner, r.liquidity, r.token0, r.token1, r.fee]).toEqual([
          lc(owner),
          String(p[7]),
          lc(p[2]),
          lc(p[3]),
          Number(p[4]),
        ]);
        if (r.staked) {
          expect(lc(owner)).toBe(lc(u.staker));
          const [depositor] = await client(c.chainId).readContract({
            address: u.staker!,
            abi: StakerEventsAbi,
            functionName: "deposits",
            args: [id],
          });
          expect(lc(depositor)).toBe(r.subaccount);
        } else {
          expect(lc(owner)).toBe(r.subaccount);
        }
      }
    }
  });

  it("the indexed position ids stand in for the staker's list: the same positions read either way", async () => {
    await withDb(devnet.analystUrl, async (c) => {
      const db = onClient(c);
      let compared = 0;
      for (const ch of devnet.chains) {
        const minted = world(ch.chainId).world.positions.filter((p) => subs.has(lc(p.subaccount)));
        for (const sub of new Set(minted.map((p) => lc(p.subaccount)))) {
          const ids = (await indexedPositionIds(db, "indexer", sub, [ch.chainId])).get(ch.chainId) ?? [];
          for (const p of minted.filter((x) => lc(x.subaccount) === sub)) expect(ids).toContain(BigInt(p.tokenId));
          const head = await client(ch.chainId).getBlockNumber();
          const read = (hints?: PositionHints) =>
            readPositions(client(ch.chainId), protocols(ch.chainId), sub as Address, head, hints);
          const byId = (x: { tokenId: bigint }, y: { tokenId: bigint }) => (x.tokenId < y.tokenId ? -1 : 1);
          const whole = (await read()).uniswap.sort(byId);
          // every staker counted as too full to list: its staked positions from the indexed ids
          const hinted = (await read({ uniswapIds: ids, stakerListUpTo: 0 })).uniswap.sort(byId);
          expect(hinted).toEqual(whole);
          compared += whole.filter((p) => p.staked).length;
        }
      }
      expect(compared).toBeGreaterThan(0); // staked positions were among them
    });
  });

  it("uniswap_event: every position-manager and staker event of the subaccounts' positions exactly once", async () => {
    const table = byKey(await q("SELECT * FROM indexer.uniswap_event"));
    const positions = await q("SELECT chain_id, token_id FROM indexer.uniswap_position");
    let expected = 0;
    for (const c of devnet.chains) {
      const u = protocols(c.chainId).uniswap!;
      const ids = new Set(positions.filter((r) => r.chain_id === c.chainId).map((r) => String(r.token_id)));
      const transfers = (await logsOf(c.chainId, u.positionManager, PositionTransferAbi)).filter(
        (d) => subs.has(lc(d.args.from)) || subs.has(lc(d.args.to)),
      );
      const liquidity = (await logsOf(c.chainId, u.positionManager, PositionLiquidityAbi)).filter((d) =>
        ids.has(String(d.args.tokenId)),
      );
      const deposits = (await logsOf(c.chainId, u.staker!, StakerDepositAbi)).filter(
        (d) => subs.has(lc(d.args.oldOwner)) || subs.has(lc(d.args.newOwner)),
      );
      const staker = (await logsOf(c.chainId, u.staker!, StakerEventsAbi)).filter((d) =>
        d.name === "RewardClaimed" ? subs.has(lc(d.args.to)) : ids.has(String(d.args.tokenId)),
      );
      expect(transfers.length).toBeGreaterThan(0);
      expect(liquidity.some((d) => d.name === "IncreaseLiquidity")).toBe(true);
      expect(staker.some((d) => d.name === "TokenStaked")).toBe(true);
      for (const d of [...transfers, ...liquidity, ...deposits, ...staker]) {
        const r = table.get(logKey(c.chainId, d));
        expect(r, `${d.name} ${logKey(c.chainId, d)}`).toBeDefined();
        expect([r!.event, r!.contract, r!.token_id]).toEqual([
          d.name,
          lc(d.log.address),
          d.args.tokenId === undefined ? null : String(d.args.tokenId),
        ]);
        expect(subs.has(r!.subaccount)).toBe(true);
        expected++;
      }
    }
    expect(table.size).toBe(expected);
  });
});

describe("the staker's incentives", () => {
  it("uniswap_incentive: every IncentiveCreated of each staker exactly once, from the block uniswap_staker says", async () => {
    const table = byKey(await q("SELECT * FROM indexer.uniswap_incentive"));
    let expected = 0;
    for (const c of devnet.chains) {
      const u = protocols(c.chainId).uniswap!;
      const [staker] = await q("SELECT * FROM indexer.uniswap_staker WHERE chain_id = $1", [c.chainId]);
      expect(staker).toMatchObject({ address: lc(u.staker) });
      const from = BigInt(staker!.indexed_from);
      const logs = (await logsOf(c.chainId, u.staker!, StakerIncentiveAbi)).filter((d) => d.log.blockNumber >= from);
      expect(logs.length).toBeGreaterThan(0);
      for (const d of logs) {
        const a = d.args as {
          rewardToken: Address;
          pool: Address;
          startTime: bigint;
          endTime: bigint;
          refundee: Address;
        };
        const r = table.get(logKey(c.chainId, d));
        expect(r, logKey(c.chainId, d)).toBeDefined();
        expect(r).toMatchObject({
          staker: lc(u.staker),
          incentive_id: incentiveId(a),
          reward_token: lc(a.rewardToken),
          pool: lc(a.pool),
          start_time: String(a.startTime),
          end_time: String(a.endTime),
          refundee: lc(a.refundee),
          reward: String(d.args.reward),
        });
        expected++;
      }
    }
    expect(table.size).toBe(expected);
  });

  it("the reads' first scan starts from them: the same keys as the staker's logs, only later blocks read", async () => {
    await withDb(devnet.analystUrl, async (c) => {
      const db = onClient(c);
      for (const ch of devnet.chains) {
        const staker = protocols(ch.chainId).uniswap!.staker!;
        const indexed = await indexedIncentives(db, "indexer", ch.chainId, staker);
        expect(indexed).not.toBeNull();
        // a client of its own, counting its log reads: nothing is kept for it yet
        const ranges: { fromBlock: bigint }[] = [];
        const fresh = createPublicClient({ transport: http(ch.rpcUrl) });
        const getLogs = fresh.getLogs.bind(fresh);
        fresh.getLogs = ((args: { fromBlock: bigint }) => {
          ranges.push(args);
          return getLogs(args as never);
        }) as typeof fresh.getLogs;
        const seededKeys = await stakerIncentives(fresh, staker, 0, async () => indexed);
        const fromLogs = await stakerIncentives(createPublicClient({ transport: http(ch.rpcUrl) }), staker, 0);
        expect(seededKeys).toEqual(fromLogs);
        // the indexer reads the devnet's staker from before its deployment: no earlier blocks read
        expect(ranges.map((r) => r.fromBlock)).toEqual([indexed!.through - REREAD_BLOCKS + 1n]);
      }
    });
  });
});

describe("lending vaults, perp deposits and loan books", () => {
  it("lending vaults: every deposit and withdraw; snapshot totals equal eth_call at their block", async () => {
    const events = byKey(await q("SELECT * FROM indexer.lending_vault_event"));
    const snaps = await q("SELECT * FROM indexer.lending_vault_snapshot ORDER BY chain_id, block_number");
    let expected = 0;
    for (const c of devnet.chains) {
      const vaults = protocols(c.chainId).morpho!.lendingVaults;
      const logs = (await logsOf(c.chainId, vaults, MorphoLendingVaultAbi)).filter(
        (d) => d.name === "Deposit" || d.name === "Withdraw",
      );
      expect(logs.length).toBeGreaterThan(0);
      for (const d of logs) {
        const r = events.get(logKey(c.chainId, d));
        expect(r, `${d.name} ${logKey(c.chainId, d)}`).toBeDefined();
        expect([r!.kind, r!.assets, r!.shares]).toEqual([
          d.name.toLowerCase(),
          String(d.args.assets),
          String(d.args.shares),
        ]);
        expect(snaps.some((s) => s.id === r!.snapshot_id)).toBe(true);
        expected++;
      }
      const here = snaps.filter((s) => s.chain_id === c.chainId);
      expect(here.some((s) => s.source === "interval")).toBe(true);
      // every flow snapshot and a sample of the interval ones
      const sample = [
        ...here.filter((s) => s.source === "flow"),
        ...here.filter((s) => s.source === "interval").filter((_s, i) => i % 5 === 0),
      ];
      for (const s of sample) {
        const at = { blockNumber: BigInt(s.block_number) };
        const read = (functionName: "totalAssets" | "totalSupply") =>
          client(c.chainId).readContract({ address: s.vault, abi: MorphoLendingVaultAbi, functionName, ...at });
        expect([s.total_assets, s.total_supply]).toEqual([
          String(await read("totalAssets")),
          String(await read("totalSupply")),
        ]);
      }
    }
    expect(events.size).toBe(expected);
  });

  it("perp_deposit and perp_core_event: the subaccounts' bridge deposits and the core ledger's answers", async () => {
    const deposits = byKey(await q("SELECT * FROM indexer.perp_deposit"));
    const core = byKey(await q("SELECT * FROM indexer.perp_core_event"));
    let nDeposits = 0;
    let nCore = 0;
    for (const c of devnet.chains) {
      const perp = protocols(c.chainId).perp!;
      expect(perp).toBeDefined();
      const logs = (await logsOf(c.chainId, [perp.bridgeA, perp.bridgeB], PerpBridgeAAbi)).filter(
        (d) => d.name === "Deposited" && subs.has(lc(d.args.depositor)),
      );
      for (const d of logs) {
        const r = deposits.get(logKey(c.chainId, d));
        expect(r, logKey(c.chainId, d)).toBeDefined();
        expect([r!.core_hash, r!.depositor, r!.token, r!.amount]).toEqual([
          lc(d.args.coreHash),
          lc(d.args.depositor),
          lc(d.args.token),
          String(d.args.amount),
        ]);
        nDeposits++;
      }
      const ledgers = [...registry.protocols.values()]
        .map((p) => p.perp?.core)
        .filter((x): x is { chainId: number; ledger: `0x${string}` } => !!x && x.chainId === c.chainId);
      const answers = (await logsOf(c.chainId, [...new Set(ledgers.map((l) => l.ledger))], CoreLedgerAbi)).filter(
        (d) => d.name === "Rejected" || (d.name === "Credited" && subs.has(lc(d.args.depositor))),
      );
      for (const d of answers) {
        const r = core.get(logKey(c.chainId, d));
        expect(r, logKey(c.chainId, d)).toBeDefined();
        expect([r!.kind, r!.core_hash]).toEqual([d.name.toLowerCase(), lc(d.args.coreHash)]);
        nCore++;
      }
    }
    expect(deposits.size).toBe(nDeposits);
    expect(core.size).toBe(nCore);
    // the devnet's subaccounts deposited on both bridges, and the ledger both credited and rejected
    expect(nDeposits).toBeGreaterThan(0);
    expect([...core.values()].map((r) => r.kind)).toEqual(expect.arrayContaining(["credited", "rejected"]));
  });

  it("loanbook_loan and loanbook_event: every loan of each chain's registry, with its parties", async () => {
    const loans = await q("SELECT * FROM indexer.loanbook_loan");
    let n = 0;
    for (const c of devnet.chains) {
      const reg = protocols(c.chainId).loanRegistry!;
      const logs = (await logsOf(c.chainId, reg, LoanRegistryAbi)).filter((d) => d.name === "LoanRegistered");
      for (const d of logs) {
        const r = loans.find((x) => x.chain_id === c.chainId && x.address === lc(d.args.loan));
        expect(r, lc(d.args.loan)).toBeDefined();
        expect([r!.lender, r!.borrower, r!.registry]).toEqual([lc(d.args.lender), lc(d.args.borrower), lc(reg)]);
        n++;
      }
    }
    expect(loans.length).toBe(n);
  });

  it("a loan registered and repaid in one block: its figures are the chain's, each event counted once", async () => {
    // the terms are read at the end of the registration block, so that block's later events are in them
    const c = devnet.chains[0]!;
    const reg = protocols(c.chainId).loanRegistry!;
    const s = new ChainSession(c.chainId, c.rpcUrl);
    await s.syncClock();
    const lender = getAddress("0x00000000000000000000000000000000000b10c1");
    const borrower = getAddress("0x00000000000000000000000000000000000b10c2");
    const token = await s.deploy(lender, "MockERC20", ["One Block", "OB", 6]);
    const fn = (abi: Abi, name: string, args: unknown[] = []) =>
      encodeFunctionData({ abi, functionName: name, args } as never) as Hex;
    const nonce = await client(c.chainId).getTransactionCount({ address: reg });
    const loan = getContractAddress({ from: reg, nonce: BigInt(nonce) });
    for (const who of [lender, borrower]) {
      await s.call(who, "MockERC20", token, "mint", [who, 10_000n]);
      await s.call(who, "MockERC20", token, "approve", [loan, 10_000n]);
    }
    const tx = (from: Address, what: string, to: Address, data: Hex, gas = 300_000n) => ({ from, to, data, gas, what });
    const terms = [lender, borrower, token, 5_000n, 1_000n, 30n, 86_400n, zeroAddress, 0n];
    // one block, in this order: the lender creates and funds it, the borrower commits and repays
    const [created] = await s.sendBlock([
      tx(lender, "createLoan", reg, fn(LoanRegistryAbi as Abi, "createLoan", terms), 6_000_000n),
      tx(lender, "fund", loan, fn(LoanAbi as Abi, "fund")),
      tx(borrower, "borrowerCommitment", loan, fn(LoanAbi as Abi, "borrowerCommitment")),
      tx(borrower, "repayInterests", loan, fn(LoanAbi as Abi, "repayInterests", [40n])),
      tx(borrower, "repayPrincipal", loan, fn(LoanAbi as Abi, "repayPrincipal", [700n])),
    ]);
    const block = BigInt(created!.blockNumber);
    await s.mineAt([s.clock + 12]);
    const [row] = await until("the one-block loan indexed", 120_000, async () => {
      const r = await q("SELECT * FROM indexer.loanbook_loan WHERE chain_id = $1 AND address = $2", [
        c.chainId,
        lc(loan),
      ]);
      return r.length > 0 ? r : undefined;
    });
    const view = (name: string) =>
      client(c.chainId).readContract({ address: loan, abi: LoanAbi as Abi, functionName: name, blockNumber: block });
    const [principal, repaid, interest] = (await Promise.all(
      ["principalAmount", "totalRepaid", "totalInterestRepaid"].map(view),
    )) as bigint[];
    expect([principal, repaid, interest]).toEqual([4_300n, 740n, 40n]);
    expect([row!.principal_outstanding, row!.total_repaid, row!.interest_repaid, row!.state]).toEqual([
      String(principal),
      String(repaid),
      String(interest),
      "active",
    ]);
    const events = await q("SELECT event FROM indexer.loanbook_event WHERE loan = $1 ORDER BY log_index", [lc(loan)]);
    expect(events.map((e) => e.event)).toEqual([
      "OnLoanFunded",
      "OnBorrowerCommitment",
      "OnInterestsRepayment",
      "OnPrincipalRepayment",
    ]);
  });
});
