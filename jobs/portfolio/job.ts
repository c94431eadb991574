/**
 * The portfolio job: reads every registered subaccount's positions at each chain's head
 * (onchain/positions.ts, one block per chain for all its subaccounts) and stores them in the
 * spec's portfolio-data shape (onchain/portfolio.ts), one row per chain, vault and subaccount,
 * through its writer. A chain without an RPC or a protocols entry keeps its earlier rows and is
 * reported as skipped.
 *
 * The chains are read side by side, each `lanes` subaccounts at a time (PORTFOLIO_READ_LANES; a
 * node far away costs its round trips once per lane, not once per subaccount in a row).
 * Each chain is read on its own: a chain that does not answer (an RPC error) holds back only its
 * own part. Every subaccount's data then keeps that chain's positions and tokens as the last read
 * left them (their items' `update_at` says when) beside the other chains' fresh ones; a subaccount
 * with no stored data yet gets no row until the chain answers. The chain is reported as unread
 * (the pass then fails the job, which BullMQ retries). With no chain answering, nothing is
 * written.
 */
import type { Address } from "viem";
import { getChain } from "../../config/chains.js";
import { readChainProtocols } from "../../db/chain-protocols.js";
import { incentiveSeed } from "../../db/staker-incentives.js";
import { indexedPositionIds } from "../../db/uniswap-positions.js";
import { blockAtOrBefore, deploymentTimes } from "../../onchain/blocks.js";
import { rpcClient } from "../../onchain/client.js";
import { type PortfolioContext, portfolioContracts, portfolioData } from "../../onchain/portfolio.js";
import { readPositions, readPrices } from "../../onchain/positions.js";
import { DEFAULT_READ_LANES, inTurn } from "../in-turn.js";
import type { Db } from "../repo.js";
import { type PortfolioRow, replacePortfolios } from "./portfolio-write.js";

type Part = Pick<ReturnType<typeof portfolioData>, "positions" | "tokens">;

/** One portfolio of several chains' parts: their positions and tokens side by side. */
function merge(parts: Part[]) {
  return {
    positions: parts.flatMap((p) => p.positions),
    app_positions: [],
    tokens: parts.flatMap((p) => p.tokens),
  };
}

/** The stored data's part of one chain (its positions and tokens name it), to keep it as it was. */
function storedPart(data: unknown, slug: string): Part {
  const d = (data ?? {}) as { positions?: { chain?: string }[]; tokens?: { chain?: string }[] };
  return {
    positions: (d.positions ?? []).filter((p) => p.chain === slug) as Part["positions"],
    tokens: (d.tokens ?? []).filter((t) => t.chain === slug) as Part["tokens"],
  };
}

const errText = (err: unknown) => (err instanceof Error ? err.message : String(err)).split("\n")[0]!;

export async function runPortfolio(
  db: Db,
  rpcUrls: ReadonlyMap<number, string>,
  indexerSchema = "indexer",
  /** subaccounts read at once on one chain */
  lanes = DEFAULT_READ_LANES,
) {
  const subs = await db
    .selectFrom("registry.subaccount")
    .select(["chain_id", "vault", "address"])
    .orderBy("chain_id")
    .orderBy("address")
    .execute();
  const protocols = await readChainProtocols(db);
  // a subaccount is one account on every chain: its data holds its positions on each chain with
  // protocols and an RPC, whichever vault (and chain) it is registered with
  const readable = [...protocols.keys()].filter((c) => rpcUrls.has(c)).sort((a, b) => a - b);
  const skipped = [...new Set(subs.map((s) => s.chain_id))]
    .filter((c) => !readable.includes(c))
    .map((c) => `${c}: ${rpcUrls.has(c) ? "no protocols entry" : "no RPC"}`);
  // a chain whose reads fail is left out of this run, with why
  const unread = new Map<number, string>();
  const heads = new Map<number, { number: bigint; timestamp: bigint }>();
  // each chain's catalogue prices a day before its head, for the tokens' 24 h change
  const dayAgo = new Map<number, Map<string, number | null>>();
  // the chains side by side: a slow node delays only its own chain's reads
  const eachChain = (f: (c: number) => Promise<void>) => Promise.all(readable.map(f));
  await eachChain(async (c) => {
    const client = rpcClient(rpcUrls.get(c)!);
    let head: { number: bigint; timestamp: bigint };
    try {
      head = await client.getBlock();
    } catch (err) {
      unread.set(c, errText(err));
      return;
    }
    heads.set(c, head);
    try {
      const then = await blockAtOrBefore(client, head.timestamp - 86_400n, head);
      if (then) dayAgo.set(c, await readPrices(client, protocols.get(c)!, then.number));
    } catch {
      // the block search or the price reads failed (an RPC error, or a node without the state
      // of a day ago: not an archive node): the 24 h changes stay null
    }
  });
  // each chain's positions of every subaccount, then the deployment times of what they show
  const addresses = [...new Set(subs.map((s) => s.address))];
  const parts = new Map<string, Part[]>(addresses.map((a) => [a, []]));
  // each subaccount's indexed Uniswap positions on every chain read, once
  const uniswapIds = new Map<string, Map<number, bigint[]>>();
  for (const a of addresses) uniswapIds.set(a, await indexedPositionIds(db, indexerSchema, a, readable));
  /** every subaccount's part of chain `c`, read at its head */
  async function readChain(c: number, head: { number: bigint; timestamp: bigint }) {
    const client = rpcClient(rpcUrls.get(c)!);
    const chainProtocols = protocols.get(c)!;
    const ctx: PortfolioContext = {
      dayAgo: dayAgo.get(c),
      aavePool: chainProtocols.aave?.pool ?? null,
      morpho: chainProtocols.morpho?.address ?? null,
      staker: chainProtocols.uniswap?.staker ?? null,
    };
    const read = await inTurn(addresses, lanes, (address) => {
      const ids = uniswapIds.get(address)!.get(c) ?? [];
      const incentives = incentiveSeed(db, indexerSchema, c, ctx.staker);
      return readPositions(client, chainProtocols, address as Address, head.number, { uniswapIds: ids, incentives });
    });
    const contracts = read.flatMap((positions) => portfolioContracts(positions, ctx));
    ctx.createdAt = await deploymentTimes(client, c, contracts, head.number);
    const slug = getChain(c)?.slug ?? String(c);
    return read.map((positions) => portfolioData(positions, slug, Number(head.timestamp), ctx));
  }
  const chainParts = new Map<number, Part[]>();
  await eachChain(async (c) => {
    const head = heads.get(c);
    if (!head) return;
    try {
      chainParts.set(c, await readChain(c, head));
    } catch (err) {
      unread.set(c, errText(err));
    }
  });
  const failed = [...unread].map(([c, why]) => `${c}: ${why}`);
  // nothing read: the rows stay as they are (their cached_at the last write with news)
  if (readable.length > 0 && unread.size === readable.length) {
    return { subaccounts: 0, chains: readable.length, skipped, unread: failed };
  }
  // what the last run stored, for the part of a chain that did not answer now
  const stored = new Map<string, unknown>();
  if (unread.size > 0) {
    for (const r of await db.selectFrom("registry.portfolio_cache").select(["subaccount", "data"]).execute()) {
      stored.set(r.subaccount, r.data);
    }
  }
  // in the chains' order, whichever answered first
  for (const c of readable) {
    const read = chainParts.get(c);
    const slug = getChain(c)?.slug ?? String(c);
    for (const [i, address] of addresses.entries()) {
      parts.get(address)!.push(read ? read[i]! : storedPart(stored.get(address), slug));
    }
  }
  const dataOf = new Map(addresses.map((a) => [a, merge(parts.get(a)!)]));
  const done = [...new Set(subs.map((s) => s.chain_id))].filter((c) => readable.includes(c));
  // with a chain unread, a subaccount never stored would show nothing there: it waits for it
  const rows: PortfolioRow[] = subs
    .filter((s) => done.includes(s.chain_id) && (unread.size === 0 || stored.has(s.address)))
    .map((s) => ({ chain_id: s.chain_id, vault: s.vault, subaccount: s.address, data: dataOf.get(s.address) }));
  await replacePortfolios(db, done, rows);
  return { subaccounts: dataOf.size, chains: readable.length, skipped, unread: failed };
}
