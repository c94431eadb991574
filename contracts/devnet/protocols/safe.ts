/**
 * Safe (@safe-global/safe-smart-account 1.5.0) through the deterministic CREATE2 deployer, so its
 * contracts, and every subaccount created with the same inputs, have the same address on every
 * chain; and subaccounts: a Safe whose only module is our SubaccountModule.
 */
import {
  type Abi,
  type Address,
  concatHex,
  encodeFunctionData,
  getAddress,
  type Hex,
  keccak256,
  pad,
  toFunctionSelector,
  toHex,
} from "viem";
import { type Artifact, safe130, safe as safeArtifacts, subaccountModule } from "./artifacts.js";
import { type Ctx, deployCreate2, read, simulate, write } from "./tx.js";

export interface SafeDeployment {
  singletonL2: Address;
  proxyFactory: Address;
  fallbackHandler: Address;
  multiSendCallOnly: Address;
  version: string;
}

const ZERO: Address = "0x0000000000000000000000000000000000000000";

/**
 * Deploys the Safe contracts of a release (idempotent: what is already there is kept): 1.5.0, the
 * devnet's, or 1.3.0 (the tests' older Safe; its own CREATE2 salts, so both can be on a chain).
 */
export async function deploySafe(ctx: Ctx, release: "1.5.0" | "1.3.0" = "1.5.0"): Promise<SafeDeployment> {
  const [a, salt] = release === "1.5.0" ? [safeArtifacts, "vaults.safe"] : [safe130, "vaults.safe-1.3.0"];
  const deploy = async (artifact: Artifact, name: string) =>
    (await deployCreate2(ctx, artifact, [], `${salt}.${name}`)).address;
  const singletonL2 = await deploy(a.singletonL2(), "SafeL2");
  const proxyFactory = await deploy(a.proxyFactory(), "SafeProxyFactory");
  const fallbackHandler = await deploy(a.fallbackHandler(), "CompatibilityFallbackHandler");
  const multiSendCallOnly = await deploy(a.multiSendCallOnly(), "MultiSendCallOnly");
  const version = await read<string>(ctx, singletonL2, a.singletonL2().abi, "VERSION");
  return { singletonL2, proxyFactory, fallbackHandler, multiSendCallOnly, version };
}

/** A call allow-list entry of a subaccount: a target and the selectors it may be called with. */
export interface AllowedCall {
  target: Address;
  /** function signatures, e.g. "exactInputSingle((address,address,uint24,address,uint256,uint256,uint256,uint160))" */
  signatures: string[];
}

export interface SubaccountOptions {
  /** names the subaccount; the same label (and owner) gives the same address on every chain */
  label: string;
  /** the Safe's sole owner and the module's OWNER (the vault's governance) */
  owner: Address;
  trader: Address;
  relayer?: Address;
  /** where withdrawToVault sends funds */
  vault?: Address;
  tokens: Address[];
  calls: AllowedCall[];
}

export interface Subaccount {
  label: string;
  safe: Address;
  module: Address;
  owner: Address;
  trader: Address;
  relayer: Address | null;
  vault: Address | null;
  saltNonce: string;
  tokens: Address[];
  calls: { target: Address; selectors: Hex[]; signatures: string[] }[];
}

/** The createProxyWithNonce salt of a Safe named `label`. */
export function subaccountSaltNonce(label: string): bigint {
  return BigInt(keccak256(toHex(`vaults.safe:${label}`)));
}

/**
 * A pre-validated signature (r = owner, s = 0, v = 1): valid when the owner itself sends the
 * transaction.
 */
export function prevalidatedSignature(owner: Address): Hex {
  return concatHex([pad(owner, { size: 32 }), pad("0x00", { size: 32 }), "0x01"]);
}

/**
 * Sends `data` to `to` from the Safe by execTransaction, sent by (and signed as) its owner; a call,
 * or a delegatecall (operation 1: a migration library's code run as the Safe's).
 */
export async function execAsOwner(ctx: Ctx, safe: Address, owner: Address, to: Address, data: Hex, operation = 0) {
  const abi = safeArtifacts.singletonL2().abi;
  return write(
    ctx,
    safe,
    abi,
    "execTransaction",
    [to, 0n, data, operation, 0n, 0n, 0n, ZERO, ZERO, prevalidatedSignature(owner)],
    owner,
  );
}

const ROLE = (name: string) => keccak256(toHex(name));

export interface SafeOptions {
  /** names the Safe; the same label, owners and threshold give the same address on every chain */
  label: string;
  owners: Address[];
  threshold: number;
}

/** A Safe proxy (SafeL2, the compatibility fallback handler) by createProxyWithNonce, salt from the label. */
export async function createSafe(ctx: Ctx, safe: SafeDeployment, opts: SafeOptions): Promise<Address> {
  const factoryAbi = safeArtifacts.proxyFactory().abi;
  const initializer = encodeFunctionData({
    abi: safeArtifacts.singletonL2().abi,
    functionName: "setup",
    args: [opts.owners, BigInt(opts.threshold), ZERO, "0x", safe.fallbackHandler, ZERO, 0n, ZERO],
  });
  const args = [safe.singletonL2, initializer, subaccountSaltNonce(opts.label)] as const;
  const address = getAddress(await simulate<Address>(ctx, safe.proxyFactory, factoryAbi, "createProxyWithNonce", args));
  await write(ctx, safe.proxyFactory, factoryAbi, "createProxyWithNonce", args);
  return address;
}

/**
 * Creates a subaccount Safe (createProxyWithNonce, salt from the label), deploys its
 * SubaccountModule through CREATE2, enables it as the Safe's only module, and sets roles and
 * allow-lists. Same inputs on another chain with the same Safe deployment: same addresses.
 */
export async function createSubaccount(ctx: Ctx, safe: SafeDeployment, opts: SubaccountOptions): Promise<Subaccount> {
  const safeAbi = safeArtifacts.singletonL2().abi;
  const saltNonce = subaccountSaltNonce(opts.label);
  const safeAddress = await createSafe(ctx, safe, { label: opts.label, owners: [opts.owner], threshold: 1 });

  const moduleA = subaccountModule();
  const module = (
    await deployCreate2(ctx, moduleA, [safeAddress, opts.owner], `vaults.subaccount-module:${safeAddress}`)
  ).address;
  await execAsOwner(
    ctx,
    safeAddress,
    opts.owner,
    safeAddress,
    encodeFunctionData({ abi: safeAbi, functionName: "enableModule", args: [module] }),
  );

  const m = moduleA.abi as Abi;
  await write(ctx, module, m, "grantRole", [ROLE("TRADER"), opts.trader], opts.owner);
  if (opts.relayer) await write(ctx, module, m, "grantRole", [ROLE("RELAYER"), opts.relayer], opts.owner);
  if (opts.vault) await write(ctx, module, m, "setVault", [opts.vault], opts.owner);
  if (opts.tokens.length > 0) await write(ctx, module, m, "setTokens", [opts.tokens, true], opts.owner);
  const calls = opts.calls.map((c) => ({
    target: getAddress(c.target),
    selectors: c.signatures.map((sig) => toFunctionSelector(sig)),
    signatures: c.signatures,
  }));
  for (const c of calls) await write(ctx, module, m, "setCalls", [c.target, c.selectors, true], opts.owner);
  return {
    label: opts.label,
    safe: safeAddress,
    module,
    owner: getAddress(opts.owner),
    trader: getAddress(opts.trader),
    relayer: opts.relayer ? getAddress(opts.relayer) : null,
    vault: opts.vault ? getAddress(opts.vault) : null,
    saltNonce: saltNonce.toString(),
    tokens: opts.tokens.map((t) => getAddress(t)),
    calls,
  };
}
