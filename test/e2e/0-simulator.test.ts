/** The simulator is deterministic: the same seed and end time give the same chains and manifest. */
import { join } from "node:path";
import { describe, expect, inject, it } from "vitest";
import { DEVNET_CHAINS, genesisTimestamp, type Manifest, runDevnet } from "../../contracts/devnet/index.js";
import { startAnvil } from "../../scripts/lib/anvil.js";

const cluster = inject("cluster");

async function simulate(run: number, endTime: number, seed: string): Promise<Manifest> {
  const days = 3;
  const anvils = await Promise.all(
    DEVNET_CHAINS.map((c, i) =>
      startAnvil({
        chainId: c.chainId,
        port: 18_600 + run * 10 + i,
        genesisTimestamp: genesisTimestamp(endTime, days),
        logFile: join(cluster.dir, `determinism-${run}-${c.chainId}.log`),
      }),
    ),
  );
  try {
    return await runDevnet({
      seed,
      days,
      endTime,
      wallets: 50,
      chains: DEVNET_CHAINS.map((c, i) => ({
        chainId: c.chainId,
        rpcUrl: anvils[i]!.rpcUrl,
        blockTime: c.blockTime,
        snapshotInterval: c.snapshotInterval,
      })),
      manifestPath: join(cluster.dir, `determinism-${run}.json`),
      registryPath: join(cluster.dir, `determinism-${run}-vaults.json`),
    });
  } finally {
    await Promise.all(anvils.map((a) => a.stop()));
  }
}

describe("simulator", () => {
  it("gives identical events, blocks and transaction hashes for the same seed and end time", async () => {
    const endTime = Math.floor(Date.now() / 1000);
    // side by side: nothing one run keeps may leak into the other
    const [a, b] = await Promise.all([simulate(1, endTime, "same"), simulate(2, endTime, "same")]);
    const strip = (m: Manifest) => m.chains.map(({ rpcUrl: _rpc, ...rest }) => rest);
    expect(a.chains.reduce((n, c) => n + c.events.length, 0)).toBeGreaterThan(500);
    expect(strip(b)).toEqual(strip(a));
  }, 180_000);
});
