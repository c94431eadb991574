/** readAtBlock: a read at a block a reorg took away waits for the chain, then reads at the head. */
import { describe, expect, it } from "vitest";
import { readAtBlock } from "../../src/read-at-block";

const missing = () => new Error("Details: BlockOutOfRangeError: block height is 999 but requested was 1002");

describe("readAtBlock", () => {
  it("retries while the node lacks the block, and answers once it has it", async () => {
    const calls: boolean[] = [];
    const v = await readAtBlock(async (atBlock) => {
      calls.push(atBlock);
      if (calls.length < 3) throw missing();
      return 42;
    }, "test");
    expect(v).toBe(42);
    expect(calls).toEqual([true, true, true]);
  });

  it("reads at the head once the block stays missing past the wait", async () => {
    const calls: boolean[] = [];
    const v = await readAtBlock(
      async (atBlock) => {
        calls.push(atBlock);
        if (atBlock) throw missing();
        return "head";
      },
      "test",
      300,
    );
    expect(v).toBe("head");
    expect(calls.at(-1)).toBe(false);
    expect(calls.filter((x) => x).length).toBeGreaterThan(1);
  });

  it("throws any other error at once", async () => {
    let n = 0;
    await expect(
      readAtBlock(async () => {
        n++;
        throw new Error("execution reverted");
      }, "test"),
    ).rejects.toThrow(/execution reverted/);
    expect(n).toBe(1);
  });
});
