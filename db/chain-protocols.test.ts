/** withSoleCore: a chain whose bridges name no ledger gets the registry's only one. */
import { describe, expect, it } from "vitest";
import type { ChainProtocols } from "../config/registry.js";
import { withSoleCore } from "./chain-protocols.js";

const a = (n: number) => `0x${String(n).padStart(40, "0")}` as `0x${string}`;
const entry = (chainId: number, perp?: ChainProtocols["perp"]): ChainProtocols => ({
  chainId,
  tokens: [],
  ...(perp !== undefined ? { perp } : {}),
});
const bridges = { bridgeA: a(1), bridgeB: a(2) };
const core = { chainId: 1, ledger: a(9) };

describe("withSoleCore", () => {
  it("names the only ledger on a chain whose bridges name none; the rest stay as they were", () => {
    const core1 = entry(1, { ...bridges, core });
    const base = entry(8453, bridges);
    const plain = entry(10);
    const out = withSoleCore(
      new Map([
        [1, core1],
        [8453, base],
        [10, plain],
      ]),
    );
    expect(out.get(8453)!.perp!.core).toEqual(core);
    expect(out.get(1)).toBe(core1);
    expect(out.get(10)).toBe(plain);
    expect(base.perp!.core).toBeUndefined(); // its input is not changed
  });

  it("names none when the registry names two ledgers, or none at all", () => {
    const two = withSoleCore(
      new Map([
        [1, entry(1, { ...bridges, core })],
        [10, entry(10, { ...bridges, core: { chainId: 10, ledger: a(8) } })],
        [8453, entry(8453, bridges)],
      ]),
    );
    expect(two.get(8453)!.perp!.core).toBeUndefined();
    const none = withSoleCore(new Map([[8453, entry(8453, { ...bridges, core: null })]]));
    expect(none.get(8453)!.perp!.core).toBeNull();
  });

  it("one ledger named on several chains is one ledger", () => {
    const out = withSoleCore(
      new Map([
        [1, entry(1, { ...bridges, core })],
        [10, entry(10, { ...bridges, core: { ...core } })],
        [8453, entry(8453, bridges)],
      ]),
    );
    expect(out.get(8453)!.perp!.core).toEqual(core);
  });
});
