/**
 * `npm run demo` from the outside, as a newcomer runs it: it reaches READY with the documented
 * name=value pairs, analysts can read through the printed URL, and Ctrl-C leaves nothing running.
 */
import { spawn } from "node:child_process";
import { createConnection } from "node:net";
import { describe, expect, it } from "vitest";
import { REPO_ROOT } from "../../scripts/lib/indexer.js";
import { rows, sleep, withDb } from "../helpers.js";

const PORTS = [54320, 8545, 8546, 42069, 63790, 8000];

function portOpen(port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const s = createConnection({ host: "127.0.0.1", port });
    s.once("connect", () => (s.destroy(), resolve(true)));
    s.once("error", () => resolve(false));
  });
}

describe("npm run demo", () => {
  it("prints READY within 5 minutes and Ctrl-C stops everything", async () => {
    for (const p of PORTS) expect(await portOpen(p), `port ${p} is already in use`).toBe(false);
    const child = spawn("npm", ["run", "demo"], { cwd: REPO_ROOT, detached: true, stdio: ["ignore", "pipe", "pipe"] });
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
      const line = /^READY .*$/m.exec(output)![0];
      const pairs = Object.fromEntries(line.slice(6).split(" ").map((kv) => kv.split(/=(.*)/s).slice(0, 2) as [string, string]));
      expect(Object.keys(pairs)).toEqual(["db", "analyst", "redis", "api", "key", "chain1", "chain8453"]);
      expect(pairs.redis).toBe("redis://127.0.0.1:63790");
      expect(pairs.api).toBe("http://127.0.0.1:8000");
      expect(pairs.key).toMatch(/^vk_[0-9a-f]{12}_[0-9a-f]{40}$/);
      const ping = await fetch(`${pairs.api}/api/v1/ping`);
      expect(ping.status).toBe(200);
      expect(((await ping.json()) as { status: string }).status).toBe("ok");
      expect(pairs.db).toBe("postgresql://postgres:postgres@127.0.0.1:54320/vaults");
      expect(pairs.chain1).toBe("http://127.0.0.1:8545");
      expect(pairs.chain8453).toBe("http://127.0.0.1:8546");
      const [days] = await withDb(pairs.analyst!, (c) =>
        rows<{ n: string; vaults: string }>(c, "SELECT count(DISTINCT floor(timestamp / 86400)) AS n, count(DISTINCT (chain_id, vault)) AS vaults FROM indexer.share_ratio_snapshot"),
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

      // the API process writes: the READY key holds every scope; the write and its audit row land
      const [vault] = await withDb(pairs.analyst!, (c) => rows<{ address: string; chain_id: number }>(c, "SELECT address, chain_id FROM registry.vault WHERE chain_type = 'evm' ORDER BY chain_id, address LIMIT 1"));
      const post = await fetch(`${pairs.api}/api/v1/platform/strategy_apy`, {
        method: "POST",
        headers: { "x-api-key": pairs.key!, "content-type": "application/json", "idempotency-key": "demo-test-1" },
        body: JSON.stringify([{ vault_address: vault!.address, chain: vault!.chain_id, platform_name: "Demo", strategy_type: "lending", allocation: 0.5, apy: 0.07, points_apy: 0 }]),
      });
      expect(post.status).toBe(201);
      const [audit] = await withDb(pairs.analyst!, (c) => rows<{ n: string }>(c, "SELECT count(*) AS n FROM registry.write_audit WHERE action = 'strategy_apy.create' AND outcome = 'ok'"));
      expect(Number(audit!.n)).toBe(1);
      // bearer tokens are configured (a wrong password is a 401, not a 503)
      const token = await fetch(`${pairs.api}/api/v1/token`, { method: "POST", body: new URLSearchParams({ username: "nobody", password: "wrong password" }) });
      expect(token.status).toBe(401);
    } finally {
      process.kill(-child.pid!, "SIGINT");
      const code = await Promise.race([exited, sleep(30_000).then(() => "timeout" as const)]);
      if (code === "timeout") process.kill(-child.pid!, "SIGKILL");
    }
    await sleep(1000);
    for (const p of PORTS) expect(await portOpen(p), `port ${p} still open after Ctrl-C`).toBe(false);
  }, 420_000);
});
