/**
 * GET /integrations/perp_relayer_{a,b}/check_status on the simulated history: every perp deposit
 * the simulator recorded (contracts/devnet/perp-sim.ts) answers what the core ledger did with it,
 * through its own relayer; through the other relayer, or for a hash nobody deposited, `unknown`.
 */
import { readFileSync } from "node:fs";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import type { Manifest } from "../../contracts/devnet/index.js";
import { type ApiHarness, setupApi } from "../api-harness.js";

let h: ApiHarness;

beforeAll(async () => {
  h = await setupApi();
}, 600_000);

afterAll(async () => {
  await h?.close();
});

type Status = {
  status: string;
  reason: string | null;
  deposit: { chain_id: number; tx_hash: string; amount_raw: string; destination: string } | null;
  core: { chain_id: number; tx_hash: string } | null;
};

const ask = async (relayer: string, hash: string, app = h.app) => {
  const res = await app.request(`/api/v1/integrations/${relayer}/check_status?core_hash=${hash}`);
  return { status: res.status, body: (await res.json()) as Status };
};

describe("perp deposit status", () => {
  it("every simulated deposit: credited, rejected with the reason, or pending, as the ledger says", async () => {
    const manifest = JSON.parse(readFileSync(h.devnet.manifestFile, "utf8")) as Manifest;
    const deposits = manifest.chains.flatMap((c) => c.world.perp.deposits);
    expect(deposits.length).toBeGreaterThanOrEqual(6);
    const seen = new Set<string>();
    for (const d of deposits) {
      const relayer = d.bridgeKind === "A" ? "perp_relayer_a" : "perp_relayer_b";
      const r = await ask(relayer, d.coreHash);
      expect(r.status).toBe(200);
      expect(r.body.status, d.coreHash).toBe(d.outcome.status);
      seen.add(d.outcome.status);
      expect(r.body.deposit).toMatchObject({
        chain_id: d.chainId,
        tx_hash: d.txHash.toLowerCase(),
        amount_raw: d.amount,
        destination: d.destination,
      });
      if (d.outcome.status !== "pending") {
        expect(r.body.core).toMatchObject({ chain_id: d.outcome.chainId, tx_hash: d.outcome.txHash.toLowerCase() });
      } else expect(r.body.core).toBeNull();
      if (d.outcome.status === "rejected") expect(r.body.reason).toBe(d.outcome.reason);
      else expect(r.body.reason).toBeNull();
      // the other relayer does not know it
      const other = await ask(relayer === "perp_relayer_a" ? "perp_relayer_b" : "perp_relayer_a", d.coreHash);
      expect(other.body).toMatchObject({ status: "unknown", deposit: null, core: null });
    }
    expect(seen).toContain("credited");
    expect(seen).toContain("rejected");
  });

  it("a rejection whose deposit is not indexed yet (its chain's indexer behind) is unknown to both", async () => {
    // the ledger's Rejected names no bridge: without the deposit, neither relayer can say it is its own
    const [rejected] = await h.q<{ core_hash: string }>(
      "SELECT core_hash FROM indexer.perp_core_event WHERE kind = 'rejected' LIMIT 1",
    );
    expect(rejected).toBeDefined();
    await h.q("DROP SCHEMA IF EXISTS perp_lag CASCADE");
    await h.q("CREATE SCHEMA perp_lag");
    try {
      await h.q("CREATE TABLE perp_lag.perp_deposit AS SELECT * FROM indexer.perp_deposit WHERE false");
      await h.q("CREATE TABLE perp_lag.perp_core_event AS SELECT * FROM indexer.perp_core_event");
      const lagging = h.appWith({ indexerSchema: "perp_lag" });
      for (const relayer of ["perp_relayer_a", "perp_relayer_b"]) {
        const r = await ask(relayer, rejected!.core_hash, lagging);
        expect(r.body, relayer).toMatchObject({ status: "unknown", reason: null, deposit: null, core: null });
      }
    } finally {
      await h.q("DROP SCHEMA IF EXISTS perp_lag CASCADE");
    }
  });

  it("a hash nobody deposited is unknown; a malformed one 422", async () => {
    expect((await ask("perp_relayer_a", `0x${"ab".repeat(32)}`)).body.status).toBe("unknown");
    expect((await ask("perp_relayer_b", "0x1234")).status).toBe(422);
  });
});
