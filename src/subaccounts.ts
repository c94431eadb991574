/**
 * Subaccounts: the registry's subaccount Safes (setup, modules, owners) and their SubaccountModules
 * (a factory source: each Safe's EnabledModule names its module). Safe 1.3.x Safes and their
 * modules are sources of their own (`SubaccountSafeV130`, `SubaccountModuleV130`), handled alike.
 * The `subaccount` row keeps the Safe's owners and threshold and the module's roles and vault as
 * they are now.
 */
import { type Context, ponder } from "ponder:registry";
import { subaccount, subaccount_event, subaccount_module } from "ponder:schema";
import { type Address, decodeEventLog, type Hex, keccak256, type Log, parseAbi, toHex } from "viem";
import { SubaccountModuleAbi } from "../abis/SubaccountModuleAbi";
import { subaccountsStart } from "../config/indexer";
import { failsForNow } from "../config/rpc-errors";
import { directClient, eventColumns, jsonArgs } from "./common";
import { logsSinceDeployment } from "./module-logs";
import { readAtBlock } from "./read-at-block";
import { chainOf } from "./registry";

type Ev = Parameters<typeof eventColumns>[0];
const lc = (a: string) => a.toLowerCase() as `0x${string}`;

const ROLE_NAMES = new Map<string, string>(
  ["OWNER", "TRADER", "RELAYER"].map((n) => [keccak256(toHex(n)).toLowerCase(), n]),
);
const roleName = (role: string) => ROLE_NAMES.get(role.toLowerCase()) ?? role.toLowerCase();

const SAFE_READS = parseAbi([
  "function getOwners() view returns (address[])",
  "function getThreshold() view returns (uint256)",
]);

/**
 * A Safe's owners and threshold at the end of `block`; "absent" when it had no code then (it is
 * being created: its SafeSetup follows in this block); null when its views revert or the node
 * keeps no state of that block. A node that fails to answer throws: the row would keep the null.
 */
async function safeAt(chainId: number, safe: Address, block: bigint) {
  const client = directClient(chainId);
  const read = async (atBlock: boolean) => {
    const at = atBlock ? { blockNumber: block } : {};
    if (atBlock && !(await client.getCode({ address: safe, blockNumber: block }))) return "absent" as const;
    return Promise.all([
      client.readContract({ address: safe, abi: SAFE_READS, functionName: "getOwners", ...at }),
      client.readContract({ address: safe, abi: SAFE_READS, functionName: "getThreshold", ...at }),
    ]);
  };
  try {
    const got = await readAtBlock(read, `Safe ${safe} at block ${block}`);
    if (got === "absent") return got;
    const [owners, threshold] = got;
    return { owners: owners.map(lc), threshold: Number(threshold) };
  } catch (err) {
    if (failsForNow(err)) throw err;
    return null;
  }
}

/**
 * The subaccount row of `safe`. A Safe first seen by an event other than its SafeSetup was set up
 * before the block it is followed from: its owners and threshold are read as they were at the end
 * of the block before the event, and a warning says what is not followed (a module it enabled
 * before that block, the setup's events) and which registry setting brings them in.
 */
async function ensure(context: Context, safe: Address, block: { number: bigint; timestamp: bigint }, setup = false) {
  const key = { chain_id: context.chain.id, safe: lc(safe) };
  const row = await context.db.find(subaccount, key);
  if (row) return row;
  const found = setup ? null : await safeAt(context.chain.id, safe, block.number - 1n);
  // created in this block (an event of its setup before SafeSetup): SafeSetup fills the row
  const before = found === "absent" ? null : found;
  if (!setup && found !== "absent") {
    const from = subaccountsStart(chainOf(context.chain.id));
    console.warn(
      `subaccount ${key.safe} on chain ${key.chain_id}: set up before block ${from}, where it is followed from; ` +
        (before ? `owners and threshold read at block ${block.number - 1n}` : "its owners could not be read") +
        `; a module it enabled before is not followed (set protocols[].subaccountsStartBlock at or before its setup)`,
    );
  }
  return context.db
    .insert(subaccount)
    .values({
      ...key,
      owners: before?.owners ?? [],
      threshold: before?.threshold ?? 0,
      roles: {},
      updated_at: block.timestamp,
    })
    .onConflictDoNothing()
    .then(async () => (await context.db.find(subaccount, key))!);
}

async function recordSafe(context: Context, event: Ev & { args: Record<string, unknown> }, name: string) {
  await context.db.insert(subaccount_event).values({
    ...eventColumns(event, context.chain.id),
    safe: lc(event.log.address),
    contract: lc(event.log.address),
    source: "safe",
    event: name,
    args: jsonArgs(event.args),
  });
  return ensure(context, event.log.address, event.block, name === "SafeSetup");
}

// Safe 1.4.0 on, and 1.3.x (the same events, the owner or module unindexed): ponder.config.ts
for (const safeSource of ["SubaccountSafe", "SubaccountSafeV130"] as const) {
  ponder.on(`${safeSource}:SafeSetup`, async ({ event, context }) => {
    await recordSafe(context, event, "SafeSetup");
    await context.db.update(subaccount, { chain_id: context.chain.id, safe: lc(event.log.address) }).set({
      owners: event.args.owners.map(lc),
      threshold: Number(event.args.threshold),
      created_block: event.block.number,
      created_timestamp: event.block.timestamp,
      updated_at: event.block.timestamp,
    });
  });

  ponder.on(`${safeSource}:AddedOwner`, async ({ event, context }) => {
    const row = await recordSafe(context, event, "AddedOwner");
    const owners = [...new Set([...row.owners, lc(event.args.owner)])];
    await context.db.update(subaccount, row).set({ owners, updated_at: event.block.timestamp });
  });

  ponder.on(`${safeSource}:RemovedOwner`, async ({ event, context }) => {
    const row = await recordSafe(context, event, "RemovedOwner");
    const owners = row.owners.filter((o) => o !== lc(event.args.owner));
    await context.db.update(subaccount, row).set({ owners, updated_at: event.block.timestamp });
  });

  ponder.on(`${safeSource}:ChangedThreshold`, async ({ event, context }) => {
    const row = await recordSafe(context, event, "ChangedThreshold");
    await context.db
      .update(subaccount, row)
      .set({ threshold: Number(event.args.threshold), updated_at: event.block.timestamp });
  });

  ponder.on(`${safeSource}:DisabledModule`, async ({ event, context }) => {
    const row = await recordSafe(context, event, "DisabledModule");
    if (row.module === lc(event.args.module)) {
      await context.db.update(subaccount, row).set({ module: null, updated_at: event.block.timestamp });
    }
  });

  /**
   * The module becomes a source from this block on (Ponder's factory children), so what it emitted
   * before it was enabled (its constructor's OWNER grant, roles granted in between) is read here,
   * from its deployment block up to the block before (src/module-logs.ts), and recorded as if
   * indexed. Its deployment is searched for from block 0: a module deployed before the block the
   * Safes are followed from keeps its constructor's grant.
   */
  ponder.on(`${safeSource}:EnabledModule`, async ({ event, context }) => {
    const row = await recordSafe(context, event, "EnabledModule");
    const module = lc(event.args.module);
    // a module enabled again (after a disable) is a source since its first enabling, and what it
    // emitted before that was read then: nothing to read again
    const known = await context.db.find(subaccount_module, { chain_id: context.chain.id, module });
    await context.db.update(subaccount, row).set({ module, updated_at: event.block.timestamp });
    await context.db
      .insert(subaccount_module)
      .values({ chain_id: context.chain.id, module, safe: row.safe })
      .onConflictDoUpdate({ safe: row.safe });
    if (event.block.number === 0n || known) return;
    const client = directClient(context.chain.id);
    const logs = await readAtBlock(
      () => logsSinceDeployment(client, module as Address, 0n, event.block.number - 1n),
      `module ${module} logs before block ${event.block.number}`,
    );
    const timestamps = new Map<bigint, bigint>();
    for (const log of logs) {
      const n = log.blockNumber as bigint;
      if (!timestamps.has(n)) {
        const block = await client.getBlock({ blockNumber: n });
        timestamps.set(n, block.timestamp);
      }
      await applyModuleLog(context, row.safe, log as Log<bigint, number, false>, timestamps.get(n)!);
    }
  });
}

async function applyModuleLog(context: Context, safe: `0x${string}`, log: Log<bigint, number, false>, ts: bigint) {
  let decoded: ReturnType<typeof decodeEventLog<typeof SubaccountModuleAbi>>;
  try {
    decoded = decodeEventLog({ abi: SubaccountModuleAbi, data: log.data, topics: log.topics });
  } catch {
    return; // not one of the module's events
  }
  const event = {
    id: `${context.chain.id}:${log.blockNumber}:${log.transactionIndex}:${log.logIndex}:before-enabled`,
    block: { number: log.blockNumber, timestamp: ts, hash: log.blockHash },
    transaction: { hash: log.transactionHash },
    log: { logIndex: log.logIndex, address: log.address },
    args: decoded.args as Record<string, unknown>,
  };
  await recordModule(context, safe, event, decoded.eventName);
}

async function recordModule(
  context: Context,
  safe: `0x${string}`,
  event: Ev & { args: Record<string, unknown> },
  name: string,
) {
  await context.db
    .insert(subaccount_event)
    .values({
      ...eventColumns(event, context.chain.id),
      safe,
      contract: lc(event.log.address),
      source: "module",
      event: name,
      args: jsonArgs(event.args),
    })
    .onConflictDoNothing();
  const row = await ensure(context, safe, event.block);
  const at = { updated_at: event.block.timestamp };
  if (name === "RoleGranted" || name === "RoleRevoked") {
    const role = roleName(event.args.role as Hex);
    const account = lc(event.args.account as string);
    const holders = new Set(row.roles[role] ?? []);
    if (name === "RoleGranted") holders.add(account);
    else holders.delete(account);
    await context.db.update(subaccount, row).set({ roles: { ...row.roles, [role]: [...holders].sort() }, ...at });
  } else if (name === "VaultSet") {
    await context.db.update(subaccount, row).set({ vault: lc(event.args.vault as string), ...at });
  }
}

/**
 * The Safe a module serves: recorded when the Safe enabled it (a module's events are delivered from
 * that block on); its immutable `safe()` otherwise (enabled on another Safe too: not expected).
 */
async function moduleSafe(context: Context, module: `0x${string}`): Promise<`0x${string}`> {
  const row = await context.db.find(subaccount_module, { chain_id: context.chain.id, module: lc(module) });
  if (row) return row.safe;
  const safe = await directClient(context.chain.id).readContract({
    address: module,
    abi: SubaccountModuleAbi,
    functionName: "safe",
  });
  return lc(safe);
}

// the modules of 1.4.0-on Safes and of 1.3.x ones (each kind's factory reads its EnabledModule)
for (const moduleSource of ["SubaccountModule", "SubaccountModuleV130"] as const) {
  for (const name of [
    "RoleGranted",
    "RoleRevoked",
    "TokenAllowanceSet",
    "CallAllowanceSet",
    "VaultSet",
    "Executed",
    "ApprovalSet",
    "WithdrawnToVault",
  ] as const) {
    ponder.on(`${moduleSource}:${name}`, async ({ event, context }) => {
      const safe = await moduleSafe(context, event.log.address);
      await recordModule(context, safe, event as Ev & { args: Record<string, unknown> }, name);
    });
  }
}
