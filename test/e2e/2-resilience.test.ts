/**
 * The indexer survives what production throws at it: a kill -9 in the middle of a backfill, a
 * redeploy of changed code while the old deployment serves, and a reorg of the newest blocks.
 */
import { appendFileSync, cpSync, existsSync, mkdirSync, readFileSync, rmSync, symlinkSync } from "node:fs";
import { join } from "node:path";
import pg from "pg";
import { type Address, encodeFunctionData } from "viem";
import { describe, expect, inject, it } from "vitest";
import { MorphoLendingVaultAbi } from "../../abis/MorphoLendingVaultAbi.js";
import { ChainSession } from "../../contracts/devnet/session.js";
import {
  createViews,
  type IndexerOptions,
  indexedBlocks,
  publishAtHead,
  REPO_ROOT,
  startIndexer,
  waitForHead,
} from "../../scripts/lib/indexer.js";
import { freePort, loadManifest, rows, rpcCall, sleep, withDb } from "../helpers.js";

const devnet = inject("devnet");
const TABLES = [
  "vault",
  "vault_event",
  "share_transfer",
  "withdrawal_request",
  "share_ratio_snapshot",
  "timelock_operation",
  "timelock_source",
  "governance_event",
  "fee_event",
  "loan",
  "loan_event",
  // the protocol world's sources (src/subaccounts.ts, protocols.ts, loanbook.ts, lending-vaults.ts)
  "subaccount",
  "subaccount_event",
  "aave_event",
  "morpho_event",
  "uniswap_position",
  "uniswap_event",
  "perp_deposit",
  "perp_core_event",
  "loanbook_loan",
  "loanbook_event",
  "lending_vault_event",
  "lending_vault_snapshot",
];

function baseOptions(name: string, port: number): IndexerOptions {
  return {
    databaseUrl: devnet.dbUrl,
    registryFile: devnet.registryFile,
    chains: devnet.chains,
    port,
    logFile: join(devnet.dir, `${name}.log`),
  };
}

async function tableDiff(a: string, b: string): Promise<Record<string, number>> {
  return withDb(devnet.dbUrl, async (c) => {
    const out: Record<string, number> = {};
    for (const t of TABLES) {
      const [r] = await rows<{ n: string }>(
        c,
        `SELECT (SELECT count(*) FROM (SELECT * FROM "${a}"."${t}" EXCEPT ALL SELECT * FROM "${b}"."${t}") x)
              + (SELECT count(*) FROM (SELECT * FROM "${b}"."${t}" EXCEPT ALL SELECT * FROM "${a}"."${t}") y) AS n`,
      );
      out[t] = Number(r!.n);
    }
    return out;
  });
}

const zeroDiff = Object.fromEntries(TABLES.map((t) => [t, 0]));

describe("crash recovery", () => {
  it("a kill -9 mid-backfill, then a restart, gives the same tables as an uninterrupted run", async () => {
    const schema = `crash_${Date.now().toString(36)}`;
    const opts = { ...baseOptions("crash", await freePort()), schema };
    const first = startIndexer(opts);
    let killedAt: Map<number, number> | null = null;
    await withDb(devnet.dbUrl, async (c) => {
      for (let i = 0; i < 3000 && !killedAt; i++) {
        const progress = await indexedBlocks(c, schema);
        if (progress && [...progress.values()].some((b) => b > 0)) {
          process.kill(-first.process.pid, "SIGKILL");
          killedAt = progress;
        } else await sleep(50);
      }
    });
    expect(killedAt, "the backfill never started").not.toBeNull();
    await first.process.exited;
    const heads = await Promise.all(
      devnet.chains.map((c) => rpcCall<string>(c.rpcUrl, "eth_blockNumber").then(Number)),
    );
    const partial = devnet.chains.map((c, i) => (killedAt!.get(c.chainId) ?? 0) < heads[i]!);
    expect(partial.some(Boolean), "killed after the backfill had already finished").toBe(true);

    let exited = false;
    const second = startIndexer({ ...opts, onExit: () => (exited = true) });
    try {
      await waitForHead(second, devnet.dbUrl, devnet.chains, { timeoutMs: 300_000, isAlive: () => !exited });
      expect(readFileSync(opts.logFile, "utf8")).toMatch(/crash recovery/i);
      expect(await tableDiff(schema, devnet.schema)).toEqual(zeroDiff);
    } finally {
      await second.stop();
    }
  }, 420_000);
});

describe("redeploy", () => {
  it("indexer.* keeps answering while a changed build backfills and takes over", async () => {
    // A changed build: the same sources with one handler file edited, in its own root.
    const root = join(devnet.dir, "redeploy-root");
    rmSync(root, { recursive: true, force: true });
    mkdirSync(root, { recursive: true });
    for (const f of [
      "ponder.config.ts",
      "ponder.schema.ts",
      "package.json",
      "tsconfig.json",
      "src",
      "abis",
      "config",
    ]) {
      cpSync(join(REPO_ROOT, f), join(root, f), { recursive: true });
    }
    if (!existsSync(join(root, "node_modules")))
      symlinkSync(join(REPO_ROOT, "node_modules"), join(root, "node_modules"));
    appendFileSync(join(root, "src", "snapshots.ts"), "\n// changed build for the redeploy test\n");

    const [first] = await withDb(devnet.analystUrl, (c) =>
      rows<{ n: string }>(c, "SELECT count(*) AS n FROM indexer.vault_event"),
    );
    const expected = first!.n;
    const viewTarget = () =>
      withDb(devnet.dbUrl, async (c) => {
        const [r] = await rows<{ definition: string }>(
          c,
          "SELECT definition FROM pg_views WHERE schemaname = 'indexer' AND viewname = 'vault_event'",
        );
        return r!.definition;
      });
    expect(await viewTarget()).toContain(devnet.schema);

    let exited = false;
    const opts = { ...baseOptions("redeploy", await freePort()), root };
    const nextOptions = { ...opts, onExit: () => (exited = true) };
    const next = startIndexer(nextOptions);
    expect(next.schema).not.toBe(devnet.schema);
    const errors: string[] = [];
    const counts = new Set<string>();
    let reads = 0;
    let polling = true;
    const poller = withDb(devnet.analystUrl, async (c) => {
      while (polling) {
        try {
          const [r] = await rows<{ n: string }>(c, "SELECT count(*) AS n FROM indexer.vault_event");
          counts.add(r!.n);
          reads++;
        } catch (err) {
          errors.push((err as Error).message);
        }
        await sleep(100);
      }
    });
    try {
      try {
        await publishAtHead(nextOptions, next, { timeoutMs: 300_000, isAlive: () => !exited });
        expect(await viewTarget()).toContain(next.schema);
        await sleep(1000);
      } finally {
        polling = false;
        await poller;
        await next.stop();
      }
      expect(errors).toEqual([]);
      expect([...counts]).toEqual([expected]);
      expect(reads).toBeGreaterThan(20);
      expect(await tableDiff(next.schema, devnet.schema)).toEqual(zeroDiff);
    } finally {
      // Roll the views back to the first deployment, which is still running (later test files
      // read indexer.* and must see it whatever happened above).
      await createViews(baseOptions("create-views", 0), devnet.schema);
    }
    expect(await viewTarget()).toContain(devnet.schema);
  }, 420_000);
});

describe("the view switch", () => {
  it("a reader of one view holding its transaction open holds no reader of another view back", async () => {
    const opts = baseOptions("create-views", 0);
    // an analyst's transaction reading the last view the switch re-creates, left open
    const analyst = new pg.Client({ connectionString: devnet.dbUrl });
    await analyst.connect();
    try {
      await analyst.query("BEGIN");
      await analyst.query('SELECT count(*) FROM indexer."_ponder_checkpoint"');
      let switched = false;
      const sw = createViews(opts, devnet.schema).then(() => (switched = true));
      await sleep(300);
      // a reader of the first views (the API's): it gets through while the switch waits its
      // turn; a switch holding the views it redid until the analyst commits would block it here
      // and this test would never let the analyst commit
      const [r] = await withDb(devnet.analystUrl, (c) =>
        rows<{ n: string }>(c, "SELECT count(*) AS n FROM indexer.vault_event"),
      );
      expect(Number(r!.n)).toBeGreaterThan(0);
      expect(switched).toBe(false);
      await analyst.query("COMMIT");
      await sw;
      expect(switched).toBe(true);
    } finally {
      await analyst.end();
    }
    // and the views still show the devnet's deployment
    const [v] = await withDb(devnet.dbUrl, (c) =>
      rows<{ definition: string }>(
        c,
        "SELECT definition FROM pg_views WHERE schemaname = 'indexer' AND viewname = 'vault_event'",
      ),
    );
    expect(v!.definition).toContain(devnet.schema);
  }, 120_000);

  it("a view an earlier build left, that this one has no table for, is dropped", async () => {
    await withDb(devnet.dbUrl, (c) =>
      c.query(`CREATE VIEW indexer.gone_table AS SELECT * FROM "${devnet.schema}".vault LIMIT 0`),
    );
    await createViews(baseOptions("create-views", 0), devnet.schema);
    const left = await withDb(devnet.dbUrl, (c) =>
      rows(c, "SELECT 1 FROM pg_views WHERE schemaname = 'indexer' AND viewname = 'gone_table'"),
    );
    expect(left).toEqual([]);
  });
});

describe("reorg", () => {
  it("rows of orphaned blocks are removed and the new blocks' rows appear", async () => {
    const manifest = loadManifest(devnet.manifestFile);
    const chain = manifest.chains.find((c) => c.chainId === 8453)!;
    const pool = chain.vaults.find((v) => v.family === "lendingPool")!;
    const s = new ChainSession(chain.chainId, chain.rpcUrl);
    await s.syncClock();
    const q = <T>(sql: string, params: unknown[] = []) => withDb(devnet.dbUrl, (c) => rows<T>(c, sql, params));
    const eventsOf = async (tx: string) =>
      Number(
        (
          await q<{ n: string }>(`SELECT count(*) AS n FROM "${devnet.schema}".vault_event WHERE tx_hash = $1`, [tx])
        )[0]!.n,
      );
    const hasEvent = async (tx: string) => (await eventsOf(tx)) > 0;
    const waitUntil = async (what: string, fn: () => Promise<boolean>) => {
      for (let i = 0; i < 600; i++) {
        if (await fn()) return;
        await sleep(100);
      }
      throw new Error(`timed out waiting until ${what}`);
    };
    const deposit = async (wallet: Address, amount: bigint) => {
      const r = await s.call(wallet, "LendingPool", pool.address, "deposit", [amount, wallet]);
      return r.transactionHash;
    };
    // the protocol sources reorg too: a lending-vault deposit (its event and its flow snapshot)
    const { morpho } = chain.world.protocols;
    const lendingDeposit = async (wallet: Address, amount: bigint) => {
      const token = morpho.market.loanToken;
      await s.call(wallet, "MockERC20", token, "mint", [wallet, amount]);
      await s.call(wallet, "MockERC20", token, "approve", [morpho.lendingVault, amount]);
      const data = encodeFunctionData({
        abi: MorphoLendingVaultAbi,
        functionName: "deposit",
        args: [amount, wallet],
      });
      return (await s.send(wallet, morpho.lendingVault, data, "lending vault deposit")).transactionHash;
    };
    const protocolRows = async (tx: string) => {
      const out: Record<string, number> = {};
      for (const t of ["lending_vault_event", "lending_vault_snapshot"]) {
        const [r] = await q<{ n: string }>(`SELECT count(*) AS n FROM "${devnet.schema}".${t} WHERE tx_hash = $1`, [
          tx,
        ]);
        out[t] = Number(r!.n);
      }
      return out;
    };
    const [walletA, walletB] = chain.wallets as Address[];
    const base = await rpcCall<string>(chain.rpcUrl, "evm_snapshot");
    const orphanTx = await deposit(walletA!, 10n ** 18n);
    const orphanLending = await lendingDeposit(walletA!, 10n ** 6n);
    await s.mineAt([s.clock + 60, s.clock + 120]);
    await waitUntil("the orphan-to-be deposit is indexed", () => hasEvent(orphanTx));
    expect(await eventsOf(orphanTx)).toBe(1);
    await waitUntil("the orphan-to-be lending-vault deposit is indexed", async () => {
      const r = await protocolRows(orphanLending);
      return r.lending_vault_event === 1 && r.lending_vault_snapshot === 1;
    });

    // Replace the three newest blocks with four different ones.
    expect(await rpcCall<boolean>(chain.rpcUrl, "evm_revert", [base])).toBe(true);
    const restore = await rpcCall<string>(chain.rpcUrl, "evm_snapshot");
    await s.syncClock();
    const newTx = await deposit(walletB!, 2n * 10n ** 18n);
    const newLending = await lendingDeposit(walletB!, 2n * 10n ** 6n);
    await s.mineAt([s.clock + 30, s.clock + 60, s.clock + 90]);
    await waitUntil("the new chain's deposit is indexed", () => hasEvent(newTx));
    expect(await eventsOf(newTx)).toBe(1);
    expect(await eventsOf(orphanTx)).toBe(0);
    await waitUntil(
      "the new chain's lending-vault deposit is indexed",
      async () => (await protocolRows(newLending)).lending_vault_event === 1,
    );
    expect(await protocolRows(orphanLending)).toEqual({ lending_vault_event: 0, lending_vault_snapshot: 0 });
    expect(await protocolRows(newLending)).toEqual({ lending_vault_event: 1, lending_vault_snapshot: 1 });
    for (const t of ["share_transfer", "share_ratio_snapshot"]) {
      const [orphan] = await q<{ n: string }>(`SELECT count(*) AS n FROM "${devnet.schema}".${t} WHERE tx_hash = $1`, [
        orphanTx,
      ]);
      expect(orphan!.n, t).toBe("0");
      const [fresh] = await q<{ n: string }>(`SELECT count(*) AS n FROM "${devnet.schema}".${t} WHERE tx_hash = $1`, [
        newTx,
      ]);
      expect(Number(fresh!.n), t).toBeGreaterThan(0);
    }
    const reorgs = readFileSync(join(devnet.dir, "indexer.log"), "utf8");
    expect(reorgs).toMatch(/reorg/i);

    // Back to the original chain: the tables return to what they were.
    expect(await rpcCall<boolean>(chain.rpcUrl, "evm_revert", [restore])).toBe(true);
    await s.syncClock();
    await s.mineAt([s.clock + 30]);
    await waitUntil("the second reorg is indexed", async () => !(await hasEvent(newTx)));
    expect(await eventsOf(newTx)).toBe(0);
    expect(await protocolRows(newLending)).toEqual({ lending_vault_event: 0, lending_vault_snapshot: 0 });
  }, 180_000);
});
