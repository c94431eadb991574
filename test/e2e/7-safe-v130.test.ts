/**
 * Subaccounts that are Safe 1.3.0 (@gnosis.pm/safe-contracts), beside a Safe 1.5.0 one, on one
 * chain: Safe 1.3.0 emits AddedOwner, RemovedOwner, EnabledModule and DisabledModule with the
 * address in the data, where later Safes index it. With the registry's `safeVersion`, npm run
 * indexer follows both kinds, before and after the head: owners, modules (found in the data) and
 * the modules' roles. Without it, or with it wrong, npm run indexer will not start, and a registry
 * change saying so is refused, each naming the fix (a 1.3 Safe followed as a later one would stop
 * Ponder's sync at its first EnabledModule).
 */
import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  type Abi,
  type Address,
  encodeFunctionData,
  encodePacked,
  getContractAddress,
  type Hex,
  keccak256,
  parseAbi,
  size,
  toHex,
} from "viem";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { safe130, safe as safeArtifacts, subaccountModule } from "../../contracts/devnet/protocols/artifacts.js";
import {
  createSafe,
  createSubaccount,
  deploySafe,
  execAsOwner,
  type SafeDeployment,
  type Subaccount,
} from "../../contracts/devnet/protocols/safe.js";
import { type Ctx, deployCreate2, write } from "../../contracts/devnet/protocols/tx.js";
import { ChainSession } from "../../contracts/devnet/session.js";
import { startAnvil } from "../../scripts/lib/anvil.js";
import { REPO_ROOT } from "../../scripts/lib/indexer.js";
import { type ManagedProcess, stopAll } from "../../scripts/lib/procs.js";
import {
  freePorts,
  indexerAtHead,
  PORT_OFFSET,
  rows,
  sleep,
  spawnIndexerCommand,
  startIndexerCommand,
  tcpRelay,
  until,
  withDb,
} from "../helpers.js";
import { deployVaultWorld } from "../vault-world.js";

const CHAIN = 8453;
const tsx = join(REPO_ROOT, "node_modules", ".bin", "tsx");
const OWNER = "0x00000000000000000000000000000000000a11ce" as Address;
const TRADER = "0x0000000000000000000000000000000000007ade" as Address;
const SECOND = "0x00000000000000000000000000000000000b0b00" as Address;
const SENTINEL = "0x0000000000000000000000000000000000000001" as Address;
const lc = (a: string) => a.toLowerCase();
const v130 = { safeVersion: "1.3.0" };
const OWNERS_ABI = parseAbi([
  "function addOwnerWithThreshold(address owner, uint256 threshold)",
  "function removeOwner(address prevOwner, address owner, uint256 threshold)",
  "function enableModule(address module)",
]);

/**
 * A Safe 1.3.0 whose setup enables a SubaccountModule, in the transaction that creates it: its
 * EnabledModule comes before its SafeSetup (1.5.0 emits SafeSetup first). Created by
 * `createProxy` (CREATE): its address is known before the initializer, which must name it (1.3.0's
 * MultiSend has no "address 0 is the Safe"), and the module, deployed first, names the Safe.
 */
async function createEnablingInSetup(ctx: Ctx, safes: SafeDeployment): Promise<{ safe: Address; module: Address }> {
  const nonce = await ctx.s.rpc<Hex>("eth_getTransactionCount", [safes.proxyFactory, "latest"]);
  const safe = getContractAddress({ from: safes.proxyFactory, nonce: BigInt(nonce) });
  const module = (await deployCreate2(ctx, subaccountModule(), [safe, OWNER], `vaults.subaccount-module:${safe}`))
    .address;
  const enable = encodeFunctionData({ abi: OWNERS_ABI, functionName: "enableModule", args: [module] });
  const batch = encodePacked(
    ["uint8", "address", "uint256", "uint256", "bytes"],
    [0, safe, 0n, BigInt(size(enable)), enable],
  );
  const multiSend = (await deployCreate2(ctx, safe130.multiSend(), [], "vaults.safe-1.3.0.MultiSend")).address;
  const data = encodeFunctionData({ abi: safe130.multiSend().abi, functionName: "multiSend", args: [batch] });
  const zero = "0x0000000000000000000000000000000000000000";
  const initializer = encodeFunctionData({
    abi: safe130.singletonL2().abi,
    functionName: "setup",
    args: [[OWNER], 1n, multiSend, data, safes.fallbackHandler, zero, 0n, zero],
  });
  const factoryAbi = safe130.proxyFactory().abi;
  await write(ctx, safes.proxyFactory, factoryAbi, "createProxy", [safes.singletonL2, initializer]);
  expect(await ctx.s.rpc<Hex>("eth_getCode", [safe, "latest"])).not.toBe("0x");
  return { safe, module };
}

interface Row {
  safe: string;
  module: string | null;
  owners: string[];
  threshold: number;
  roles: Record<string, string[]>;
}

describe("subaccounts on Safe 1.3.0 and 1.5.0, followed side by side", { timeout: 600_000 }, () => {
  const cluster = inject("cluster");
  const dir = join(REPO_ROOT, ".data", `safe-v130-e2e-${PORT_OFFSET}`);
  const registry = join(dir, "vaults.json");
  const dbUrl = cluster.dbUrl.replace(/\/[^/]+$/, "/safe_v130");
  let ctx: Ctx;
  let old: Subaccount; // Safe 1.3.0
  let modern: Subaccount; // Safe 1.5.0
  let inSetup: { safe: Address; module: Address }; // Safe 1.3.0, its module enabled in its setup
  /** a Safe 1.3.0 migrated to 1.5.0 after the vault's start block */
  let migrated: Address;
  let indexer: ManagedProcess;
  let env: Record<string, string>;
  /** the registry as it should be, and a vault entry's subaccountSettings of its own */
  let file: { vaults: Record<string, unknown>[] };
  const withSettings = (settings: Record<string, unknown>) =>
    JSON.stringify({ ...file, vaults: [{ ...file.vaults[0], subaccountSettings: settings }] }, null, 2);

  const run = (script: string, args: string[], extra: Record<string, string> = {}) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const opts = {
        cwd: REPO_ROOT,
        env: { ...process.env, ...env, ...extra },
        encoding: "utf8",
        timeout: 120_000,
      } as const;
      execFile(tsx, [join(REPO_ROOT, "scripts", script), ...args], opts, (err, stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === "number" ? err.code : null) : 0, stdout, stderr });
      });
    });
  const q = <T>(sql: string, params: unknown[] = []) => withDb(dbUrl, (c) => rows<T>(c, sql, params));
  const out = () => readFileSync(join(dir, "indexer-cmd.log"), "utf8");
  const row = async (safe: Address) =>
    (
      await q<Row>(
        "SELECT safe, module, owners, threshold, roles FROM indexer.subaccount WHERE chain_id = $1 AND safe = $2",
        [CHAIN, lc(safe)],
      )
    )[0];
  const servedSchema = async () =>
    (
      await q<{ s: string }>(
        `SELECT table_schema AS s FROM information_schema.view_table_usage
          WHERE view_schema = 'indexer' AND view_name = 'vault'`,
      )
    )[0]?.s;

  beforeAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    await withDb(cluster.dbUrl, async (c) => {
      await c.query("DROP DATABASE IF EXISTS safe_v130 WITH (FORCE)");
      await c.query("CREATE DATABASE safe_v130");
    });
    const anvil = await startAnvil({ chainId: CHAIN, port: await freePorts(1), logFile: join(dir, "anvil.log") });
    const s = new ChainSession(CHAIN, anvil.rpcUrl);
    await s.syncClock();
    ctx = { s, from: OWNER };
    const [safes130, safes150] = [await deploySafe(ctx, "1.3.0"), await deploySafe(ctx)];
    expect([safes130.version, safes150.version]).toEqual(["1.3.0", "1.5.0"]);
    const sub = { owner: OWNER, trader: TRADER, tokens: [], calls: [] };
    old = await createSubaccount(ctx, safes130, { label: "v130", ...sub });
    modern = await createSubaccount(ctx, safes150, { label: "v150", ...sub });
    inSetup = await createEnablingInSetup(ctx, safes130);
    const migratedSafe = await createSafe(ctx, safes130, { label: "migrated", owners: [OWNER], threshold: 1 });
    // before the indexer: a second owner of the 1.3.0 Safe (its AddedOwner carries it in the data)
    const add = encodeFunctionData({ abi: OWNERS_ABI, functionName: "addOwnerWithThreshold", args: [SECOND, 1n] });
    await execAsOwner(ctx, old.safe, OWNER, old.safe, add);
    const world = await deployVaultWorld(CHAIN, anvil.rpcUrl);
    // after the vault's start block: a Safe 1.3.0 moved to 1.5.0 by Safe's migration library
    await ctx.s.syncClock();
    const args = [safes150.singletonL2, safes150.singletonL2, safes150.fallbackHandler];
    const migration = (await deployCreate2(ctx, safeArtifacts.migration(), args, "vaults.safe.SafeMigration")).address;
    const migrate = encodeFunctionData({
      abi: safeArtifacts.migration().abi,
      functionName: "migrateL2Singleton",
    });
    await execAsOwner(ctx, migratedSafe, OWNER, migration, migrate, 1);
    migrated = migratedSafe;
    env = {
      VAULT_REGISTRY: registry,
      DATABASE_URL: dbUrl,
      [`PONDER_RPC_URL_${CHAIN}`]: anvil.rpcUrl,
      [`PONDER_RPC_LANES_${CHAIN}`]: "8",
      [`SNAPSHOT_INTERVAL_${CHAIN}`]: "10",
      INDEXER_PORT: String(await freePorts(2)),
      REGISTRY_POLL_S: "1",
    };
    writeFileSync(registry, JSON.stringify({ version: 1, vaults: [] }));
    const added = await run("vaults.ts", ["add", "--chain", String(CHAIN), "--address", world.lendingPool.address]);
    expect(added.code, added.stderr).toBe(0);
    file = JSON.parse(readFileSync(registry, "utf8")) as typeof file;
    file.vaults[0]!.subaccounts = [old.safe, modern.safe, inSetup.safe];
    const protocols = [{ chainId: CHAIN, subaccountsStartBlock: 0 }];
    file = { ...file, protocols } as typeof file;
  }, 600_000);
  afterAll(() => stopAll());

  it("npm run indexer will not start while the registry says a Safe's version wrong", async () => {
    // the 1.3.0 Safe unmarked, the 1.5.0 one marked 1.3.0: both named, with the fix
    writeFileSync(
      registry,
      withSettings({ [modern.safe]: { safeVersion: "1.3.0" }, [inSetup.safe]: { safeVersion: "1.3.0" } }),
    );
    const r = await run("indexer.ts", []);
    expect(r.code).toBe(2);
    expect(r.stderr).toContain(
      `subaccount ${lc(old.safe)} is a Safe 1.3.0 on chain ${CHAIN}: set "safeVersion" in its vault's subaccountSettings (${registry}) to "1.3.0"`,
    );
    expect(r.stderr).toContain(
      `subaccount ${lc(modern.safe)} is a Safe 1.5.0 on chain ${CHAIN}, not 1.3: remove or correct`,
    );
    // a version the indexer cannot follow: refused by the registry's own check
    writeFileSync(registry, withSettings({ [old.safe]: { safeVersion: "1.2.0" }, [inSetup.safe]: v130 }));
    const older = await run("indexer.ts", []);
    expect(older.code).toBe(2);
    expect(older.stderr).toContain("Safe versions before 1.3.0 are not supported");
    // a Safe migrated from 1.3.0 within the blocks followed (from the vault's start, without
    // subaccountsStartBlock): its earlier events cannot be read as either kind's
    const { protocols: _, ...noStart } = file as typeof file & { protocols?: unknown };
    const vault = { ...file.vaults[0], subaccounts: [modern.safe, migrated], subaccountSettings: {} };
    writeFileSync(registry, JSON.stringify({ ...noStart, vaults: [vault] }));
    const moved = await run("indexer.ts", []);
    expect(moved.code).toBe(2);
    expect(moved.stderr).toContain(
      `subaccount ${lc(migrated)} is a Safe 1.5.0 on chain ${CHAIN}, migrated from 1.3.0 since block ${file.vaults[0]!.startBlock}`,
    );
    expect(moved.stderr).not.toContain(lc(modern.safe));
    // followed from block 0, before it existed: its version where it was created is read
    writeFileSync(registry, JSON.stringify({ ...file, vaults: [vault] }));
    const created = await run("indexer.ts", []);
    expect(created.code).toBe(2);
    expect(created.stderr).toContain(
      `subaccount ${lc(migrated)} is a Safe 1.5.0 on chain ${CHAIN}, migrated from 1.3.0 since block 0`,
    );
  });

  it("with safeVersion set, both Safes are followed up to the head: owners, modules, roles", async () => {
    writeFileSync(registry, withSettings({ [old.safe]: v130, [inSetup.safe]: v130 }));
    indexer = await startIndexerCommand("indexer-cmd", env, join(dir, "indexer-cmd.log"));
    const roles = { OWNER: [lc(OWNER)], TRADER: [lc(TRADER)] };
    expect(await row(old.safe)).toEqual({
      safe: lc(old.safe),
      module: lc(old.module),
      owners: [lc(OWNER), lc(SECOND)],
      threshold: 1,
      roles,
    });
    expect(await row(modern.safe)).toEqual({
      safe: lc(modern.safe),
      module: lc(modern.module),
      owners: [lc(OWNER)],
      threshold: 1,
      roles,
    });
    const added = await q<{ args: { owner: string } }>(
      "SELECT args FROM indexer.subaccount_event WHERE chain_id = $1 AND safe = $2 AND event = 'AddedOwner'",
      [CHAIN, lc(old.safe)],
    );
    expect(added.map((e) => lc(e.args.owner))).toEqual([lc(SECOND)]);
    // its module enabled in its setup, before its SafeSetup: a Safe being created, not one set
    // up before the block it is followed from (nothing read before it, no warning)
    const events = await q<{ event: string }>(
      "SELECT event FROM indexer.subaccount_event WHERE chain_id = $1 AND safe = $2 ORDER BY block_number, log_index",
      [CHAIN, lc(inSetup.safe)],
    );
    expect(events.map((e) => e.event)).toEqual(["RoleGranted", "EnabledModule", "SafeSetup"]);
    expect(await row(inSetup.safe)).toEqual({
      safe: lc(inSetup.safe),
      module: lc(inSetup.module),
      owners: [lc(OWNER)],
      threshold: 1,
      roles: { OWNER: [lc(OWNER)] },
    });
    expect(out()).not.toContain(`subaccount ${lc(inSetup.safe)}`);
  });

  it("after the head: a second module found in EnabledModule's data, an owner removed", async () => {
    await ctx.s.syncClock(); // the vault world's session moved the chain's clock on
    const moduleA = subaccountModule();
    const second = (await deployCreate2(ctx, moduleA, [old.safe, OWNER], `vaults.subaccount-module-2:${old.safe}`))
      .address;
    const enable = encodeFunctionData({ abi: OWNERS_ABI, functionName: "enableModule", args: [second] });
    await execAsOwner(ctx, old.safe, OWNER, old.safe, enable);
    const TRADER_ROLE = keccak256(toHex("TRADER"));
    await write(ctx, second, moduleA.abi as Abi, "grantRole", [TRADER_ROLE, SECOND], OWNER);
    const remove = encodeFunctionData({ abi: OWNERS_ABI, functionName: "removeOwner", args: [SENTINEL, SECOND, 1n] });
    await execAsOwner(ctx, old.safe, OWNER, old.safe, remove);
    // and the 1.5.0 Safe's module, on the other sources, at the same time
    await write(ctx, modern.module, moduleA.abi as Abi, "grantRole", [TRADER_ROLE, SECOND], OWNER);
    await until("the removal indexed", 60_000, async () =>
      (await row(old.safe))?.owners.length === 1 ? true : undefined,
    );
    expect(await row(old.safe)).toMatchObject({ module: lc(second), owners: [lc(OWNER)], threshold: 1 });
    await until("the modules' grants indexed", 60_000, async () => {
      const grants = await q<{ contract: string }>(
        `SELECT contract FROM indexer.subaccount_event
          WHERE chain_id = $1 AND event = 'RoleGranted' AND args->>'account' = $2 ORDER BY contract`,
        [CHAIN, lc(SECOND)],
      );
      return grants.length === 2 ? grants : undefined;
    }).then((grants) => expect(grants.map((g) => g.contract).sort()).toEqual([lc(second), lc(modern.module)].sort()));
    expect((await row(modern.safe))?.roles.TRADER).toEqual([lc(TRADER), lc(SECOND)].sort());
    expect(indexer.exitInfo()).toBeUndefined();
  });

  it("a registry change that drops safeVersion is refused, naming it; the deployment serves on", async () => {
    const good = readFileSync(registry);
    const schema = await servedSchema();
    writeFileSync(registry, withSettings({ [inSetup.safe]: v130 }));
    await until("the refusal in the indexer's log", 60_000, async () =>
      out().includes(`registry ${registry} changed but is not usable`) ? true : undefined,
    );
    expect(out()).toContain(`subaccount ${lc(old.safe)} is a Safe 1.3.0 on chain ${CHAIN}: set "safeVersion"`);
    expect(await servedSchema()).toBe(schema);
    writeFileSync(registry, good);
    await sleep(3000);
    expect(await servedSchema()).toBe(schema);
    expect(indexer.exitInfo()).toBeUndefined();
  });

  it("a chain that does not answer at start: a warning, then followed once it does", async () => {
    await indexer.stop();
    const lateDb = cluster.dbUrl.replace(/\/[^/]+$/, "/safe_v130_late");
    await withDb(cluster.dbUrl, async (c) => {
      await c.query("DROP DATABASE IF EXISTS safe_v130_late WITH (FORCE)");
      await c.query("CREATE DATABASE safe_v130_late");
    });
    // the chain's only URL: a port nothing listens on, until a relay to anvil opens there
    const port = await freePorts(1);
    const node = new URL(env[`PONDER_RPC_URL_${CHAIN}`]!);
    const relay = tcpRelay(node).server;
    const log = join(dir, "indexer-late.log");
    const late = spawnIndexerCommand(
      "indexer-late",
      {
        ...env,
        DATABASE_URL: lateDb,
        [`PONDER_RPC_URL_${CHAIN}`]: `http://127.0.0.1:${port}`,
        INDEXER_PORT: String(await freePorts(2)),
      },
      log,
    );
    try {
      await until("the warning", 120_000, async () =>
        readFileSync(log, "utf8").includes("cannot check the subaccount Safes' versions on chain") ? true : undefined,
      );
      expect(readFileSync(log, "utf8")).toContain(
        `cannot check the subaccount Safes' versions on chain ${CHAIN} (http://127.0.0.1:${port}): `,
      );
      await until("the wait for the chain", 60_000, async () =>
        readFileSync(log, "utf8").includes(`chain ${CHAIN}: no RPC URL answers`) ? true : undefined,
      );
      await sleep(15_000); // Ponder waits for the chain; nothing exits
      expect(late.exitInfo()).toBeUndefined();
      await new Promise<void>((resolve) => relay.listen(port, "127.0.0.1", resolve));
      await indexerAtHead(late, log);
      expect(readFileSync(log, "utf8")).toContain(`chain ${CHAIN} answers again`);
      const owners = await withDb(lateDb, (c) =>
        rows<{ owners: string[] }>(c, "SELECT owners FROM indexer.subaccount WHERE chain_id = $1 AND safe = $2", [
          CHAIN,
          lc(old.safe),
        ]),
      );
      expect(owners).toEqual([{ owners: [lc(OWNER)] }]);
    } finally {
      await late.stop();
      relay.close();
    }
  });
});
