/**
 * The indexer against the simulated chains: every event of the simulator's manifest is in the
 * tables exactly once with equal values; every day has snapshots; positions replayed from the
 * tables equal balanceOf at the head; snapshot figures equal on-chain reads at their block.
 */

import {
  createPublicClient,
  decodeFunctionResult,
  encodeFunctionData,
  erc20Abi,
  type Hex,
  http,
  type PublicClient,
} from "viem";
import { beforeAll, describe, expect, inject, it } from "vitest";
import { LendingPoolAbi } from "../../abis/LendingPoolAbi.js";
import { PriceFeedAbi } from "../../abis/PriceFeedAbi.js";
import { TokenizedVaultV2Abi } from "../../abis/TokenizedVaultV2Abi.js";
import { loadRegistry } from "../../config/registry.js";
import type { Manifest } from "../../contracts/devnet/index.js";
import type { ManifestEvent } from "../../contracts/devnet/session.js";
import { key, loadManifest, rows, rpcCall, withDb } from "../helpers.js";

const devnet = inject("devnet");
let manifest: Manifest;
let indexed: ManifestEvent[];

const VAULT_FLOW = new Set(["Deposit", "Withdraw"]);
const GOVERNANCE = new Set([
  "RoleGranted",
  "RoleRevoked",
  "MinDelayChange",
  "OwnershipTransferred",
  "OwnershipTransferStarted",
  "OperatorUpdated",
  "FeeCollectorUpdated",
  "ManagementFeeUpdated",
  "MaxChangePercentUpdated",
  "OnMaxSupplyChanged",
  "DepositWithdrawalStatusChanged",
  "OnEmergencyWithdraw",
  "SubAccountEnabled",
  "SubAccountDisabled",
]);
const FEES = new Set(["ManagementFeeCharged", "FeesCollected"]);
const TIMELOCK_OPS = new Set(["CallScheduled", "CallExecuted", "Cancelled", "CallSalt"]);

beforeAll(() => {
  manifest = loadManifest(devnet.manifestFile);
  indexed = manifest.chains.flatMap((c) => {
    const addresses = new Set<string>([
      ...c.vaults.flatMap((v) => [v.address, v.receiptToken, v.timelock].filter((a): a is `0x${string}` => !!a)),
      ...c.loans,
    ]);
    return c.events.filter((e) => addresses.has(e.address));
  });
});

function q<T = Record<string, unknown>>(sql: string, params: unknown[] = []) {
  return withDb(devnet.analystUrl, (c) => rows<T>(c, sql, params));
}

// Rows as pg returns them: numeric and int8 as strings, jsonb parsed.
// eslint-disable-next-line @typescript-eslint/no-explicit-any
// biome-ignore lint/suspicious/noExplicitAny: rows of many tables, compared field by field
type Row = Record<string, any>;

function byKey(list: Row[]) {
  const m = new Map<string, Row>();
  for (const r of list) {
    const k = key(r.chain_id, r.tx_hash, r.log_index);
    expect(m.has(k), `duplicate row ${k}`).toBe(false);
    m.set(k, r);
  }
  return m;
}

const vaultOf = (e: ManifestEvent) => manifest.chains.find((c) => c.chainId === e.chainId)!.vaults;

describe("indexed tables equal the simulator's manifest", () => {
  it("covers every kind of event the simulation produced, on both chains", () => {
    const names = new Set(indexed.map((e) => e.event));
    for (const n of [
      "Deposit",
      "Withdraw",
      "Transfer",
      "WithdrawalRequested",
      "WithdrawalProcessed",
      "CallScheduled",
      "CallExecuted",
      "Cancelled",
      "RoleGranted",
      "RoleRevoked",
      "OwnershipTransferred",
      "DepositWithdrawalStatusChanged",
      "ManagementFeeCharged",
      "FeesCollected",
      "NewLoanDeployedByPool",
      "OnLoanFunded",
      "OnInterestsRepayment",
    ]) {
      expect(names.has(n), `the simulation emitted no ${n}`).toBe(true);
    }
    expect(new Set(indexed.map((e) => e.chainId))).toEqual(new Set([1, 8453]));
    const handled = new Set([
      ...VAULT_FLOW,
      ...GOVERNANCE,
      ...FEES,
      ...TIMELOCK_OPS,
      "Transfer",
      "WithdrawalRequested",
      "WithdrawalProcessed",
      "NewLoanDeployedByPool",
    ]);
    const loanAddresses = new Set(manifest.chains.flatMap((c) => c.loans));
    const unhandled = indexed.filter((e) => !handled.has(e.event) && !loanAddresses.has(e.address));
    expect(unhandled.map((e) => `${e.event}@${e.address}`)).toEqual([]);
  });

  it("vault_event: every deposit and withdraw exactly once with equal values", async () => {
    const table = byKey(await q<Row>("SELECT * FROM indexer.vault_event"));
    const events = indexed.filter((e) => VAULT_FLOW.has(e.event));
    expect(table.size).toBe(events.length);
    for (const e of events) {
      const r = table.get(key(e.chainId, e.txHash, e.logIndex));
      expect(r, `${e.event} ${e.txHash}:${e.logIndex}`).toBeDefined();
      const v = vaultOf(e).find((x) => x.address === e.address)!;
      const a = e.args;
      const expected =
        e.event === "Withdraw"
          ? {
              kind: "withdraw",
              sender: a.sender,
              owner: a.owner,
              receiver: a.receiver,
              assets: a.assets,
              shares: a.shares,
              asset: v.asset.address,
            }
          : v.family === "lendingPool"
            ? {
                kind: "deposit",
                sender: a.sender,
                owner: a.owner,
                receiver: a.owner,
                assets: a.assets,
                shares: a.shares,
                asset: v.asset.address,
              }
            : {
                kind: "deposit",
                sender: a.senderAddr,
                owner: a.receiverAddr,
                receiver: a.receiverAddr,
                assets: a.amountIn,
                shares: a.shares,
                asset: a.assetIn,
              };
      expect({
        kind: r!.kind,
        sender: r!.sender,
        owner: r!.owner,
        receiver: r!.receiver,
        assets: r!.assets,
        shares: r!.shares,
        asset: r!.asset,
      }).toEqual(expected);
      expect([r!.vault, Number(r!.block_number), Number(r!.timestamp)]).toEqual([
        e.address,
        e.blockNumber,
        e.timestamp,
      ]);
    }
  });

  it("share_transfer: every share Transfer (mints and burns included) exactly once", async () => {
    const table = byKey(await q<Row>("SELECT * FROM indexer.share_transfer"));
    const events = indexed.filter((e) => e.event === "Transfer");
    expect(table.size).toBe(events.length);
    for (const e of events) {
      const r = table.get(key(e.chainId, e.txHash, e.logIndex))!;
      expect(r, `${e.txHash}:${e.logIndex}`).toBeDefined();
      const v = vaultOf(e).find((x) => x.address === e.address || x.receiptToken === e.address)!;
      expect([r.vault, r.token, r.from_address, r.to_address, r.shares]).toEqual([
        v.address,
        e.address,
        e.args.from,
        e.args.to,
        e.args.value,
      ]);
    }
  });

  it("withdrawal_request: every request once; every processing matched to its request", async () => {
    const table = byKey(await q<Row>("SELECT * FROM indexer.withdrawal_request"));
    const requests = indexed.filter((e) => e.event === "WithdrawalRequested");
    expect(table.size).toBe(requests.length);
    for (const e of requests) {
      const r = table.get(key(e.chainId, e.txHash, e.logIndex))!;
      expect(r).toBeDefined();
      const a = e.args;
      if ("ownerAddr" in a) {
        const date = `${a.year}-${String(a.month).padStart(2, "0")}-${String(a.day).padStart(2, "0")}`;
        expect([r.owner, r.receiver, r.shares, r.assets, r.fee, r.claimable_date]).toEqual([
          a.ownerAddr,
          a.receiverAddr,
          a.shares,
          a.assets,
          a.fee,
          date,
        ]);
      } else {
        expect([r.owner, r.receiver, r.shares]).toEqual([a.holderAddr, a.receiverAddr, a.shares]);
      }
    }
    // Processing: per transaction, the multiset of (receiver, assets) is the same.
    const processed = indexed.filter((e) => e.event === "WithdrawalProcessed");
    const fromChain = new Map<string, string[]>();
    for (const e of processed) {
      const k = `${e.chainId}:${e.txHash}`;
      fromChain.set(k, [...(fromChain.get(k) ?? []), `${e.args.receiverAddr}:${e.args.assetsAmount}`].sort());
    }
    const fromDb = new Map<string, string[]>();
    for (const r of table.values()) {
      if (r.status !== "processed") continue;
      const k = `${r.chain_id}:${r.processed_tx_hash}`;
      fromDb.set(k, [...(fromDb.get(k) ?? []), `${r.receiver}:${r.processed_assets}`].sort());
    }
    expect(fromDb).toEqual(fromChain);
    expect([...table.values()].filter((r) => r.status === "processed").length).toBe(processed.length);
    // LendingPool: each processed request is the one requested at the event's requestedOn.
    for (const e of processed.filter((x) => "requestedOn" in x.args)) {
      const match = [...table.values()].find(
        (r) =>
          r.processed_tx_hash === e.txHash &&
          r.receiver === e.args.receiverAddr &&
          r.processed_assets === e.args.assetsAmount,
      )!;
      expect(match.timestamp).toBe(String(e.args.requestedOn));
      // the newest version of the event says whether the receiver was blacklisted; the older not
      expect(match.processed_blacklisted).toBe("wasBlacklisted" in e.args ? e.args.wasBlacklisted : null);
    }
    const v2 = [...table.values()].filter((r) => r.status === "processed" && r.claimable_date == null);
    expect(v2.length).toBeGreaterThan(0);
    for (const r of v2) expect(r.processed_blacklisted).toBeNull();
  });

  it("timelock_operation: scheduled, executed and cancelled operations", async () => {
    const table = byKey(await q<Row>("SELECT * FROM indexer.timelock_operation"));
    const scheduled = indexed.filter((e) => e.event === "CallScheduled");
    expect(table.size).toBe(scheduled.length);
    const ops = new Map<string, Row>();
    for (const e of scheduled) {
      const r = table.get(key(e.chainId, e.txHash, e.logIndex))!;
      expect(r).toBeDefined();
      const a = e.args;
      expect([r.operation_hash, Number(r.call_index), r.target, r.value, r.data, r.predecessor, r.delay]).toEqual([
        a.id,
        Number(a.index),
        a.target,
        a.value,
        a.data,
        a.predecessor,
        a.delay,
      ]);
      expect(Number(r.ready_at)).toBe(e.timestamp + Number(a.delay));
      ops.set(`${e.chainId}:${a.id}:${a.index}`, r);
    }
    const executed = indexed.filter((e) => e.event === "CallExecuted");
    const cancelled = indexed.filter((e) => e.event === "Cancelled");
    for (const e of executed) {
      const r = ops.get(`${e.chainId}:${e.args.id}:${e.args.index}`)!;
      expect([r.status, r.executed_tx_hash, Number(r.executed_at)]).toEqual(["executed", e.txHash, e.timestamp]);
    }
    for (const e of cancelled) {
      const r = [...table.values()].filter((x) => x.cancelled_tx_hash === e.txHash);
      expect(r.map((x) => [x.status, x.operation_hash])).toEqual([["cancelled", e.args.id]]);
    }
    // An operation scheduled again after its cancellation keeps both rows.
    const rescheduled = scheduled.filter((e) =>
      cancelled.some((c) => c.chainId === e.chainId && c.args.id === e.args.id && c.blockNumber < e.blockNumber),
    );
    expect(rescheduled.length).toBeGreaterThan(0);
    for (const e of indexed.filter((x) => x.event === "CallSalt")) {
      expect(ops.get(`${e.chainId}:${e.args.id}:0`)!.salt).toBe(e.args.salt);
    }
    const pending = [...table.values()].filter((r) => r.status === "scheduled").length;
    expect(pending).toBe(scheduled.length - executed.length - cancelled.length);
    expect(pending).toBeGreaterThan(0);
  });

  it("governance_event and fee_event: every role, ownership, config, pause and fee event", async () => {
    const gov = byKey(await q<Row>("SELECT * FROM indexer.governance_event"));
    const govEvents = indexed.filter((e) => GOVERNANCE.has(e.event));
    expect(gov.size).toBe(govEvents.length);
    for (const e of govEvents) {
      const r = gov.get(key(e.chainId, e.txHash, e.logIndex))!;
      expect(r, `${e.event} ${e.txHash}`).toBeDefined();
      expect([r.event, r.contract, r.args]).toEqual([e.event, e.address, e.args]);
    }
    const fees = byKey(await q<Row>("SELECT * FROM indexer.fee_event WHERE kind <> 'withdrawal_fee'"));
    const feeEvents = indexed.filter((e) => FEES.has(e.event));
    expect(fees.size).toBe(feeEvents.length);
    for (const e of feeEvents) {
      const r = fees.get(key(e.chainId, e.txHash, e.logIndex))!;
      const amount = e.args.managementFeeAmount ?? e.args.amount ?? null;
      expect([r.kind, r.amount]).toEqual([
        e.event === "FeesCollected" ? "fees_collected" : "management_fee_charged",
        amount,
      ]);
    }
    const withdrawalFees = await q<{ n: string }>(
      "SELECT count(*) AS n FROM indexer.fee_event WHERE kind = 'withdrawal_fee'",
    );
    const charged = indexed.filter((e) => e.event === "WithdrawalRequested" && "fee" in e.args && e.args.fee !== "0");
    expect(Number(withdrawalFees[0]!.n)).toBe(charged.length);
  });

  it("loan and loan_event: every loan deployed by a pool and every loan event", async () => {
    const loans = await q<Row>("SELECT * FROM indexer.loan");
    const deployed = indexed.filter((e) => e.event === "NewLoanDeployedByPool");
    expect(loans.length).toBe(deployed.length);
    for (const e of deployed) {
      const r = loans.find((l) => Number(l.chain_id) === e.chainId && l.address === e.args.loanAddr)!;
      expect([r.vault, r.tx_hash]).toEqual([e.address, e.txHash]);
    }
    const loanAddresses = new Set(manifest.chains.flatMap((c) => c.loans));
    const loanEvents = indexed.filter((e) => loanAddresses.has(e.address));
    const table = byKey(await q<Row>("SELECT * FROM indexer.loan_event"));
    expect(table.size).toBe(loanEvents.length);
    for (const e of loanEvents) {
      const r = table.get(key(e.chainId, e.txHash, e.logIndex))!;
      expect([r.event, r.loan, r.args]).toEqual([e.event, e.address, e.args]);
    }
    // Repayments add up.
    for (const l of loans) {
      const repaid = loanEvents
        .filter(
          (e) => e.address === l.address && e.chainId === Number(l.chain_id) && e.event === "OnInterestsRepayment",
        )
        .reduce((s, e) => s + BigInt(e.args.amount as string), 0n);
      expect(l.interest_repaid).toBe(repaid.toString());
    }
  });
});

describe("snapshots and positions", () => {
  it("every simulated day has share-ratio snapshots for every vault", async () => {
    for (const c of manifest.chains) {
      for (const v of c.vaults) {
        const days = await q<{ day: number }>(
          "SELECT DISTINCT floor(timestamp / 86400)::int AS day FROM indexer.share_ratio_snapshot WHERE chain_id = $1 AND vault = $2",
          [c.chainId, v.address],
        );
        const have = new Set(days.map((d) => d.day));
        const firstDay = Math.floor(v.startTimestamp / 86400) + 1;
        const missing: number[] = [];
        for (let d = firstDay; d <= c.lastDay; d++) if (!have.has(d)) missing.push(d);
        expect(missing, `${c.chainId} ${v.name}`).toEqual([]);
      }
    }
  });

  it("has a snapshot at the block of every deposit and withdraw", async () => {
    const orphan = await q<{ n: string }>(
      `SELECT count(*) AS n FROM indexer.vault_event e LEFT JOIN indexer.share_ratio_snapshot s
         ON s.id = e.snapshot_id AND s.chain_id = e.chain_id AND s.vault = e.vault AND s.block_number = e.block_number AND s.source = 'flow'
       WHERE s.id IS NULL`,
    );
    expect(Number(orphan[0]!.n)).toBe(0);
    // One flow snapshot per vault and block with deposits or withdraws, no more.
    const [counts] = await q<{ blocks: string; snaps: string }>(
      `SELECT (SELECT count(*) FROM (SELECT DISTINCT chain_id, vault, block_number FROM indexer.vault_event) b) AS blocks,
              (SELECT count(*) FROM indexer.share_ratio_snapshot WHERE source = 'flow') AS snaps`,
    );
    expect(counts!.snaps).toBe(counts!.blocks);
  });

  it("vault rows: lag_duration is each vault's lagDuration() on its chain", async () => {
    const vaults = await q<Row>("SELECT chain_id, address, family, lag_duration FROM indexer.vault");
    expect(vaults.length).toBeGreaterThan(0);
    for (const r of vaults) {
      const c = manifest.chains.find((x) => x.chainId === Number(r.chain_id))!;
      const abi = r.family === "lendingPool" ? LendingPoolAbi : TokenizedVaultV2Abi;
      const ret = await rpcCall<Hex>(c.rpcUrl, "eth_call", [
        { to: r.address, data: encodeFunctionData({ abi, functionName: "lagDuration" }) },
        "latest",
      ]);
      expect(r.lag_duration, `${r.chain_id}:${r.address}`).toBe(BigInt(ret).toString());
    }
  });

  it("snapshot figures equal on-chain reads at their block", async () => {
    const sample = await q<Row>("SELECT * FROM indexer.share_ratio_snapshot ORDER BY md5(id) LIMIT 40");
    let reservedSeen = 0;
    for (const s of sample) {
      const c = manifest.chains.find((x) => x.chainId === Number(s.chain_id))!;
      const v = c.vaults.find((x) => x.address === s.vault)!;
      const block = `0x${BigInt(s.block_number!).toString(16)}`;
      const call = async (to: string, data: Hex) => rpcCall<Hex>(c.rpcUrl, "eth_call", [{ to, data }, block]);
      const abi = v.family === "lendingPool" ? LendingPoolAbi : TokenizedVaultV2Abi;
      const ta = BigInt(await call(v.address, encodeFunctionData({ abi, functionName: "totalAssets" })));
      const ts = BigInt(await call(v.address, encodeFunctionData({ abi, functionName: "totalSupply" })));
      const idleRet = await call(
        v.asset.address,
        encodeFunctionData({ abi: erc20Abi, functionName: "balanceOf", args: [v.address] }),
      );
      const idle = decodeFunctionResult({ abi: erc20Abi, functionName: "balanceOf", data: idleRet });
      expect([s.total_assets, s.total_supply, s.idle_assets]).toEqual([ta.toString(), ts.toString(), idle.toString()]);
      // of the idle balance, what is owed already: fees, and a pool's processed claims unclaimed
      const owed = async (fn: "accruedFees" | "claimableAssets") =>
        BigInt(await call(v.address, encodeFunctionData({ abi: LendingPoolAbi, functionName: fn })));
      const reserved = (await owed("accruedFees")) + (v.family === "lendingPool" ? await owed("claimableAssets") : 0n);
      expect(s.reserved_assets).toBe(reserved.toString());
      if (reserved > 0n) reservedSeen++;
      if (ts === 0n) {
        expect(s.asset_share_ratio).toBeNull();
        continue;
      }
      const scaled = (ta * 10n ** 18n) / ts;
      const expected = `${scaled / 10n ** 18n}.${(scaled % 10n ** 18n).toString().padStart(18, "0")}`;
      expect(s.asset_share_ratio).toBe(expected);
    }
    expect(reservedSeen).toBeGreaterThan(0);
  });

  it("subaccount_assets equals the registry subaccounts' balanceOf at the snapshot's block", async () => {
    const registry = loadRegistry(devnet.registryFile);
    const clients = new Map<number, PublicClient>(
      devnet.chains.map((c) => [c.chainId, createPublicClient({ transport: http(c.rpcUrl) }) as PublicClient]),
    );
    // Where the simulator moved assets from a vault into one of its registry subaccounts
    // (depositToSubaccount): the asset Transfer vault -> subaccount, first block per vault.
    const firstMove = new Map<string, number>();
    for (const c of manifest.chains) {
      for (const v of c.vaults) {
        const subs = new Set(registry.evm.find((x) => x.chainId === c.chainId && x.address === v.address)!.subaccounts);
        const moves = c.events.filter(
          (e) =>
            e.address === v.asset.address &&
            e.event === "Transfer" &&
            e.args.from === v.address &&
            subs.has(e.args.to as `0x${string}`),
        );
        if (moves.length > 0) firstMove.set(`${c.chainId}:${v.address}`, Math.min(...moves.map((e) => e.blockNumber)));
      }
    }
    expect(firstMove.size, "the simulation never moved assets into a subaccount").toBeGreaterThan(0);
    // Sample: the latest interval snapshot per vault, the first snapshot after each vault's first
    // move into a subaccount, and some others.
    const latest = await q<Row>(
      "SELECT DISTINCT ON (chain_id, vault) * FROM indexer.share_ratio_snapshot WHERE source = 'interval' ORDER BY chain_id, vault, block_number DESC",
    );
    expect(latest.length).toBe(registry.evm.length);
    const afterMove: Row[] = [];
    for (const [k, block] of firstMove) {
      const [chainId, vault] = k.split(":");
      afterMove.push(
        ...(await q<Row>(
          "SELECT * FROM indexer.share_ratio_snapshot WHERE chain_id = $1 AND vault = $2 AND block_number >= $3 ORDER BY block_number, id LIMIT 1",
          [Number(chainId), vault, block],
        )),
      );
    }
    expect(afterMove.length).toBe(firstMove.size);
    const others = await q<Row>(
      "SELECT * FROM indexer.share_ratio_snapshot ORDER BY md5(id || 'subaccounts') LIMIT 20",
    );
    const sample = new Map([...latest, ...afterMove, ...others].map((s) => [s.id as string, s]));
    for (const s of sample.values()) {
      const v = registry.evm.find((x) => x.chainId === Number(s.chain_id) && x.address === s.vault)!;
      expect(v.subaccounts.length, `${v.name} has no subaccounts in the registry`).toBeGreaterThan(0);
      const client = clients.get(v.chainId)!;
      let sum = 0n;
      for (const sub of v.subaccounts) {
        sum += await client.readContract({
          address: v.asset.address,
          abi: erc20Abi,
          functionName: "balanceOf",
          args: [sub],
          blockNumber: BigInt(s.block_number),
        });
      }
      expect(`${s.id} ${s.subaccount_assets}`).toBe(`${s.id} ${sum}`);
    }
    // Every vault whose assets went into a subaccount has a snapshot showing them there.
    const maxima = await q<{ chain_id: number; vault: string; max: string }>(
      "SELECT chain_id, vault, max(subaccount_assets)::text AS max FROM indexer.share_ratio_snapshot GROUP BY 1, 2",
    );
    for (const k of firstMove.keys()) {
      const m = maxima.find((r) => `${r.chain_id}:${r.vault}` === k);
      expect(BigInt(m?.max ?? "0"), `${k}: no snapshot with subaccount_assets > 0`).toBeGreaterThan(0n);
    }
  });

  it("alt_assets and alt_asset_usd_price equal the alt asset's balanceOf and feed at the snapshot's block", async () => {
    const registry = loadRegistry(devnet.registryFile);
    const withAlt = registry.evm.filter((v) => v.altAsset);
    expect(withAlt.map((v) => v.family)).toEqual(["tokenizedVaultV2", "tokenizedVaultV2"]);
    const clients = new Map<number, PublicClient>(
      devnet.chains.map((c) => [c.chainId, createPublicClient({ transport: http(c.rpcUrl) }) as PublicClient]),
    );
    // Vaults without an alt asset record none.
    const [others] = await q<{ n: string }>(
      `SELECT count(*) AS n FROM indexer.share_ratio_snapshot s
         JOIN indexer.vault v ON v.chain_id = s.chain_id AND v.address = s.vault
       WHERE v.alt_asset IS NULL AND (s.alt_assets IS NOT NULL OR s.alt_asset_usd_price IS NOT NULL)`,
    );
    expect(others!.n).toBe("0");
    for (const v of withAlt) {
      const alt = v.altAsset!;
      const feed = alt.priceFeed!;
      expect(feed, `${v.name}: the devnet registry gives the alt asset a feed`).toBeTruthy();
      const [meta] = await q<Row>(
        `SELECT alt_asset, alt_asset_symbol, alt_asset_decimals, alt_price_feed FROM indexer.vault
         WHERE chain_id = $1 AND address = $2`,
        [v.chainId, v.address],
      );
      expect(meta).toEqual({
        alt_asset: alt.address,
        alt_asset_symbol: alt.symbol,
        alt_asset_decimals: alt.decimals,
        alt_price_feed: feed.address,
      });
      // The latest snapshot (holding the most alt asset), flow snapshots (deposits of the alt
      // asset among them) and interval ones.
      const some = (source: string) =>
        `(SELECT * FROM indexer.share_ratio_snapshot WHERE chain_id = $1 AND vault = $2 AND source = '${source}'
           ORDER BY md5(id) LIMIT 8)`;
      const sample = await q<Row>(
        `(SELECT * FROM indexer.share_ratio_snapshot WHERE chain_id = $1 AND vault = $2 ORDER BY block_number DESC LIMIT 1)
         UNION ALL ${some("flow")} UNION ALL ${some("interval")}`,
        [v.chainId, v.address],
      );
      expect(sample.length).toBeGreaterThan(10);
      const client = clients.get(v.chainId)!;
      for (const s of sample) {
        const blockNumber = BigInt(s.block_number);
        let held = 0n;
        for (const holder of [v.address, ...v.subaccounts]) {
          held += await client.readContract({
            address: alt.address,
            abi: erc20Abi,
            functionName: "balanceOf",
            args: [holder],
            blockNumber,
          });
        }
        const round = {
          address: feed.address,
          abi: PriceFeedAbi,
          functionName: "latestRoundData",
          blockNumber,
        } as const;
        const [, answer] = await client.readContract(round);
        const scaled = answer * 10n ** BigInt(18 - feed.decimals);
        const price = `${scaled / 10n ** 18n}.${(scaled % 10n ** 18n).toString().padStart(18, "0")}`;
        expect(`${s.id} ${s.alt_assets} ${s.alt_asset_usd_price}`).toBe(`${s.id} ${held} ${price}`);
      }
      const [max] = await q<{ max: string | null }>(
        "SELECT max(alt_assets)::text AS max FROM indexer.share_ratio_snapshot WHERE chain_id = $1 AND vault = $2",
        [v.chainId, v.address],
      );
      expect(BigInt(max!.max ?? "0"), `${v.name}: no snapshot holding the alt asset`).toBeGreaterThan(0n);
    }
  });

  it("positions replayed from share_transfer equal balanceOf at the head", async () => {
    const positions = await q<{ chain_id: number; vault: string; holder: string; balance: string }>(`
      SELECT chain_id, vault, holder, sum(delta)::text AS balance FROM (
        SELECT chain_id, vault, to_address AS holder, shares AS delta FROM indexer.share_transfer
        UNION ALL
        SELECT chain_id, vault, from_address, -shares FROM indexer.share_transfer
      ) t WHERE holder <> '0x0000000000000000000000000000000000000000'
      GROUP BY 1, 2, 3`);
    expect(positions.length).toBeGreaterThan(50);
    for (const p of positions) {
      const c = manifest.chains.find((x) => x.chainId === Number(p.chain_id))!;
      const v = c.vaults.find((x) => x.address === p.vault)!;
      const token = v.receiptToken ?? v.address;
      const data = encodeFunctionData({ abi: erc20Abi, functionName: "balanceOf", args: [p.holder as `0x${string}`] });
      const onChain = BigInt(await rpcCall<Hex>(c.rpcUrl, "eth_call", [{ to: token, data }, "latest"]));
      expect(`${p.chain_id} ${p.vault} ${p.holder} ${p.balance}`).toBe(
        `${p.chain_id} ${p.vault} ${p.holder} ${onChain}`,
      );
    }
    // Minted minus burned equals each vault's total supply, and the vault row agrees.
    const supply = await q<{ chain_id: number; vault: string; minted: string; total_supply: string }>(`
      SELECT t.chain_id, t.vault,
        (sum(CASE WHEN from_address = '0x0000000000000000000000000000000000000000' THEN shares ELSE 0 END)
         - sum(CASE WHEN to_address = '0x0000000000000000000000000000000000000000' THEN shares ELSE 0 END))::text AS minted,
        v.total_supply::text AS total_supply
      FROM indexer.share_transfer t JOIN indexer.vault v ON v.chain_id = t.chain_id AND v.address = t.vault
      GROUP BY 1, 2, v.total_supply`);
    for (const s of supply) {
      const c = manifest.chains.find((x) => x.chainId === Number(s.chain_id))!;
      const v = c.vaults.find((x) => x.address === s.vault)!;
      const data = encodeFunctionData({ abi: erc20Abi, functionName: "totalSupply" });
      const onChain = BigInt(
        await rpcCall<Hex>(c.rpcUrl, "eth_call", [{ to: v.receiptToken ?? v.address, data }, "latest"]),
      );
      expect(s.minted).toBe(onChain.toString());
      // the vault row's supply is its latest snapshot's: totalSupply() at that block
      const [last] = await q<{ block: string }>(
        `SELECT max(block_number)::text AS block FROM indexer.share_ratio_snapshot WHERE chain_id = $1 AND vault = $2`,
        [s.chain_id, s.vault],
      );
      const atSnapshot = BigInt(
        await rpcCall<Hex>(c.rpcUrl, "eth_call", [
          { to: v.receiptToken ?? v.address, data },
          `0x${BigInt(last!.block).toString(16)}`,
        ]),
      );
      expect(`${s.vault} ${s.total_supply}`).toBe(`${s.vault} ${atSnapshot}`);
    }
    expect(supply.length).toBe(manifest.chains.flatMap((c) => c.vaults).length);
  });

  it("lists every vault as fully backfilled", async () => {
    const list = await q<{ chain_id: number; vault: string }>(
      "SELECT chain_id, vault FROM ops.vault_backfill ORDER BY 1, 2",
    );
    const expected = manifest.chains.flatMap((c) => c.vaults.map((v) => ({ chain_id: c.chainId, vault: v.address })));
    expect(list.map((r) => `${r.chain_id}:${r.vault}`).sort()).toEqual(
      expected.map((r) => `${r.chain_id}:${r.vault}`).sort(),
    );
  });

  it("gives the analyst role SELECT and nothing else", async () => {
    await expect(q("INSERT INTO indexer.vault_event (id) VALUES ('x')")).rejects.toThrow(/permission denied|read-only/);
    await expect(q("CREATE TABLE public.analyst_was_here (x int)")).rejects.toThrow(/permission denied|read-only/);
    await expect(q("DELETE FROM ops.vault_backfill")).rejects.toThrow(/permission denied|read-only/);
    await expect(q(`SELECT count(*) FROM "${devnet.schema}".vault`)).rejects.toThrow(/permission denied/);
  });
});
