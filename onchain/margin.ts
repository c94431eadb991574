/**
 * A subaccount's money on the perp side (contracts/src/CoreLedger.sol, PerpBridge.sol):
 *
 * - its balances on the core ledger, what the relayer credited it for its bridge deposits, per
 *   destination (perp or spot margin), source chain and source token, read with the ledger's
 *   `balances` at the block read (a credit after that block does not count);
 * - its deposits in transit: made on a bridge, not yet credited (nor rejected) on the core ledger
 *   at the block read. The tokens have left the account and are its own on the core side once
 *   credited; a rejected deposit is lost (below the bridge's minimum).
 *
 * Both are part of its value, priced with the source token's feed on its source chain. The
 * deposits come from the indexer (db/perp-deposits.ts), completed against each bridge's nonce
 * at the block read when the indexer has not caught up.
 */
import { type Address, type Hex, type PublicClient, parseAbi, parseAbiItem } from "viem";
import { multicallEach } from "../config/multicall3.js";
import type { PerpDeposit, PerpKey } from "../db/perp-deposits.js";
import { logsInRange } from "./logs.js";

export type { PerpDeposit, PerpKey };

export interface MarginBalance {
  /** the chain of the bridge the deposit was made on, and its token there */
  chainId: number;
  token: Address;
  destination: "perp" | "spot";
  raw: bigint;
}

/** A ledger balance's key: source chain, source token, destination (0 perp, 1 spot). */
export interface MarginKey {
  chainId: bigint;
  token: Address;
  destination: number;
}

const LEDGER = parseAbi([
  "function balances(address account, uint8 destination, uint256 chainId, address token) view returns (uint256)",
  "function status(bytes32 coreHash) view returns (uint8)",
]);
const BRIDGE = parseAbi(["function nonces(address depositor) view returns (uint256)"]);
const DEPOSITED = parseAbiItem(
  "event Deposited(bytes32 indexed coreHash, address indexed depositor, address indexed token, uint256 amount, uint8 destination, uint256 nonce)",
);

/**
 * The distinct ledger keys of `keys`: its deposits' (the relayer credits a deposit to its
 * depositor under its chain, token and destination) and its credits'.
 */
export function marginKeysOf(keys: readonly PerpKey[]): MarginKey[] {
  const out = new Map<string, MarginKey>();
  for (const d of keys) {
    const destination = d.destination === "spot" ? 1 : 0;
    out.set(`${d.chainId}:${d.token}:${destination}`, { chainId: BigInt(d.chainId), token: d.token, destination });
  }
  return [...out.values()];
}

/** The non-zero balances of `account` on `ledger` at `blockNumber`, of `keys`. */
export async function readMargin(
  client: PublicClient,
  ledger: Address,
  account: Address,
  blockNumber: bigint,
  keys: readonly MarginKey[],
): Promise<MarginBalance[]> {
  if (keys.length === 0) return [];
  // a call that fails (the ledger not yet deployed at that block) is no balance
  const res = await multicallEach(client, {
    blockNumber,
    contracts: keys.map((k) => ({
      address: ledger,
      abi: LEDGER,
      functionName: "balances",
      args: [account, k.destination, k.chainId, k.token],
    })),
  });
  return keys
    .map((k, i) => ({
      chainId: Number(k.chainId),
      token: k.token.toLowerCase() as Address,
      destination: k.destination === 1 ? ("spot" as const) : ("perp" as const),
      raw: res[i]?.status === "success" ? (res[i]!.result as bigint) : 0n,
    }))
    .filter((m) => m.raw > 0n)
    .sort(byLedgerKey);
}

/** Balances in their keys' order: source chain, token, destination. */
export const byLedgerKey = (a: MarginBalance, b: MarginBalance) =>
  a.chainId - b.chainId || a.token.localeCompare(b.token) || a.destination.localeCompare(b.destination);

/** A ledger key as text, to compare or name keys. */
export const keyText = (k: MarginKey) => `${k.chainId}:${k.token.toLowerCase()}:${k.destination}`;

/**
 * Every deposit of `account` through `bridges` (on chain `chainId`) up to `blockNumber`: the
 * indexed ones, and when a bridge's nonce at the block counts more, the rest from its
 * `Deposited` logs after the last indexed one (the indexer behind the chain).
 */
export async function readDeposits(
  client: PublicClient,
  chainId: number,
  bridges: readonly Address[],
  account: Address,
  blockNumber: bigint,
  indexed: readonly PerpDeposit[],
): Promise<PerpDeposit[]> {
  const lower = bridges.map((b) => b.toLowerCase() as Address);
  const known = indexed.filter(
    (d) => d.chainId === chainId && d.blockNumber <= blockNumber && lower.includes(d.bridge),
  );
  // a bridge not deployed at that block has had no deposit
  const nonces = await multicallEach(client, {
    blockNumber,
    contracts: lower.map((b) => ({ address: b, abi: BRIDGE, functionName: "nonces", args: [account] })),
  });
  const out = [...known];
  await Promise.all(
    lower.map(async (bridge, i) => {
      const n = nonces[i]?.status === "success" ? (nonces[i]!.result as bigint) : 0n;
      const mine = known.filter((d) => d.bridge === bridge);
      if (BigInt(mine.length) >= n) return;
      // biome-ignore lint/complexity/useMathMinMax: bigints, which Math.max does not take
      const fromBlock = mine.reduce((m, d) => (d.blockNumber > m ? d.blockNumber : m), 0n);
      const read = (a: bigint, b: bigint) =>
        client.getLogs({ address: bridge, event: DEPOSITED, args: { depositor: account }, fromBlock: a, toBlock: b });
      const logs = await logsInRange(read, fromBlock, blockNumber);
      const seen = new Set(mine.map((d) => d.coreHash));
      for (const l of logs) {
        const hash = l.args.coreHash!.toLowerCase() as Hex;
        if (seen.has(hash)) continue;
        out.push({
          chainId,
          bridge,
          token: l.args.token!.toLowerCase() as Address,
          destination: l.args.destination === 1 ? "spot" : "perp",
          raw: l.args.amount!,
          coreHash: hash,
          blockNumber: l.blockNumber!,
          answeredAt: null,
        });
      }
    }),
  );
  return out;
}

/** Of `deposits`, those without an indexed answer at or before `blockNumber` (the ledger's chain's). */
export const unansweredAt = (deposits: readonly PerpDeposit[], blockNumber: bigint) =>
  deposits.filter((d) => d.answeredAt == null || d.answeredAt > blockNumber);

/**
 * Of `deposits`, those `ledger` had neither credited nor rejected at `blockNumber` (its chain's
 * block): the ones without an indexed answer at or before it, checked with the ledger's `status`.
 */
export async function readInTransit(
  client: PublicClient,
  ledger: Address,
  deposits: readonly PerpDeposit[],
  blockNumber: bigint,
): Promise<PerpDeposit[]> {
  const open = unansweredAt(deposits, blockNumber);
  if (open.length === 0) return [];
  // a failed call (the ledger not yet deployed at that block) is no answer
  const res = await multicallEach(client, {
    blockNumber,
    contracts: open.map((d) => ({ address: ledger, abi: LEDGER, functionName: "status", args: [d.coreHash] })),
  });
  return open.filter((_, i) => res[i]?.status !== "success" || Number(res[i]!.result) === 0);
}
