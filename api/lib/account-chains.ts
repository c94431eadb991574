/**
 * An account's state on every chain (positions, loans, perp balances and deposits in transit),
 * read live at each chain's head and shared by every request at that head (chain-reads.ts): the
 * subaccount routes' health factor and summary, and the builders' check of a subaccount's
 * min_health_factor (build/health-floor.ts).
 */
import type { Address } from "viem";
import type { IndexedLoans } from "../../db/loan-parties.js";
import { indexedPerp } from "../../db/perp-deposits.js";
import { incentiveSeed } from "../../db/staker-incentives.js";
import { indexedPositionIds } from "../../db/uniswap-positions.js";
import { keyText, readInTransit, readMargin, unansweredAt } from "../../onchain/margin.js";
import {
  type ChainState,
  type MarginReader,
  readChainState,
  type TransitReader,
  withInTransit,
} from "../../onchain/valuation.js";
import { type ChainReads, objectKey } from "./chain-reads.js";
import type { ReadDb } from "./db.js";
import { chainClient, chainProtocols, NoRpc } from "./protocols.js";

/**
 * The account's state on every chain that has a protocols entry, read at each chain's head
 * (shared through `reads` with the other requests at that head), with its perp deposits in
 * transit on the ledger's chain. A chain without an RPC throws NoRpc.
 */
export async function readChains(
  db: ReadDb,
  indexerSchema: string,
  reads: ChainReads,
  rpcUrls: ReadonlyMap<number, string>,
  account: { address: string; loans: IndexedLoans },
): Promise<ChainState[]> {
  const catalogue = await chainProtocols(db);
  // a subaccount has the same address on every chain (one cross-chain account): it is read on
  // every chain with a protocols entry, not only those of the vaults it is registered with
  const chains = [...catalogue.keys()].sort((a, b) => a - b);
  for (const chainId of chains) if (!rpcUrls.has(chainId)) throw new NoRpc(chainId);
  const address = account.address as Address;
  const [perp, uniswapIds] = await Promise.all([
    reads.recent(`perp:${address}`, () => indexedPerp(db, indexerSchema, address)),
    reads.recent(`uniswap-ids:${address}`, () => indexedPositionIds(db, indexerSchema, address, chains)),
  ]);
  // the reads depend on what is indexed: a new deposit, answer, credit key or pool loan is a new key
  const answered = perp.deposits.filter((d) => d.answeredAt != null).length;
  const indexed = `${perp.deposits.length}:${answered}:${perp.credits.length}`;
  const client = (chainId: number) => chainClient(rpcUrls.get(chainId)!);
  const read = await Promise.all(
    chains.map(async (chainId) => {
      const url = rpcUrls.get(chainId)!;
      const entry = catalogue.get(chainId)!;
      const pool = account.loans.poolBorrowed.get(chainId) ?? [];
      const ids = uniswapIds.get(chainId) ?? [];
      const key = `state:${address}:${objectKey(entry)}:${indexed}:${pool.join(",")}:${ids.join(",")}`;
      const hints = { uniswapIds: ids, incentives: incentiveSeed(db, indexerSchema, chainId, entry.uniswap?.staker) };
      const at = (head: { number: bigint; timestamp: bigint }) =>
        readChainState(client(chainId), entry, address, head, perp, pool, hints);
      return { chainId, url, ...(await reads.atHead(url, client(chainId), key, at)) };
    }),
  );
  // the ledger's answers to the deposits still open at its head: read once per head and list
  const transit: TransitReader = (chainId, ledger, deposits, blockNumber) => {
    const r = read.find((x) => x.chainId === chainId)!;
    const open = unansweredAt(deposits, blockNumber);
    const key = `transit:${ledger}:${open.map((d) => d.coreHash).join(",")}`;
    return reads.at(r.url, r.head, key, () => readInTransit(client(chainId), ledger, open, blockNumber));
  };
  // the balances of ledger keys only the bridges' logs named (the indexer behind): once per head
  const margin: MarginReader = (chainId, ledger, owner, keys, blockNumber) => {
    const r = read.find((x) => x.chainId === chainId)!;
    const key = `margin:${ledger}:${owner}:${keys.map(keyText).join(",")}`;
    return reads.at(r.url, r.head, key, () => readMargin(client(chainId), ledger, owner, blockNumber, keys));
  };
  return withInTransit(
    read.map((x) => x.value),
    transit,
    margin,
  );
}
