/**
 * `npm run demo` from the outside, as a newcomer runs it: it reaches READY with the documented
 * name=value pairs, analysts can read through the printed URL, the chains live on after READY (a
 * deposit made then shows through the indexer, the jobs and the API within seconds), and Ctrl-C
 * leaves nothing running.
 *
 * TEST_PORT_OFFSET shifts the demo's ports below the ephemeral range (8545, 8546, 63790, 8000), so
 * the test can run beside a demo or another test run; Postgres and the indexer (54320 and 42069 by
 * default, inside that range, where an outgoing connection can hold them) get free ports from the
 * kernel.
 */
import { spawn } from "node:child_process";
import { existsSync, readdirSync, readFileSync } from "node:fs";
import { networkInterfaces } from "node:os";
import { join } from "node:path";
import { Redis } from "ioredis";
import { encodeFunctionData, type Hex } from "viem";
import { describe, expect, it } from "vitest";
import { LendingPoolAbi } from "../../abis/LendingPoolAbi.js";
import { REPO_ROOT } from "../../scripts/lib/indexer.js";
import { isPortOpen } from "../../scripts/lib/procs.js";
import { freePorts, loadManifest, PORT_OFFSET, rows, rpcCall, sleep, until, withDb } from "../helpers.js";

const ANVIL_PORT = 8545 + PORT_OFFSET;
const REDIS_PORT = 63790 + PORT_OFFSET;
const API_PORT = 8000 + PORT_OFFSET;
const LIVE_EVERY_S = 5;

/** The pid of the process whose command line holds `command` and environment `variable`, from /proc. */
function pidOf(command: string, variable: string): number {
  for (const pid of readdirSync("/proc").filter((d) => /^\d+$/.test(d))) {
    try {
      if (!readFileSync(`/proc/${pid}/cmdline`, "utf8").includes(command)) continue;
      const env = readFileSync(`/proc/${pid}/environ`, "utf8").split("\0");
      if (env.includes(variable)) return Number(pid);
    } catch {
      // gone meanwhile, or not ours to read
    }
  }
  throw new Error(`no process of ${JSON.stringify(command)} with ${variable}`);
}

describe("npm run demo", () => {
  it("prints READY within 5 minutes and Ctrl-C stops everything", async () => {
    const PG_PORT = await freePorts(3);
    const INDEXER_PORT = PG_PORT + 1; // and the next, for a changed registry's deployment
    const PORTS = [PG_PORT, ANVIL_PORT, ANVIL_PORT + 1, INDEXER_PORT, REDIS_PORT, API_PORT];
    for (const p of PORTS) expect(await isPortOpen("127.0.0.1", p), `port ${p} is already in use`).toBe(false);
    const env: NodeJS.ProcessEnv = {
      ...process.env,
      DEMO_PG_PORT: String(PG_PORT),
      DEMO_ANVIL_PORT: String(ANVIL_PORT),
      INDEXER_PORT: String(INDEXER_PORT),
      DEMO_REDIS_PORT: String(REDIS_PORT),
      PORT: String(API_PORT),
      DEMO_LIVE_EVERY_S: String(LIVE_EVERY_S),
    };
    delete env.REDIS_URL;
    delete env.DEMO_LIVE;
    const child = spawn("npm", ["run", "demo"], {
      cwd: REPO_ROOT,
      env,
      detached: true,
      stdio: ["ignore", "pipe", "pipe"],
    });
    let output = "";
    child.stdout.on("data", (d: Buffer) => (output += d.toString()));
    child.stderr.on("data", (d: Buffer) => (output += d.toString()));
    const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
    try {
      const started = Date.now();
      while (!/^READY .*$/m.test(output)) {
        if (Date.now() - started > 300_000) throw new Error(`no READY within 5 minutes:\n${output.slice(-3000)}`);
        if (child.exitCode !== null) throw new Error(`demo exited with ${child.exitCode}:\n${output.slice(-3000)}`);
        await sleep(500);
      }
      console.log(`READY ${((Date.now() - started) / 1000).toFixed(1)} s after npm run demo`);
      const line = /^READY .*$/m.exec(output)![0];
      const pairs = Object.fromEntries(
        line
          .slice(6)
          .split(" ")
          .map((kv) => kv.split(/=(.*)/s).slice(0, 2) as [string, string]),
      );
      expect(Object.keys(pairs)).toEqual(["db", "analyst", "redis", "api", "key", "chain1", "chain8453"]);
      expect(pairs.redis).toBe(`redis://127.0.0.1:${REDIS_PORT}`);
      expect(pairs.api).toBe(`http://127.0.0.1:${API_PORT}`);
      expect(pairs.key).toMatch(/^vk_[0-9a-f]{12}_[0-9a-f]{40}$/);
      const ping = await fetch(`${pairs.api}/api/v1/ping`);
      expect(ping.status).toBe(200);
      expect(((await ping.json()) as { status: string }).status).toBe("ok");
      // every server of the demo listens on loopback only: this host's other address is refused
      const outside = Object.values(networkInterfaces())
        .flat()
        .find((i) => i && !i.internal && i.family === "IPv4")?.address;
      for (const p of outside ? PORTS : []) {
        expect(await isPortOpen(outside!, p), `port ${p} answers on ${outside}`).toBe(false);
      }
      expect(pairs.db).toBe(`postgresql://postgres:postgres@127.0.0.1:${PG_PORT}/vaults`);
      expect(pairs.chain1).toBe(`http://127.0.0.1:${ANVIL_PORT}`);
      expect(pairs.chain8453).toBe(`http://127.0.0.1:${ANVIL_PORT + 1}`);
      const [days] = await withDb(pairs.analyst!, (c) =>
        rows<{ n: string; vaults: string }>(
          c,
          "SELECT count(DISTINCT floor(timestamp / 86400)) AS n, count(DISTINCT (chain_id, vault)) AS vaults FROM indexer.share_ratio_snapshot",
        ),
      );
      expect(Number(days!.n)).toBeGreaterThanOrEqual(120);
      expect(Number(days!.vaults)).toBe(4);
      // READY comes after the first full computation: every vault has its figures, every day its row.
      const [derived] = await withDb(pairs.analyst!, (c) =>
        rows<{ metrics: string; days: string; balances: string }>(
          c,
          `SELECT (SELECT count(*) FROM derived.vault_metrics) AS metrics,
                  (SELECT count(*) FROM derived.vault_day) AS days,
                  (SELECT count(*) FROM derived.points_balance) AS balances`,
        ),
      );
      expect(Number(derived!.metrics)).toBe(4);
      expect(Number(derived!.days)).toBeGreaterThanOrEqual(4 * 120);
      expect(Number(derived!.balances)).toBeGreaterThan(0);

      // the registry is loaded before the workers start, so their first portfolio run values every
      // subaccount (it found none when the registry came after them, and waited PORTFOLIO_EVERY_S)
      await until("every subaccount's valuation series", 60_000, async () => {
        const [s] = await withDb(pairs.analyst!, (c) =>
          rows<{ registered: string; valued: string }>(
            c,
            `SELECT (SELECT count(DISTINCT address) FROM registry.subaccount) AS registered,
                    (SELECT count(DISTINCT address) FROM derived.subaccount_day) AS valued`,
          ),
        );
        return Number(s!.registered) > 0 && s!.valued === s!.registered ? true : undefined;
      });
      // the subaccounts are funded from the demo's custody wallet, which its registry lists as
      // their funding: on each one's first valued day its capital is a deposit, not a profit
      const firsts = await withDb(pairs.analyst!, (c) =>
        rows<{ address: string; funding: string[]; deposits: number; pnl: number }>(
          c,
          `SELECT DISTINCT ON (address) address, funding, total_net_deposits AS deposits, total_pnl AS pnl
           FROM derived.subaccount_day ORDER BY address, day`,
        ),
      );
      for (const f of firsts) {
        expect(f.funding, f.address).toHaveLength(1);
        expect(Math.abs(f.pnl), f.address).toBeLessThanOrEqual(1e-5 * Math.max(f.deposits, 1));
      }
      expect(firsts.filter((f) => f.deposits > 100_000).length).toBeGreaterThanOrEqual(3);

      // the API process writes: the READY key holds every scope; the write and its audit row land
      const [vault] = await withDb(pairs.analyst!, (c) =>
        rows<{ address: string; chain_id: number }>(
          c,
          "SELECT address, chain_id FROM registry.vault WHERE chain_type = 'evm' ORDER BY chain_id, address LIMIT 1",
        ),
      );
      const post = await fetch(`${pairs.api}/api/v1/platform/strategy_apy`, {
        method: "POST",
        headers: { "x-api-key": pairs.key!, "content-type": "application/json", "idempotency-key": "demo-test-1" },
        body: JSON.stringify([
          {
            vault_address: vault!.address,
            chain: vault!.chain_id,
            platform_name: "Demo",
            strategy_type: "lending",
            allocation: 0.5,
            apy: 0.07,
            points_apy: 0,
          },
        ]),
      });
      expect(post.status).toBe(201);
      const [audit] = await withDb(pairs.analyst!, (c) =>
        rows<{ n: string }>(
          c,
          "SELECT count(*) AS n FROM registry.write_audit WHERE action = 'strategy_apy.create' AND outcome = 'ok'",
        ),
      );
      expect(Number(audit!.n)).toBe(1);
      // bearer tokens are configured (a wrong password is a 401, not a 503)
      const token = await fetch(`${pairs.api}/api/v1/token`, {
        method: "POST",
        body: new URLSearchParams({ username: "nobody", password: "wrong password" }),
      });
      expect(token.status).toBe(401);

      // A Redis killed under the demo is started again on its port; the deposit below is
      // indexed, served and recomputed after it, and no process of the demo gave up.
      const redisPid = async () => {
        const client = new Redis(pairs.redis!, {
          lazyConnect: true,
          maxRetriesPerRequest: 0,
          retryStrategy: () => null,
        });
        client.on("error", () => {});
        try {
          await client.connect();
          return Number(/process_id:(\d+)/.exec(await client.info("server"))![1]);
        } finally {
          client.disconnect();
        }
      };
      const killed = await redisPid();
      process.kill(killed, "SIGKILL");
      await until("the demo's Redis started again", 30_000, async () =>
        /redis: redis-server at \S+ is back \(pid \d+; restart 1\)/.test(output) ? true : undefined,
      );
      expect(await redisPid()).not.toBe(killed);
      expect(output).toMatch(/redis: redis-server at \S+ exited \(signal SIGKILL\); starting it again/);
      // so is its Postgres (on its data: the indexer, the workers and the API reconnect)
      const pidFile = join(REPO_ROOT, ".data", "postgres", "postmaster.pid");
      const postmaster = () => Number(readFileSync(pidFile, "utf8").split("\n")[0]);
      const pgKilled = postmaster();
      process.kill(pgKilled, "SIGKILL");
      await until("the demo's Postgres started again", 60_000, async () =>
        /postgres: postgres on \S+ is back \(pid \d+; restart 1\)/.test(output) ? true : undefined,
      );
      expect(postmaster()).not.toBe(pgKilled);
      // and its indexer (Ponder resumes its schema from the checkpoint: the deposit below shows)
      const ponder = pidOf("ponder\0start", `PORT=${INDEXER_PORT}`);
      process.kill(-ponder, "SIGKILL");
      await until("the demo's indexer started again", 90_000, async () =>
        /indexer: \S+ started again \(pid \d+\)/.test(output) ? true : undefined,
      );
      expect(output).toMatch(/the indexer exited \(SIGKILL\)/);
      // and its API and workers (the deposit below is served by the one and recomputed by the other)
      for (const script of ["scripts/api.ts", "scripts/workers.ts"]) {
        process.kill(-pidOf(script, `REDIS_URL=${pairs.redis}`), "SIGKILL");
      }
      for (const name of ["api", "workers"]) {
        const back = new RegExp(`the ${name} process exited \\(signal SIGKILL\\); starting it again`);
        await until(`the demo's ${name} started again`, 30_000, async () => (back.test(output) ? true : undefined));
      }
      await until("the API answering again", 60_000, async () => {
        const res = await fetch(`${pairs.api}/api/v1/ping`).catch(() => undefined);
        return res?.status === 200 ? true : undefined;
      });

      // After READY the chains live on: blocks keep coming, timestamped by the wall clock.
      const rpcs = [pairs.chain1!, pairs.chain8453!];
      const head = async (url: string) => Number(BigInt(await rpcCall<Hex>(url, "eth_blockNumber")));
      const heads = () => Promise.all(rpcs.map(head));
      const before = await heads();
      await sleep(6_000);
      const after = await heads();
      for (const [i, b] of before.entries()) expect(after[i], `${rpcs[i]} mined no block in 6 s`).toBeGreaterThan(b);
      for (const url of rpcs) {
        const latest = await rpcCall<{ timestamp: Hex }>(url, "eth_getBlockByNumber", ["latest", false]);
        expect(Math.abs(Number(BigInt(latest.timestamp)) - Date.now() / 1000)).toBeLessThan(60);
      }

      // A deposit made now is seen through the indexer and the API, then the jobs, within seconds.
      const manifest = loadManifest(join(REPO_ROOT, ".data", "demo", "manifest.json"));
      const chain1 = manifest.chains.find((c) => c.chainId === 1)!;
      const pool = chain1.vaults.find((v) => v.family === "lendingPool")!;
      const wallet = chain1.wallets[7]!;
      const amount = 1234n * 10n ** BigInt(pool.asset.decimals);
      const data = encodeFunctionData({ abi: LendingPoolAbi, functionName: "deposit", args: [amount, wallet] });
      const sentAt = Date.now();
      // sent as by hand: the node prices the gas and the wallet pays it from the ether the demo gave
      const tx = { from: wallet, to: pool.address, data };
      const hash = await rpcCall<Hex>(pairs.chain1!, "eth_sendTransaction", [tx]);
      const trader = chain1.world.subaccounts[0]!.trader;
      const traderEth = await rpcCall<Hex>(pairs.chain1!, "eth_getBalance", [trader, "latest"]);
      expect(BigInt(traderEth), "the trader's ether for gas").toBe(100n * 10n ** 18n);
      type Receipt = { status: Hex; blockNumber: Hex };
      const receipt = await until(
        "deposit receipt",
        10_000,
        async () => (await rpcCall<Receipt | null>(pairs.chain1!, "eth_getTransactionReceipt", [hash])) ?? undefined,
      );
      expect(receipt.status).toBe("0x1");
      const depositBlock = Number(BigInt(receipt.blockNumber));
      type HistoryRecord = {
        type: string;
        wallet: string;
        amount_raw: string | number;
        transaction_hash: string;
        block_number: number;
      };
      const historyUrl = `${pairs.api}/api/v1/platform/vault_history/${pool.address}?chain_id=1&limit=50`;
      // (the indexer restarted just before: Ponder waits out its schema's lock, then re-indexes)
      const record = await until("the deposit in vault_history", 150_000, async () => {
        const res = await fetch(historyUrl, { headers: { "x-api-key": pairs.key! } });
        expect(res.status).toBe(200);
        const records = (await res.json()) as HistoryRecord[];
        return records.find((r) => r.transaction_hash.toLowerCase() === hash.toLowerCase());
      });
      expect(record).toMatchObject({ type: "deposit", wallet, block_number: depositBlock });
      expect(String(record.amount_raw)).toBe(amount.toString());
      // the workers recompute today's row of the vault from a snapshot at or after the deposit
      await until("today's vault_day recomputed after the deposit", 60_000, async () => {
        const [day] = await withDb(pairs.analyst!, (c) =>
          rows<{ block_number: string }>(
            c,
            `SELECT block_number FROM derived.vault_day
              WHERE chain_id = 1 AND vault = $1 AND day = (now() AT TIME ZONE 'UTC')::date`,
            [pool.address],
          ),
        );
        return day && Number(day.block_number) >= depositBlock ? true : undefined;
      });
      const took = ((Date.now() - sentAt) / 1000).toFixed(1);
      // only the two processes killed above exited, once each (killed together: either may be told first)
      expect(output.match(/the \w+ process exited/g)?.sort()).toEqual([
        "the api process exited",
        "the workers process exited",
      ]);
      console.log(`deposit seen in vault_history and recomputed by the jobs ${took} s after it was sent`);

      // the simulated wallets and operators act too, on both chains, recorded beside the manifest
      const liveFile = join(REPO_ROOT, ".data", "demo", "live-events.jsonl");
      await until("live events on both chains", 60_000, async () => {
        if (!existsSync(liveFile)) return undefined;
        const lines = readFileSync(liveFile, "utf8").trim().split("\n");
        const events = lines.map((l) => JSON.parse(l) as { chainId: number });
        return new Set(events.map((e) => e.chainId)).size === 2 ? true : undefined;
      });
    } finally {
      process.kill(-child.pid!, "SIGINT");
      const code = await Promise.race([exited, sleep(30_000).then(() => "timeout" as const)]);
      if (code === "timeout") process.kill(-child.pid!, "SIGKILL");
    }
    await sleep(1000);
    for (const p of PORTS) expect(await isPortOpen("127.0.0.1", p), `port ${p} still open after Ctrl-C`).toBe(false);
    expect(() => process.kill(-child.pid!, 0), "processes of the demo left after Ctrl-C").toThrow();
    // the live activity stopped first, having acted on both chains, without failing on their nodes stopping
    const chain = (id: number) => `chain ${id} (\\d+) blocks, (\\d+) actions, \\d+ failed`;
    const stopped = new RegExp(`live activity stopped \\(${chain(1)}; ${chain(8453)}\\)`).exec(output);
    expect(stopped, output.slice(-3000)).not.toBeNull();
    expect(
      stopped!
        .slice(1)
        .map(Number)
        .every((n) => n > 0),
    ).toBe(true);
    const interrupted = output.indexOf("SIGINT");
    expect(interrupted).toBeGreaterThan(-1);
    expect(output.slice(interrupted)).not.toMatch(
      /live: .* failed|demo failed|the indexer exited|process exited \(|starting it again/,
    );
    // one Ctrl-C is one orderly shutdown (a repeated signal would SIGKILL everything at once)
    expect(output).not.toMatch(/SIGINT again/);
  }, 420_000);
});
