/** Ponder's checkpoints decoded as Ponder encodes them, and lags between two blocks. */
import { join } from "node:path";
import { pathToFileURL } from "node:url";
import { describe, expect, it } from "vitest";
import { decodeCheckpoint, lagBetween } from "./progress.js";

type Encode = (c: {
  blockTimestamp: bigint;
  chainId: bigint;
  blockNumber: bigint;
  transactionIndex: bigint;
  eventType: number;
  eventIndex: bigint;
}) => string;

// Ponder's own encoder (not in its package exports): a Ponder upgrade that changes the layout fails here.
const ponderCheckpoint = join(import.meta.dirname, "..", "node_modules/ponder/dist/esm/utils/checkpoint.js");
const { encodeCheckpoint } = (await import(pathToFileURL(ponderCheckpoint).href)) as { encodeCheckpoint: Encode };

describe("decodeCheckpoint", () => {
  it("reads block number, timestamp and chain id from what Ponder writes", () => {
    const cases = [
      { ts: 1_767_225_600n, chain: 8453n, block: 41_234_567n, tx: 12n, type: 5, idx: 3n },
      { ts: 1_700_000_000n, chain: 1n, block: 0n, tx: 0n, type: 2, idx: 0n },
      { ts: 9_999_999_999n, chain: 42_161n, block: 9_007_199_254_740_991n, tx: 9_999n, type: 7, idx: 65_535n },
    ];
    for (const c of cases) {
      const cp = encodeCheckpoint({
        blockTimestamp: c.ts,
        chainId: c.chain,
        blockNumber: c.block,
        transactionIndex: c.tx,
        eventType: c.type,
        eventIndex: c.idx,
      });
      const want = { chainId: Number(c.chain), block: Number(c.block), time: new Date(Number(c.ts) * 1000) };
      expect(decodeCheckpoint(cp)).toEqual(want);
    }
  });

  it("refuses what is not a checkpoint", () => {
    expect(() => decodeCheckpoint("")).toThrow(/not a Ponder checkpoint/);
    expect(() => decodeCheckpoint("1".repeat(74))).toThrow(/not a Ponder checkpoint/);
    expect(() => decodeCheckpoint(`x${"1".repeat(74)}`)).toThrow(/not a Ponder checkpoint/);
  });
});

describe("lagBetween", () => {
  const at = (block: number, s: number) => ({ block, time: new Date(s * 1000) });
  it("is how far the first is behind the second, in blocks and seconds", () => {
    expect(lagBetween(at(100, 1000), at(130, 1360))).toEqual({ blocks: 30, seconds: 360 });
    expect(lagBetween(at(130, 1360), at(130, 1360))).toEqual({ blocks: 0, seconds: 0 });
  });
  it("is never negative (a reorg can put the first ahead for a moment)", () => {
    expect(lagBetween(at(131, 1372), at(130, 1360))).toEqual({ blocks: 0, seconds: 0 });
  });
});
