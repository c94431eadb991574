/**
 * The registry's lending vaults (ERC-4626 over a Morpho market, `morpho.lendingVaults`): deposits
 * and withdraws, and share-price snapshots (totalAssets, totalSupply) at the end of each block with
 * one or more of them and every SNAPSHOT_INTERVAL_<chainId> blocks.
 */
import { type Context, ponder } from "ponder:registry";
import { lending_vault_event, lending_vault_snapshot } from "ponder:schema";
import { MorphoLendingVaultAbi } from "../abis/MorphoLendingVaultAbi";
import { multicallEach } from "../config/multicall3";
import { directClient, eventColumns, ratio18 } from "./common";
import { readAtBlock } from "./read-at-block";
import { protocolsOf } from "./registry";

type Ev = Parameters<typeof eventColumns>[0];
const lc = (a: string) => a.toLowerCase() as `0x${string}`;

async function readTotals(chainId: number, vault: `0x${string}`, blockNumber: bigint) {
  const [assets, supply] = await readAtBlock(
    async (atBlock) =>
      multicallEach(directClient(chainId), {
        ...(atBlock ? { blockNumber } : {}),
        contracts: [
          { address: vault, abi: MorphoLendingVaultAbi, functionName: "totalAssets" },
          { address: vault, abi: MorphoLendingVaultAbi, functionName: "totalSupply" },
        ],
      }),
    `lending vault ${vault} at block ${blockNumber}`,
  );
  // a failed call: no vault at that address yet (an interval block before its deployment)
  if (assets?.status !== "success" || supply?.status !== "success") return null;
  return { totalAssets: assets.result as bigint, totalSupply: supply.result as bigint };
}

async function snapshot(
  context: Context,
  id: string,
  vault: `0x${string}`,
  source: "flow" | "interval",
  block: { number: bigint; timestamp: bigint },
  tx: { hash: `0x${string}`; logIndex: number } | null,
) {
  if (await context.db.find(lending_vault_snapshot, { id })) return;
  const t = await readTotals(context.chain.id, vault, block.number);
  if (!t) {
    if (source === "flow") throw new Error(`lending vault ${vault}: totals unreadable at block ${block.number}`);
    return;
  }
  await context.db.insert(lending_vault_snapshot).values({
    id,
    chain_id: context.chain.id,
    vault,
    source,
    total_assets: t.totalAssets,
    total_supply: t.totalSupply,
    asset_share_ratio: ratio18(t.totalAssets, t.totalSupply),
    block_number: block.number,
    timestamp: block.timestamp,
    tx_hash: tx?.hash ?? null,
    log_index: tx?.logIndex ?? null,
  });
}

async function flow(
  context: Context,
  event: Ev,
  kind: "deposit" | "withdraw",
  a: { sender: string; owner: string; receiver: string; assets: bigint; shares: bigint },
) {
  const vault = lc(event.log.address);
  const snapshotId = `${context.chain.id}:${vault}:${event.block.number}:flow`;
  await context.db.insert(lending_vault_event).values({
    ...eventColumns(event, context.chain.id),
    vault,
    kind,
    sender: lc(a.sender),
    owner: lc(a.owner),
    receiver: lc(a.receiver),
    assets: a.assets,
    shares: a.shares,
    snapshot_id: snapshotId,
  });
  await snapshot(context, snapshotId, vault, "flow", event.block, {
    hash: event.transaction.hash,
    logIndex: event.log.logIndex,
  });
}

ponder.on("LendingVault:Deposit", async ({ event, context }) =>
  flow(context, event, "deposit", { ...event.args, receiver: event.args.owner }),
);
ponder.on("LendingVault:Withdraw", async ({ event, context }) => flow(context, event, "withdraw", event.args));

ponder.on("LendingVaultSnapshot:block", async ({ event, context }) => {
  for (const vault of protocolsOf(context.chain.id)?.morpho?.lendingVaults ?? []) {
    await snapshot(context, `${event.id}:${vault}`, vault, "interval", event.block, null);
  }
});
