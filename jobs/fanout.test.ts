/** buildFlow: how changed ranges become vault-days batches under one rollup. */
import { describe, expect, it } from "vitest";
import { buildFlow, type ChangedRange, SHORT_RANGE_DAYS } from "./fanout.js";
import { QUEUES } from "./queues.js";

const day = 20_000;
const range = (i: number, days: number, fp = "f"): ChangedRange => ({
  vault: { chainId: i % 2 ? 1 : 8453, address: `0x${i.toString(16).padStart(40, "0")}` },
  from: day - days + 1,
  to: day,
  fingerprints: new Map([[day, `${fp}${i}`]]),
});

describe("buildFlow", () => {
  it("puts short ranges of many vaults in batches and a long range in a batch of its own", () => {
    const changes = [
      ...Array.from({ length: 7 }, (_, i) => range(i, 1)),
      range(7, SHORT_RANGE_DAYS),
      range(8, SHORT_RANGE_DAYS + 1),
      range(9, 730),
    ];
    const plan = buildFlow(changes, 3, "x", "", 3);
    expect(plan.flow.queueName).toBe(QUEUES.pointsRollup.name);
    const batches = plan.flow.children!;
    // 8 short ranges in batches of 3 (3 + 3 + 2), then the two long ones alone
    expect(batches.map((b) => b.data.ranges.length)).toEqual([3, 3, 2, 1, 1]);
    expect(plan.days).toBe(7 + SHORT_RANGE_DAYS + SHORT_RANGE_DAYS + 1 + 730);
    for (const b of batches) {
      expect(b.queueName).toBe(QUEUES.vaultDays.name);
      // what the workers accept
      expect(QUEUES.vaultDays.input.safeParse(b.data).success).toBe(true);
    }
    // every range is in exactly one batch, with its own days
    const all = batches.flatMap((b) => b.data.ranges);
    expect(all.map((r: { vault: string }) => r.vault).sort()).toEqual(changes.map((c) => c.vault.address).sort());
    expect(all.find((r: { vault: string }) => r.vault === changes[9]!.vault.address)).toMatchObject({
      from: "2022-10-06",
      to: "2024-10-04",
    });
  });

  it("gives the same ids to the same work and new ids when a fingerprint changes", () => {
    const changes = Array.from({ length: 4 }, (_, i) => range(i, 1));
    const a = buildFlow(changes, 3, "x");
    const b = buildFlow(changes, 3, "x");
    const ids = (p: typeof a) => [p.flow.opts!.jobId, ...p.flow.children!.map((b) => b.opts!.jobId)];
    expect(ids(b)).toEqual(ids(a));
    const c = buildFlow([...changes.slice(0, 3), range(3, 1, "g")], 3, "x");
    expect(new Set([...ids(a), ...ids(c)]).size).toBe(ids(a).length * 2);
    expect(new Set(ids(a)).size).toBe(ids(a).length);
  });

  it("the vault-days input refuses a batch with two ranges of one vault, an empty one, a reversed range", () => {
    const r = { chainId: 1, vault: `0x${"1".repeat(40)}`, from: "2024-01-01", to: "2024-01-02" };
    expect(QUEUES.vaultDays.input.safeParse({ ranges: [r, r] }).success).toBe(false);
    expect(QUEUES.vaultDays.input.safeParse({ ranges: [] }).success).toBe(false);
    expect(QUEUES.vaultDays.input.safeParse({ ranges: [{ ...r, from: "2024-01-03" }] }).success).toBe(false);
  });

  it("a vault-days job queued by an earlier version (one vault's range) is read as a batch of one", () => {
    const r = { chainId: 1, vault: `0x${"1".repeat(40)}`, from: "2024-01-01", to: "2024-01-02" };
    expect(QUEUES.vaultDays.input.parse(r)).toEqual({ ranges: [r] });
    expect(QUEUES.vaultDays.input.safeParse({ ...r, vault: "0xnot" }).success).toBe(false);
  });
});
