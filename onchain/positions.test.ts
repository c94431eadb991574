/**
 * readPositions against a client that plays a chain (multicalls answered late, the staker's logs
 * refused): the staker's failed scan rejects the read, and is never an unhandled rejection
 * meanwhile (which would stop the API or a worker).
 */
import type { Address, PublicClient } from "viem";
import { afterEach, describe, expect, it } from "vitest";
import type { ChainProtocols } from "../config/registry.js";
import { readPositions } from "./positions.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const unhandled: unknown[] = [];
const onUnhandled = (r: unknown) => unhandled.push(r);
afterEach(() => {
  process.off("unhandledRejection", onUnhandled);
});

describe("readPositions", () => {
  it("a staker scan that fails while the other reads run rejects the read, handled", async () => {
    process.on("unhandledRejection", onUnhandled);
    const client = {
      getCode: async () => "0x60",
      getBlockNumber: async () => 1000n,
      getLogs: async () => {
        throw new Error("getLogs refused");
      },
      multicall: async ({ contracts }: { contracts: unknown[] }) => {
        await sleep(50);
        return contracts.map(() => ({ status: "success", result: 0n }));
      },
    } as unknown as PublicClient;
    const protocols = {
      chainId: 8453,
      tokens: [],
      uniswap: {
        positionManager: `0x${"1".repeat(40)}`,
        factory: `0x${"2".repeat(40)}`,
        staker: `0x${"3".repeat(40)}`,
      },
    } as unknown as ChainProtocols;
    await expect(readPositions(client, protocols, `0x${"4".repeat(40)}` as Address, 900n)).rejects.toThrow(
      /getLogs refused/,
    );
    await sleep(100);
    expect(unhandled).toEqual([]);
  });
});
