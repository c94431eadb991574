/**
 * The subaccount valuation series: for every registered subaccount, one row per UTC day
 * (derived.subaccount_day) with its account-wide figures (onchain/valuation.ts) read at the day's
 * last snapshot block of every chain with protocols and an RPC (today: the head; a subaccount has
 * one address on every chain), its net deposits (what its vaults moved to it of their asset, and
 * its funding wallets, the registry's `funding`, of any catalogue token on any chain, less what it
 * moved back, up to the blocks the day's figures are read at, each transfer valued at the
 * prices of the day that counts it) and its PnL (net account value less net deposits). Past days
 * are computed once; the last stored day and today are recomputed on every run (a reorg or a late
 * snapshot moves them), and every day when its funding list has changed or its rows were computed
 * with an older method (VALUATION_METHOD). A subaccount's days are read `lanes` at a time, each
 * day's chains side by side, and counted in day order.
 */
import { sql } from "kysely";
import { type Address, type PublicClient, parseAbiItem } from "viem";
import { readChainProtocols } from "../../db/chain-protocols.js";
import { dayToDate } from "../../db/days.js";
import { indexedLoans } from "../../db/loan-parties.js";
import { indexedPerp } from "../../db/perp-deposits.js";
import { firstSnapshotDays, snapshotDayBlocks } from "../../db/snapshot-days.js";
import { incentiveSeed } from "../../db/staker-incentives.js";
import { indexedPositionIds } from "../../db/uniswap-positions.js";
import { rpcClient } from "../../onchain/client.js";
import { logsInRange } from "../../onchain/logs.js";
import { accountFigures, marginFrom, readChainState, transitFrom, withInTransit } from "../../onchain/valuation.js";
import { DEFAULT_READ_LANES, inTurn } from "../in-turn.js";
import type { Db } from "../repo.js";
import { replaceSubaccountDays, type SubaccountDayRow } from "./subaccount-day-write.js";

/** how many days' states are held before counting them (at least the lanes) */
const DAY_STRETCH = 32;

const TRANSFER = parseAbiItem("event Transfer(address indexed from, address indexed to, uint256 value)");
const DAY = 86_400;

/**
 * The valuation method the rows are computed with (derived.subaccount_day.method, migration 0016):
 * a subaccount with a row of another is valued again from its first day. 2: net deposits up
 * to the blocks read, loan-book debt held against the account in the health factor. 3: the
 * lending pools' loans it borrows count as its debt (they are not in the loan registries), and
 * the principal it may still draw of a loan as its own. 4: a deposit through the bridges of a
 * chain whose entry names no core ledger is followed to the registry's one ledger
 * (db/chain-protocols.ts), in transit until credited. 5: the venues' health factor is the lowest
 * venue's (an Aave account, a Morpho market), not their collateral pooled over their debts.
 * 6: a Morpho market's supply and debt with the interest accrued up to the block read, a Uniswap
 * position with the fees earned since its manager last counted them. 7: the Uniswap v3 staker's
 * rewards, a staked position's accrued ones and those credited to the account, not yet claimed.
 * 8: a batched read whose eth_call failed as a whole (config/multicall3.ts `multicallEach`) fails
 * the run, where before it read as every call failing: no balances, a day valued short for good.
 * 9: a debt no price values (a Morpho borrow, a loan it borrows, in a token without a feed)
 * leaves the health factor null (unknown), where before it counted as no debt.
 */
export const VALUATION_METHOD = 9;

interface Sub {
  chain_id: number;
  vault: string;
  address: string;
  funding: string[];
}

/** Where a subaccount's capital comes from on one chain: `from` sending any of `tokens`. */
interface Source {
  from: Address;
  tokens: Address[];
}

/** Raw units of one token (lower case) the sources moved to the Safe (negative: it sent back). */
interface Flow {
  block: bigint;
  token: string;
  units: bigint;
}

/**
 * What the sources moved to `safe` less what it sent back to them, in blocks `fromBlock` to
 * `toBlock`, in block order: a day counts those up to the block its figures are read at.
 */
async function flows(
  client: PublicClient,
  sources: readonly Source[],
  safe: Address,
  fromBlock: bigint,
  toBlock: bigint,
): Promise<Flow[]> {
  // the first run reads from genesis: in narrower windows where a provider refuses the range
  const moves = (tokens: Address[], from: Address, to: Address, sign: bigint) =>
    logsInRange(
      (a, b) => client.getLogs({ address: tokens, event: TRANSFER, args: { from, to }, fromBlock: a, toBlock: b }),
      fromBlock,
      toBlock,
    ).then((l) =>
      l.map((log) => ({
        block: log.blockNumber!,
        token: log.address.toLowerCase(),
        units: sign * (log.args.value ?? 0n),
      })),
    );
  const out = (
    await Promise.all(
      sources
        .filter((src) => src.tokens.length > 0)
        .flatMap((src) => [moves(src.tokens, src.from, safe, 1n), moves(src.tokens, safe, src.from, -1n)]),
    )
  ).flat();
  return out.sort((a, b) => (a.block < b.block ? -1 : a.block > b.block ? 1 : 0));
}

export async function runSubaccountDays(
  db: Db,
  indexerSchema: string,
  rpcUrls: ReadonlyMap<number, string>,
  /** days of one subaccount read at once (PORTFOLIO_READ_LANES) */
  lanes = DEFAULT_READ_LANES,
): Promise<{ subaccounts: number; days: number }> {
  const subs = (await db
    .selectFrom("registry.subaccount")
    .select(["chain_id", "vault", "address", "funding"])
    .orderBy("address")
    .execute()) as Sub[];
  const protocols = await readChainProtocols(db);
  const usable = subs.filter((s) => protocols.has(s.chain_id) && rpcUrls.has(s.chain_id));
  if (usable.length === 0) return { subaccounts: 0, days: 0 };
  const { rows: vaultAssets } = await sql<{ chain_id: number; address: string; asset: string }>`
    SELECT chain_id, lower(address) AS address, lower(asset) AS asset FROM ${sql.id(indexerSchema, "vault")}`.execute(
    db,
  );
  const assetOf = new Map(vaultAssets.map((v) => [`${v.chain_id}:${v.address}`, v.asset as Address]));
  const stored = new Map(
    // its last day with that day's funding list, and the oldest method of any of its rows
    (
      await sql<{ address: string; last: number; funding: string[]; method: number }>`
        SELECT DISTINCT ON (address) address, day - date '1970-01-01' AS last, funding,
          min(method) OVER (PARTITION BY address) AS method
        FROM derived.subaccount_day ORDER BY address, day DESC`.execute(db)
    ).rows.map((r) => [r.address, r]),
  );
  const heads = new Map<number, { number: bigint; timestamp: bigint }>();
  for (const chainId of new Set(usable.map((s) => s.chain_id)))
    heads.set(chainId, await rpcClient(rpcUrls.get(chainId)!).getBlock());
  const today = Math.floor(Math.max(...[...heads.values()].map((h) => Number(h.timestamp))) / DAY);

  const byAddress = new Map<string, Sub[]>();
  for (const s of usable) byAddress.set(s.address, [...(byAddress.get(s.address) ?? []), s]);
  const rows: SubaccountDayRow[] = [];
  // a subaccount is one account on every chain: read wherever there are protocols and an RPC
  const chains = [...protocols.keys()].filter((c) => rpcUrls.has(c)).sort((a, b) => a - b);
  for (const c of chains) if (!heads.has(c)) heads.set(c, await rpcClient(rpcUrls.get(c)!).getBlock());
  const firstDays = await firstSnapshotDays(db, indexerSchema);
  const first = Math.min(...chains.map((c) => firstDays.get(c) ?? today));
  const plans = [...byAddress].map(([address, list]) => {
    const funding = [...new Set(list.flatMap((s) => s.funding.map((a) => a.toLowerCase())))].sort();
    const prev = stored.get(address);
    // the last stored day is recomputed, and the cumulative deposits continue from the day before
    // it; a changed funding list or an older method values every day again
    const same = prev != null && prev.funding.join() === funding.join() && prev.method === VALUATION_METHOD;
    const from = prev && same ? Math.max(first, prev.last) : first;
    return { address, list, funding, prev, same, from };
  });
  // the last snapshot block of each day of each chain, from the earliest day to value on
  const blocksOf = await snapshotDayBlocks(db, indexerSchema, Math.min(...plans.map((p) => p.from)), {
    firstDay: first,
    today,
  });
  for (const { address, list, funding, prev, same, from } of plans) {
    let deposits = 0;
    // the logs to read start after the blocks the row before `from` read (its day's flows are in
    // its deposits); with no such row, at genesis
    let readFrom: Record<string, number> = {};
    if (prev && same && from > first) {
      const [before] = (
        await sql<{ deposits: number; blocks: Record<string, number> }>`
          SELECT total_net_deposits AS deposits, blocks FROM derived.subaccount_day
          WHERE address = ${address} AND day < ${dayToDate(from)}::date ORDER BY day DESC LIMIT 1`.execute(db)
      ).rows;
      if (before) {
        deposits = before.deposits;
        readFrom = before.blocks;
      }
    }
    // what its vaults (their asset) and its funding wallets (any catalogue token) moved to it, per
    // chain, in block order
    const moved = await Promise.all(
      chains.map(async (chainId) => {
        const vaults = new Set(list.filter((s) => s.chain_id === chainId).map((s) => s.vault.toLowerCase()));
        const sources: Source[] = [...vaults].flatMap((vault) => {
          const asset = assetOf.get(`${chainId}:${vault}`);
          return asset ? [{ from: vault as Address, tokens: [asset] }] : [];
        });
        const catalogue = protocols.get(chainId)!.tokens.map((t) => t.address.toLowerCase() as Address);
        for (const f of funding) if (!vaults.has(f)) sources.push({ from: f as Address, tokens: catalogue });
        const client = rpcClient(rpcUrls.get(chainId)!);
        const after = readFrom[String(chainId)];
        const fromBlock = after == null ? 0n : BigInt(after) + 1n;
        const toBlock = heads.get(chainId)!.number;
        return { chainId, flows: await flows(client, sources, address as Address, fromBlock, toBlock) };
      }),
    );
    // its perp bridge deposits and ledger credits, and the lending-pool loans it borrows, as
    // indexed, once: each day's reads complete them at its blocks
    const perp = await indexedPerp(db, indexerSchema, address);
    const { poolBorrowed } = await indexedLoans(db, indexerSchema, address);
    const uniswapIds = await indexedPositionIds(db, indexerSchema, address, chains);
    // per chain, how many of its flows (in block order) are in `deposits`
    const counted = new Map<number, number>();
    /** the day's state of every chain that has one (read at its blocks), or null: none yet */
    const readDay = async (d: number) => {
      const perChain = await Promise.all(
        chains.map(async (chainId) => {
          const client = rpcClient(rpcUrls.get(chainId)!);
          const head = heads.get(chainId)!;
          // the day's last snapshot block; today (or a day without one) the head, else the last before
          let number = d === today ? head.number : blocksOf.get(chainId)?.get(d);
          if (number == null) {
            const earlier = [...(blocksOf.get(chainId)?.entries() ?? [])]
              .filter(([k]) => k < d)
              .sort((x, y) => y[0] - x[0]);
            if (earlier.length === 0) return null;
            number = earlier[0]![1];
          }
          const block = number === head.number ? head : await client.getBlock({ blockNumber: number });
          const pool = poolBorrowed.get(chainId) ?? [];
          const staker = protocols.get(chainId)!.uniswap?.staker;
          const hints = {
            uniswapIds: uniswapIds.get(chainId) ?? [],
            incentives: incentiveSeed(db, indexerSchema, chainId, staker),
          };
          const state = await readChainState(
            client,
            protocols.get(chainId)!,
            address as Address,
            block,
            perp,
            pool,
            hints,
          );
          return { chainId, state, number };
        }),
      );
      const read = perChain.filter((x) => x !== null);
      if (read.length === 0) return null;
      const blocks: Record<string, number> = {};
      for (const r of read) blocks[String(r.chainId)] = Number(r.number);
      const clientOf = (chainId: number) => rpcClient(rpcUrls.get(chainId)!);
      const states = await withInTransit(
        read.map((r) => r.state),
        transitFrom(clientOf),
        marginFrom(clientOf),
      );
      return { states, blocks };
    };
    // the days read `lanes` at a time, a stretch held at once; counted in order
    const stretch = Math.max(DAY_STRETCH, lanes);
    for (let start = from; start <= today; start += stretch) {
      const days = Array.from({ length: Math.min(stretch, today - start + 1) }, (_, i) => start + i);
      const read = await inTurn(days, lanes, readDay);
      for (const [k, d] of days.entries()) {
        const day = read[k];
        if (!day) continue;
        const { states, blocks } = day;
        // the flows up to the block each chain's figures are read at, not yet counted (on the
        // first day, every earlier one too: capital that arrived before the chain's first
        // snapshot), at this day's prices; a transfer after the day's last snapshot block counts
        // the next day, with the state that holds it
        for (const m of moved) {
          const s = states.find((x) => x.chainId === m.chainId);
          if (!s) continue; // no state of that chain yet: counted on the first day that has one
          const upTo = BigInt(blocks[String(m.chainId)]!);
          let i = counted.get(m.chainId) ?? 0;
          for (; i < m.flows.length && m.flows[i]!.block <= upTo; i++) {
            const { token, units } = m.flows[i]!;
            const t = s.positions.prices.get(token);
            if (t?.price != null) deposits += (Number(units) / 10 ** t.decimals) * t.price;
          }
          counted.set(m.chainId, i);
        }
        const { maintenance_margin_fraction: _, unpriced_debts: _u, ...f } = accountFigures(states, address);
        rows.push({
          address,
          day: dayToDate(d),
          ...f,
          total_net_deposits: deposits,
          total_pnl: f.net_account_value - deposits,
          blocks,
          funding,
          method: VALUATION_METHOD,
        });
      }
    }
  }
  await replaceSubaccountDays(db, rows);
  return { subaccounts: byAddress.size, days: rows.length };
}
