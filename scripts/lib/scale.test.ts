import { describe, expect, it } from "vitest";
import { getChain, isEvmChain } from "../../config/chains.js";
import {
  chainsFor,
  chainVaultDayFit,
  formatBytes,
  linearFit,
  MAX_VAULTS,
  parseSize,
  SCALE_CHAIN_IDS,
} from "./scale.js";

describe("bench:scale helpers", () => {
  it("parses sizes and refuses bad ones with a sentence", () => {
    expect(parseSize("8x60")).toEqual({ vaults: 8, days: 60 });
    expect(parseSize(" 2x7 ")).toEqual({ vaults: 2, days: 7 });
    for (const bad of ["8", "8x", "x60", "8*60", "-2x30", "3x30", "0x30", "18x30", "4x6", "4x366", "4x30x2"]) {
      const r = parseSize(bad);
      expect(typeof r, bad).toBe("string");
    }
    expect(parseSize("3x30")).toMatch(/even/);
    expect(parseSize("4x6")).toMatch(/days/);
    expect(parseSize(`${MAX_VAULTS + 2}x30`)).toMatch(/from 2 to 16/);
  });

  it("puts two vaults on each chain, alternating the devnet's pairs, on catalogue EVM chains", () => {
    expect(chainsFor({ vaults: 6, days: 30 })).toEqual([
      { chainId: 1, template: 1 },
      { chainId: 8453, template: 8453 },
      { chainId: 10, template: 1 },
    ]);
    expect(new Set(SCALE_CHAIN_IDS).size).toBe(SCALE_CHAIN_IDS.length);
    for (const id of SCALE_CHAIN_IDS) {
      expect(getChain(id), String(id)).toBeDefined();
      expect(isEvmChain(id), String(id)).toBe(true);
    }
  });

  it("fits a line through points", () => {
    const exact = linearFit([
      { x: 120, y: 1000 + 120 * 50 },
      { x: 480, y: 1000 + 480 * 50 },
      { x: 1440, y: 1000 + 1440 * 50 },
    ])!;
    expect(exact.fixed).toBeCloseTo(1000, 6);
    expect(exact.perUnit).toBeCloseTo(50, 9);
    expect(exact.r2).toBeCloseTo(1, 12);
    const noisy = linearFit([
      { x: 0, y: 1 },
      { x: 1, y: 3 },
      { x: 2, y: 2 },
    ])!;
    // slope 0.5, intercept 1.5, r² = 0.25 (by hand: sxy = 1, sxx = 2, syy = 2)
    expect(noisy.perUnit).toBeCloseTo(0.5, 12);
    expect(noisy.fixed).toBeCloseTo(1.5, 12);
    expect(noisy.r2).toBeCloseTo(0.25, 12);
    expect(linearFit([{ x: 1, y: 2 }])).toBeNull();
    expect(
      linearFit([
        { x: 3, y: 1 },
        { x: 3, y: 2 },
      ]),
    ).toBeNull();
  });

  it("separates what a chain costs once from what a vault-day adds", () => {
    const y = (chains: number, vaultDays: number) => 2_000_000 + 300_000 * chains + 15_000 * vaultDays;
    const sizes = [
      [2, 120],
      [4, 720],
      [8, 960],
      [2, 720],
    ] as const;
    const fit = chainVaultDayFit(sizes.map(([chains, vaultDays]) => ({ chains, vaultDays, y: y(chains, vaultDays) })))!;
    expect(fit.fixed).toBeCloseTo(2_000_000, 3);
    expect(fit.perChain).toBeCloseTo(300_000, 4);
    expect(fit.perVaultDay).toBeCloseTo(15_000, 6);
    expect(fit.points).toBe(4);
    // four points off any plane (a 2x2 design with an interaction), by hand: each slope is the
    // difference of the two means along its axis, (1 + 5) / 2 - (1 + 1) / 2 = 2, the intercept
    // the overall mean less half of each slope, 2 - 1 - 1 = 0
    const noisy = chainVaultDayFit([
      { chains: 0, vaultDays: 0, y: 1 },
      { chains: 1, vaultDays: 0, y: 1 },
      { chains: 0, vaultDays: 1, y: 1 },
      { chains: 1, vaultDays: 1, y: 5 },
    ])!;
    expect(noisy.fixed).toBeCloseTo(0, 12);
    expect(noisy.perChain).toBeCloseTo(2, 12);
    expect(noisy.perVaultDay).toBeCloseTo(2, 12);
    // every point on one line in (chains, vault-days): chains and vault-days cannot be told apart
    expect(
      chainVaultDayFit([
        { chains: 1, vaultDays: 30, y: 1 },
        { chains: 2, vaultDays: 60, y: 2 },
        { chains: 4, vaultDays: 120, y: 3 },
      ]),
    ).toBeNull();
    expect(chainVaultDayFit([{ chains: 1, vaultDays: 1, y: 1 }])).toBeNull();
  });

  it("formats bytes", () => {
    expect(formatBytes(812)).toBe("812 B");
    expect(formatBytes(3.4 * 1024)).toBe("3.40 KiB");
    expect(formatBytes(12 * 1024 * 1024)).toBe("12.0 MiB");
    expect(formatBytes(150 * 1024 ** 3)).toBe("150 GiB");
  });
});
