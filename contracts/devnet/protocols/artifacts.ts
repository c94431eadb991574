/**
 * Protocol bytecode, loaded at run time from the npm packages pinned in package.json (never copied
 * into the repository): hardhat artifacts of Uniswap v3, Aave v3 and Safe, Waffle builds of
 * Uniswap v2, and Morpho Blue compiled from the package's source with the exact solc it pins
 * (cached in contracts/out).
 */
import { existsSync, mkdirSync, readFileSync, writeFileSync } from "node:fs";
import { createRequire } from "node:module";
import { dirname, join, resolve } from "node:path";
import { fileURLToPath } from "node:url";
import type { Abi, Address, Hex } from "viem";
import { CoreLedgerAbi } from "../../../abis/CoreLedgerAbi.js";
import { LoanAbi } from "../../../abis/LoanAbi.js";
import { LoanRegistryAbi } from "../../../abis/LoanRegistryAbi.js";
import { MorphoLendingVaultAbi } from "../../../abis/MorphoLendingVaultAbi.js";
import { PerpBridgeAAbi } from "../../../abis/PerpBridgeAAbi.js";
import { PerpBridgeBAbi } from "../../../abis/PerpBridgeBAbi.js";
import { SubaccountModuleAbi } from "../../../abis/SubaccountModuleAbi.js";

const require = createRequire(import.meta.url);
const contractsDir = resolve(dirname(fileURLToPath(import.meta.url)), "..", "..");

export interface Artifact {
  abi: Abi;
  bytecode: Hex;
  /** hardhat link references: file -> library -> byte offsets in the bytecode (without 0x) */
  linkReferences?: Record<string, Record<string, { start: number; length: number }[]>>;
}

const cache = new Map<string, Artifact>();

/**
 * A hardhat artifact of an npm package by its path without ".json", e.g.
 * npmArtifact("@uniswap/v3-core", "artifacts/contracts/UniswapV3Factory.sol/UniswapV3Factory").
 */
export function npmArtifact(pkg: string, path: string): Artifact {
  const key = `${pkg}/${path}`;
  let a = cache.get(key);
  if (!a) {
    const file = require.resolve(`${pkg}/${path}.json`);
    const j = JSON.parse(readFileSync(file, "utf8")) as Artifact;
    a = { abi: j.abi, bytecode: j.bytecode, ...(j.linkReferences ? { linkReferences: j.linkReferences } : {}) };
    cache.set(key, a);
  }
  return a;
}

export const uniswap = {
  factory: () => npmArtifact("@uniswap/v3-core", "artifacts/contracts/UniswapV3Factory.sol/UniswapV3Factory"),
  pool: () => npmArtifact("@uniswap/v3-core", "artifacts/contracts/UniswapV3Pool.sol/UniswapV3Pool"),
  positionManager: () =>
    npmArtifact(
      "@uniswap/v3-periphery",
      "artifacts/contracts/NonfungiblePositionManager.sol/NonfungiblePositionManager",
    ),
  swapRouter: () => npmArtifact("@uniswap/v3-periphery", "artifacts/contracts/SwapRouter.sol/SwapRouter"),
  quoterV2: () => npmArtifact("@uniswap/v3-periphery", "artifacts/contracts/lens/QuoterV2.sol/QuoterV2"),
  staker: () => npmArtifact("@uniswap/v3-staker", "artifacts/contracts/UniswapV3Staker.sol/UniswapV3Staker"),
};

/** A Waffle build (Uniswap v2's `build/*.json`: bytecode without its 0x) of an npm package. */
function waffleArtifact(pkg: string, name: string): Artifact {
  const key = `${pkg}/build/${name}`;
  let a = cache.get(key);
  if (!a) {
    const j = JSON.parse(readFileSync(require.resolve(`${pkg}/build/${name}.json`), "utf8")) as {
      abi: Abi;
      bytecode: string;
    };
    a = { abi: j.abi, bytecode: `0x${j.bytecode.replace(/^0x/, "")}` };
    cache.set(key, a);
  }
  return a;
}

/** Uniswap v2: the factory's pair init code hashes to what the router's library hard-codes. */
export const uniswapV2 = {
  factory: () => waffleArtifact("@uniswap/v2-core", "UniswapV2Factory"),
  pair: () => waffleArtifact("@uniswap/v2-core", "UniswapV2Pair"),
  router02: () => waffleArtifact("@uniswap/v2-periphery", "UniswapV2Router02"),
};

/**
 * A package's hardhat artifacts under `root`: the loader of `<root>/<p>.sol/<name>.json`, the
 * contract named after the source file (`p` its path without `.sol`).
 */
const hardhatArtifacts = (pkg: string, root: string) => (p: string) => {
  const name = p.split("/").pop() as string;
  return () => npmArtifact(pkg, `${root}/${p}.sol/${name}`);
};

const aavePath = hardhatArtifacts("@aave/core-v3", "artifacts/contracts");

export const aave = {
  addressesProvider: aavePath("protocol/configuration/PoolAddressesProvider"),
  aclManager: aavePath("protocol/configuration/ACLManager"),
  pool: aavePath("protocol/pool/Pool"),
  poolConfigurator: aavePath("protocol/pool/PoolConfigurator"),
  oracle: aavePath("misc/AaveOracle"),
  dataProvider: aavePath("misc/AaveProtocolDataProvider"),
  aToken: aavePath("protocol/tokenization/AToken"),
  variableDebtToken: aavePath("protocol/tokenization/VariableDebtToken"),
  stableDebtToken: aavePath("protocol/tokenization/StableDebtToken"),
  rateStrategy: aavePath("protocol/pool/DefaultReserveInterestRateStrategy"),
  library: (name: string) => aavePath(`protocol/libraries/logic/${name}`)(),
};

const safePath = hardhatArtifacts("@safe-global/safe-smart-account", "build/artifacts/contracts");

export const safe = {
  singletonL2: safePath("SafeL2"),
  proxyFactory: safePath("proxies/SafeProxyFactory"),
  fallbackHandler: safePath("handler/CompatibilityFallbackHandler"),
  multiSendCallOnly: safePath("libraries/MultiSendCallOnly"),
  /** delegatecalled by a Safe (e.g. from its setup): a call to address 0 is a call to the Safe */
  multiSend: safePath("libraries/MultiSend"),
  /** delegatecalled by a Safe of an earlier version: moves it to this release's singleton */
  migration: safePath("libraries/SafeMigration"),
};

const safe130Path = hardhatArtifacts("@gnosis.pm/safe-contracts", "build/artifacts/contracts");

/**
 * Safe 1.3.0 (@gnosis.pm/safe-contracts, a devDependency: the tests' older Safe), whose owner and
 * module events carry the address unindexed. Same calls as 1.5.0 for what the devnet does.
 */
export const safe130 = {
  singletonL2: safe130Path("GnosisSafeL2"),
  proxyFactory: safe130Path("proxies/GnosisSafeProxyFactory"),
  fallbackHandler: safe130Path("handler/CompatibilityFallbackHandler"),
  multiSendCallOnly: safe130Path("libraries/MultiSendCallOnly"),
  /** delegatecalled by a Safe (e.g. from its setup); unlike 1.5.0's, address 0 is not the Safe */
  multiSend: safe130Path("libraries/MultiSend"),
};

/** Bytecode with every library placeholder replaced by its deployed address. */
export function link(a: Artifact, libraries: Record<string, Address>): Hex {
  let code = a.bytecode.slice(2);
  for (const libs of Object.values(a.linkReferences ?? {})) {
    for (const [name, refs] of Object.entries(libs)) {
      const addr = libraries[name];
      if (!addr) throw new Error(`link: no address for library ${name}`);
      for (const { start, length } of refs) {
        code = code.slice(0, start * 2) + addr.slice(2).toLowerCase() + code.slice((start + length) * 2);
      }
    }
  }
  if (code.includes("__")) throw new Error("link: unlinked placeholders remain");
  return `0x${code}`;
}

/** Our own contracts compiled by contracts/compile.ts (solc 0.8.30). */
function ours(name: string, abi: Abi): Artifact {
  const file = join(contractsDir, "out", `${name}.json`);
  if (!existsSync(file)) throw new Error(`missing ${file}: run "npm run build:contracts"`);
  return { abi, bytecode: (JSON.parse(readFileSync(file, "utf8")) as { bytecode: Hex }).bytecode };
}

export const subaccountModule = () => ours("SubaccountModule", SubaccountModuleAbi);
export const morphoLendingVault = () => ours("MorphoLendingVault", MorphoLendingVaultAbi);
export const perpBridgeA = () => ours("PerpBridgeA", PerpBridgeAAbi);
export const perpBridgeB = () => ours("PerpBridgeB", PerpBridgeBAbi);
export const coreLedger = () => ours("CoreLedger", CoreLedgerAbi);
export const loanRegistry = () => ours("LoanRegistry", LoanRegistryAbi);
export const loan = () => ours("Loan", LoanAbi);

// ---- Morpho Blue, from source with solc 0.8.19 ---------------------------------------------------

const MORPHO_SOURCES = ["Morpho.sol", "mocks/IrmMock.sol", "mocks/OracleMock.sol"] as const;

export interface MorphoArtifacts {
  Morpho: Artifact;
  IrmMock: Artifact;
  OracleMock: Artifact;
}

/**
 * Morpho Blue 1.0.0 and its mocks compiled with solc 0.8.19 (its exact pragma), optimizer at
 * 999999 runs like the published build; about 2 s, cached per package and compiler version.
 */
export function morphoArtifacts(): MorphoArtifacts {
  const pkgDir = dirname(require.resolve("@morpho-org/morpho-blue/package.json"));
  const version = (JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8")) as { version: string }).version;
  // the compiler's package version names the cache: loading solc itself takes about a second
  const solcVersion = (
    JSON.parse(readFileSync(require.resolve("solc-0.8.19/package.json"), "utf8")) as { version: string }
  ).version;
  const cacheFile = join(contractsDir, "out", `morpho-blue-${version}-solc-${solcVersion}.json`);
  if (existsSync(cacheFile)) return JSON.parse(readFileSync(cacheFile, "utf8")) as MorphoArtifacts;
  const solc = require("solc-0.8.19") as {
    compile(input: string, opts: { import: (p: string) => { contents: string } | { error: string } }): string;
    version(): string;
  };
  if (!solc.version().startsWith(`${solcVersion}+`)) {
    throw new Error(`solc-0.8.19 reports version ${solc.version()}, its package.json ${solcVersion}`);
  }
  const srcDir = join(pkgDir, "src");
  const sources = Object.fromEntries(
    MORPHO_SOURCES.map((f) => [f, { content: readFileSync(join(srcDir, f), "utf8") }]),
  );
  const input = {
    language: "Solidity",
    sources,
    settings: {
      optimizer: { enabled: true, runs: 999999 },
      evmVersion: "paris",
      outputSelection: { "*": { "*": ["abi", "evm.bytecode.object"] } },
    },
  };
  const findImport = (p: string) => {
    const f = join(srcDir, p);
    return existsSync(f) ? { contents: readFileSync(f, "utf8") } : { error: `import not found: ${p}` };
  };
  const out = JSON.parse(solc.compile(JSON.stringify(input), { import: findImport })) as {
    errors?: { severity: string; formattedMessage: string }[];
    contracts: Record<string, Record<string, { abi: Abi; evm: { bytecode: { object: string } } }>>;
  };
  const errors = (out.errors ?? []).filter((e) => e.severity === "error");
  if (errors.length > 0) throw new Error(`solc ${solc.version()}: ${errors.map((e) => e.formattedMessage).join("\n")}`);
  const pick = (file: string, name: string): Artifact => {
    const c = out.contracts[file]?.[name];
    if (!c) throw new Error(`solc output lacks ${file}:${name}`);
    return { abi: c.abi, bytecode: `0x${c.evm.bytecode.object}` };
  };
  const result: MorphoArtifacts = {
    Morpho: pick("Morpho.sol", "Morpho"),
    IrmMock: pick("mocks/IrmMock.sol", "IrmMock"),
    OracleMock: pick("mocks/OracleMock.sol", "OracleMock"),
  };
  mkdirSync(dirname(cacheFile), { recursive: true });
  writeFileSync(cacheFile, JSON.stringify(result));
  return result;
}
