/**
 * A subaccount's balances on the perp core ledger (contracts/src/CoreLedger.sol): what the
 * relayer credited it for its bridge deposits, per destination (perp or spot margin), source
 * chain and source token. The keys come from its `Credited` events (the depositor is indexed),
 * the amounts from the ledger's `balances` at the block read, so a credit after that block does
 * not count. The ledger holds them for the account: they are part of its value, priced with the
 * source token's feed on its source chain.
 */
import { type Address, type PublicClient, parseAbi, parseAbiItem } from "viem";
import { MULTICALL3 } from "./positions.js";

export interface MarginBalance {
  /** the chain of the bridge the deposit was made on, and its token there */
  chainId: number;
  token: Address;
  destination: "perp" | "spot";
  raw: bigint;
}

const CREDITED = parseAbiItem(
  "event Credited(bytes32 indexed coreHash, address indexed depositor, address indexed bridge, uint256 chainId, address token, uint256 amount, uint8 destination)",
);
const LEDGER = parseAbi([
  "function balances(address account, uint8 destination, uint256 chainId, address token) view returns (uint256)",
]);

/** What the ledger credited `account` with, by source chain, token and destination. */
export interface MarginKey {
  chainId: bigint;
  token: Address;
  destination: number;
}

/** The keys of every credit to `account` on `ledger` up to `toBlock` (its `Credited` events). */
export async function marginKeys(
  client: PublicClient,
  ledger: Address,
  account: Address,
  toBlock: bigint,
): Promise<MarginKey[]> {
  const logs = await client.getLogs({
    address: ledger,
    event: CREDITED,
    args: { depositor: account },
    fromBlock: 0n,
    toBlock,
  });
  const keys = new Map<string, MarginKey>();
  for (const l of logs) {
    const { chainId, token, destination } = l.args as MarginKey;
    keys.set(`${chainId}:${token.toLowerCase()}:${destination}`, { chainId, token, destination });
  }
  return [...keys.values()];
}

/**
 * The non-zero balances of `account` on `ledger` at `blockNumber`: of `keys` when given (read
 * once up to a later block, for a series of earlier blocks), else of its credits up to the block.
 */
export async function readMargin(
  client: PublicClient,
  ledger: Address,
  account: Address,
  blockNumber: bigint,
  keys?: readonly MarginKey[],
): Promise<MarginBalance[]> {
  const list = keys ?? (await marginKeys(client, ledger, account, blockNumber));
  if (list.length === 0) return [];
  // a call that fails (the ledger not yet deployed at that block) is no balance
  const res = await client.multicall({
    multicallAddress: MULTICALL3,
    blockNumber,
    allowFailure: true,
    contracts: list.map((k) => ({
      address: ledger,
      abi: LEDGER,
      functionName: "balances",
      args: [account, k.destination, k.chainId, k.token],
    })),
  });
  return list
    .map((k, i) => ({
      chainId: Number(k.chainId),
      token: k.token.toLowerCase() as Address,
      destination: k.destination === 1 ? ("spot" as const) : ("perp" as const),
      raw: res[i]?.status === "success" ? (res[i]!.result as bigint) : 0n,
    }))
    .filter((m) => m.raw > 0n)
    .sort(
      (a, b) => a.chainId - b.chainId || a.token.localeCompare(b.token) || a.destination.localeCompare(b.destination),
    );
}
