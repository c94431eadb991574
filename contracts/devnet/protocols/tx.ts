/**
 * Deploying and calling contracts known only by a runtime ABI, on a ChainSession (the devnet's
 * transaction sender: impersonated senders, one transaction a block, reverts thrown with reason).
 */
import {
  type Abi,
  type Address,
  concatHex,
  decodeFunctionResult,
  encodeDeployData,
  encodeFunctionData,
  getAddress,
  getContractAddress,
  type Hex,
  keccak256,
  toHex,
} from "viem";
import type { ChainSession } from "../session.js";
import type { Artifact } from "./artifacts.js";

/** Arachnid's deterministic deployment proxy, pre-deployed on anvil (and on most chains). */
export const CREATE2_DEPLOYER: Address = "0x4e59b44847b379578588920ca78fbf26c0b4956c";

export interface Ctx {
  s: ChainSession;
  /** the deployer and default sender */
  from: Address;
}

/** Deploys with CREATE from `ctx.from`; `bytecode` overrides the artifact's (linked code). */
export async function deploy(ctx: Ctx, a: Artifact, args: readonly unknown[], what: string, bytecode?: Hex) {
  const data = encodeDeployData({ abi: a.abi, bytecode: bytecode ?? a.bytecode, args: args as unknown[] });
  const receipt = await ctx.s.send(ctx.from, null, data, `deploy ${what}`);
  if (!receipt.contractAddress) throw new Error(`deploy ${what}: no contract address`);
  return getAddress(receipt.contractAddress);
}

/** The address CREATE2 through the deterministic deployer gives `initCode` under `salt`. */
export function create2Address(initCode: Hex, salt: Hex): Address {
  return getContractAddress({ opcode: "CREATE2", from: CREATE2_DEPLOYER, salt, bytecode: initCode });
}

/** A readable 32-byte salt. */
export function salt(label: string): Hex {
  return keccak256(toHex(label));
}

/**
 * Deploys through the deterministic deployer: the same code and salt give the same address on
 * every chain. Already deployed (same chain, same inputs): nothing is sent.
 */
export async function deployCreate2(
  ctx: Ctx,
  a: Artifact,
  args: readonly unknown[],
  label: string,
): Promise<{ address: Address; sent: boolean }> {
  const initCode = encodeDeployData({ abi: a.abi, bytecode: a.bytecode, args: args as unknown[] });
  const s32 = salt(label);
  const address = create2Address(initCode, s32);
  const code = await ctx.s.rpc<Hex>("eth_getCode", [address, "latest"]);
  if (code !== "0x") return { address, sent: false };
  const deployerCode = await ctx.s.rpc<Hex>("eth_getCode", [CREATE2_DEPLOYER, "latest"]);
  if (deployerCode === "0x") throw new Error(`chain ${ctx.s.chainId}: no CREATE2 deployer at ${CREATE2_DEPLOYER}`);
  await ctx.s.send(ctx.from, CREATE2_DEPLOYER, concatHex([s32, initCode]), `create2 ${label}`);
  if ((await ctx.s.rpc<Hex>("eth_getCode", [address, "latest"])) === "0x") {
    throw new Error(`create2 ${label}: nothing deployed at ${address}`);
  }
  return { address, sent: true };
}

export async function write(
  ctx: Ctx,
  to: Address,
  abi: Abi,
  functionName: string,
  args: readonly unknown[],
  from: Address = ctx.from,
) {
  const data = encodeFunctionData({ abi, functionName, args: args as unknown[] });
  return ctx.s.send(from, to, data, `${functionName} on ${to}`);
}

export async function read<T>(ctx: Ctx, to: Address, abi: Abi, functionName: string, args: readonly unknown[] = []) {
  const data = encodeFunctionData({ abi, functionName, args: args as unknown[] });
  const ret = await ctx.s.rpc<Hex>("eth_call", [{ to, data }, "latest"]);
  return decodeFunctionResult({ abi, functionName, data: ret }) as T;
}

/** eth_call from a sender, for the return value of a transaction before sending it. */
export async function simulate<T>(
  ctx: Ctx,
  to: Address,
  abi: Abi,
  functionName: string,
  args: readonly unknown[],
  from: Address = ctx.from,
) {
  const data = encodeFunctionData({ abi, functionName, args: args as unknown[] });
  const ret = await ctx.s.rpc<Hex>("eth_call", [{ from, to, data }, "latest"]);
  return decodeFunctionResult({ abi, functionName, data: ret }) as T;
}

/** A minimal ERC-20 ABI (our MockERC20 adds `mint`). */
export const ERC20_ABI = [
  {
    type: "function",
    name: "approve",
    stateMutability: "nonpayable",
    inputs: [
      { name: "spender", type: "address" },
      { name: "amount", type: "uint256" },
    ],
    outputs: [{ type: "bool" }],
  },
  {
    type: "function",
    name: "transfer",
    stateMutability: "nonpayable",
    inputs: [
      { name: "to", type: "address" },
      { name: "amount", type: "uint256" },
    ],
    outputs: [{ type: "bool" }],
  },
  {
    type: "function",
    name: "mint",
    stateMutability: "nonpayable",
    inputs: [
      { name: "to", type: "address" },
      { name: "amount", type: "uint256" },
    ],
    outputs: [],
  },
  {
    type: "function",
    name: "balanceOf",
    stateMutability: "view",
    inputs: [{ name: "account", type: "address" }],
    outputs: [{ type: "uint256" }],
  },
  {
    type: "function",
    name: "allowance",
    stateMutability: "view",
    inputs: [
      { name: "owner", type: "address" },
      { name: "spender", type: "address" },
    ],
    outputs: [{ type: "uint256" }],
  },
] as const satisfies Abi;

export const PRICE_FEED_ABI = [
  {
    type: "function",
    name: "latestAnswer",
    stateMutability: "view",
    inputs: [],
    outputs: [{ type: "int256" }],
  },
] as const satisfies Abi;

export const MAX_UINT256 = 2n ** 256n - 1n;
