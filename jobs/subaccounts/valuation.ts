/**
 * The subaccount valuation series: for every registered subaccount, one row per UTC day
 * (derived.subaccount_day) with its account-wide figures (onchain/valuation.ts) read at the day's
 * last snapshot block of every chain with protocols and an RPC (today: the head; a subaccount has
 * one address on every chain), its net deposits (what its vaults
 * moved to it, less what it moved back, each transfer valued at its day's price) and its PnL
 * (net account value less net deposits). Past days are computed once; the last stored day and
 * today are recomputed on every run (a reorg or a late snapshot moves them).
 */
import { sql } from "kysely";
import { type Address, type PublicClient, parseAbiItem } from "viem";
import { type ChainProtocols, protocolsSchema } from "../../config/registry.js";
import { dayToDate } from "../../db/days.js";
import { rpcClient } from "../../onchain/client.js";
import { accountFigures, type ChainState, readChainState } from "../../onchain/valuation.js";
import type { Db } from "../repo.js";
import { replaceSubaccountDays, type SubaccountDayRow } from "./subaccount-day-write.js";

const TRANSFER = parseAbiItem("event Transfer(address indexed from, address indexed to, uint256 value)");
const DAY = 86_400;

interface Sub {
  chain_id: number;
  vault: string;
  address: string;
}

/** Per day, the raw units of `asset` the vault moved to `safe` less those it got back. */
async function flows(client: PublicClient, asset: Address, vault: Address, safe: Address, toBlock: bigint) {
  const [inLogs, outLogs] = await Promise.all([
    client.getLogs({ address: asset, event: TRANSFER, args: { from: vault, to: safe }, fromBlock: 0n, toBlock }),
    client.getLogs({ address: asset, event: TRANSFER, args: { from: safe, to: vault }, fromBlock: 0n, toBlock }),
  ]);
  const blockTime = new Map<bigint, number>();
  const byDay = new Map<number, bigint>();
  for (const [logs, sign] of [
    [inLogs, 1n],
    [outLogs, -1n],
  ] as const) {
    for (const l of logs) {
      let t = blockTime.get(l.blockNumber!);
      if (t == null) {
        t = Number((await client.getBlock({ blockNumber: l.blockNumber! })).timestamp);
        blockTime.set(l.blockNumber!, t);
      }
      const d = Math.floor(t / DAY);
      byDay.set(d, (byDay.get(d) ?? 0n) + sign * (l.args.value ?? 0n));
    }
  }
  return byDay;
}

export async function runSubaccountDays(
  db: Db,
  indexerSchema: string,
  rpcUrls: ReadonlyMap<number, string>,
): Promise<{ subaccounts: number; days: number }> {
  const subs = (await db
    .selectFrom("registry.subaccount")
    .select(["chain_id", "vault", "address"])
    .orderBy("address")
    .execute()) as Sub[];
  const protocols = new Map<number, ChainProtocols>();
  for (const e of await db.selectFrom("registry.chain_protocols").select(["chain_id", "protocols"]).execute()) {
    const p = protocolsSchema.safeParse(e.protocols);
    if (p.success) protocols.set(e.chain_id, p.data);
  }
  const usable = subs.filter((s) => protocols.has(s.chain_id) && rpcUrls.has(s.chain_id));
  if (usable.length === 0) return { subaccounts: 0, days: 0 };
  // the last snapshot block of each day of each chain
  const { rows: dayBlocks } = await sql<{ chain_id: number; d: number; b: string }>`
    SELECT chain_id, floor(timestamp / ${DAY})::int AS d, max(block_number)::text AS b
    FROM ${sql.id(indexerSchema, "share_ratio_snapshot")} GROUP BY 1, 2`.execute(db);
  const blocksOf = new Map<number, Map<number, bigint>>();
  for (const r of dayBlocks) {
    const m = blocksOf.get(r.chain_id) ?? new Map<number, bigint>();
    m.set(r.d, BigInt(r.b));
    blocksOf.set(r.chain_id, m);
  }
  const { rows: vaultAssets } = await sql<{ chain_id: number; address: string; asset: string }>`
    SELECT chain_id, lower(address) AS address, lower(asset) AS asset FROM ${sql.id(indexerSchema, "vault")}`.execute(
    db,
  );
  const assetOf = new Map(vaultAssets.map((v) => [`${v.chain_id}:${v.address}`, v.asset as Address]));
  const stored = new Map(
    (
      await sql<{ address: string; last: number; deposits: number }>`
        SELECT DISTINCT ON (address) address, day - date '1970-01-01' AS last, total_net_deposits AS deposits
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
  for (const [address, list] of byAddress) {
    const first = Math.min(...chains.map((c) => Math.min(...(blocksOf.get(c)?.keys() ?? [today]))));
    const prev = stored.get(address);
    // the last stored day is recomputed, and the cumulative deposits continue from the day before it
    const from = prev ? Math.max(first, prev.last) : first;
    let deposits = 0;
    if (prev && from > first) {
      const [before] = (
        await sql<{ deposits: number }>`SELECT total_net_deposits AS deposits FROM derived.subaccount_day
          WHERE address = ${address} AND day < ${dayToDate(from)}::date ORDER BY day DESC LIMIT 1`.execute(db)
      ).rows;
      deposits = before?.deposits ?? 0;
    }
    // what its vaults moved to it, per chain and day, in raw asset units
    const moved = await Promise.all(
      list.map(async (s) => {
        const asset = assetOf.get(`${s.chain_id}:${s.vault}`);
        const client = rpcClient(rpcUrls.get(s.chain_id)!);
        const perDay = asset
          ? await flows(client, asset, s.vault as Address, address as Address, heads.get(s.chain_id)!.number)
          : new Map<number, bigint>();
        return { chainId: s.chain_id, asset, perDay };
      }),
    );
    for (let d = from; d <= today; d++) {
      const states: ChainState[] = [];
      const blocks: Record<string, number> = {};
      for (const chainId of chains) {
        const client = rpcClient(rpcUrls.get(chainId)!);
        const head = heads.get(chainId)!;
        // the day's last snapshot block; today (or a day without one) the head, else the last before
        let number = d === today ? head.number : blocksOf.get(chainId)?.get(d);
        if (number == null) {
          const earlier = [...(blocksOf.get(chainId)?.entries() ?? [])]
            .filter(([k]) => k < d)
            .sort((x, y) => y[0] - x[0]);
          if (earlier.length === 0) continue;
          number = earlier[0]![1];
        }
        const block = number === head.number ? head : await client.getBlock({ blockNumber: number });
        states.push(await readChainState(client, protocols.get(chainId)!, address as Address, block));
        blocks[String(chainId)] = Number(number);
      }
      if (states.length === 0) continue;
      for (const m of moved) {
        const units = m.perDay.get(d);
        if (!units || !m.asset) continue;
        const s = states.find((x) => x.chainId === m.chainId);
        const t = s?.positions.prices.get(m.asset);
        if (t?.price != null) deposits += (Number(units) / 10 ** t.decimals) * t.price;
      }
      const f = accountFigures(states, address);
      rows.push({
        address,
        day: dayToDate(d),
        ...f,
        total_net_deposits: deposits,
        total_pnl: f.net_account_value - deposits,
        blocks,
      });
    }
  }
  await replaceSubaccountDays(db, rows);
  return { subaccounts: byAddress.size, days: rows.length };
}
