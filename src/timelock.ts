/** TimelockController handlers: operations (scheduled, executed, cancelled), roles and delay. */
import { type Context, ponder } from "ponder:registry";
import { timelock_operation } from "ponder:schema";
import { eventColumns } from "./common";
import { findVault, vaultsOfTimelock } from "./registry";
import { governance } from "./vaults";

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

function firstVault(chainId: number, timelock: string): `0x${string}` | null {
  return (vaultsOfTimelock(chainId, timelock)[0]?.address as `0x${string}` | undefined) ?? null;
}

ponder.on("Timelock:CallScheduled", async ({ event, context }) => {
  const { id, index, target, value, data, predecessor, delay } = event.args;
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
    vault: (targetVault?.address as `0x${string}` | undefined) ?? firstVault(chainId, event.log.address),
    timelock: event.log.address.toLowerCase() as `0x${string}`,
    operation_hash: id,
    call_index: Number(index),
    target: target.toLowerCase() as `0x${string}`,
    value,
    data,
    predecessor,
    salt: null,
    delay,
    ready_at: event.block.timestamp + delay,
    status: "scheduled",
  });
});

ponder.on("Timelock:CallSalt", async ({ event, context }) => {
  await forEachCall(context, event.log.address, event.args.id, async (id) => {
    await context.db.update(timelock_operation, { id }).set({ salt: event.args.salt });
  });
});

ponder.on("Timelock:CallExecuted", async ({ event, context }) => {
  const id = opKey(context.chain.id, event.log.address, event.args.id, event.args.index);
  if (!(await context.db.find(timelock_operation, { id }))) {
    console.warn(`Timelock:CallExecuted for unknown operation ${id} (tx ${event.transaction.hash})`);
    return;
  }
  await context.db.update(timelock_operation, { id }).set({
    status: "executed",
    executed_at: event.block.timestamp,
    executed_tx_hash: event.transaction.hash,
  });
});

ponder.on("Timelock:Cancelled", async ({ event, context }) => {
  await forEachCall(context, event.log.address, event.args.id, async (id) => {
    await context.db.update(timelock_operation, { id }).set({
      status: "cancelled",
      cancelled_at: event.block.timestamp,
      cancelled_tx_hash: event.transaction.hash,
    });
  });
});

ponder.on("Timelock:RoleGranted", async ({ event, context }) => {
  await governance(context, event, "RoleGranted", "role", firstVault(context.chain.id, event.log.address));
});

ponder.on("Timelock:RoleRevoked", async ({ event, context }) => {
  await governance(context, event, "RoleRevoked", "role", firstVault(context.chain.id, event.log.address));
});

ponder.on("Timelock:MinDelayChange", async ({ event, context }) => {
  await governance(context, event, "MinDelayChange", "timelock", firstVault(context.chain.id, event.log.address));
});
