/**
 * The erc4626 family end to end, on a chain of its own (chain 10, not the demo devnet): real
 * ERC-4626 code (OpenZeppelin's ERC4626 over a 6- and an 18-decimal asset, one with a decimals
 * offset; one a donation/inflation attempt is made on; one whose share price falls, governed by
 * AccessControl roles; the Morpho-backed MorphoLendingVault), ten days of history, registry
 * entries with only what `npm run vaults -- add` writes (plus a USD feed on three, and on a fourth
 * one deployed only midway), then the indexer, the workers and the API. Every indexed row, every
 * snapshot, the daily series and APYs and the API's answers are compared with reads of the chain.
 * The chain has no Multicall3: the indexer's batched reads put it there in a state override.
 */
import { mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import type { Redis } from "ioredis";
import {
  type Abi,
  type Address,
  createPublicClient,
  decodeEventLog,
  encodeDeployData,
  erc20Abi,
  getAddress,
  type Hex,
  http,
  keccak256,
  type PublicClient,
  toHex,
  zeroAddress,
} from "viem";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { Erc4626Abi } from "../../abis/Erc4626Abi.js";
import { MorphoLendingVaultAbi } from "../../abis/MorphoLendingVaultAbi.js";
import { OwnedERC4626Abi } from "../../abis/OwnedERC4626Abi.js";
import { RoleManagedERC4626Abi } from "../../abis/RoleManagedERC4626Abi.js";
import { TwoStepERC4626Abi } from "../../abis/TwoStepERC4626Abi.js";
import { type App, createApp } from "../../api/app.js";
import { ensureTokenSecret } from "../../api/auth/tokens.js";
import { createReadDb } from "../../api/lib/db.js";
import type { AppDeps } from "../../api/lib/router.js";
import { loadRegistry } from "../../config/registry.js";
import { deployMorpho } from "../../contracts/devnet/protocols/morpho.js";
import { type Ctx, read, write } from "../../contracts/devnet/protocols/tx.js";
import { ChainSession } from "../../contracts/devnet/session.js";
import { MULTICALL3_ADDRESS } from "../../contracts/devnet/simulate.js";
import { createDb, createPool, migrateToLatest } from "../../db/client.js";
import { loadRegistryData } from "../../db/registry-load.js";
import { jobsConfig } from "../../jobs/config.js";
import { fanoutRequester } from "../../jobs/request.js";
import { redisConnection, settle, startWorkers } from "../../jobs/runtime.js";
import { type AnvilInstance, startAnvil } from "../../scripts/lib/anvil.js";
import { type IndexerHandle, type IndexerOptions, publishAtHead, startIndexer } from "../../scripts/lib/indexer.js";
import { type RedisInstance, startRedis } from "../../scripts/lib/redis.js";
import { awayFromMidnight, freePort, PORT_OFFSET, rows, withDb } from "../helpers.js";

const cluster = inject("cluster");
const CHAIN_ID = 10;
const ANVIL_PORT = 18_940 + PORT_OFFSET;
const REDIS_PORT = 63_799 + PORT_OFFSET;
const DATABASE = "erc4626_test";
const DAYS = 10;
const DAY = 86_400;
const SNAPSHOT_INTERVAL = 5;
const PROBE = 10n ** 36n;

// biome-ignore lint/suspicious/noExplicitAny: rows of several tables, compared field by field
type Row = Record<string, any>;

const addr = (n: number) => getAddress(`0x${n.toString(16).padStart(40, "0")}`);
const DEPLOYER = addr(0xd0);
const OWNER = addr(0x0a);
const NEW_OWNER = addr(0x0b);
const ADMIN = addr(0xad);
const STRATEGIST = addr(0x5a);
const STRATEGIST2 = addr(0x5b);
const SINK = addr(0x51);
const ALICE = addr(0xa1);
const BOB = addr(0xb0);
const CAROL = addr(0xc0);
const ATTACKER = addr(0xee);
const VICTIM = addr(0xf1);

interface Deployed {
  label: string;
  address: Address;
  asset: { address: Address; symbol: string; decimals: number };
  startBlock: number;
  feed: Address | null;
  /** a feed the registry names that exists only from this block (before it, calls to it fail) */
  lateFeed?: { address: Address; block: number };
  abi: Abi;
}

let anvil: AnvilInstance;
let client: PublicClient;
let indexerHandle: IndexerHandle | undefined;
let redis: RedisInstance | undefined;
let dbUrl: string;
let app: App;
let closeApi: (() => Promise<void>) | undefined;
const vaults = new Map<string, Deployed>();
let dir: string;

const v = (label: string) => vaults.get(label)!;
/** Whether the vault's registry feed answers at the end of block `b`. */
const pricedAt = (x: Deployed, b: bigint) => x.feed != null || (x.lateFeed != null && b >= BigInt(x.lateFeed.block));
const lc = (a: string) => a.toLowerCase();
const q = <T = Row>(sql: string, params: unknown[] = []) => withDb(dbUrl, (c) => rows<T>(c, sql, params));
/** c / 1e18 as Postgres prints numeric(78, 18): the 18-decimal ratio of convertToAssets(1e36). */
const fixed18 = (x: bigint) => `${x / 10n ** 18n}.${(x % 10n ** 18n).toString().padStart(18, "0")}`;
const artifact = (name: string) =>
  JSON.parse(readFileSync(join(import.meta.dirname, "../../contracts/out", `${name}.json`), "utf8")) as {
    abi: Abi;
    bytecode: Hex;
  };

async function json<T = Row>(path: string): Promise<{ status: number; body: T }> {
  const res = await app.request(path);
  return { status: res.status, body: (await res.json()) as T };
}

async function deployVault(
  ctx: Ctx,
  name: "OwnedERC4626" | "RoleManagedERC4626" | "TwoStepERC4626",
  args: readonly unknown[],
): Promise<{ address: Address; block: number }> {
  const a = artifact(name);
  const data = encodeDeployData({ abi: a.abi, bytecode: a.bytecode, args: args as unknown[] });
  const r = await ctx.s.send(DEPLOYER, null, data, `deploy ${name}`);
  return { address: getAddress(r.contractAddress!), block: Number(BigInt(r.blockNumber)) };
}

/** The first block with code at `a` (its deployment block), by bisection. */
async function deploymentBlock(a: Address): Promise<number> {
  let lo = 0n;
  let hi = await client.getBlockNumber({ cacheTime: 0 }); // viem caches the head for 4 s otherwise
  while (lo < hi) {
    const mid = (lo + hi) / 2n;
    const code = await client.getCode({ address: a, blockNumber: mid });
    if (code && code !== "0x") hi = mid;
    else lo = mid + 1n;
  }
  return Number(lo);
}

async function buildWorld(s: ChainSession, genesis: number): Promise<void> {
  const ctx: Ctx = { s, from: DEPLOYER };
  // no Multicall3 on this chain, unlike the devnet's: the snapshot reads batch through it, so the
  // indexer puts its code at its address in each call's state override (config/multicall3.ts)
  expect(await s.rpc<Hex>("eth_getCode", [MULTICALL3_ADDRESS, "latest"])).toBe("0x");
  const usdc = await s.deploy(DEPLOYER, "MockERC20", ["USD Coin", "USDC", 6]);
  const dai = await s.deploy(DEPLOYER, "MockERC20", ["Dai", "DAI", 18]);
  const weth = await s.deploy(DEPLOYER, "MockERC20", ["Wrapped Ether", "WETH", 18]);
  const usdcFeed = await s.deploy(DEPLOYER, "PriceFeed", [8, "USDC / USD", 100_000_000n]);
  const wethFeed = await s.deploy(DEPLOYER, "PriceFeed", [8, "ETH / USD", 300_000_000_000n]);
  const USDC = { address: usdc, symbol: "USDC", decimals: 6 };
  const DAI = { address: dai, symbol: "DAI", decimals: 18 };

  const add = async (label: string, asset: typeof USDC, feed: Address | null, d: { address: Address; block: number }) =>
    vaults.set(label, { label, address: d.address, asset, startBlock: d.block, feed, abi: Erc4626Abi as Abi });
  // deployed first and registered from the block after: its constructor's OwnershipTransferred is
  // before every vault's start block, so not indexed, and the roles route asks owner()
  const oz18 = await deployVault(ctx, "OwnedERC4626", [dai, "OZ DAI Vault", "ozDAI", 0, OWNER]);
  await add("oz18", DAI, null, { ...oz18, block: oz18.block + 1 });
  // two-step ownership (Ownable2Step): a transfer is pending until accepted; one to 0x0 cancels it
  await add(
    "oz6",
    USDC,
    usdcFeed,
    await deployVault(ctx, "TwoStepERC4626", [usdc, "OZ USDC Vault", "ozUSDC", 3, OWNER]),
  );
  await add(
    "donation",
    USDC,
    usdcFeed,
    await deployVault(ctx, "OwnedERC4626", [usdc, "Donated USDC Vault", "dUSDC", 0, OWNER]),
  );
  await add(
    "loss",
    DAI,
    null,
    await deployVault(ctx, "RoleManagedERC4626", [dai, "Losing DAI Vault", "lDAI", ADMIN, STRATEGIST]),
  );
  const morpho = await deployMorpho(ctx, {
    loan: { ...USDC, feed: usdcFeed },
    collateral: { address: weth, symbol: "WETH", decimals: 18, feed: wethFeed },
    seedUsd: 1_000_000,
    seedUtilization: 0.6,
  });
  const morphoVault = getAddress(morpho.lendingVault);
  await add("morpho", USDC, usdcFeed, { address: morphoVault, block: await deploymentBlock(morphoVault) });

  const mint = (token: Address, to: Address, amount: bigint) =>
    write(ctx, token, erc20MintAbi, "mint", [to, amount], DEPLOYER);
  const deposit = async (label: string, who: Address, amount: bigint) => {
    const x = v(label);
    await mint(x.asset.address, who, amount);
    await write(ctx, x.asset.address, erc20Abi, "approve", [x.address, amount], who);
    await write(ctx, x.address, OwnedERC4626Abi as Abi, "deposit", [amount, who], who);
  };
  const totalAssets = (label: string) => read<bigint>(ctx, v(label).address, Erc4626Abi as Abi, "totalAssets");
  const at = (day: number, hour: number) => genesis + day * DAY + hour * 3600;

  // day 0: deposits; the donation attempt: 1 raw unit for 1 share, then 10,000 USDC given to the
  // vault, then a victim's 20,000 USDC deposit
  await s.mineAt([at(0, 1)]);
  await deposit("oz6", ALICE, 50_000n * 10n ** 6n);
  await deposit("oz6", BOB, 20_000n * 10n ** 6n);
  await deposit("oz18", ALICE, 30_000n * 10n ** 18n);
  await deposit("oz18", CAROL, 10_000n * 10n ** 18n);
  await deposit("loss", BOB, 40_000n * 10n ** 18n);
  await deposit("loss", CAROL, 5_000n * 10n ** 18n);
  await deposit("morpho", ALICE, 25_000n * 10n ** 6n);
  await deposit("donation", ATTACKER, 1n);
  await mint(usdc, ATTACKER, 10_000n * 10n ** 6n);
  await write(ctx, usdc, erc20Abi, "transfer", [v("donation").address, 10_000n * 10n ** 6n], ATTACKER);
  await deposit("donation", VICTIM, 20_000n * 10n ** 6n);

  for (let day = 0; day < DAYS; day++) {
    if (day > 0) {
      await s.mineAt([at(day, 1)]);
      // yield: the asset sent to the vault; the loss: the strategist takes 0.2 % a day out
      await mint(usdc, v("oz6").address, (await totalAssets("oz6")) / 5000n);
      await mint(dai, v("oz18").address, (await totalAssets("oz18")) / 3000n);
      await mint(usdc, v("donation").address, (await totalAssets("donation")) / 10_000n);
      const strategist = day > 6 ? STRATEGIST2 : STRATEGIST; // the role moves on day 6, below
      await write(
        ctx,
        v("loss").address,
        RoleManagedERC4626Abi as Abi,
        "takeAssets",
        [(await totalAssets("loss")) / 500n, SINK],
        strategist,
      );
    }
    const ownership = (fn: string, args: unknown[], by: Address) =>
      write(ctx, v("oz6").address, TwoStepERC4626Abi as Abi, fn, args, by);
    if (day === 3) {
      await ownership("transferOwnership", [NEW_OWNER], OWNER);
      await ownership("acceptOwnership", [], NEW_OWNER);
    }
    if (day === 6) {
      // a handover started, then cancelled: no owner is pending
      await ownership("transferOwnership", [ADMIN], NEW_OWNER);
      await ownership("transferOwnership", [zeroAddress], NEW_OWNER);
    }
    if (day === 4) {
      const half = (await read<bigint>(ctx, v("oz6").address, erc20Abi, "balanceOf", [BOB])) / 2n;
      await write(ctx, v("oz6").address, erc20Abi, "transfer", [CAROL, half], BOB);
    }
    if (day === 5) {
      const all = await read<bigint>(ctx, v("oz18").address, erc20Abi, "balanceOf", [CAROL]);
      await write(ctx, v("oz18").address, OwnedERC4626Abi as Abi, "redeem", [all, CAROL, CAROL], CAROL);
    }
    if (day === 5) {
      // the losing vault's registry feed is deployed only now: the snapshots before have no price
      const feed = await s.deploy(DEPLOYER, "PriceFeed", [8, "DAI / USD", 100_000_000n]);
      v("loss").lateFeed = { address: feed, block: await deploymentBlock(feed) };
    }
    if (day === 6) {
      const role = keccak256(toHex("STRATEGIST_ROLE"));
      await write(ctx, v("loss").address, RoleManagedERC4626Abi as Abi, "grantRole", [role, STRATEGIST2], ADMIN);
      await write(ctx, v("loss").address, RoleManagedERC4626Abi as Abi, "revokeRole", [role, STRATEGIST], ADMIN);
    }
    if (day === 7) {
      await write(
        ctx,
        v("morpho").address,
        MorphoLendingVaultAbi as Abi,
        "withdraw",
        [5_000n * 10n ** 6n, ALICE, ALICE],
        ALICE,
      );
    }
    if (day === 8) {
      const half = (await read<bigint>(ctx, v("donation").address, erc20Abi, "balanceOf", [VICTIM])) / 2n;
      await write(ctx, v("donation").address, OwnedERC4626Abi as Abi, "redeem", [half, VICTIM, VICTIM], VICTIM);
    }
    // blocks through the day: interval snapshots
    await s.mineAt(Array.from({ length: 11 }, (_, i) => at(day, 3 + 2 * i)));
  }
  // today: blocks up to now (and past Ponder's finality depth, so nothing is left unindexed)
  const now = Math.floor(Date.now() / 1000);
  await s.mineAt(Array.from({ length: 40 }, (_, i) => now - 200 + i * 4));
}

const erc20MintAbi = [
  {
    type: "function",
    name: "mint",
    stateMutability: "nonpayable",
    inputs: [
      { name: "to", type: "address" },
      { name: "amount", type: "uint256" },
    ],
    outputs: [],
  },
] as const satisfies Abi;

beforeAll(async () => {
  dir = join(cluster.dir, "erc4626");
  mkdirSync(dir, { recursive: true });
  // a database of its own on the solo files' cluster
  await withDb(cluster.dbUrl, async (c) => {
    await c.query(`DROP DATABASE IF EXISTS ${DATABASE} WITH (FORCE)`);
    await c.query(`CREATE DATABASE ${DATABASE}`);
  });
  const u = new URL(cluster.dbUrl);
  u.pathname = `/${DATABASE}`;
  dbUrl = u.toString();

  // "today" comes from the clock and its blocks end 44 s before now: the day must not change
  // during the build (about 40 s) or start within the last blocks' reach
  await awayFromMidnight(90, 240);
  const today = Math.floor(Date.now() / 1000 / DAY) * DAY;
  const genesis = today - DAYS * DAY;
  anvil = await startAnvil({
    chainId: CHAIN_ID,
    port: ANVIL_PORT,
    genesisTimestamp: genesis,
    logFile: join(dir, "anvil.log"),
  });
  client = createPublicClient({ transport: http(anvil.rpcUrl) }) as PublicClient;
  const s = new ChainSession(CHAIN_ID, anvil.rpcUrl);
  await s.syncClock();
  await buildWorld(s, genesis);

  // the registry: what `npm run vaults -- add` writes, and a USD feed on three of them
  const registryFile = join(dir, "vaults.json");
  writeFileSync(
    registryFile,
    JSON.stringify({
      version: 1,
      vaults: [...vaults.values()].map((x) => ({
        chainId: CHAIN_ID,
        address: x.address,
        family: "erc4626",
        kind: "erc4626",
        name: `${x.label} vault`,
        symbol: x.label.toUpperCase(),
        startBlock: x.startBlock,
        asset: x.asset,
        ...(x.feed || x.lateFeed ? { priceFeed: { address: x.feed ?? x.lateFeed!.address, decimals: 8 } } : {}),
      })),
    }),
  );

  const opts: IndexerOptions = {
    databaseUrl: dbUrl,
    registryFile,
    chains: [{ chainId: CHAIN_ID, rpcUrl: anvil.rpcUrl, snapshotInterval: SNAPSHOT_INTERVAL }],
    port: await freePort(),
    logFile: join(dir, "indexer.log"),
  };
  let exited = false;
  indexerHandle = startIndexer({ ...opts, onExit: () => (exited = true) });
  await publishAtHead(opts, indexerHandle, { timeoutMs: 300_000, isAlive: () => !exited });

  redis = await startRedis({
    port: REDIS_PORT,
    dataDir: join(dir, "redis"),
    logFile: join(dir, "redis.log"),
    replaceLeftover: true, // never the state of a killed run
  });
  const cfg = jobsConfig({ DATABASE_URL: dbUrl, VAULT_REGISTRY: registryFile });
  const workers = await startWorkers({ ...cfg, redisUrl: redis.url }, () => {}, Date.now, { schedule: false });
  try {
    await settle(redis.url, 300_000);
  } finally {
    await workers.close();
  }

  const db = createDb(createPool(dbUrl, 2, "erc4626-test"));
  await migrateToLatest(db);
  await loadRegistryData(db, loadRegistry(registryFile));
  const readDb = createReadDb(dbUrl, 4);
  const conn: Redis = redisConnection(redis.url);
  const fanout = fanoutRequester(redis.url);
  const deps: AppDeps = {
    db: readDb.db,
    wdb: db,
    config: {
      indexerSchema: "indexer",
      rpcUrls: new Map([[CHAIN_ID, anvil.rpcUrl]]),
      ensResolvers: new Map(),
      corsOrigins: [],
      rateLimitPerMinute: 1_000_000,
      tokenSecret: await ensureTokenSecret(db),
      tokenTtlS: 900,
    },
    redis: conn,
    requestRecompute: () => fanout.request(),
    now: () => new Date(),
  };
  app = createApp(deps);
  closeApi = async () => {
    conn.disconnect();
    await fanout.close();
    await readDb.destroy();
    await db.destroy();
  };
}, 900_000);

afterAll(async () => {
  await closeApi?.();
  await indexerHandle?.stop();
  if (redis && !redis.reused) await redis.stop();
  await anvil?.stop();
});

/** Every log of a vault decoded with the ERC-4626 ABI (events it does not know are left out). */
async function vaultLogs(a: Address) {
  const logs = await client.getLogs({ address: a, fromBlock: 0n, toBlock: "latest" });
  const out: { name: string; args: Record<string, unknown>; tx: string; logIndex: number; block: bigint }[] = [];
  for (const log of logs) {
    try {
      const d = decodeEventLog({ abi: Erc4626Abi, data: log.data, topics: log.topics });
      out.push({
        name: d.eventName,
        args: d.args as unknown as Record<string, unknown>,
        tx: log.transactionHash!,
        logIndex: log.logIndex!,
        block: log.blockNumber!,
      });
    } catch {
      // an event outside the ABI
    }
  }
  return out;
}

const readAt = <T>(a: Address, abi: Abi, functionName: string, args: readonly unknown[], block: bigint) =>
  client.readContract({ address: a, abi, functionName, args, blockNumber: block }) as Promise<T>;

describe("the indexed tables", () => {
  it("indexer.vault: one erc4626 row per vault, share decimals as the vault says", async () => {
    const table = await q("SELECT * FROM indexer.vault ORDER BY address");
    expect(table.map((r) => r.address).sort()).toEqual([...vaults.values()].map((x) => lc(x.address)).sort());
    for (const x of vaults.values()) {
      const r = table.find((t) => t.address === lc(x.address))!;
      const decimals = await client.readContract({ address: x.address, abi: Erc4626Abi, functionName: "decimals" });
      expect([r.family, r.kind, r.decimals, r.asset, r.asset_decimals, r.share_token], x.label).toEqual([
        "erc4626",
        "erc4626",
        decimals,
        lc(x.asset.address),
        x.asset.decimals,
        lc(x.address),
      ]);
      expect(r.withdrawal_queue_head + r.withdrawal_queue_tail, x.label).toBe(0);
      expect(r.timelock, x.label).toBeNull();
    }
    // OZ's decimals offset: 6 + 3
    expect(table.find((t) => t.address === lc(v("oz6").address))!.decimals).toBe(9);
  });

  it("vault_event and share_transfer: every Deposit, Withdraw and Transfer log exactly once", async () => {
    const events = await q("SELECT * FROM indexer.vault_event");
    const transfers = await q("SELECT * FROM indexer.share_transfer");
    let flows = 0;
    let moves = 0;
    for (const x of vaults.values()) {
      for (const l of await vaultLogs(x.address)) {
        const key = (r: Row) => r.tx_hash === l.tx && r.log_index === l.logIndex;
        if (l.name === "Deposit" || l.name === "Withdraw") {
          const r = events.find(key);
          expect(r, `${x.label} ${l.name} ${l.tx}`).toBeDefined();
          expect([r!.vault, r!.kind, r!.owner, r!.receiver, r!.sender, r!.assets, r!.shares, r!.asset]).toEqual([
            lc(x.address),
            l.name.toLowerCase(),
            lc(String(l.args.owner)),
            lc(String(l.name === "Deposit" ? l.args.owner : l.args.receiver)),
            lc(String(l.args.sender)),
            String(l.args.assets),
            String(l.args.shares),
            lc(x.asset.address),
          ]);
          expect(r!.snapshot_id).toBe(`${CHAIN_ID}:${lc(x.address)}:${l.block}:flow`);
          flows++;
        } else if (l.name === "Transfer") {
          const r = transfers.find(key);
          expect(r, `${x.label} Transfer ${l.tx}`).toBeDefined();
          expect([r!.vault, r!.token, r!.from_address, r!.to_address, r!.shares]).toEqual([
            lc(x.address),
            lc(x.address),
            lc(String(l.args.from)),
            lc(String(l.args.to)),
            String(l.args.value),
          ]);
          moves++;
        }
      }
    }
    expect(events.length).toBe(flows);
    expect(transfers.length).toBe(moves);
    expect(events.some((e) => e.kind === "withdraw")).toBe(true);
  });

  it("every snapshot equals the chain at its block: totals, asset balance, convertToAssets price, USD price", async () => {
    const snaps = await q("SELECT * FROM indexer.share_ratio_snapshot ORDER BY block_number");
    for (const x of vaults.values()) {
      const mine = snaps.filter((r) => r.vault === lc(x.address));
      const days = new Set(mine.map((r) => Math.floor(Number(r.timestamp) / DAY)));
      expect(days.size, `${x.label}: a snapshot every day`).toBe(DAYS + 1);
      for (const r of mine) {
        const b = BigInt(r.block_number);
        const [ta, ts, idle, c] = await Promise.all([
          readAt<bigint>(x.address, Erc4626Abi as Abi, "totalAssets", [], b),
          readAt<bigint>(x.address, Erc4626Abi as Abi, "totalSupply", [], b),
          readAt<bigint>(x.asset.address, erc20Abi, "balanceOf", [x.address], b),
          readAt<bigint>(x.address, Erc4626Abi as Abi, "convertToAssets", [PROBE], b),
        ]);
        expect([r.total_assets, r.total_supply, r.idle_assets, r.asset_share_ratio], `${x.label} ${r.id}`).toEqual([
          String(ta),
          String(ts),
          String(idle),
          ts === 0n ? null : fixed18((c * 10n ** 18n) / PROBE),
        ]);
        expect(r.subaccount_assets).toBe("0");
        expect(r.asset_usd_price, `${x.label} at ${b} (feed from ${x.lateFeed?.block})`).toBe(
          pricedAt(x, b) ? "1.000000000000000000" : null,
        );
      }
    }
  });

  it("the donation attempt: the victim's shares and their value are what the chain says", async () => {
    const x = v("donation");
    const [deposit] = await q(
      "SELECT * FROM indexer.vault_event WHERE vault = $1 AND owner = $2 AND kind = 'deposit'",
      [lc(x.address), lc(VICTIM)],
    );
    // OpenZeppelin's virtual share: the 10,000 USDC given to the vault cost the victim part of
    // the deposit, not all of it; the indexed row is the event
    expect(BigInt(deposit!.assets)).toBe(20_000n * 10n ** 6n);
    expect(BigInt(deposit!.shares)).toBeGreaterThan(0n);
    const [bal] = await q<{ s: string }>(
      `SELECT (coalesce((SELECT sum(shares) FROM indexer.share_transfer WHERE vault = $1 AND to_address = $2), 0)
             - coalesce((SELECT sum(shares) FROM indexer.share_transfer WHERE vault = $1 AND from_address = $2), 0))::text AS s`,
      [lc(x.address), lc(VICTIM)],
    );
    const shares = BigInt(bal!.s);
    expect(shares).toBe(
      await client.readContract({ address: x.address, abi: erc20Abi, functionName: "balanceOf", args: [VICTIM] }),
    );
    const [last] = await q(
      "SELECT * FROM indexer.share_ratio_snapshot WHERE vault = $1 ORDER BY block_number DESC, id DESC LIMIT 1",
      [lc(x.address)],
    );
    const b = BigInt(last!.block_number);
    const onChain = await readAt<bigint>(x.address, Erc4626Abi as Abi, "convertToAssets", [shares], b);
    const [whole, frac = ""] = String(last!.asset_share_ratio).split(".");
    const ratio = BigInt(whole!) * 10n ** 18n + BigInt(frac.padEnd(18, "0"));
    const indexed = (shares * ratio) / 10n ** 18n;
    expect(indexed - onChain).toBeGreaterThanOrEqual(-1n);
    expect(indexed - onChain).toBeLessThanOrEqual(1n);
    // totalAssets / totalSupply would overstate it: the virtual share holds part of the donation
    const naive = (shares * BigInt(last!.total_assets)) / BigInt(last!.total_supply);
    expect(naive - onChain).toBeGreaterThan(1000n);
    // the TVL counts the donation: it is in totalAssets
    const [day] = await q("SELECT * FROM derived.vault_day WHERE vault = $1 AND snapshot_id = $2", [
      lc(x.address),
      last!.id,
    ]);
    expect(day!.tvl).toBe(fixed18(BigInt(last!.total_assets) * 10n ** 12n));
  });
});

describe("the derived tables", () => {
  it("daily series: each day's ratio, share price and TVL from its last snapshot", async () => {
    for (const x of vaults.values()) {
      const days = await q(
        `SELECT d.*, s.asset_share_ratio AS s_ratio, s.total_assets AS s_ta, s.total_supply AS s_ts, s.block_number AS s_block
         FROM derived.vault_day d JOIN indexer.share_ratio_snapshot s ON s.id = d.snapshot_id
         WHERE d.vault = $1 ORDER BY d.day`,
        [lc(x.address)],
      );
      expect(days.length, x.label).toBe(DAYS + 1);
      const sd = Number(await client.readContract({ address: x.address, abi: Erc4626Abi, functionName: "decimals" }));
      for (const d of days) {
        expect([d.missing, d.asset_share_ratio, d.total_assets, d.total_shares], `${x.label} ${d.day}`).toEqual([
          false,
          d.s_ratio,
          d.s_ta,
          d.s_ts,
        ]);
        // the share price is the chain's price of one whole share, to its rounding
        const whole = 10n ** BigInt(sd);
        const c = await readAt<bigint>(x.address, Erc4626Abi as Abi, "convertToAssets", [whole], BigInt(d.s_block));
        expect(Number(d.share_price)).toBeCloseTo(Number(c) / 10 ** x.asset.decimals, 5);
        if (pricedAt(x, BigInt(d.s_block)))
          expect(d.tvl).toBe(fixed18(BigInt(d.total_assets) * 10n ** BigInt(18 - x.asset.decimals)));
        else expect(d.tvl).toBeNull();
      }
    }
  });

  it("APY from the chain's share prices: positive where it earns, negative where it loses", async () => {
    const signs: Record<string, number> = { oz6: 1, oz18: 1, donation: 1, morpho: 1, loss: -1 };
    for (const x of vaults.values()) {
      const [m] = await q("SELECT * FROM derived.vault_metrics WHERE vault = $1", [lc(x.address)]);
      expect(m, x.label).toBeDefined();
      const dayRow = async (back: number) =>
        (
          await q("SELECT * FROM derived.vault_day WHERE vault = $1 AND day = ($2::date - $3::int) ", [
            lc(x.address),
            m!.as_of_day,
            back,
          ])
        )[0]!;
      const [now, before] = [await dayRow(0), await dayRow(7)];
      const price = async (r: Row) =>
        Number(await readAt<bigint>(x.address, Erc4626Abi as Abi, "convertToAssets", [PROBE], BigInt(r.block_number))) /
        1e36;
      const growth = (await price(now)) / (await price(before));
      const simple = ((growth - 1) * 365) / 7;
      const [apy] = await q("SELECT * FROM derived.vault_apy WHERE vault = $1 AND day = $2 AND horizon = '7'", [
        lc(x.address),
        m!.as_of_day,
      ]);
      expect(apy!.simple_apy, x.label).toBeCloseTo(simple, 9);
      expect(apy!.compound_apy, x.label).toBeCloseTo(growth ** (365 / 7) - 1, 9);
      expect(m!.historical_apy["7"], x.label).toBe(apy!.simple_apy);
      expect(Math.sign(apy!.simple_apy), x.label).toBe(signs[x.label]);
      if (x.label === "loss") {
        // 0.2 % a day: about -52 % a year, simple
        expect(apy!.simple_apy).toBeLessThan(-0.5);
        expect(m!.max_drawdown).toBeGreaterThan(0.01);
      }
    }
  });

  it("points accrue on the vaults with a USD feed; no unrealized PnL is invented", async () => {
    const withFeed = [...vaults.values()].filter((x) => x.feed).map((x) => lc(x.address));
    const pv = await q("SELECT vault, count(*)::int AS n FROM derived.points_vault GROUP BY vault");
    for (const a of withFeed) expect(pv.find((r) => r.vault === a)?.n ?? 0, a).toBeGreaterThan(0);
    const [alice] = await q("SELECT * FROM derived.points_total WHERE wallet = $1", [lc(ALICE)]);
    expect(Number(alice?.total_points ?? 0)).toBeGreaterThan(0);
    const [pnl] = await q<{ n: number }>("SELECT count(*)::int AS n FROM derived.unrealized_pnl");
    expect(pnl!.n).toBe(0);
  });
});

describe("the API", () => {
  it("the vault list and object: family erc4626, no subaccounts, share amounts in share decimals", async () => {
    const r = await json<Row[]>("/api/v1/tokenized_vault");
    expect(r.status).toBe(200);
    for (const x of vaults.values()) {
      const o = r.body.find((b) => b.address === lc(x.address));
      expect(o, x.label).toBeDefined();
      expect([o!.internal_type, o!.chain, o!.subaccounts, o!.asset]).toEqual([
        "erc4626",
        CHAIN_ID,
        [],
        { address: lc(x.asset.address), symbol: x.asset.symbol, decimals: x.asset.decimals },
      ]);
      const [m] = await q("SELECT * FROM derived.vault_metrics WHERE vault = $1", [lc(x.address)]);
      expect(o!.historical_apy).toEqual(m!.historical_apy);
    }
    const sum = await json<Row>(`/api/v1/tokenized_vault/vault_summary/${v("oz6").address}`);
    expect(sum.status).toBe(200);
    const snap = sum.body.latest_snapshot;
    expect(snap.total_shares).toBeCloseTo(Number(snap.total_shares_raw) / 1e9, 6);
    expect(snap.total_assets).toBeCloseTo(Number(snap.total_assets_raw) / 1e6, 6);
  });

  it("the time series of the falling vault: daily APYs below zero", async () => {
    const r = await json<{ data: Record<string, Row> }>(
      `/api/v1/tokenized_vault/${v("loss").address}/historical-timeseries?n_days=${DAYS}`,
    );
    expect(r.status).toBe(200);
    const apys = Object.values(r.body.data)
      .map((d) => d.daily_apy as number | null)
      .filter((a): a is number => a != null);
    expect(apys.length).toBeGreaterThanOrEqual(DAYS - 2);
    expect(apys.filter((a) => a < 0).length).toBeGreaterThanOrEqual(DAYS - 2);
  });

  it("vault history: the indexed deposits and withdraws, as the chain's events say", async () => {
    for (const x of vaults.values()) {
      const r = await json<Row[]>(`/api/v1/platform/vault_history/${x.address}`);
      expect(r.status, x.label).toBe(200);
      const events = await q("SELECT * FROM indexer.vault_event WHERE vault = $1", [lc(x.address)]);
      expect(r.body.length, x.label).toBe(events.length);
      for (const h of r.body) {
        const e = events.find((z) => z.tx_hash === h.transaction_hash && z.log_index === h.log_index)!;
        expect([h.type, h.wallet, h.amount_raw, h.asset_address, h.asset_decimals, h.chain_id], x.label).toEqual([
          e.kind,
          e.owner,
          e.assets,
          lc(x.asset.address),
          x.asset.decimals,
          CHAIN_ID,
        ]);
      }
    }
    const victim = await json<Row[]>(`/api/v1/platform/vault_history/${v("donation").address}?wallet=${VICTIM}`);
    expect(victim.body.map((h) => h.type).sort()).toEqual(["deposit", "withdraw"]);
  });

  it("pending redemptions: none, for a vault without a redemption queue", async () => {
    const r = await json<Row>(`/api/v1/vaults/${v("morpho").address}/pending-redemptions`);
    expect(r.status).toBe(200);
    expect([r.body.vault.family, r.body.redemptions_by_date]).toEqual(["erc4626", []]);
  });

  it("the withdrawal queue: none (null counters, no requests)", async () => {
    const r = await json<Row>(`/api/v1/withdrawals/${CHAIN_ID}/${v("oz18").address}`);
    expect(r.status).toBe(200);
    expect([r.body.family, r.body.queue, r.body.pending_withdrawals, r.body.recent_processed]).toEqual([
      "erc4626",
      null,
      [],
      [],
    ]);
  });

  it("governance: the owner an Ownable vault has, the roles an AccessControl vault has, no timelock", async () => {
    const own = await json<Row>(`/api/v1/platform/governance/${v("oz6").address}/roles`);
    expect(own.status).toBe(200);
    // the handover to NEW_OWNER accepted, the next one cancelled: no pending owner (not 0x0)
    expect(own.body.roles.map((x: Row) => [x.role, x.address, x.source])).toEqual([["owner", lc(NEW_OWNER), "vault"]]);
    const [row] = await q("SELECT owner, pending_owner FROM indexer.vault WHERE address = $1", [lc(v("oz6").address)]);
    expect([row!.owner, row!.pending_owner]).toEqual([lc(NEW_OWNER), null]);
    expect(own.body.timelock).toBeNull();
    const roles = await json<Row>(`/api/v1/platform/governance/${v("loss").address}/roles`);
    expect(roles.status).toBe(200);
    expect(
      roles.body.roles
        .map((x: Row) => [x.role, x.address, x.source])
        .sort((a: string[], b: string[]) => a[0]!.localeCompare(b[0]!)),
    ).toEqual([
      ["vault_admin", lc(ADMIN), "vault"],
      ["vault_strategist", lc(STRATEGIST2), "vault"],
    ]);
    expect(roles.body.warnings.join(" ")).toMatch(/exposes no owner: owner\(\) reverts/);
    const read = await json<Row>(`/api/v1/platform/governance/${v("oz18").address}/roles`);
    expect(read.body.roles.map((x: Row) => [x.role, x.address, x.source])).toEqual([["owner", lc(OWNER), "vault"]]);
    expect(read.body.warnings.join(" ")).toMatch(/what owner\(\) answers now/);
    const tl = await json<Row>(`/api/v1/platform/governance/${v("oz6").address}/timelocks`);
    expect(tl.body).toEqual({ timelocks: [] });
    const log = await json<Row>(`/api/v1/platform/governance/${v("oz6").address}/audit_log`);
    expect(log.status).toBe(200);
    const ownership = JSON.stringify(log.body).match(/OwnershipTransferred/g) ?? [];
    expect(ownership.length).toBeGreaterThanOrEqual(2); // the constructor's and the transfer
  });

  it("the annualized APY route keeps to the spec's four kinds: erc4626 is not one", async () => {
    const r = await json<Row>(`/api/v1/tokenized_vault/annualized_apy/${v("oz6").address}`);
    expect(r.status).toBe(404);
    expect(r.body.kind).toBe("erc4626");
  });
});
