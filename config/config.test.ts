import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { apiConfig } from "../api/env.js";
import { jobsConfig } from "../jobs/config.js";
import { relayerConfig } from "../jobs/relayer/config.js";
import { CHAINS, getChain, isEvmChain } from "./chains.js";
import { indexerPlan, planFingerprint, rpcLanes, stakerIncentivesStart } from "./indexer.js";
import { loadRegistry, registryPath } from "./registry.js";
import { rpcUrlsFromEnv } from "./rpc-urls.js";

const SPEC_CHAIN_IDS = [
  1, -1, -2, -3, -4, 42161, 43114, 8453, 56, 534352, 59144, 10, 137, 2222, 0, 1101, 48900, 1923, 43111, 80094, 146, 999,
  130, 239, 31612, 1868, 9745, 143, 57073, 14, 4114, 25363, 4217, 196, 11155111,
];

const evmVault = (over: Record<string, unknown> = {}) => ({
  chainId: 1,
  address: "0xBAF6F71241BE6FA7BD2C92C3AE3A94D7C92FB3C9",
  family: "lendingPool",
  kind: "stablecoin",
  name: "Stablecoin Strategy",
  symbol: "ssUSDC",
  startBlock: 6,
  asset: { address: "0x573d31ebec18b3642ccac086e659e77a12b841c6", symbol: "USDC", decimals: 6 },
  ...over,
});

// every registry file of these tests, under one directory removed after them
const root = mkdtempSync(join(tmpdir(), "registry-"));
afterAll(() => rmSync(root, { recursive: true, force: true }));

function registryFile(vaults: unknown[], version: unknown = 1, protocols: unknown[] = []): string {
  const dir = mkdtempSync(join(root, "r-"));
  const file = join(dir, "vaults.json");
  writeFileSync(file, JSON.stringify({ version, vaults, protocols }));
  return file;
}

describe("chain catalogue", () => {
  it("has exactly the spec's chain ids, non-EVM for 0 and negative ids", () => {
    expect(CHAINS.map((c) => c.id).sort((a, b) => a - b)).toEqual([...SPEC_CHAIN_IDS].sort((a, b) => a - b));
    for (const id of SPEC_CHAIN_IDS) expect(isEvmChain(id)).toBe(id > 0);
    expect(getChain(8453)?.slug).toBe("base");
    expect(getChain(12345)).toBeUndefined();
  });
});

describe("vault registry", () => {
  it("lower-cases addresses and splits EVM from non-EVM vaults", () => {
    const r = loadRegistry(
      registryFile([
        evmVault(),
        { chainId: -1, address: "So1anaVau1t", family: "solanaVault", name: "S", symbol: "S" },
      ]),
    );
    expect(r.evm[0]!.address).toBe("0xbaf6f71241be6fa7bd2c92c3ae3a94d7c92fb3c9");
    expect(r.evm[0]!.status).toBe("active");
    expect(r.nonEvm.map((v) => v.chainId)).toEqual([-1]);
  });

  it("takes an alt asset with or without its own feed (older registries have none)", () => {
    const stEth = { address: "0xAE7AB96520DE3A18E5E111B5EAAB095312D7FE84", symbol: "stETH", decimals: 18 };
    const feed = { address: "0xCFE54B5CD566AB89272946F602D76EA71D4E0AB6", decimals: 8 };
    const r = loadRegistry(
      registryFile([
        evmVault({ family: "tokenizedVaultV2", altAsset: { ...stEth, priceFeed: feed } }),
        evmVault({ address: `0x${"1".repeat(40)}`, family: "tokenizedVaultV2", altAsset: stEth }),
      ]),
    );
    expect(r.evm[0]!.altAsset!.priceFeed).toEqual({
      address: "0xcfe54b5cd566ab89272946f602d76ea71d4e0ab6",
      decimals: 8,
    });
    expect(r.evm[1]!.altAsset!.address).toBe("0xae7ab96520de3a18e5e111b5eaab095312d7fe84");
    expect(r.evm[1]!.altAsset!.priceFeed).toBeUndefined();
    const bad = registryFile([evmVault({ altAsset: { ...stEth, priceFeed: { address: "0x12", decimals: 8 } } })]);
    expect(() => loadRegistry(bad)).toThrow(/vaults\[0\].*altAsset\.priceFeed\.address/);
  });

  it("takes an erc4626 vault with only the fields `npm run vaults -- add` writes; no other family", () => {
    const minimal = {
      chainId: 10,
      address: "0x00000000000000000000000000000000000000E4",
      family: "erc4626",
      kind: "erc4626",
      name: "Any ERC-4626",
      symbol: "v4626",
      startBlock: 12,
      asset: { address: "0x0b2c639c533813f4aa9d7837caf62653d097ff85", symbol: "USDC", decimals: 6 },
    };
    const r = loadRegistry(registryFile([minimal]));
    expect(r.evm[0]).toMatchObject({ family: "erc4626", address: "0x00000000000000000000000000000000000000e4" });
    expect([r.evm[0]!.subaccounts, r.evm[0]!.timelock, r.evm[0]!.receiptToken]).toEqual([[], undefined, undefined]);
    expect(() => loadRegistry(registryFile([{ ...minimal, family: "erc4262" }]))).toThrow(/vaults\[0\].*family/);
  });

  it("takes each subaccount's funding wallets, lower-cased; refuses one that is not an address", () => {
    const sub = "0x00000000000000000000000000000000000000a1";
    const custody = "0x00000000000000000000000000000000000000C0";
    const ok = loadRegistry(
      registryFile([evmVault({ subaccounts: [sub], subaccountSettings: { [sub]: { funding: [custody] } } })]),
    );
    expect(ok.evm[0]!.subaccountSettings[sub]!.funding).toEqual([custody.toLowerCase()]);
    const bad = registryFile([
      evmVault({ subaccounts: [sub], subaccountSettings: { [sub]: { funding: ["custody"] } } }),
    ]);
    expect(() => loadRegistry(bad)).toThrow(/vaults\[0\][\s\S]*must be a 0x[\s\S]*funding\[0\]/);
  });

  it("takes a subaccount's Safe version from 1.3.0 on, one per subaccount across vaults", () => {
    const sub = "0x00000000000000000000000000000000000000A1";
    const vault = (safeVersion: string, over: Record<string, unknown> = {}) =>
      evmVault({ subaccounts: [sub], subaccountSettings: { [sub]: { safeVersion } }, ...over });
    expect(loadRegistry(registryFile([vault("1.3.0")])).evm[0]!.subaccountSettings[sub]!.safeVersion).toBe("1.3.0");
    expect(() => loadRegistry(registryFile([vault("1.2.0")]))).toThrow(/Safe versions before 1.3.0 are not supported/);
    expect(() => loadRegistry(registryFile([vault("v1.3")]))).toThrow(/a Safe version such as 1.3.0/);
    // the same Safe (any case) said to be two versions by two vaults
    const other = { address: "0x00000000000000000000000000000000000000b2" };
    const both = registryFile([
      vault("1.3.0"),
      { ...vault("1.4.1", other), subaccountSettings: { [sub.toLowerCase()]: { safeVersion: "1.4.1" } } },
    ]);
    expect(() => loadRegistry(both)).toThrow(
      "subaccount 0x00000000000000000000000000000000000000a1: safeVersion 1.3.0 and 1.4.1 in different vaults' settings",
    );
  });

  it("reports every problem at once, readably", () => {
    const file = registryFile([evmVault({ address: "0x123" }), evmVault({ chainId: 777 }), evmVault(), evmVault()]);
    expect(() => loadRegistry(file)).toThrow(
      /vaults\[0\].*address[\s\S]*vaults\[1\]\.chainId: 777 is not a chain[\s\S]*duplicate vault 1:0xbaf6/,
    );
  });

  it("refuses bridges that name no core ledger when the registry names two; one is theirs", () => {
    const addr = (n: number) => `0x${n.toString(16).padStart(40, "0")}`;
    const perp = (n: number, core?: { chainId: number; ledger: string }) => ({
      bridgeA: addr(n),
      bridgeB: addr(n + 1),
      ...(core ? { core } : {}),
    });
    const one = { chainId: 1, ledger: addr(100) };
    const other = { chainId: 8453, ledger: addr(200) };
    const sole = loadRegistry(
      registryFile([], 1, [
        { chainId: 1, perp: perp(10, one) },
        { chainId: 8453, perp: perp(20) },
      ]),
    );
    expect(sole.protocols.get(8453)!.perp!.core).toBeUndefined(); // followed to the one (db/chain-protocols.ts)
    const two = registryFile([], 1, [
      { chainId: 1, perp: perp(10, one) },
      { chainId: 10, perp: perp(30) },
      { chainId: 8453, perp: perp(20, other) },
    ]);
    expect(() => loadRegistry(two)).toThrow(
      /protocols\[1\]\.perp\.core: chain 10's bridges name no core ledger and the registry names 2 \(chain 1 0x0+64, chain 8453 0x0+c8\): name the one/,
    );
    // naming it settles it
    const named = registryFile([], 1, [
      { chainId: 1, perp: perp(10, one) },
      { chainId: 10, perp: perp(30, other) },
      { chainId: 8453, perp: perp(20, other) },
    ]);
    expect(loadRegistry(named).protocols.get(10)!.perp!.core).toEqual(other);
  });

  it("refuses a misspelt key, a subaccount listed twice and settings of one it does not list", () => {
    const file = (vaults: unknown[], extra: Record<string, unknown> = {}) => {
      const dir = mkdtempSync(join(root, "r-"));
      writeFileSync(join(dir, "vaults.json"), JSON.stringify({ version: 1, vaults, ...extra }));
      return join(dir, "vaults.json");
    };
    // each would be dropped unseen: the chains' protocols, the vault's USD feed
    expect(() => loadRegistry(file([evmVault()], { protocol: [] }))).toThrow(/protocol/);
    const feed = { address: "0x00000000000000000000000000000000000000f1", decimals: 8 };
    expect(() => loadRegistry(file([evmVault({ priceFed: feed })]))).toThrow(/vaults\[0\][\s\S]*priceFed/);
    expect(() => loadRegistry(registryFile([], 1, [{ chainId: 1, tokenz: [] }]))).toThrow(
      /protocols\[0\][\s\S]*tokenz/,
    );
    const sub = "0x00000000000000000000000000000000000000a1";
    // the same subaccount in any case: counted twice in the vault's actual TVL
    expect(() => loadRegistry(file([evmVault({ subaccounts: [sub, sub.toUpperCase().replace("0X", "0x")] })]))).toThrow(
      `vaults[0].subaccounts: ${sub} listed twice`,
    );
    const other = "0x00000000000000000000000000000000000000b2";
    const settings = file([evmVault({ subaccounts: [sub], subaccountSettings: { [other]: { type: "x" } } })]);
    expect(() => loadRegistry(settings)).toThrow(
      `vaults[0].subaccountSettings: ${other} is not one of its subaccounts`,
    );
    const notAddress = file([evmVault({ subaccounts: [sub], subaccountSettings: { main: { type: "x" } } })]);
    expect(() => loadRegistry(notAddress)).toThrow(/Invalid key in record[\s\S]*subaccountSettings\.main/);
    expect(() => loadRegistry(file([evmVault({ name: "   " })]))).toThrow("vaults[0].name: blank");
  });

  it("VAULT_REGISTRY set to nothing is the default file", () => {
    expect(registryPath({ VAULT_REGISTRY: "" })).toBe(registryPath({}));
    expect(registryPath({ VAULT_REGISTRY: " " })).toBe(registryPath({}));
    expect(registryPath({})).toMatch(/config\/vaults\.json$/);
  });

  it("refuses a missing file, bad JSON and a wrong version", () => {
    expect(() => loadRegistry("/nonexistent/vaults.json")).toThrow(/not found/);
    const dir = mkdtempSync(join(root, "r-"));
    writeFileSync(join(dir, "bad.json"), "{");
    expect(() => loadRegistry(join(dir, "bad.json"))).toThrow(/not valid JSON/);
    expect(() => loadRegistry(registryFile([], 2))).toThrow(/version/);
  });
});

describe("indexer plan", () => {
  const twoChains = () =>
    registryFile([
      evmVault(),
      evmVault({ chainId: 8453, startBlock: 9 }),
      { chainId: -2, address: "GSTELLAR", family: "stellarVault", name: "X", symbol: "X" },
    ]);

  it("indexes a chain only when it has an RPC URL and vaults; never a non-EVM chain", () => {
    const plan = indexerPlan({
      VAULT_REGISTRY: twoChains(),
      PONDER_RPC_URL_1: "http://127.0.0.1:8545",
      SNAPSHOT_INTERVAL_1: "7",
    });
    expect(plan.chains.map((c) => [c.id, c.name, c.snapshotInterval, c.startBlock])).toEqual([[1, "ethereum", 7, 6]]);
    expect(plan.skipped.map((v) => v.chainId)).toEqual([8453]);
  });

  it("the staker's incentives from the registry's stakerStartBlock where it is earlier", () => {
    const uniswap = (stakerStartBlock?: number) => ({
      factory: `0x${"1".repeat(40)}`,
      positionManager: `0x${"2".repeat(40)}`,
      swapRouter: `0x${"3".repeat(40)}`,
      quoterV2: `0x${"4".repeat(40)}`,
      staker: `0x${"5".repeat(40)}`,
      ...(stakerStartBlock === undefined ? {} : { stakerStartBlock }),
    });
    const start = (stakerStartBlock?: number) => {
      const file = registryFile([evmVault()], 1, [{ chainId: 1, uniswap: uniswap(stakerStartBlock) }]);
      return stakerIncentivesStart(indexerPlan({ VAULT_REGISTRY: file, PONDER_RPC_URL_1: "http://a:1" }).chains[0]!);
    };
    expect([start(), start(2), start(60)]).toEqual([6, 2, 6]);
    expect(() => start(-1)).toThrow(/stakerStartBlock/);
  });

  it("rejects bad settings with one message naming each", () => {
    const env = {
      VAULT_REGISTRY: twoChains(),
      PONDER_RPC_URL_1: "ws://nope",
      PONDER_RPC_URL_8453: "http://127.0.0.1:8546",
      PONDER_RPC_URL_99999: "http://x",
      PONDER_RPC_URL_0: "http://x",
      SNAPSHOT_INTERVAL_8453: "-3",
    };
    let message = "";
    try {
      indexerPlan(env);
    } catch (err) {
      message = (err as Error).message;
    }
    for (const part of [
      'PONDER_RPC_URL_1: "ws://nope" is not an http(s) URL',
      "PONDER_RPC_URL_99999: chain 99999 is not in the catalogue",
      "PONDER_RPC_URL_0: chain 0 (Bitcoin) is not an EVM chain",
      'SNAPSHOT_INTERVAL_8453: "-3" is not a positive integer',
    ]) {
      expect(message).toContain(part);
    }
  });

  it("opens several lanes to each RPC URL when asked", () => {
    expect(rpcLanes("http://127.0.0.1:8545", 1)).toEqual(["http://127.0.0.1:8545"]);
    expect(rpcLanes("http://127.0.0.1:8545/?key=a", 2)).toEqual([
      "http://127.0.0.1:8545/?key=a&lane=0",
      "http://127.0.0.1:8545/?key=a&lane=1",
    ]);
    const plan = indexerPlan({
      VAULT_REGISTRY: twoChains(),
      PONDER_RPC_URL_1: "http://a:1, http://b:2",
      PONDER_RPC_LANES_1: "3",
    });
    expect(plan.chains[0]!.rpc).toHaveLength(6);
    expect(plan.chains[0]!.rpcUrl).toBe("http://a:1");
    expect(() =>
      indexerPlan({ VAULT_REGISTRY: twoChains(), PONDER_RPC_URL_1: "http://a:1", PONDER_RPC_LANES_1: "0" }),
    ).toThrow(/PONDER_RPC_LANES_1/);
  });

  it("scans 1000 blocks ahead for flow reads unless FLOW_PREFETCH_BLOCKS_<chainId> says otherwise (0: off)", () => {
    const env = { VAULT_REGISTRY: twoChains(), PONDER_RPC_URL_1: "http://a:1", PONDER_RPC_URL_8453: "http://b:2" };
    expect(indexerPlan(env).chains.map((c) => c.flowPrefetchBlocks)).toEqual([1000, 1000]);
    expect(indexerPlan({ ...env, FLOW_PREFETCH_BLOCKS_8453: "0" }).chains.map((c) => c.flowPrefetchBlocks)).toEqual([
      1000, 0,
    ]);
    expect(() => indexerPlan({ ...env, FLOW_PREFETCH_BLOCKS_1: "many" })).toThrow(
      /FLOW_PREFETCH_BLOCKS_1: "many" is not an integer from 0 to 100000/,
    );
  });

  it("reads its per-chain numbers as every setting: decimal text, nothing set is unset", () => {
    const env = { VAULT_REGISTRY: twoChains(), PONDER_RPC_URL_1: "http://a:1", PONDER_RPC_URL_8453: "http://b:2" };
    // set to nothing: the default, not 0 (FLOW_PREFETCH_BLOCKS 0 would turn the prefetch off)
    const plan = indexerPlan({ ...env, FLOW_PREFETCH_BLOCKS_1: "", SNAPSHOT_INTERVAL_1: " ", PONDER_RPC_LANES_1: "" });
    expect(plan.chains[0]).toMatchObject({ flowPrefetchBlocks: 1000, snapshotInterval: 300 });
    expect(plan.chains[0]!.rpc).toHaveLength(1);
    expect(indexerPlan({ ...env, SNAPSHOT_INTERVAL_1: " 60 " }).chains[0]!.snapshotInterval).toBe(60);
    let message = "";
    try {
      indexerPlan({ ...env, SNAPSHOT_INTERVAL_1: "0x10", PONDER_RPC_LANES_8453: "1e1", FLOW_PREFETCH_BLOCKS_1: "2.5" });
    } catch (err) {
      message = (err as Error).message;
    }
    expect(message).toContain('SNAPSHOT_INTERVAL_1: "0x10" is not a positive integer');
    expect(message).toContain('PONDER_RPC_LANES_8453: "1e1" is not an integer from 1 to 64');
    expect(message).toContain('FLOW_PREFETCH_BLOCKS_1: "2.5" is not an integer from 0 to 100000');
  });

  it("refuses to start with nothing to index", () => {
    expect(() => indexerPlan({ VAULT_REGISTRY: twoChains() })).toThrow(/nothing to index/);
  });

  it("fingerprints what a chain set takes from the registry, not other chains' vaults or the environment", () => {
    const SUB = "0x00000000000000000000000000000000000000a1";
    const fp = (vaults: unknown[], env: Record<string, string> = {}) =>
      planFingerprint(indexerPlan({ VAULT_REGISTRY: registryFile(vaults), PONDER_RPC_URL_1: "http://a:1", ...env }));
    const base = fp([evmVault(), evmVault({ chainId: 8453 })]);
    // another chain's vault renamed, another RPC URL, other snapshot spacing: the same
    expect(fp([evmVault(), evmVault({ chainId: 8453, name: "Renamed" })])).toBe(base);
    expect(
      fp([evmVault(), evmVault({ chainId: 8453 })], { PONDER_RPC_URL_1: "http://c:3", SNAPSHOT_INTERVAL_1: "9" }),
    ).toBe(base);
    // its own vault renamed, or a subaccount on another chain (every chain follows them all): not
    expect(fp([evmVault({ name: "Renamed" }), evmVault({ chainId: 8453 })])).not.toBe(base);
    expect(fp([evmVault(), evmVault({ chainId: 8453, subaccounts: [SUB] })])).not.toBe(base);
    // nor whether another chain's vault says that subaccount is a Safe 1.3 (its sources differ)
    const withSub = fp([evmVault(), evmVault({ chainId: 8453, subaccounts: [SUB] })]);
    const v130 = { [SUB]: { safeVersion: "1.3.0" } };
    expect(fp([evmVault(), evmVault({ chainId: 8453, subaccounts: [SUB], subaccountSettings: v130 })])).not.toBe(
      withSub,
    );
  });

  it("plans the Safe 1.3.x subaccounts apart, on every chain, from any vault's setting", () => {
    const [a, b, c] = [
      "0x00000000000000000000000000000000000000a1",
      "0x00000000000000000000000000000000000000b2",
      "0x00000000000000000000000000000000000000c3",
    ];
    const plan = indexerPlan({
      VAULT_REGISTRY: registryFile([
        evmVault({ subaccounts: [a, b, c], subaccountSettings: { [b]: { safeVersion: "1.4.1" } } }),
        evmVault({
          chainId: 8453,
          subaccounts: [a],
          subaccountSettings: { [a.toUpperCase().replace("0X", "0x")]: { safeVersion: "1.3.0" } },
        }),
      ]),
      PONDER_RPC_URL_1: "http://a:1",
    });
    expect(plan.subaccounts).toEqual([a, b, c]);
    expect(plan.safesV130).toEqual([a]);
  });
});

describe("PONDER_RPC_URL_<chainId>, read the same by every process", () => {
  const DB = "postgresql://u:p@127.0.0.1:5432/db";
  it("lists each chain's URLs, the first the primary", () => {
    const r = rpcUrlsFromEnv({
      PONDER_RPC_URL_1: "http://a:1, https://b.example/rpc ",
      PONDER_RPC_URL_8453: "http://127.0.0.1:8546",
      PONDER_RPC_URL_10: "",
      OTHER: "x",
    });
    expect(r.problems).toEqual([]);
    expect(r.urls).toEqual(
      new Map([
        [1, ["http://a:1", "https://b.example/rpc"]],
        [8453, ["http://127.0.0.1:8546"]],
      ]),
    );
  });
  it("refuses what no node answers at: a bad URL, a chain off the catalogue, a non-EVM chain", () => {
    const env = {
      PONDER_RPC_URL_1: "foo",
      PONDER_RPC_URL_8453: "http://ok:1,ws://nope",
      PONDER_RPC_URL_99999: "http://x",
      PONDER_RPC_URL_0: "http://x",
      PONDER_RPC_URL_10: " , ",
    };
    const want = [
      'PONDER_RPC_URL_10: " , " holds no URL',
      'PONDER_RPC_URL_1: "foo" is not an http(s) URL',
      'PONDER_RPC_URL_8453: "ws://nope" is not an http(s) URL',
      "PONDER_RPC_URL_99999: chain 99999 is not in the catalogue (config/chains.ts)",
      "PONDER_RPC_URL_0: chain 0 (Bitcoin) is not an EVM chain",
    ];
    expect(rpcUrlsFromEnv(env).problems.sort()).toEqual([...want].sort());
    // the API, the workers and the relayer refuse to start on them, naming each
    for (const start of [
      () => apiConfig({ ...env, DATABASE_URL: DB }),
      () => jobsConfig({ ...env, DATABASE_URL: DB }),
      () => relayerConfig({ ...env, DATABASE_URL: DB }),
    ]) {
      expect(start).toThrow(/^invalid (API|worker|relayer) configuration:/);
      try {
        start();
      } catch (err) {
        for (const line of want) expect((err as Error).message).toContain(`  ${line}`);
      }
    }
  });
});

describe("settings", () => {
  it("a variable set to nothing counts as unset: its default, not 0", () => {
    const c = apiConfig({ DATABASE_URL: "postgresql://u@h/db", RESPONSE_CACHE_MS: "", PORT: " ", TOKEN_SECRET: "" });
    expect(c.responseCacheMs).toBe(1000);
    expect(c.port).toBe(8000);
    expect(c.tokenSecret).toBeUndefined();
    expect(jobsConfig({ DATABASE_URL: "postgresql://u@h/db", WORKER_CONCURRENCY: "" }).concurrency).toBe(2);
    expect(() => apiConfig({ DATABASE_URL: "" })).toThrow(/DATABASE_URL: required/);
  });
  it("a number is decimal text: hex or an exponent is refused, not read as 8080 or 1000", () => {
    const DB = { DATABASE_URL: "postgresql://u@h/db" };
    expect(apiConfig({ ...DB, PORT: " 8080 ", TOKEN_TTL_S: "+1000" })).toMatchObject({ port: 8080, tokenTtlS: 1000 });
    expect(jobsConfig({ ...DB, PROGRESS_POLL_S: "0.5" }).progressPollMs).toBe(500);
    expect(() => apiConfig({ ...DB, PORT: "0x1F90", TOKEN_TTL_S: "1e3" })).toThrow(
      /PORT: must be a decimal number\n {2}TOKEN_TTL_S: must be a decimal number/,
    );
    expect(() => apiConfig({ ...DB, PORT: "80.5" })).toThrow(/PORT: Invalid input: expected int/);
    expect(() => jobsConfig({ ...DB, WORKER_CONCURRENCY: "two" })).toThrow(
      /WORKER_CONCURRENCY: must be a decimal number/,
    );
    expect(() => jobsConfig({ ...DB, FANOUT_FULL_EVERY_S: "1e3" })).toThrow(/FANOUT_FULL_EVERY_S: must be a decimal/);
    expect(jobsConfig({ ...DB, FANOUT_FULL_EVERY_S: "" }).fullCheckEveryMs).toBe(3_600_000);
    // the portfolio queue's lanes: 1 to 64, 4 unset
    expect(jobsConfig(DB).readLanes).toBe(4);
    expect(jobsConfig({ ...DB, PORTFOLIO_READ_LANES: "1" }).readLanes).toBe(1);
    expect(() => jobsConfig({ ...DB, PORTFOLIO_READ_LANES: "0" })).toThrow(/PORTFOLIO_READ_LANES: Too small/);
    expect(() => jobsConfig({ ...DB, PORTFOLIO_READ_LANES: "65" })).toThrow(/PORTFOLIO_READ_LANES: Too big/);
    expect(() => relayerConfig({ ...DB, RELAYER_DELAY_S: "0x1e" })).toThrow(/RELAYER_DELAY_S: must be a decimal/);
    const relayer = {
      ...DB,
      RELAYER_PRIVATE_KEY: `0x${"11".repeat(32)}`,
      CORE_CHAIN_ID: "1",
      PERP_CORE_LEDGER: `0x${"22".repeat(20)}`,
      PERP_BRIDGES_1: `0x${"33".repeat(20)}`,
      PONDER_RPC_URL_1: "http://a:1",
    };
    expect(relayerConfig({ ...relayer, RELAYER_DELAY_S: "" }).delaySeconds).toBe(30);
    expect(relayerConfig({ ...relayer, RELAYER_DELAY_S: "45" }).delaySeconds).toBe(45);
    // bridges named in the environment: a real chain, 12 blocks on top of a deposit's by default
    expect(relayerConfig(relayer).confirmations).toBe(12);
    expect(relayerConfig({ ...relayer, RELAYER_CONFIRMATIONS: "0" }).confirmations).toBe(0);
    expect(relayerConfig({ ...relayer, RELAYER_CONFIRMATIONS: "64" }).confirmations).toBe(64);
    expect(() => relayerConfig({ ...relayer, RELAYER_CONFIRMATIONS: "-1" })).toThrow(/RELAYER_CONFIRMATIONS/);
    expect(() => relayerConfig({ ...relayer, RELAYER_CONFIRMATIONS: "2.5" })).toThrow(/RELAYER_CONFIRMATIONS/);
  });
});
