/**
 * The subaccounts' actions on the protocols of the registry: Aave v3 and Morpho Blue (filtered by
 * the subaccount's indexed topic), Uniswap v3 position NFTs (transfers to or from a subaccount; the
 * liquidity and staking events of those positions), the v3 staker, and the perp bridges' deposits
 * with the core ledger's answers.
 */
import { type Context, ponder } from "ponder:registry";
import {
  aave_event,
  morpho_event,
  perp_core_event,
  perp_deposit,
  uniswap_event,
  uniswap_incentive,
  uniswap_position,
  uniswap_staker,
} from "ponder:schema";
import { encodeAbiParameters, keccak256, zeroAddress } from "viem";
import { IncentiveKeyTuple, PositionLiquidityAbi } from "../abis/ProtocolEventsAbi";
import { stakerIncentivesStart } from "../config/indexer";
import { directClient, eventColumns, jsonArgs } from "./common";
import { readAtBlock } from "./read-at-block";
import { chainOf, isSubaccount, protocolsOf } from "./registry";

type Ev = Parameters<typeof eventColumns>[0];
type Args = Record<string, unknown>;
const lc = (a: string) => a.toLowerCase() as `0x${string}`;

// ---- Aave v3 ----------------------------------------------------------------------------------

async function aave(
  context: Context,
  event: Ev & { args: Args },
  kind: string,
  sub: string,
  reserve: string,
  amount: bigint,
) {
  await context.db.insert(aave_event).values({
    ...eventColumns(event, context.chain.id),
    pool: lc(event.log.address),
    subaccount: lc(sub),
    kind,
    reserve: lc(reserve),
    amount,
    args: jsonArgs(event.args),
  });
}

ponder.on("AavePool:Supply", async ({ event, context }) =>
  aave(context, event, "supply", event.args.onBehalfOf, event.args.reserve, event.args.amount),
);
ponder.on("AavePool:Withdraw", async ({ event, context }) =>
  aave(context, event, "withdraw", event.args.user, event.args.reserve, event.args.amount),
);
ponder.on("AavePool:Borrow", async ({ event, context }) =>
  aave(context, event, "borrow", event.args.onBehalfOf, event.args.reserve, event.args.amount),
);
ponder.on("AavePool:Repay", async ({ event, context }) =>
  aave(context, event, "repay", event.args.user, event.args.reserve, event.args.amount),
);
ponder.on("AavePool:LiquidationCall", async ({ event, context }) =>
  aave(context, event, "liquidation", event.args.user, event.args.debtAsset, event.args.debtToCover),
);

// ---- Morpho Blue ------------------------------------------------------------------------------

async function morpho(
  context: Context,
  event: Ev,
  kind: string,
  a: { id: `0x${string}`; caller: string; onBehalf: string; receiver?: string; assets: bigint; shares?: bigint },
) {
  await context.db.insert(morpho_event).values({
    ...eventColumns(event, context.chain.id),
    morpho: lc(event.log.address),
    market_id: lc(a.id),
    subaccount: lc(a.onBehalf),
    kind,
    caller: lc(a.caller),
    receiver: a.receiver ? lc(a.receiver) : null,
    assets: a.assets,
    shares: a.shares ?? null,
  });
}

ponder.on("MorphoBlue:Supply", async ({ event, context }) => morpho(context, event, "supply", event.args));
ponder.on("MorphoBlue:Withdraw", async ({ event, context }) => morpho(context, event, "withdraw", event.args));
ponder.on("MorphoBlue:Borrow", async ({ event, context }) => morpho(context, event, "borrow", event.args));
ponder.on("MorphoBlue:Repay", async ({ event, context }) => morpho(context, event, "repay", event.args));
ponder.on("MorphoBlue:SupplyCollateral", async ({ event, context }) =>
  morpho(context, event, "supply_collateral", event.args),
);
ponder.on("MorphoBlue:WithdrawCollateral", async ({ event, context }) =>
  morpho(context, event, "withdraw_collateral", event.args),
);

// ---- Uniswap v3 positions and the staker --------------------------------------------------------

async function uniEvent(
  context: Context,
  event: Ev & { args: Args },
  name: string,
  subaccount: string,
  tokenId: bigint | null,
) {
  // a transfer between two subaccounts is delivered by both transfer sources: recorded once
  await context.db
    .insert(uniswap_event)
    .values({
      ...eventColumns(event, context.chain.id),
      contract: lc(event.log.address),
      subaccount: lc(subaccount),
      token_id: tokenId,
      event: name,
      args: jsonArgs(event.args),
    })
    .onConflictDoNothing();
}

function stakerOf(chainId: number): string | null {
  return protocolsOf(chainId)?.uniswap?.staker ?? null;
}

/** The position's row, created from the position manager's `positions` when a subaccount first gets it. */
async function positionRow(context: Context, event: Ev, tokenId: bigint, holder: `0x${string}`, minted: boolean) {
  const key = { chain_id: context.chain.id, position_manager: lc(event.log.address), token_id: tokenId };
  const row = await context.db.find(uniswap_position, key);
  if (row) return row;
  // a mint's liquidity comes with its IncreaseLiquidity; a position received otherwise is read as
  // it was before this block (events of this block are then applied by their handlers)
  const at = minted ? event.block.number : event.block.number - 1n;
  const p = await readAtBlock(
    (atBlock) =>
      directClient(context.chain.id).readContract({
        address: event.log.address,
        abi: PositionLiquidityAbi,
        functionName: "positions",
        args: [tokenId],
        ...(atBlock ? { blockNumber: at } : {}),
      }),
    `position ${tokenId} at block ${at}`,
  );
  const values = {
    ...key,
    subaccount: holder,
    owner: holder,
    staked: false,
    token0: lc(p[2]),
    token1: lc(p[3]),
    fee: Number(p[4]),
    tick_lower: Number(p[5]),
    tick_upper: Number(p[6]),
    liquidity: minted ? 0n : p[7],
    block_number: event.block.number,
    updated_at: event.block.timestamp,
  };
  await context.db.insert(uniswap_position).values(values);
  return values;
}

ponder.on("PositionsIn:Transfer", async ({ event, context }) => {
  const { from, to, tokenId } = event.args;
  await uniEvent(context, event, "Transfer", to, tokenId);
  const row = await positionRow(context, event, tokenId, lc(to), from === zeroAddress);
  await context.db
    .update(uniswap_position, row)
    .set({ subaccount: lc(to), owner: lc(to), staked: false, updated_at: event.block.timestamp });
});

ponder.on("PositionsOut:Transfer", async ({ event, context }) => {
  const { from, to, tokenId } = event.args;
  await uniEvent(context, event, "Transfer", from, tokenId);
  if (isSubaccount(to)) return; // PositionsIn:Transfer takes it
  const key = { chain_id: context.chain.id, position_manager: lc(event.log.address), token_id: tokenId };
  const row = await context.db.find(uniswap_position, key);
  if (!row) return; // held since before the indexed range
  // into the staker it stays the subaccount's (its deposit); anywhere else it is gone
  const toStaker = lc(to) === stakerOf(context.chain.id);
  await context.db.update(uniswap_position, key).set({
    owner: lc(to),
    subaccount: toStaker ? lc(from) : null,
    updated_at: event.block.timestamp,
  });
});

async function liquidity(context: Context, event: Ev & { args: Args & { tokenId: bigint } }, name: string) {
  const pm = protocolsOf(context.chain.id)?.uniswap?.positionManager;
  if (!pm) return;
  const key = { chain_id: context.chain.id, position_manager: lc(pm), token_id: event.args.tokenId };
  const row = await context.db.find(uniswap_position, key);
  if (!row?.subaccount) return; // not a subaccount's position
  await uniEvent(context, event, name, row.subaccount, event.args.tokenId);
  const delta = (event.args.liquidity as bigint | undefined) ?? 0n;
  if (name === "IncreaseLiquidity" || name === "DecreaseLiquidity") {
    await context.db.update(uniswap_position, key).set({
      liquidity: name === "IncreaseLiquidity" ? row.liquidity + delta : row.liquidity - delta,
      updated_at: event.block.timestamp,
    });
  }
}

ponder.on("PositionLiquidity:IncreaseLiquidity", async ({ event, context }) =>
  liquidity(context, event, "IncreaseLiquidity"),
);
ponder.on("PositionLiquidity:DecreaseLiquidity", async ({ event, context }) =>
  liquidity(context, event, "DecreaseLiquidity"),
);
ponder.on("PositionLiquidity:Collect", async ({ event, context }) => liquidity(context, event, "Collect"));

async function stakedRow(context: Context, tokenId: bigint) {
  const pm = protocolsOf(context.chain.id)?.uniswap?.positionManager;
  if (!pm) return undefined;
  const key = { chain_id: context.chain.id, position_manager: lc(pm), token_id: tokenId };
  const row = await context.db.find(uniswap_position, key);
  return row ? { key, row } : undefined;
}

ponder.on("StakerDepositsIn:DepositTransferred", async ({ event, context }) => {
  const { tokenId, newOwner } = event.args;
  await uniEvent(context, event, "DepositTransferred", newOwner, tokenId);
  const found = await stakedRow(context, tokenId);
  if (found) {
    await context.db
      .update(uniswap_position, found.key)
      .set({ subaccount: lc(newOwner), staked: true, updated_at: event.block.timestamp });
  }
});

ponder.on("StakerDepositsOut:DepositTransferred", async ({ event, context }) => {
  const { tokenId, oldOwner, newOwner } = event.args;
  await uniEvent(context, event, "DepositTransferred", oldOwner, tokenId);
  if (isSubaccount(newOwner)) return; // StakerDepositsIn takes it
  const found = await stakedRow(context, tokenId);
  if (!found) return;
  // withdrawn (new owner 0: the NFT's Transfer follows) or the deposit given to someone else
  await context.db.update(uniswap_position, found.key).set({
    staked: false,
    ...(newOwner === zeroAddress ? {} : { subaccount: null }),
    updated_at: event.block.timestamp,
  });
});

for (const name of ["TokenStaked", "TokenUnstaked"] as const) {
  ponder.on(`Staker:${name}`, async ({ event, context }) => {
    const found = await stakedRow(context, event.args.tokenId);
    if (!found?.row.subaccount) return;
    await uniEvent(context, event, name, found.row.subaccount, event.args.tokenId);
  });
}

ponder.on("Staker:RewardClaimed", async ({ event, context }) =>
  uniEvent(context, event, "RewardClaimed", event.args.to, null),
);

// every incentive of the staker, anyone's: the reads' keys (db/staker-incentives.ts), and the
// block they are indexed from, written before the first
ponder.on("StakerIncentives:setup", async ({ context }) => {
  const staker = stakerOf(context.chain.id);
  if (!staker) return;
  const from = BigInt(stakerIncentivesStart(chainOf(context.chain.id)));
  await context.db
    .insert(uniswap_staker)
    .values({ chain_id: context.chain.id, address: lc(staker), indexed_from: from })
    .onConflictDoUpdate({ indexed_from: from });
});

ponder.on("StakerIncentives:IncentiveCreated", async ({ event, context }) => {
  const a = event.args;
  const key = {
    rewardToken: a.rewardToken,
    pool: a.pool,
    startTime: a.startTime,
    endTime: a.endTime,
    refundee: a.refundee,
  };
  await context.db.insert(uniswap_incentive).values({
    ...eventColumns(event, context.chain.id),
    staker: lc(event.log.address),
    incentive_id: keccak256(encodeAbiParameters([IncentiveKeyTuple], [key])), // the staker's id
    reward_token: lc(a.rewardToken),
    pool: lc(a.pool),
    start_time: a.startTime,
    end_time: a.endTime,
    refundee: lc(a.refundee),
    reward: a.reward,
  });
});

// ---- perp bridges and the core ledger ----------------------------------------------------------

ponder.on("PerpBridge:Deposited", async ({ event, context }) => {
  const a = event.args;
  await context.db.insert(perp_deposit).values({
    ...eventColumns(event, context.chain.id),
    bridge: lc(event.log.address),
    core_hash: lc(a.coreHash),
    depositor: lc(a.depositor),
    token: lc(a.token),
    amount: a.amount,
    destination: Number(a.destination),
    nonce: a.nonce,
  });
});

ponder.on("CoreLedger:Credited", async ({ event, context }) => {
  const a = event.args;
  await context.db.insert(perp_core_event).values({
    ...eventColumns(event, context.chain.id),
    ledger: lc(event.log.address),
    core_hash: lc(a.coreHash),
    kind: "credited",
    depositor: lc(a.depositor),
    bridge: lc(a.bridge),
    source_chain_id: a.chainId,
    token: lc(a.token),
    amount: a.amount,
    destination: Number(a.destination),
  });
});

ponder.on("CoreLedger:Rejected", async ({ event, context }) => {
  await context.db.insert(perp_core_event).values({
    ...eventColumns(event, context.chain.id),
    ledger: lc(event.log.address),
    core_hash: lc(event.args.coreHash),
    kind: "rejected",
    reason: event.args.reason,
  });
});
