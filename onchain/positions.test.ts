/**
 * readPositions against a client that plays a chain: the staker's failed scan rejects the read,
 * and is never an unhandled rejection meanwhile (which would stop the API or a worker); past
 * `stakerListUpTo` NFTs in the staker, its staked positions are the account's indexed ones,
 * each checked on the chain, instead of the staker's whole list.
 */
import type { Address, PublicClient } from "viem";
import { afterEach, describe, expect, it } from "vitest";
import type { ChainProtocols } from "../config/registry.js";
import { readPositions, STAKER_LIST_UP_TO } from "./positions.js";

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

  it("a staker holding many NFTs: the indexed ids are checked, its list is not read", async () => {
    const ACCOUNT = `0x${"4".repeat(40)}` as Address;
    const STAKER = `0x${"3".repeat(40)}`;
    const POOL = `0x${"5".repeat(40)}`;
    const listed: unknown[][] = [];
    const answer = (c: { functionName: string; args?: readonly unknown[] }) => {
      const a = c.args ?? [];
      switch (c.functionName) {
        case "balanceOf":
          return String(a[0]).toLowerCase() === STAKER ? 1000n : 0n;
        case "tokenOfOwnerByIndex":
          listed.push([...a]);
          return 10_000n + (a[1] as bigint);
        case "deposits": // 13 is the account's deposit, 14 someone else's
          return [a[0] === 13n ? ACCOUNT : `0x${"6".repeat(40)}`, 1, -60, 60];
        case "positions":
          return [0n, ACCOUNT, `0x${"7".repeat(40)}`, `0x${"8".repeat(40)}`, 500, -60, 60, 10n ** 12n, 0n, 0n, 0n, 0n];
        case "getPool":
          return POOL;
        case "slot0":
          return [1n << 96n, 0, 0, 0, 0, 0, true];
        default:
          return undefined;
      }
    };
    const client = {
      getCode: async () => "0x60",
      getBlockNumber: async () => 1000n,
      getLogs: async () => [],
      multicall: async ({ contracts }: { contracts: { functionName: string; args?: readonly unknown[] }[] }) =>
        contracts.map((c) => {
          const result = answer(c);
          return result === undefined ? { status: "failure" } : { status: "success", result };
        }),
    } as unknown as PublicClient;
    const protocols = {
      chainId: 8453,
      tokens: [],
      uniswap: { positionManager: `0x${"1".repeat(40)}`, factory: `0x${"2".repeat(40)}`, staker: STAKER },
    } as unknown as ChainProtocols;
    const hinted = await readPositions(client, protocols, ACCOUNT, 900n, { uniswapIds: [13n, 14n] });
    expect(hinted.uniswap.map((p) => [p.tokenId, p.staked])).toEqual([[13n, true]]);
    expect(listed).toEqual([]);
    // a staker list short enough is read whole, as without hints
    const listedWhole = await readPositions(client, protocols, ACCOUNT, 900n, {
      uniswapIds: [13n],
      stakerListUpTo: 2000,
    });
    expect(listed).toHaveLength(1000);
    expect(listedWhole.uniswap).toEqual([]); // none of the listed ids is a deposit of the account
    expect(STAKER_LIST_UP_TO).toBeLessThan(1000);
  });
});
