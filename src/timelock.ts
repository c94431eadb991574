/**
 * TimelockController handlers: operations (scheduled, executed, cancelled), roles and delay. Two
 * sources share them: the registry's timelocks (`Timelock`), and any contract a vault's ownership
 * moves to (`OwnerTimelock`), of which only TimelockControllers the registry does not name are
 * kept (`timelock_source`, written by `followOwner` when the vault's OwnershipTransferred names it).
 */
import { type Context, ponder } from "ponder:registry";
import { timelock_operation, timelock_source } from "ponder:schema";
import { type Address, decodeEventLog, type Hex, type Log } from "viem";
import { TimelockControllerAbi } from "../abis/TimelockControllerAbi";
import { failsForNow } from "../config/rpc-errors";
import { directClient, eventColumns, governance } from "./common";
import { logsSinceDeployment } from "./module-logs";
import { readAtBlock } from "./read-at-block";
import { findVault, vaultsOfTimelock } from "./registry";

type TimelockEvent = Parameters<typeof eventColumns>[0] & { args: Record<string, unknown> };
const lc = (a: string) => a.toLowerCase() as `0x${string}`;
const ZERO = "0x0000000000000000000000000000000000000000";

function opKey(chainId: number, timelock: string, operationId: string, index: bigint | number) {
  return `${chainId}:${timelock.toLowerCase()}:${operationId.toLowerCase()}:${index}`;
}

/** Updates every call row of an operation (indexes 0..n-1). */
async function forEachCall(context: Context, timelock: string, operationId: string, fn: (id: string) => Promise<void>) {
  for (let i = 0; ; i++) {
    const id = opKey(context.chain.id, timelock, operationId, i);
    if (!(await context.db.find(timelock_operation, { id }))) break;
    await fn(id);
  }
}

/** The vault a timelock's own events belong to: the registry's first, else the first that moved to it. */
async function firstVault(context: Context, timelock: string): Promise<`0x${string}` | null> {
  const named = vaultsOfTimelock(context.chain.id, timelock)[0]?.address as `0x${string}` | undefined;
  if (named) return named;
  const source = await context.db.find(timelock_source, { chain_id: context.chain.id, address: lc(timelock) });
  return source?.vault ?? null;
}

const HANDLERS = {
  CallScheduled: async (context: Context, event: TimelockEvent) => {
    const { id, index, target, value, data, predecessor, delay } = event.args as {
      id: Hex;
      index: bigint;
      target: Address;
      value: bigint;
      data: Hex;
      predecessor: Hex;
      delay: bigint;
    };
    const chainId = context.chain.id;
    const targetVault = findVault(chainId, target);
    const key = opKey(chainId, event.log.address, id, index);
    // A cancelled operation may be scheduled again with the same id: keep the cancelled one's
    // history under a key of its own and let the key point at the new schedule.
    const previous = await context.db.find(timelock_operation, { id: key });
    if (previous) {
      await context.db
        .insert(timelock_operation)
        .values({ ...previous, id: `${key}:${previous.tx_hash}:${previous.log_index}` });
      await context.db.delete(timelock_operation, { id: key });
    }
    await context.db.insert(timelock_operation).values({
      ...eventColumns(event, chainId),
      id: key,
      vault: (targetVault?.address as `0x${string}` | undefined) ?? (await firstVault(context, event.log.address)),
      timelock: lc(event.log.address),
      operation_hash: id,
      call_index: Number(index),
      target: lc(target),
      value,
      data,
      predecessor,
      salt: null,
      delay,
      ready_at: event.block.timestamp + delay,
      status: "scheduled",
    });
  },
  CallSalt: async (context: Context, event: TimelockEvent) => {
    const { id, salt } = event.args as { id: Hex; salt: Hex };
    await forEachCall(context, event.log.address, id, async (row) => {
      await context.db.update(timelock_operation, { id: row }).set({ salt });
    });
  },
  CallExecuted: async (context: Context, event: TimelockEvent) => {
    const { id: op, index } = event.args as { id: Hex; index: bigint };
    const id = opKey(context.chain.id, event.log.address, op, index);
    if (!(await context.db.find(timelock_operation, { id }))) {
      console.warn(`Timelock:CallExecuted for unknown operation ${id} (tx ${event.transaction.hash})`);
      return;
    }
    await context.db.update(timelock_operation, { id }).set({
      status: "executed",
      executed_at: event.block.timestamp,
      executed_tx_hash: event.transaction.hash,
    });
  },
  Cancelled: async (context: Context, event: TimelockEvent) => {
    await forEachCall(context, event.log.address, event.args.id as Hex, async (id) => {
      await context.db.update(timelock_operation, { id }).set({
        status: "cancelled",
        cancelled_at: event.block.timestamp,
        cancelled_tx_hash: event.transaction.hash,
      });
    });
  },
  RoleGranted: async (context: Context, event: TimelockEvent) =>
    governance(context, event, "RoleGranted", "role", await firstVault(context, event.log.address)),
  RoleRevoked: async (context: Context, event: TimelockEvent) =>
    governance(context, event, "RoleRevoked", "role", await firstVault(context, event.log.address)),
  MinDelayChange: async (context: Context, event: TimelockEvent) =>
    governance(context, event, "MinDelayChange", "timelock", await firstVault(context, event.log.address)),
} as const;
type Name = keyof typeof HANDLERS;

/** Whether `OwnerTimelock` events of `address` are kept: a followed timelock the registry does not name. */
async function followed(context: Context, address: string): Promise<boolean> {
  if (vaultsOfTimelock(context.chain.id, address).length > 0) return false; // the `Timelock` source's
  return (await context.db.find(timelock_source, { chain_id: context.chain.id, address: lc(address) })) != null;
}

// the names spelled out: bench/handlers.ts reads what a loop registers from its literal list
for (const name of [
  "CallScheduled",
  "CallSalt",
  "CallExecuted",
  "Cancelled",
  "RoleGranted",
  "RoleRevoked",
  "MinDelayChange",
] as const) {
  ponder.on(`Timelock:${name}`, async ({ event, context }) => {
    await HANDLERS[name](context, event as unknown as TimelockEvent);
  });
  ponder.on(`OwnerTimelock:${name}`, async ({ event, context }) => {
    if (await followed(context, event.log.address)) await HANDLERS[name](context, event as unknown as TimelockEvent);
  });
}

/**
 * A vault's ownership moved to `newOwner` (its OwnershipTransferred, `event`). Whether the new
 * owner is a TimelockController (it answers getMinDelay() at that block): the vault's timelock
 * from now (src/vaults.ts records it). One the registry does not name is followed from here
 * (`timelock_source`), and what it emitted before, from its deployment up to this log (its
 * constructor's roles, the schedule of the acceptance), is read now and recorded as if indexed.
 */
export async function followOwner(
  context: Context,
  event: TimelockEvent,
  vaultAddress: string,
  newOwner: string,
): Promise<boolean> {
  const chainId = context.chain.id;
  const owner = lc(newOwner);
  if (owner === ZERO) return false;
  const client = directClient(chainId);
  const at = event.block.number;
  const isTimelock = await readAtBlock(
    (atBlock) =>
      client.readContract({
        address: owner,
        abi: TimelockControllerAbi,
        functionName: "getMinDelay",
        ...(atBlock ? { blockNumber: at } : {}),
      }),
    `getMinDelay of ${owner} at block ${at}`,
  ).then(
    () => true,
    // it reverts (an EOA, a Safe, another contract): not a timelock; so too where the node keeps
    // no state of that block. A node that failed to answer throws: taken for "not a timelock",
    // the owner's events would never be followed.
    (err: unknown) => {
      if (failsForNow(err)) throw err;
      return false;
    },
  );
  if (!isTimelock) return false;
  if (vaultsOfTimelock(chainId, owner).length > 0) return true; // the registry's: followed all along
  if (await context.db.find(timelock_source, { chain_id: chainId, address: owner })) return true;
  await context.db
    .insert(timelock_source)
    .values({ chain_id: chainId, address: owner, vault: lc(vaultAddress), from_block: at });
  const logs = await readAtBlock(
    () => logsSinceDeployment(client, owner, 0n, at),
    `timelock ${owner} logs up to block ${at}`,
  );
  const before = logs.filter((l) => (l.blockNumber as bigint) < at || (l.logIndex as number) < event.log.logIndex);
  const timestamps = new Map<bigint, bigint>([[at, event.block.timestamp]]);
  for (const log of before as Log<bigint, number, false>[]) {
    let decoded: ReturnType<typeof decodeEventLog<typeof TimelockControllerAbi>>;
    try {
      decoded = decodeEventLog({ abi: TimelockControllerAbi, data: log.data, topics: log.topics });
    } catch {
      continue; // not one of the timelock's events
    }
    if (!(decoded.eventName in HANDLERS)) continue;
    if (!timestamps.has(log.blockNumber)) {
      timestamps.set(log.blockNumber, (await client.getBlock({ blockNumber: log.blockNumber })).timestamp);
    }
    await HANDLERS[decoded.eventName as Name](context, {
      id: `${chainId}:${log.blockNumber}:${log.transactionIndex}:${log.logIndex}:before-owner`,
      block: { number: log.blockNumber, timestamp: timestamps.get(log.blockNumber)!, hash: log.blockHash },
      transaction: { hash: log.transactionHash },
      log: { logIndex: log.logIndex, address: lc(log.address) },
      args: decoded.args as Record<string, unknown>,
    });
  }
  return true;
}
