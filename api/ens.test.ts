import { mainnet } from "viem/chains";
import { describe, expect, it } from "vitest";
import { createEnsResolver, type EnsLookup, knownUniversalResolver } from "./ens.js";

const A = "0x1111111111111111111111111111111111111111";
const R = "0x2222222222222222222222222222222222222222";
const RPC = "http://127.0.0.1:1";

function setup(
  answers: Record<string, string | null | Error>,
  opts: { ttlMs?: number; errorTtlMs?: number; maxEntries?: number } = {},
) {
  let t = 1_000_000;
  const calls: { rpcUrl: string; resolver: string; name: string }[] = [];
  const lookup: EnsLookup = async (rpcUrl, resolver, name) => {
    calls.push({ rpcUrl, resolver, name });
    const a = answers[name];
    if (a instanceof Error) throw a;
    return (a ?? null) as `0x${string}` | null;
  };
  const resolve = createEnsResolver({ ...opts, lookup, now: () => t });
  const config = {
    rpcUrls: new Map([
      [1, RPC],
      [8453, RPC],
    ]),
    ensResolvers: new Map<number, `0x${string}`>([[8453, R]]),
  };
  return { resolve, calls, config, advance: (ms: number) => (t += ms) };
}

describe("resolveEnsName", () => {
  it("caches found and not-found answers for the TTL, per normalised name", async () => {
    const { resolve, calls, config, advance } = setup({ "alice.eth": A }, { ttlMs: 60_000 });
    expect(await resolve(config, 8453, "alice.eth")).toBe(A);
    expect(await resolve(config, 8453, " Alice.ETH ")).toBe(A); // same normalised name: cached
    expect(await resolve(config, 8453, "bob.eth")).toBeNull();
    expect(await resolve(config, 8453, "bob.eth")).toBeNull();
    expect(calls.map((c) => c.name)).toEqual(["alice.eth", "bob.eth"]);
    expect(calls[0]).toEqual({ rpcUrl: RPC, resolver: R, name: "alice.eth" });
    advance(60_001);
    expect(await resolve(config, 8453, "alice.eth")).toBe(A);
    expect(calls).toHaveLength(3);
  });

  it("gives null for an RPC failure and retries it sooner than a real answer", async () => {
    const { resolve, calls, config, advance } = setup(
      { "down.eth": new Error("HTTP request failed. URL: http://secret") },
      { ttlMs: 60_000, errorTtlMs: 5_000 },
    );
    expect(await resolve(config, 8453, "down.eth")).toBeNull();
    expect(await resolve(config, 8453, "down.eth")).toBeNull();
    expect(calls).toHaveLength(1);
    advance(5_001);
    expect(await resolve(config, 8453, "down.eth")).toBeNull();
    expect(calls).toHaveLength(2);
  });

  it("shares one lookup between concurrent requests", async () => {
    const { resolve, calls, config } = setup({ "alice.eth": A });
    const got = await Promise.all([
      resolve(config, 8453, "alice.eth"),
      resolve(config, 8453, "alice.eth"),
      resolve(config, 8453, "ALICE.eth"),
    ]);
    expect(got).toEqual([A, A, A]);
    expect(calls).toHaveLength(1);
  });

  it("keeps at most maxEntries answers, evicting the oldest", async () => {
    const { resolve, calls, config } = setup({}, { maxEntries: 2 });
    for (const n of ["a.eth", "b.eth", "c.eth"]) await resolve(config, 8453, n);
    await resolve(config, 8453, "c.eth"); // cached
    await resolve(config, 8453, "a.eth"); // evicted: looked up again
    expect(calls.map((c) => c.name)).toEqual(["a.eth", "b.eth", "c.eth", "a.eth"]);
  });

  it("gives null without a lookup for an invalid name, a chain without RPC, or a chain without a resolver", async () => {
    const { resolve, calls, config } = setup({});
    expect(await resolve(config, 8453, "bad name!.eth")).toBeNull();
    expect(await resolve(config, 8453, "a..eth")).toBeNull();
    expect(await resolve(config, 8453, "")).toBeNull();
    expect(await resolve(config, 10, "alice.eth")).toBeNull(); // no RPC for chain 10
    expect(await resolve({ rpcUrls: new Map([[10, RPC]]), ensResolvers: new Map() }, 10, "alice.eth")).toBeNull(); // viem knows no resolver on OP
    expect(calls).toHaveLength(0);
  });

  it("falls back to the Universal Resolver viem knows for the chain", async () => {
    const { resolve, calls, config } = setup({ "alice.eth": A });
    expect(await knownUniversalResolver(1)).toBe(mainnet.contracts.ensUniversalResolver.address);
    expect(await resolve(config, 1, "alice.eth")).toBe(A);
    expect(calls[0]!.resolver).toBe(mainnet.contracts.ensUniversalResolver.address);
    // and no ensResolvers at all is fine too
    expect(await resolve({ rpcUrls: config.rpcUrls }, 1, "alice.eth")).toBe(A);
  });
});
