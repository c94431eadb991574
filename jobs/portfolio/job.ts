/**
 * The portfolio job: reads every registered subaccount's positions at each chain's head
 * (onchain/positions.ts, one block per chain for all its subaccounts) and stores them in the
 * spec's portfolio-data shape (onchain/portfolio.ts), one row per chain, vault and subaccount,
 * through its writer. A chain without an RPC or a protocols entry keeps its earlier rows and is
 * reported as skipped.
 */
import { type Address, createPublicClient, http, type PublicClient } from "viem";
import { getChain } from "../../config/chains.js";
import { protocolsSchema } from "../../config/registry.js";
import { portfolioData } from "../../onchain/portfolio.js";
import { readPositions } from "../../onchain/positions.js";
import type { Db } from "../repo.js";
import { type PortfolioRow, replacePortfolios } from "./portfolio-write.js";

const clients = new Map<string, PublicClient>();
const clientOf = (url: string) => {
  let c = clients.get(url);
  if (!c) {
    c = createPublicClient({ transport: http(url, { timeout: 15_000, retryCount: 2 }) });
    clients.set(url, c);
  }
  return c;
};

export async function runPortfolio(db: Db, rpcUrls: ReadonlyMap<number, string>) {
  const subs = await db
    .selectFrom("registry.subaccount")
    .select(["chain_id", "vault", "address"])
    .orderBy("chain_id")
    .orderBy("address")
    .execute();
  const entries = await db.selectFrom("registry.chain_protocols").select(["chain_id", "protocols"]).execute();
  const protocols = new Map(
    entries.flatMap((e) => {
      const p = protocolsSchema.safeParse(e.protocols);
      return p.success ? [[e.chain_id, p.data] as const] : [];
    }),
  );
  const chains = [...new Set(subs.map((s) => s.chain_id))];
  const skipped: string[] = [];
  const done: number[] = [];
  const rows: PortfolioRow[] = [];
  for (const chainId of chains) {
    const url = rpcUrls.get(chainId);
    const p = protocols.get(chainId);
    if (!url || !p) {
      skipped.push(`${chainId}: ${url ? "no protocols entry" : "no RPC"}`);
      continue;
    }
    const client = clientOf(url);
    const block = await client.getBlock();
    const slug = getChain(chainId)?.slug ?? String(chainId);
    const mine = subs.filter((s) => s.chain_id === chainId);
    // a subaccount on several vaults of a chain is read once
    const read = new Map<string, unknown>();
    for (const s of mine) {
      if (!read.has(s.address)) {
        const positions = await readPositions(client, p, s.address as Address, block.number);
        read.set(s.address, portfolioData(positions, slug, Number(block.timestamp)));
      }
      rows.push({ chain_id: chainId, vault: s.vault, subaccount: s.address, data: read.get(s.address) });
    }
    done.push(chainId);
  }
  await replacePortfolios(db, done, rows);
  return { subaccounts: new Set(rows.map((r) => r.subaccount)).size, chains: done.length, skipped };
}
