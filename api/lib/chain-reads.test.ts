import { describe, expect, it } from "vitest";
import { ChainReads, type Head, objectKey } from "./chain-reads.js";

/** A chain whose head the test moves, counting the head reads; `hold` keeps reads pending. */
function fakeChain() {
  let n = 100n;
  let gate: Promise<void> | null = null;
  const chain = {
    reads: 0,
    mine() {
      n++;
    },
    hold() {
      let open!: () => void;
      gate = new Promise((r) => (open = r));
      return () => {
        gate = null;
        open();
      };
    },
    fail: false,
    async getBlock() {
      chain.reads++;
      if (gate) await gate;
      if (chain.fail) throw new Error("RPC down");
      return { number: n, hash: `0x${n.toString(16).padStart(64, "0")}` as const, timestamp: 1_700_000_000n + n };
    },
  };
  return chain;
}

const URL = "http://rpc";
const tick = () => new Promise((r) => setTimeout(r, 0));

describe("ChainReads: the head", () => {
  it("concurrent requests share one head read; it is reused for the TTL, then read again", async () => {
    let t = 0;
    const reads = new ChainReads({ headTtlMs: 1000, now: () => t });
    const chain = fakeChain();
    const [a, b] = await Promise.all([reads.head(URL, chain as never), reads.head(URL, chain as never)]);
    expect(chain.reads).toBe(1);
    expect(a).toEqual(b);
    chain.mine();
    t = 999;
    expect((await reads.head(URL, chain as never)).number).toBe(100n);
    t = 1000;
    expect((await reads.head(URL, chain as never)).number).toBe(101n);
    expect(chain.reads).toBe(2);
  });

  it("with no TTL every request reads it, but one under way is still shared", async () => {
    const reads = new ChainReads({ headTtlMs: 0 });
    const chain = fakeChain();
    const release = chain.hold();
    const both = Promise.all([reads.head(URL, chain as never), reads.head(URL, chain as never)]);
    await tick();
    release();
    await both;
    expect(chain.reads).toBe(1);
    await reads.head(URL, chain as never);
    expect(chain.reads).toBe(2);
  });

  it("a failed read is not kept", async () => {
    const reads = new ChainReads({ headTtlMs: 60_000 });
    const chain = fakeChain();
    chain.fail = true;
    await expect(reads.head(URL, chain as never)).rejects.toThrow("RPC down");
    chain.fail = false;
    expect((await reads.head(URL, chain as never)).number).toBe(100n);
    expect(chain.reads).toBe(2);
  });
});

describe("ChainReads: reads at a head", () => {
  const head = (n: bigint): Head => ({ number: n, hash: `0x${n.toString(16)}`, timestamp: n });

  it("two concurrent requests at one head make one read; a new block makes a fresh one", async () => {
    const reads = new ChainReads({ headTtlMs: 0 });
    const chain = fakeChain();
    let made = 0;
    const read = async (h: Head) => {
      made++;
      await tick();
      return `state at ${h.number}`;
    };
    const [a, b] = await Promise.all([
      reads.atHead(URL, chain as never, "state:0xabc", read),
      reads.atHead(URL, chain as never, "state:0xabc", read),
    ]);
    expect(made).toBe(1);
    expect(chain.reads).toBe(1);
    expect([a.value, b.value]).toEqual(["state at 100", "state at 100"]);
    expect(a.head.number).toBe(100n);
    // the same head later: still the one read
    expect((await reads.atHead(URL, chain as never, "state:0xabc", read)).value).toBe("state at 100");
    expect(made).toBe(1);
    // another key is another read
    await reads.atHead(URL, chain as never, "state:0xdef", read);
    expect(made).toBe(2);
    chain.mine();
    const c = await reads.atHead(URL, chain as never, "state:0xabc", read);
    expect(c).toMatchObject({ value: "state at 101", head: { number: 101n } });
    expect(made).toBe(3);
  });

  it("a reorg (same height, another hash) reads afresh", async () => {
    const reads = new ChainReads({ headTtlMs: 0 });
    let made = 0;
    const read = async () => ++made;
    await reads.at(URL, head(5n), "k", read);
    await reads.at(URL, { ...head(5n), hash: "0xother" }, "k", read);
    expect(made).toBe(2);
  });

  it("a request holding an older head reads for itself and leaves the newer result", async () => {
    const reads = new ChainReads({ headTtlMs: 0 });
    let made = 0;
    const read = (n: number) => async () => {
      made++;
      return n;
    };
    expect(await reads.at(URL, head(7n), "k", read(7))).toBe(7);
    expect(await reads.at(URL, head(6n), "k", read(6))).toBe(6);
    expect(await reads.at(URL, head(7n), "k", read(-1))).toBe(7);
    expect(made).toBe(2);
  });

  it("a failed read is not kept, and the oldest reads go past maxEntries", async () => {
    const reads = new ChainReads({ headTtlMs: 0, maxEntries: 2 });
    let made = 0;
    await expect(
      reads.at(URL, head(1n), "k", async () => {
        made++;
        throw new Error("reverted");
      }),
    ).rejects.toThrow("reverted");
    const ok = async () => ++made;
    await reads.at(URL, head(1n), "k", ok);
    expect(made).toBe(2);
    await reads.at(URL, head(1n), "k2", ok);
    await reads.at(URL, head(1n), "k3", ok);
    await reads.at(URL, head(1n), "k", ok); // "k" was the oldest of three: gone
    expect(made).toBe(5);
  });
});

describe("objectKey", () => {
  it("names each object, the same one the same way", () => {
    const a = {};
    const b = {};
    expect(objectKey(a)).toBe(objectKey(a));
    expect(objectKey(a)).not.toBe(objectKey(b));
  });
});

describe("ChainReads: recent reads not of a chain (the index's rows about an account)", () => {
  it("shared for the head's TTL and while under way; a new one after; per key", async () => {
    let t = 0;
    const reads = new ChainReads({ headTtlMs: 1000, now: () => t });
    let n = 0;
    const read = async () => ++n;
    const [a, b] = await Promise.all([reads.recent("loans:a", read), reads.recent("loans:a", read)]);
    expect([a, b]).toEqual([1, 1]);
    t = 999;
    expect(await reads.recent("loans:a", read)).toBe(1);
    expect(await reads.recent("loans:b", read)).toBe(2);
    t = 1000;
    expect(await reads.recent("loans:a", read)).toBe(3);
  });

  it("with no TTL every request reads, but one under way is still shared; a failure is not kept", async () => {
    const reads = new ChainReads({ headTtlMs: 0 });
    let n = 0;
    let open!: () => void;
    const gate = new Promise<void>((r) => (open = r));
    const held = async () => {
      await gate;
      return ++n;
    };
    const both = Promise.all([reads.recent("k", held), reads.recent("k", held)]);
    await tick();
    open();
    expect(await both).toEqual([1, 1]);
    expect(await reads.recent("k", async () => ++n)).toBe(2);
    const failing = reads.recent("k", async () => {
      throw new Error("db down");
    });
    await expect(failing).rejects.toThrow("db down");
    expect(await reads.recent("k", async () => ++n)).toBe(3);
  });
});
