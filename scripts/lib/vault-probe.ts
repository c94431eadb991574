/**
 * What `npm run vaults -- add` learns from the chain about a contract: whether it is one, which
 * vault family it belongs to (by views only that family has), its asset, name, symbol and
 * decimals, and the block it was deployed in (a binary search on eth_getCode).
 */
import { type Address, type PublicClient, parseAbi } from "viem";
import type { EvmVault } from "../../config/registry.js";
import { firstBlockWhere, hasCode } from "../../src/module-logs.js";

export type VaultFamily = EvmVault["family"];

/** A refusal of the probe: the message is meant for the operator as it is. */
export class ProbeRefusal extends Error {}

const ERC20 = parseAbi([
  "function name() view returns (string)",
  "function symbol() view returns (string)",
  "function decimals() view returns (uint8)",
  "function totalSupply() view returns (uint256)",
]);
const ERC4626 = parseAbi([
  "function asset() view returns (address)",
  "function totalAssets() view returns (uint256)",
  "function convertToAssets(uint256 shares) view returns (uint256)",
]);
/** LendingPool.sol: a dated withdrawal queue (its epoch is a date) and its requirements per date. */
const LENDING_POOL = parseAbi([
  "function getWithdrawalEpoch() view returns (uint256 year, uint256 month, uint256 day, uint256 claimableEpoch)",
  "function getRequirementByDate(uint256 year, uint256 month, uint256 day) view returns (uint256)",
]);
/** TokenizedVaultV2.sol: shares are a separate receipt token; several deposit assets. */
const TOKENIZED_VAULT_V2 = parseAbi([
  "function lpTokenAddress() view returns (address)",
  "function getDepositAssets() view returns (address[])",
  "function getSharePrice() view returns (uint256)",
]);
/** Both original families' roles: operator, fee collector, owner (a timelock, when governed by one). */
const ROLES = parseAbi([
  "function operator() view returns (address)",
  "function feeCollector() view returns (address)",
  "function owner() view returns (address)",
]);
const TIMELOCK = parseAbi(["function getMinDelay() view returns (uint256)"]);

const lc = (a: string) => a.toLowerCase() as Address;

async function tryRead<T>(p: Promise<T>): Promise<T | undefined> {
  try {
    return await p;
  } catch {
    return undefined;
  }
}

/** The block the contract at `address` was deployed in, and its timestamp. */
export async function deploymentBlock(
  client: PublicClient,
  address: Address,
  head: bigint,
): Promise<{ block: number; timestamp: number }> {
  let block: bigint;
  try {
    block = await firstBlockWhere(head, (b) => hasCode(client, address, b));
  } catch (err) {
    throw new ProbeRefusal(
      `the RPC could not read the contract's code at an older block (${shortError(err)}); the deployment ` +
        "block is found with eth_getCode at past blocks, which needs an archive node: use one, or give --start-block",
    );
  }
  const b = await client.getBlock({ blockNumber: block });
  return { block: Number(block), timestamp: Number(b.timestamp) };
}

export function shortError(err: unknown): string {
  const e = err as { shortMessage?: string; message?: string };
  return (e?.shortMessage ?? e?.message ?? String(err)).split("\n")[0]!;
}

export interface Token {
  address: Address;
  symbol: string;
  decimals: number;
}

/** What the chain says about a vault: the registry entry's fields the chain can give. */
export interface ProbedVault {
  family: VaultFamily;
  name: string;
  symbol: string;
  decimals: number;
  asset: Token;
  totalAssets: bigint;
  totalSupply: bigint;
  receiptToken?: Address;
  altAsset?: Token;
  operator?: Address;
  feeCollector?: Address;
  timelock?: Address;
}

async function readToken(client: PublicClient, address: Address, what: string): Promise<Token> {
  const [symbol, decimals] = await Promise.all([
    tryRead(client.readContract({ address, abi: ERC20, functionName: "symbol" })),
    tryRead(client.readContract({ address, abi: ERC20, functionName: "decimals" })),
  ]);
  if (symbol == null || decimals == null) {
    throw new ProbeRefusal(`${what} ${address} does not answer symbol() and decimals() as an ERC-20 token`);
  }
  return { address: lc(address), symbol, decimals };
}

/** The vault's owner when it is a timelock (answers getMinDelay()), the governance the indexer follows. */
async function timelockOf(client: PublicClient, owner: Address | undefined): Promise<Address | undefined> {
  if (!owner || !(await hasCode(client, owner))) return undefined;
  const delay = await tryRead(client.readContract({ address: owner, abi: TIMELOCK, functionName: "getMinDelay" }));
  return delay == null ? undefined : lc(owner);
}

async function roles(client: PublicClient, address: Address) {
  const [operator, feeCollector, owner] = await Promise.all([
    tryRead(client.readContract({ address, abi: ROLES, functionName: "operator" })),
    tryRead(client.readContract({ address, abi: ROLES, functionName: "feeCollector" })),
    tryRead(client.readContract({ address, abi: ROLES, functionName: "owner" })),
  ]);
  const timelock = await timelockOf(client, owner);
  return {
    ...(operator ? { operator: lc(operator) } : {}),
    ...(feeCollector ? { feeCollector: lc(feeCollector) } : {}),
    ...(timelock ? { timelock } : {}),
  };
}

/** The ERC-4626 views (every family has them, or their equivalent): asset, totals, one share's worth. */
async function erc4626Views(client: PublicClient, address: Address, shareToken: Address, sharePrice?: bigint) {
  const [asset, totalAssets, totalSupply, decimals] = await Promise.all([
    tryRead(client.readContract({ address, abi: ERC4626, functionName: "asset" })),
    tryRead(client.readContract({ address, abi: ERC4626, functionName: "totalAssets" })),
    tryRead(client.readContract({ address: shareToken, abi: ERC20, functionName: "totalSupply" })),
    tryRead(client.readContract({ address: shareToken, abi: ERC20, functionName: "decimals" })),
  ]);
  if (asset == null || totalAssets == null || totalSupply == null || decimals == null) return undefined;
  const oneShare =
    sharePrice ??
    (await tryRead(
      client.readContract({ address, abi: ERC4626, functionName: "convertToAssets", args: [10n ** BigInt(decimals)] }),
    ));
  if (oneShare == null) return undefined;
  return { asset: lc(asset), totalAssets, totalSupply, decimals, oneShare };
}

/**
 * Recognises the vault at `address` (which must hold code): the original's families by their own
 * views first (LendingPool's dated withdrawal epoch, TokenizedVaultV2's receipt token and deposit
 * assets), else a plain ERC-4626 vault when asset(), totalAssets(), totalSupply() and
 * convertToAssets() answer and agree. Throws ProbeRefusal when it is none of them.
 */
export async function probeVault(client: PublicClient, address: Address): Promise<ProbedVault> {
  const epoch = await tryRead(client.readContract({ address, abi: LENDING_POOL, functionName: "getWithdrawalEpoch" }));
  if (epoch) {
    const [year, month, day] = epoch;
    const due = await tryRead(
      client.readContract({
        address,
        abi: LENDING_POOL,
        functionName: "getRequirementByDate",
        args: [year, month, day],
      }),
    );
    const views = due == null ? undefined : await erc4626Views(client, address, address);
    if (views) return withToken(client, address, "lendingPool", views, await roles(client, address));
  }
  const lpToken = await tryRead(
    client.readContract({ address, abi: TOKENIZED_VAULT_V2, functionName: "lpTokenAddress" }),
  );
  if (lpToken) {
    const [assets, price] = await Promise.all([
      tryRead(client.readContract({ address, abi: TOKENIZED_VAULT_V2, functionName: "getDepositAssets" })),
      tryRead(client.readContract({ address, abi: TOKENIZED_VAULT_V2, functionName: "getSharePrice" })),
    ]);
    // its shares are the receipt token, its share price getSharePrice() (it has no convertToAssets)
    const views = assets && price != null ? await erc4626Views(client, address, lpToken, price) : undefined;
    if (assets && views) {
      const extra: Partial<ProbedVault> = {
        receiptToken: lc(lpToken),
        ...(await roles(client, address)),
      };
      // a second deposit asset the vault accepts and holds (the registry's altAsset; no USD feed)
      const alt = assets.map(lc).find((a) => a !== views.asset);
      if (alt) extra.altAsset = await readToken(client, alt, "the vault's second deposit asset");
      return withToken(client, lpToken, "tokenizedVaultV2", views, extra);
    }
  }
  const views = await erc4626Views(client, address, address);
  if (!views) {
    throw new ProbeRefusal(
      "not a vault: it does not answer asset(), totalAssets(), totalSupply() and convertToAssets() as an " +
        "ERC-4626 vault, nor the views of a LendingPool or TokenizedVaultV2",
    );
  }
  if (!(await hasCode(client, views.asset))) {
    throw new ProbeRefusal(`not a vault: its asset() ${views.asset} is not a contract`);
  }
  if (!consistent(views)) {
    throw new ProbeRefusal(
      `not a vault: its views disagree (totalAssets ${views.totalAssets}, totalSupply ${views.totalSupply}, ` +
        `one share worth ${views.oneShare} assets)`,
    );
  }
  return withToken(client, address, "erc4626", views, {});
}

/**
 * An ERC-4626 vault's views agree when its shares are worth assets (a share worth nothing, while
 * shares exist, is no vault) and the supply at the quoted price is its total assets, within 0.1 %
 * (fees and rounding).
 */
export function consistent(v: {
  totalAssets: bigint;
  totalSupply: bigint;
  decimals: number;
  oneShare: bigint;
}): boolean {
  if (v.totalSupply === 0n) return v.oneShare > 0n;
  if (v.oneShare === 0n) return false;
  const implied = (v.totalSupply * v.oneShare) / 10n ** BigInt(v.decimals);
  const diff = implied > v.totalAssets ? implied - v.totalAssets : v.totalAssets - implied;
  return diff * 1000n <= v.totalAssets + 10n ** BigInt(v.decimals);
}

async function withToken(
  client: PublicClient,
  shareToken: Address,
  family: VaultFamily,
  views: { asset: Address; totalAssets: bigint; totalSupply: bigint; decimals: number },
  extra: Partial<ProbedVault>,
): Promise<ProbedVault> {
  const [name, symbol] = await Promise.all([
    tryRead(client.readContract({ address: shareToken, abi: ERC20, functionName: "name" })),
    tryRead(client.readContract({ address: shareToken, abi: ERC20, functionName: "symbol" })),
  ]);
  if (!symbol) throw new ProbeRefusal(`the vault's shares (${shareToken}) do not answer symbol()`);
  const asset = await readToken(client, views.asset, "the vault's asset");
  return {
    family,
    name: name || symbol,
    symbol,
    decimals: views.decimals,
    asset,
    totalAssets: views.totalAssets,
    totalSupply: views.totalSupply,
    ...extra,
  };
}
