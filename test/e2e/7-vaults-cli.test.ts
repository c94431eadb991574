/**
 * "A real vault in five minutes", end to end: a fresh chain the service has never seen (chain 10,
 * a local anvil standing in for the remote one) with vaults deployed and deposited into before
 * the service starts; the service (npm run indexer, the workers, npm run api) running on another
 * chain; then `npm run vaults -- add` of a LendingPool on the fresh chain (its timelock's roles
 * from the timelock's own deployment), of an ERC-4626 vault, and of a TokenizedVaultV2 from a
 * later --start-block (a request made before it must not shift its queue). The running indexer
 * picks each registry change up, indexes it in a new deployment and switches the views while a
 * reader polls them (never a gap); the vault reaches every route that applies, with its deposits,
 * and the derived tables. `remove` takes it out the same way; a bad file is ignored. The known
 * chain's subaccount Safes are set up before its vault: one followed from the registry's
 * `subaccountsStartBlock`, one set up before even that block.
 */
import { execFile } from "node:child_process";
import { mkdirSync, readFileSync, rmSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import {
  type Address,
  createPublicClient,
  encodeFunctionData,
  encodePacked,
  erc20Abi,
  getAddress,
  http,
  parseAbi,
  parseEventLogs,
  size,
} from "viem";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { TokenizedVaultV2Abi } from "../../abis/TokenizedVaultV2Abi.js";
import { safe as safeArtifacts } from "../../contracts/devnet/protocols/artifacts.js";
import {
  createSafe,
  createSubaccount,
  deploySafe,
  execAsOwner,
  type Subaccount,
  subaccountSaltNonce,
} from "../../contracts/devnet/protocols/safe.js";
import { deployCreate2, simulate, write } from "../../contracts/devnet/protocols/tx.js";
import { ChainSession } from "../../contracts/devnet/session.js";
import { startAnvil } from "../../scripts/lib/anvil.js";
import { httpOk, listeningPort, REPO_ROOT } from "../../scripts/lib/indexer.js";
import { type ManagedProcess, stopAll } from "../../scripts/lib/procs.js";
import { startRedis } from "../../scripts/lib/redis.js";
import { startApiProcess, startWorkerProcess } from "../../scripts/lib/workers.js";
import { freePorts, PORT_OFFSET, rows, sleep, startIndexerCommand, until, withDb } from "../helpers.js";
import { deployVaultWorld, type VaultWorld } from "../vault-world.js";

const KNOWN = 56; // the chain the service indexes from the start
const FRESH = 10; // the chain it has never seen
const API_PORT = 18_780 + PORT_OFFSET;
const tsx = join(REPO_ROOT, "node_modules", ".bin", "tsx");
const OWNER = "0x00000000000000000000000000000000000a11ce" as Address;
const TRADER = "0x0000000000000000000000000000000000007ade" as Address;
const SECOND = "0x00000000000000000000000000000000000b0b00" as Address;

/** Two subaccount Safes, set up on a chain before anything else is deployed there. */
interface EarlySafes {
  /** a Safe with our module (TRADER granted), from `from` on */
  followed: Subaccount;
  /** the first block of `followed`'s setup: the registry's subaccountsStartBlock */
  from: number;
  /** a plain Safe (OWNER, threshold 1) set up before `from` */
  earlier: Address;
}

/**
 * A Safe whose setup enables a module (a delegatecall to MultiSend), in the transaction that
 * creates it. The module is MultiSend itself (any contract will do: it emits nothing). Safe
 * 1.5.0 emits SafeSetup before the module's EnabledModule; 1.3 and 1.4.1 emit it last (that order
 * is test/e2e/7-safe-v130.test.ts's, with Safe 1.3.0).
 */
async function createSafeEnablingInSetup(s: ChainSession): Promise<{ safe: Address; module: Address }> {
  await s.syncClock();
  const ctx = { s, from: OWNER };
  const safes = await deploySafe(ctx);
  const multiSend = (await deployCreate2(ctx, safeArtifacts.multiSend(), [], "vaults.safe.MultiSend")).address;
  const safeAbi = safeArtifacts.singletonL2().abi;
  const enable = encodeFunctionData({ abi: safeAbi, functionName: "enableModule", args: [multiSend] });
  const zero = "0x0000000000000000000000000000000000000000";
  const batch = encodePacked(
    ["uint8", "address", "uint256", "uint256", "bytes"],
    [0, zero, 0n, BigInt(size(enable)), enable],
  );
  const data = encodeFunctionData({ abi: safeArtifacts.multiSend().abi, functionName: "multiSend", args: [batch] });
  const initializer = encodeFunctionData({
    abi: safeAbi,
    functionName: "setup",
    args: [[OWNER], 1n, multiSend, data, safes.fallbackHandler, zero, 0n, zero],
  });
  const factoryAbi = safeArtifacts.proxyFactory().abi;
  const args = [safes.singletonL2, initializer, subaccountSaltNonce("enabled-in-setup")] as const;
  const safe = await simulate<Address>(ctx, safes.proxyFactory, factoryAbi, "createProxyWithNonce", args);
  await write(ctx, safes.proxyFactory, factoryAbi, "createProxyWithNonce", args);
  return { safe: getAddress(safe), module: getAddress(multiSend) };
}

async function setUpEarlySafes(s: ChainSession): Promise<EarlySafes> {
  await s.syncClock();
  const ctx = { s, from: OWNER };
  const safes = await deploySafe(ctx);
  const earlier = await createSafe(ctx, safes, { label: "early-before", owners: [OWNER], threshold: 1 });
  await s.mineAt([0, 0, 0]);
  const from = (await s.blockNumber()) + 1;
  const followed = await createSubaccount(ctx, safes, {
    label: "early-followed",
    owner: OWNER,
    trader: TRADER,
    tokens: [],
    calls: [],
  });
  await s.mineAt([0, 0, 0]);
  return { followed, from, earlier };
}

describe("npm run vaults: a vault on a chain the service has never seen", { timeout: 600_000 }, () => {
  const cluster = inject("cluster");
  const dir = join(REPO_ROOT, ".data", `vaults-e2e-${PORT_OFFSET}`);
  const registry = join(dir, "vaults.json");
  const dbUrl = cluster.dbUrl.replace(/\/[^/]+$/, "/vaults_cli");
  let known: VaultWorld;
  let fresh: VaultWorld;
  let early: EarlySafes;
  let inSetup: { safe: Address; module: Address };
  let indexer: ManagedProcess;
  let env: Record<string, string>;
  const api = `http://127.0.0.1:${API_PORT}/api/v1`;

  const cli = (args: string[]) =>
    new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
      const opts = { cwd: REPO_ROOT, env: { ...process.env, ...env }, encoding: "utf8", timeout: 120_000 } as const;
      execFile(tsx, [join(REPO_ROOT, "scripts", "vaults.ts"), ...args], opts, (err, stdout, stderr) => {
        resolve({ code: err ? (typeof err.code === "number" ? err.code : null) : 0, stdout, stderr });
      });
    });
  const q = <T>(sql: string, params: unknown[] = []) => withDb(dbUrl, (c) => rows<T>(c, sql, params));
  /** everything npm run indexer printed (its own lines and Ponder's) */
  const out = () => readFileSync(join(dir, "indexer-cmd.log"), "utf8");
  /** the deployment schema the `indexer` views read */
  const servedSchema = async () =>
    (
      await q<{ s: string }>(
        `SELECT table_schema AS s FROM information_schema.view_table_usage
          WHERE view_schema = 'indexer' AND view_name = 'vault'`,
      )
    )[0]?.s;
  const get = async (path: string) => {
    const res = await fetch(`${api}${path}`);
    return { status: res.status, chain: res.headers.get("x-vault-chain"), body: (await res.json()) as unknown };
  };

  beforeAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    await withDb(cluster.dbUrl, async (c) => {
      await c.query("DROP DATABASE IF EXISTS vaults_cli WITH (FORCE)");
      await c.query("CREATE DATABASE vaults_cli");
    });
    const [a, b] = await Promise.all([
      startAnvil({ chainId: KNOWN, port: 19_556 + PORT_OFFSET, logFile: join(dir, `anvil-${KNOWN}.log`) }),
      startAnvil({ chainId: FRESH, port: 19_555 + PORT_OFFSET, logFile: join(dir, `anvil-${FRESH}.log`) }),
    ]);
    // everything on both chains happens before the service starts; the known chain's Safes first
    early = await setUpEarlySafes(new ChainSession(KNOWN, a.rpcUrl));
    [known, fresh] = await Promise.all([deployVaultWorld(KNOWN, a.rpcUrl), deployVaultWorld(FRESH, b.rpcUrl)]);
    // the earlier Safe's first event in range: a second owner, threshold 2
    const knownSession = new ChainSession(KNOWN, a.rpcUrl);
    await knownSession.syncClock();
    const addOwner = encodeFunctionData({
      abi: parseAbi(["function addOwnerWithThreshold(address owner, uint256 threshold)"]),
      functionName: "addOwnerWithThreshold",
      args: [SECOND, 2n],
    });
    await execAsOwner({ s: knownSession, from: OWNER }, early.earlier, OWNER, early.earlier, addOwner);
    // a Safe created after the start block, enabling its module in its own setup
    inSetup = await createSafeEnablingInSetup(knownSession);
    env = {
      VAULT_REGISTRY: registry,
      DATABASE_URL: dbUrl,
      [`PONDER_RPC_URL_${KNOWN}`]: a.rpcUrl,
      [`PONDER_RPC_URL_${FRESH}`]: b.rpcUrl,
      [`PONDER_RPC_LANES_${KNOWN}`]: "8",
      [`PONDER_RPC_LANES_${FRESH}`]: "8",
      [`SNAPSHOT_INTERVAL_${KNOWN}`]: "10",
      [`SNAPSHOT_INTERVAL_${FRESH}`]: "10",
      // two ports in turn (the serving deployment and the next): free now, out of the way of others
      INDEXER_PORT: String(await freePorts(2)),
      REGISTRY_POLL_S: "1",
    };
    // the service's first vault, added by the command before anything runs
    writeFileSync(registry, JSON.stringify({ version: 1, vaults: [] }));
    const first = await cli(["add", "--chain", String(KNOWN), "--address", known.lendingPool.address]);
    expect(first.code, first.stderr).toBe(0);
    // before the indexer made its views: listed as not indexed yet (the column is there)
    const before = await cli(["list"]);
    expect(before.stdout).toContain("start_block\tindexed\tname");
    expect(before.stdout).toMatch(new RegExp(`${known.lendingPool.address}\\t.*\\tnot yet\\t`));
    // its subaccounts, both set up before its start block; the chain's Safes followed from one's setup
    const file = JSON.parse(readFileSync(registry, "utf8")) as { vaults: { subaccounts?: string[] }[] };
    file.vaults[0]!.subaccounts = [early.followed.safe, early.earlier, inSetup.safe];
    const protocols = [{ chainId: KNOWN, subaccountsStartBlock: early.from }];
    writeFileSync(registry, JSON.stringify({ ...file, protocols }, null, 2));

    indexer = await startIndexerCommand("indexer-cmd", env, join(dir, "indexer-cmd.log"));
    const redis = await startRedis({
      port: 63_780 + PORT_OFFSET,
      dataDir: join(dir, "redis"),
      logFile: join(dir, "redis.log"),
    });
    const chains = [
      { chainId: KNOWN, rpcUrl: a.rpcUrl },
      { chainId: FRESH, rpcUrl: b.rpcUrl },
    ];
    startWorkerProcess({
      databaseUrl: dbUrl,
      redisUrl: redis.url,
      registryFile: registry,
      logFile: join(dir, "workers.log"),
      env: { ...env, FANOUT_EVERY_S: "5", PROGRESS_POLL_S: "1", METRICS_PORT: "0" },
    });
    startApiProcess({
      databaseUrl: dbUrl,
      redisUrl: redis.url,
      port: API_PORT,
      chains,
      logFile: join(dir, "api.log"),
      env: { RESPONSE_CACHE_MS: "0" },
    });
    await until("the API", 120_000, async () => ((await httpOk(`${api}/ping`, 2000)) ? true : undefined));
  }, 900_000);
  afterAll(() => stopAll());

  it("before: the service serves the known chain only; the fresh vault is unknown", async () => {
    const indexed = await q<{ chain_id: number; address: string }>("SELECT chain_id, address FROM indexer.vault");
    expect(indexed).toEqual([{ chain_id: KNOWN, address: known.lendingPool.address }]);
    expect((await get(`/tokenized_vault/${fresh.lendingPool.address}`)).status).toBe(404);
  });

  it("subaccounts set up before the start block: followed from subaccountsStartBlock, or read when first seen", async () => {
    expect(early.from).toBeLessThan(known.lendingPool.block);
    const subs = await q<{ safe: string; module: string | null; owners: string[]; threshold: number; roles: object }>(
      "SELECT safe, module, owners, threshold, roles FROM indexer.subaccount WHERE chain_id = $1",
      [KNOWN],
    );
    const row = (a: Address) => subs.find((r) => r.safe === a.toLowerCase());
    // followed from its setup: owners, module, and the module's roles (its constructor's grant too)
    expect(row(early.followed.safe)).toEqual({
      safe: early.followed.safe.toLowerCase(),
      module: early.followed.module.toLowerCase(),
      owners: [OWNER.toLowerCase()],
      threshold: 1,
      roles: { OWNER: [OWNER.toLowerCase()], TRADER: [TRADER.toLowerCase()] },
    });
    const events = await q<{ event: string }>(
      "SELECT event FROM indexer.subaccount_event WHERE chain_id = $1 AND safe = $2 ORDER BY block_number, log_index",
      [KNOWN, early.followed.safe.toLowerCase()],
    );
    expect(events.map((e) => e.event)).toEqual(expect.arrayContaining(["SafeSetup", "EnabledModule", "RoleGranted"]));
    // set up before that block: its owners read as they were, then its own event applied
    const earlier = row(early.earlier)!;
    expect([...earlier.owners].sort()).toEqual([OWNER.toLowerCase(), SECOND.toLowerCase()].sort());
    expect(earlier.threshold).toBe(2);
    expect(earlier.module).toBeNull();
    expect(out()).toContain(`subaccount ${early.earlier.toLowerCase()} on chain ${KNOWN}: set up before block`);
    // created in range, its module enabled in its setup: followed, and no warning about it
    expect(row(inSetup.safe)).toMatchObject({
      module: inSetup.module.toLowerCase(),
      owners: [OWNER.toLowerCase()],
      threshold: 1,
    });
    expect(out()).not.toContain(`subaccount ${inSetup.safe.toLowerCase()}`);
  });

  it("add: indexed in a new deployment, the views switched with no gap, served with its deposits", async () => {
    const before = await servedSchema();
    // a reader polling the views all along: every read must succeed and see the known vault
    const seen: { ok: boolean; n: number; err?: string }[] = [];
    let reading = true;
    const reader = withDb(dbUrl, async (c) => {
      while (reading) {
        try {
          const r = await c.query<{ n: string }>(
            `SELECT count(*) AS n FROM indexer.vault v JOIN indexer.vault_event e
               ON e.chain_id = v.chain_id AND e.vault = v.address WHERE v.chain_id = ${KNOWN}`,
          );
          seen.push({ ok: true, n: Number(r.rows[0]!.n) });
        } catch (err) {
          seen.push({ ok: false, n: 0, err: (err as Error).message });
        }
        await sleep(50);
      }
    });
    const t0 = Date.now();
    const r = await cli(["add", "--chain", String(FRESH), "--address", fresh.lendingPool.address]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`added lendingPool "Fresh Lending Pool" (fLP), asset tUSD ${fresh.lendingPool.address}`);
    expect(r.stdout).toContain("registry tables loaded: 2 vaults");
    // the chain has no vault yet, so the indexer does not index it: the command says what it needs
    expect(r.stderr).toContain(
      `note: the running indexer does not index chain ${FRESH} yet; it picks this vault up only if it was ` +
        `started with PONDER_RPC_URL_${FRESH} in its environment`,
    );
    await until("the fresh vault in the indexer views", 300_000, async () => {
      const v = await q(`SELECT 1 FROM indexer.vault WHERE chain_id = ${FRESH} AND address = $1`, [
        fresh.lendingPool.address,
      ]);
      return v.length > 0 ? true : undefined;
    });
    const switchedAfterS = (Date.now() - t0) / 1000;
    reading = false;
    await reader;
    expect(seen.length).toBeGreaterThan(10);
    expect(seen.filter((s) => !s.ok)).toEqual([]);
    expect(new Set(seen.map((s) => s.n)).size).toBe(1); // the known vault's events, unchanged throughout
    expect(seen[0]!.n).toBeGreaterThan(0);
    console.log(`[vaults-e2e] add → views switched in ${switchedAfterS.toFixed(1)} s, ${seen.length} reads`);

    // a new deployment, the old one's Ponder stopped
    const after = await servedSchema();
    expect(after).not.toBe(before);
    // logged once the backfill is recorded and the registry tables loaded, after the switch
    const published = `registry change published: views "indexer" now show ${after}`;
    await until("the switch in the indexer's log", 30_000, async () => (out().includes(published) ? true : undefined));
    expect(out()).toContain(`stopping ${before}`);
    const firstPort = out()
      .split("\n")
      .map(listeningPort)
      .find((p) => p !== undefined);
    expect(firstPort).toBeDefined();
    await until("the old deployment's Ponder stopped", 30_000, async () =>
      (await httpOk(`http://127.0.0.1:${firstPort}/ready`, 1000)) ? undefined : true,
    );

    // every deposit made before the service started, exactly once
    const deposits = fresh.deposits.filter((d) => d.vault === fresh.lendingPool.address);
    const events = await q<{ owner: string; assets: string }>(
      `SELECT receiver AS owner, assets::text AS assets FROM indexer.vault_event
        WHERE chain_id = ${FRESH} AND vault = $1 AND kind = 'deposit' ORDER BY block_number`,
      [fresh.lendingPool.address],
    );
    expect(events).toEqual(deposits.map((d) => ({ owner: d.wallet, assets: String(d.assets) })));

    // the API: the vault set, one-vault routes with its chain, its history
    const list = (await get("/tokenized_vault")).body as { address: string; chain: number }[];
    expect(list.find((v) => v.address === fresh.lendingPool.address)).toMatchObject({ chain: FRESH });
    const one = await get(`/tokenized_vault/${fresh.lendingPool.address}`);
    expect(one).toMatchObject({ status: 200, chain: String(FRESH) });
    const history = await get(`/platform/vault_history/${fresh.lendingPool.address}`);
    expect(history.status).toBe(200);
    const h = history.body as { type: string; amount_raw: string; wallet: string; chain_id: number }[];
    expect(h.map((x) => [x.type, x.amount_raw, x.chain_id]).sort()).toEqual(
      deposits.map((d) => ["deposit", String(d.assets), FRESH]).sort(),
    );
    expect((await get(`/withdrawals/${FRESH}/${fresh.lendingPool.address}`)).status).toBe(200);
    // its timelock, deployed 70 blocks before it, followed from its own deployment: the roles its
    // constructor granted are there
    const roles = (await get(`/platform/governance/${fresh.lendingPool.address}/roles`)).body as {
      roles: { role: string; address: string }[];
    };
    const held = (role: string) => roles.roles.filter((x) => x.role === role).map((x) => x.address);
    expect([held("timelock"), held("timelock_proposer"), held("timelock_executor")]).toEqual([
      [fresh.lendingPool.timelock],
      [fresh.deployer.toLowerCase()],
      [fresh.deployer.toLowerCase()],
    ]);
    const ping = (await get("/ping")).body as {
      checks: { indexer: { chain_id: number; indexed_block: number | null; lag_blocks: number | null }[] };
    };
    expect(ping.checks.indexer.find((x) => x.chain_id === FRESH)).toMatchObject({ lag_blocks: 0 });

    // the workers' fan-out computes its derived rows
    await until("the fresh vault's daily series", 180_000, async () => {
      const d = await q(`SELECT 1 FROM derived.vault_day WHERE chain_id = ${FRESH} AND vault = $1`, [
        fresh.lendingPool.address,
      ]);
      return d.length > 0 ? true : undefined;
    });
    const summary = await get(`/tokenized_vault/vault_summary/${fresh.lendingPool.address}`);
    expect(summary).toMatchObject({ status: 200, chain: String(FRESH) });

    const listed = await cli(["list"]);
    expect(listed.stdout).toContain(`${FRESH}\t${fresh.lendingPool.address}\tlendingPool\tlendingPool\t`);
    expect(listed.stdout).toMatch(
      new RegExp(`${fresh.lendingPool.address}\\tlendingPool\\tlendingPool\\t\\d+\\tyes\\t`),
    );
  });

  it("add an ERC-4626 vault on the same chain: recognised as erc4626, indexed and served", async () => {
    const vault = fresh.erc4626.address;
    const before = await servedSchema();
    const r = await cli(["add", "--chain", String(FRESH), "--address", vault]);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toMatch(/added erc4626 /);
    await until("the ERC-4626 vault in the indexer views", 300_000, async () => {
      const v = await q(`SELECT 1 FROM indexer.vault WHERE chain_id = ${FRESH} AND address = $1`, [vault]);
      return v.length > 0 ? true : undefined;
    });
    expect(await servedSchema()).not.toBe(before);
    // every deposit made before the service started, exactly once, with the chain's amounts
    const deposits = fresh.deposits.filter((d) => d.vault === vault);
    expect(deposits.length).toBeGreaterThan(0);
    const events = await q<{ owner: string; assets: string }>(
      `SELECT receiver AS owner, assets::text AS assets FROM indexer.vault_event
        WHERE chain_id = ${FRESH} AND vault = $1 AND kind = 'deposit' ORDER BY block_number`,
      [vault],
    );
    expect(events).toEqual(deposits.map((d) => ({ owner: d.wallet, assets: String(d.assets) })));
    // served by the vault routes, with what it does not have absent rather than invented
    const one = await get(`/tokenized_vault/${vault}`);
    expect(one).toMatchObject({ status: 200, chain: String(FRESH) });
    const history = await get(`/platform/vault_history/${vault}`);
    expect((history.body as unknown[]).length).toBe(deposits.length);
    await until("the ERC-4626 vault's daily series", 180_000, async () => {
      const d = await q(`SELECT 1 FROM derived.vault_day WHERE chain_id = ${FRESH} AND vault = $1`, [vault]);
      return d.length > 0 ? true : undefined;
    });
    expect((await get(`/tokenized_vault/vault_summary/${vault}`)).status).toBe(200);
    const listed = await cli(["list"]);
    expect(listed.stdout).toMatch(new RegExp(`${FRESH}\\t${vault}\\terc4626\\terc4626\\t\\d+\\tyes\\t`));
  });

  it("add a tokenizedVaultV2 from a later --start-block: requests made before it do not shift the queue", async () => {
    const v2 = fresh.vaultV2.address;
    const s = new ChainSession(FRESH, fresh.rpcUrl);
    await s.syncClock();
    const chain = createPublicClient({ transport: http(fresh.rpcUrl) });
    const sharesOf = (w: Address) =>
      chain.readContract({ address: fresh.vaultV2.receiptToken, abi: erc20Abi, functionName: "balanceOf", args: [w] });
    const [early, late] = fresh.deposits.filter((d) => d.vault === v2).map((d) => d.wallet);
    // a request the indexer will never see: made before the vault's start block, still waiting
    await s.call(early!, "TokenizedVaultV2", v2, "requestWithdrawal", [(await sharesOf(early!)) / 2n, early!]);
    await s.mineAt([s.clock + 12]);
    const start = await s.blockNumber();
    const r = await cli(["add", "--chain", String(FRESH), "--address", v2, "--start-block", String(start)]);
    expect(r.code, r.stderr).toBe(0);
    await until("the V2 vault in the indexer views", 300_000, async () => {
      const v = await q(`SELECT 1 FROM indexer.vault WHERE chain_id = ${FRESH} AND address = $1`, [v2]);
      return v.length > 0 ? true : undefined;
    });
    // a request it sees, then both processed: the contract pays the earlier one first
    await s.call(late!, "TokenizedVaultV2", v2, "requestWithdrawal", [await sharesOf(late!), late!]);
    await s.mineAt([s.clock + 2 * 86_400]);
    const processed = await s.call(fresh.deployer, "TokenizedVaultV2", v2, "processAllClaims", [10n]);
    const paid = parseEventLogs({
      abi: TokenizedVaultV2Abi,
      eventName: "WithdrawalProcessed",
      logs: processed.logs as never,
    }).map((e) => [e.args.receiverAddr.toLowerCase(), String(e.args.assetsAmount)]);
    expect(paid.map(([w]) => w)).toEqual([early, late]);
    await s.mineAt([s.clock + 12]);
    const requests = await until("the seen request processed", 120_000, async () => {
      const rows = await q<{ receiver: string; status: string; processed_assets: string | null }>(
        `SELECT receiver, status, processed_assets::text AS processed_assets FROM indexer.withdrawal_request
          WHERE chain_id = ${FRESH} AND vault = $1`,
        [v2],
      );
      return rows.some((x) => x.status === "processed") ? rows : undefined;
    });
    // settled with its own payment, not the earlier request's
    expect(requests).toEqual([{ receiver: late, status: "processed", processed_assets: paid[1]![1] }]);
  });

  it("ownership moved to a timelock the registry does not name: followed, its roles and operations served", async () => {
    const v2 = fresh.vaultV2.address.toLowerCase() as Address;
    const s = new ChainSession(FRESH, fresh.rpcUrl);
    await s.syncClock();
    const me = fresh.deployer;
    const timelock = (await s.deploy(me, "TimelockController", [0n, [me], [me], me])).toLowerCase() as Address;
    // two-step: the vault offers, the new timelock accepts through its own schedule and execute
    await s.call(me, "TokenizedVaultV2", v2, "transferOwnership", [timelock]);
    const call = (functionName: "acceptOwnership" | "updateManagementFee", args: bigint[] = []) =>
      encodeFunctionData({ abi: TokenizedVaultV2Abi, functionName, args } as never);
    const zero = `0x${"0".repeat(64)}` as const;
    await s.call(me, "TimelockController", timelock, "schedule", [v2, 0n, call("acceptOwnership"), zero, zero, 0n]);
    await s.call(me, "TimelockController", timelock, "execute", [v2, 0n, call("acceptOwnership"), zero, zero]);
    // after the move: an operation of its own, still waiting
    const fee = call("updateManagementFee", [100n]);
    await s.call(me, "TimelockController", timelock, "schedule", [v2, 0n, fee, zero, zero, 3600n]);
    await s.mineAt([s.clock + 12]);
    const row = await until("the new timelock followed", 120_000, async () => {
      const [v] = await q<{ owner: string; timelock: string }>(
        `SELECT owner, timelock FROM indexer.vault WHERE chain_id = ${FRESH} AND address = $1`,
        [v2],
      );
      return v?.timelock === timelock ? v : undefined;
    });
    expect(row.owner).toBe(timelock);
    expect(await q("SELECT address, vault FROM indexer.timelock_source WHERE chain_id = $1", [FRESH])).toEqual([
      { address: timelock, vault: v2 },
    ]);
    await until("its waiting operation indexed", 60_000, async () => {
      const r = await q("SELECT 1 FROM indexer.timelock_operation WHERE timelock = $1 AND data = $2", [timelock, fee]);
      return r.length > 0 ? true : undefined;
    });
    // the roles its constructor granted (before the move), no warning about it
    const roles = await get(`/platform/governance/${v2}/roles?chain_id=${FRESH}`);
    const body = roles.body as {
      timelock: { address: string; min_delay_seconds: number } | null;
      roles: { role: string; address: string; account_type: string; source: string }[];
      warnings: string[];
    };
    expect(roles.status).toBe(200);
    expect(body.timelock).toEqual({ address: timelock, min_delay_seconds: 0 });
    expect(body.roles.find((r) => r.role === "owner")).toMatchObject({ address: timelock, account_type: "timelock" });
    const held = (role: string) => body.roles.filter((r) => r.role === role && r.source === "timelock");
    expect(held("timelock_proposer").map((r) => r.address)).toEqual([me.toLowerCase()]);
    expect(held("timelock_executor").map((r) => r.address)).toEqual([me.toLowerCase()]);
    expect(body.warnings.filter((w) => w.includes(timelock))).toEqual([]);
    // its operations: the acceptance (scheduled before the move, executed in it), the fee change waiting
    const ops = await get(`/platform/governance/${v2}/timelocks?chain_id=${FRESH}&status=all`);
    const list = (ops.body as { timelocks: { timelock: string; data: string; status: string }[] }).timelocks;
    expect(list.map((o) => [o.timelock, o.data, o.status]).sort()).toEqual(
      [
        [timelock, call("acceptOwnership"), "executed"],
        [timelock, fee, "scheduled"],
      ].sort(),
    );
  });

  it("a role held by a TimelockController other than the vault's: named, with a warning", async () => {
    const pool = fresh.lendingPool.address.toLowerCase() as Address;
    const s = new ChainSession(FRESH, fresh.rpcUrl);
    await s.syncClock();
    const me = fresh.deployer;
    const other = (await s.deploy(me, "TimelockController", [0n, [me], [me], me])).toLowerCase() as Address;
    // the pool's own timelock (60 s) makes it the pool's operator
    const data = encodeFunctionData({
      abi: parseAbi(["function updateOperator(address newOperator)"]),
      functionName: "updateOperator",
      args: [other],
    });
    const zero = `0x${"0".repeat(64)}` as const;
    const tl = fresh.lendingPool.timelock;
    await s.call(me, "TimelockController", tl, "schedule", [pool, 0n, data, zero, zero, 60n]);
    await s.mineAt([s.clock + 61]);
    await s.call(me, "TimelockController", tl, "execute", [pool, 0n, data, zero, zero]);
    await s.mineAt([s.clock + 12]);
    await until("the new operator indexed", 120_000, async () => {
      const [v] = await q<{ operator: string }>(
        `SELECT operator FROM indexer.vault WHERE chain_id = ${FRESH} AND address = $1`,
        [pool],
      );
      return v?.operator === other ? true : undefined;
    });
    const roles = await get(`/platform/governance/${pool}/roles?chain_id=${FRESH}`);
    const body = roles.body as { roles: { role: string; address: string; account_type: string }[]; warnings: string[] };
    expect(body.roles.find((r) => r.role === "operator")).toMatchObject({ address: other, account_type: "timelock" });
    expect(body.warnings).toContain(
      `${other} (operator) is a TimelockController other than the vault's timelock (${fresh.lendingPool.timelock.toLowerCase()}): its roles and operations are not indexed`,
    );
  });

  it("a bad registry file is logged and ignored: the serving deployment runs on", async () => {
    const good = readFileSync(registry);
    const schema = await servedSchema();
    writeFileSync(registry, '{"version": 1, "vaults": [{"chainId": 10, "address": "nope"}]}');
    await until("the refusal in the indexer's log", 30_000, async () =>
      out().includes(`registry ${registry} changed but is not usable`) ? true : undefined,
    );
    expect(out()).toContain(`vault registry ${registry} is invalid`);
    expect(await servedSchema()).toBe(schema);
    expect(indexer.exitInfo()).toBeUndefined();
    const started = out().split("deployment ").length;
    writeFileSync(registry, good); // back to what is served: nothing to do
    await sleep(4000);
    expect(out().split("deployment ").length).toBe(started);
    expect(await servedSchema()).toBe(schema);
  });

  it("remove: out of the views and the API the same way, the known vault served throughout", async () => {
    let reading = true;
    const failures: string[] = [];
    const reader = withDb(dbUrl, async (c) => {
      while (reading) {
        await c.query(`SELECT count(*) FROM indexer.vault_event WHERE chain_id = ${KNOWN}`).catch((err: Error) => {
          failures.push(err.message);
        });
        await sleep(50);
      }
    });
    const r = await cli(["remove", "--chain", String(FRESH), "--address", fresh.lendingPool.address]);
    expect(r.code, r.stderr).toBe(0);
    await until("the fresh vault out of the views", 300_000, async () => {
      const v = await q(`SELECT 1 FROM indexer.vault WHERE chain_id = ${FRESH} AND address = $1`, [
        fresh.lendingPool.address,
      ]);
      return v.length === 0 ? true : undefined;
    });
    reading = false;
    await reader;
    expect(failures).toEqual([]);
    await until("a 404 for the removed vault", 30_000, async () =>
      (await get(`/tokenized_vault/${fresh.lendingPool.address}`)).status === 404 ? true : undefined,
    );
    expect((await get(`/tokenized_vault/${known.lendingPool.address}`)).status).toBe(200);
    expect(indexer.exitInfo()).toBeUndefined();
  });
});
