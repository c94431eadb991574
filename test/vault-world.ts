/**
 * A fresh chain with vaults the service has never seen, for `npm run vaults` tests: an asset, a
 * LendingPool and a TokenizedVaultV2 from contracts/src, a plain OpenZeppelin ERC-4626 vault
 * (compiled here: a test-only contract), a token that is no vault, and deposits into each.
 */
import { createRequire } from "node:module";
import { join } from "node:path";
import { type Abi, type Address, encodeDeployData, encodeFunctionData, type Hex, parseAbi } from "viem";
import { ChainSession } from "../contracts/devnet/session.js";
import { MULTICALL3_ADDRESS } from "../contracts/devnet/simulate.js";
import { REPO_ROOT } from "../scripts/lib/indexer.js";

const require = createRequire(import.meta.url);

/** OpenZeppelin's ERC4626 as published, nothing added: what "any ERC-4626 vault" means here. */
const PLAIN_4626 = `// SPDX-License-Identifier: MIT
pragma solidity ^0.8.24;
import {IERC20} from "@openzeppelin/contracts/token/ERC20/IERC20.sol";
import {ERC20} from "@openzeppelin/contracts/token/ERC20/ERC20.sol";
import {ERC4626} from "@openzeppelin/contracts/token/ERC20/extensions/ERC4626.sol";
contract PlainERC4626 is ERC4626 {
    constructor(IERC20 asset_) ERC20("Plain Yield Vault", "pYV") ERC4626(asset_) {}
}`;

let plain: { abi: Abi; bytecode: Hex } | undefined;
function plain4626(): { abi: Abi; bytecode: Hex } {
  if (plain) return plain;
  const solc = require("solc") as { compile(input: string, o: { import: (p: string) => unknown }): string };
  const fs = require("node:fs") as typeof import("node:fs");
  const input = {
    language: "Solidity",
    sources: { "PlainERC4626.sol": { content: PLAIN_4626 } },
    settings: { optimizer: { enabled: true, runs: 200 }, outputSelection: { "*": { "*": ["abi", "evm.bytecode"] } } },
  };
  const out = JSON.parse(
    solc.compile(JSON.stringify(input), {
      import: (p: string) => {
        const f = join(REPO_ROOT, "node_modules", p);
        return fs.existsSync(f) ? { contents: fs.readFileSync(f, "utf8") } : { error: `not found: ${p}` };
      },
    }),
  ) as {
    errors?: { severity: string; formattedMessage: string }[];
    contracts: Record<string, Record<string, { abi: Abi; evm: { bytecode: { object: string } } }>>;
  };
  const errors = (out.errors ?? []).filter((e) => e.severity === "error");
  if (errors.length) throw new Error(errors.map((e) => e.formattedMessage).join("\n"));
  const c = out.contracts["PlainERC4626.sol"]!.PlainERC4626!;
  plain = { abi: c.abi, bytecode: `0x${c.evm.bytecode.object}` };
  return plain;
}

export interface VaultWorld {
  chainId: number;
  rpcUrl: string;
  deployer: Address;
  asset: Address;
  /** a contract that is no vault (the asset itself is one too) */
  token: Address;
  lendingPool: { address: Address; block: number; timelock: Address; timelockBlock: number };
  vaultV2: { address: Address; block: number; receiptToken: Address };
  erc4626: { address: Address; block: number };
  /** every deposit made, per vault address */
  deposits: { vault: Address; wallet: Address; assets: bigint; block: number }[];
}

const ERC20 = parseAbi(["function approve(address, uint256) returns (bool)"]);
const ERC4626 = parseAbi(["function deposit(uint256 assets, address receiver) returns (uint256)"]);

/**
 * Deploys the world on the (fresh) chain behind `rpcUrl`, with padding blocks between the steps
 * (so each contract's deployment block is neither the first nor the last), then `wallets`
 * deposits into each vault.
 */
export async function deployVaultWorld(chainId: number, rpcUrl: string, wallets = 3): Promise<VaultWorld> {
  const s = new ChainSession(chainId, rpcUrl);
  // a deployer per chain: the same one would deploy the same addresses on every chain
  const deployer = `0x${"0".repeat(32)}d0${chainId.toString(16).padStart(6, "0")}` as Address;
  const pad = async (n: number) => s.mineAt(Array.from({ length: n }, () => 0));
  await s.syncClock();
  await pad(5);
  // Multicall3 at its canonical address: the indexer batches its reads through it
  const mc = await s.deploy(deployer, "Multicall3", []);
  await s.rpc("anvil_setCode", [MULTICALL3_ADDRESS, await s.rpc<Hex>("eth_getCode", [mc, "latest"])]);
  const asset = await s.deploy(deployer, "MockERC20", ["Test Dollar", "tUSD", 6]);
  const token = await s.deploy(deployer, "MockERC20", ["Not A Vault", "NAV", 18]);
  // the pool is governed by a timelock (its owner), as the original's are
  const timelock = await s.deploy(deployer, "TimelockController", [60n, [deployer], [deployer], deployer]);
  const timelockBlock = await s.blockNumber();
  // more than 64 blocks: the roles its constructor grants are before any default look-back
  await pad(70);
  const lp = await s.deploy(deployer, "LendingPool", [
    asset,
    "Fresh Lending Pool",
    "fLP",
    timelock,
    deployer,
    deployer,
    86_400n,
    500n,
    10n,
    100n,
    0n,
  ]);
  const lpBlock = await s.blockNumber();
  await pad(11);
  const v2 = await s.deploy(deployer, "TokenizedVaultV2", [
    asset,
    "Fresh Vault V2",
    "fV2",
    deployer,
    deployer,
    deployer,
    86_400n,
    500n,
    150n,
    1000n,
    0n,
  ]);
  const v2Block = await s.blockNumber();
  const receiptToken = (await s.read("TokenizedVaultV2", v2, "lpTokenAddress", [])) as Address;
  await pad(13);
  const p = plain4626();
  const plainReceipt = await s.send(
    deployer,
    null,
    encodeDeployData({ abi: p.abi, bytecode: p.bytecode, args: [asset] }),
    "deploy PlainERC4626",
  );
  const erc4626 = plainReceipt.contractAddress!.toLowerCase() as Address;
  const erc4626Block = Number(BigInt(plainReceipt.blockNumber));
  await pad(3);

  const deposits: VaultWorld["deposits"] = [];
  for (let i = 1; i <= wallets; i++) {
    const wallet = `0x00000000000000000000000000000000000a11${i.toString(16).padStart(2, "0")}` as Address;
    const assets = BigInt(i) * 1_000_000_000n; // i × 1000 tUSD
    await s.call(deployer, "MockERC20", asset, "mint", [wallet, assets * 3n]);
    await s.call(wallet, "MockERC20", asset, "approve", [lp, assets]);
    await s.call(wallet, "LendingPool", lp, "deposit", [assets, wallet]);
    deposits.push({ vault: lp.toLowerCase() as Address, wallet, assets, block: await s.blockNumber() });
    await s.call(wallet, "MockERC20", asset, "approve", [v2, assets]);
    await s.call(wallet, "TokenizedVaultV2", v2, "deposit", [asset, assets, wallet]);
    deposits.push({ vault: v2.toLowerCase() as Address, wallet, assets, block: await s.blockNumber() });
    await s.send(wallet, asset, encodeCall(ERC20, "approve", [erc4626, assets]), "approve");
    await s.send(wallet, erc4626, encodeCall(ERC4626, "deposit", [assets, wallet]), "deposit");
    deposits.push({ vault: erc4626, wallet, assets, block: await s.blockNumber() });
  }
  await pad(3);
  return {
    chainId,
    rpcUrl,
    deployer,
    asset: asset.toLowerCase() as Address,
    token: token.toLowerCase() as Address,
    lendingPool: {
      address: lp.toLowerCase() as Address,
      block: lpBlock,
      timelock: timelock.toLowerCase() as Address,
      timelockBlock,
    },
    vaultV2: {
      address: v2.toLowerCase() as Address,
      block: v2Block,
      receiptToken: receiptToken.toLowerCase() as Address,
    },
    erc4626: { address: erc4626, block: erc4626Block },
    deposits,
  };
}

function encodeCall(abi: Abi, functionName: string, args: readonly unknown[]): Hex {
  return encodeFunctionData({ abi, functionName, args } as Parameters<typeof encodeFunctionData>[0]);
}
