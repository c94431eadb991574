/**
 * The portfolio job on the simulated devnet: every registered subaccount Safe's positions read
 * at each chain's head, stored in the spec's portfolio-data shape, served by
 * /tokenized_vault/{vault_address}/portfolio_data; the figures equal what the chain says.
 */
import { readFileSync } from "node:fs";
import {
  type Abi,
  type Address,
  createPublicClient,
  decodeAbiParameters,
  decodeFunctionResult,
  encodeFunctionData,
  type Hex,
  http,
  keccak256,
  type PublicClient,
  parseAbi,
  parseAbiParameters,
  toEventSelector,
  toHex,
} from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { CoreLedgerAbi } from "../../abis/CoreLedgerAbi.js";
import { LoanAbi } from "../../abis/LoanAbi.js";
import { createKey } from "../../api/keys.js";
import {
  estimatedApr,
  lifetimeReturn,
  type SeriesDay,
  windowReturn,
} from "../../api/routes/subaccounts/subaccounts.returns.js";
import { startRpcProxy } from "../../bench/rpc-proxy.js";
import { getChain } from "../../config/chains.js";
import { MULTICALL3 } from "../../config/multicall3.js";
import { ERC20_ABI } from "../../contracts/devnet/protocols/tx.js";
import { readChainProtocols } from "../../db/chain-protocols.js";
import { createDb, createPool } from "../../db/client.js";
import { readCheckpoints } from "../../db/progress.js";
import { firstSnapshotDays, snapshotDayBlocks } from "../../db/snapshot-days.js";
import { replaceLendingVaultDays } from "../../jobs/lending/lending-vault-day-write.js";
import { runPortfolio } from "../../jobs/portfolio/job.js";
import { passError, portfolioPass } from "../../jobs/portfolio/pass.js";
import { runSubaccountDays, VALUATION_METHOD } from "../../jobs/subaccounts/valuation.js";
import { blockAtOrBefore } from "../../onchain/blocks.js";
import { readDeposits, readInTransit, readMargin } from "../../onchain/margin.js";
import { marginFrom, readChainState, transitFrom, withInTransit } from "../../onchain/valuation.js";
import { type ApiHarness, readAnswer, setupApi } from "../api-harness.js";
import { freePorts, loadManifest, rpcCall, until } from "../helpers.js";
import { limitedRpc, prunedRpc } from "../limited-rpc.js";
import { rpcProxy } from "../swap-world.js";

let h: ApiHarness;
const writer = () => createDb(createPool(h.devnet.dbUrl, 2, "portfolio-test"));
const rpcUrls = () => new Map(h.devnet.chains.map((c) => [c.chainId, c.rpcUrl]));
const TRANSFER = parseAbi(["event Transfer(address indexed from, address indexed to, uint256 value)"]);
const INCENTIVE_CREATED_TOPIC = toEventSelector("IncentiveCreated(address,address,uint256,uint256,address,uint256)");
const FEED = parseAbi(["function latestAnswer() view returns (int256)"]);
const AAVE_RESERVE = parseAbi([
  "function getReserveData(address) view returns ((uint256 data) configuration, uint128 liquidityIndex, uint128 currentLiquidityRate, uint128 variableBorrowIndex, uint128 currentVariableBorrowRate, uint128 currentStableBorrowRate, uint40 lastUpdateTimestamp, uint16 id, address aTokenAddress, address stableDebtTokenAddress, address variableDebtTokenAddress, address interestRateStrategyAddress, uint128 accruedToTreasury, uint128 unbacked, uint128 isolationModeTotalDebt)",
]);
const AMOUNT = 300n * 10n ** 6n;

beforeAll(async () => {
  h = await setupApi();
}, 600_000);

afterAll(async () => {
  // the cache and the series as the other suites expect them: empty
  await h?.q("DELETE FROM registry.portfolio_cache");
  await h?.q("DELETE FROM derived.subaccount_day");
  await h?.q("DELETE FROM derived.lending_vault_day");
  await h?.close();
});

type Item = {
  stats: { asset_usd_value: number; debt_usd_value: number; net_usd_value: number };
  detail: { supply_token_list: { id: string; amount: number }[]; borrow_token_list: { id: string; amount: number }[] };
};
type Portfolio = {
  positions: { id: string; portfolio_item_list: Item[] }[];
  tokens: { id: string; chain: string; amount: number; raw_amount_str: string; price: number | null }[];
};

describe("the portfolio job", () => {
  it("stores every registered subaccount's positions per chain, and a chain without RPC is skipped", async () => {
    const db = writer();
    try {
      const out = await runPortfolio(db, rpcUrls());
      expect(out.skipped).toEqual([]);
      expect(out.chains).toBe(2);
      const rows = await h.q<{ n: string }>("SELECT count(*)::text AS n FROM registry.portfolio_cache");
      const subs = await h.q<{ n: string }>("SELECT count(*)::text AS n FROM registry.subaccount");
      expect(rows[0]!.n).toBe(subs[0]!.n);
      // without chain 8453's RPC its rows stay as they were
      const before = await h.q(
        "SELECT subaccount, data FROM registry.portfolio_cache WHERE chain_id = 8453 ORDER BY 1",
      );
      const partial = await runPortfolio(db, new Map([[1, rpcUrls().get(1)!]]));
      expect(partial.skipped).toEqual(["8453: no RPC"]);
      expect(
        await h.q("SELECT subaccount, data FROM registry.portfolio_cache WHERE chain_id = 8453 ORDER BY 1"),
      ).toEqual(before);
    } finally {
      await db.destroy();
    }
  });

  it("a chain that does not answer keeps its part; the other chains' and the lending vaults' days are made", async () => {
    const db = writer();
    type Row = { chain_id: number; subaccount: string; data: Portfolio; cached_at: Date };
    const cached = "SELECT chain_id, subaccount, data, cached_at FROM registry.portfolio_cache ORDER BY 1, 2";
    const base = getChain(8453)!.slug;
    const part = (d: Portfolio, chain: string, on: boolean) => ({
      positions: d.positions.filter((p) => ((p as { chain?: string }).chain === chain) === on),
      tokens: d.tokens.filter((t) => (t.chain === chain) === on),
    });
    try {
      await runPortfolio(db, rpcUrls());
      // one subaccount never stored: it gets no row while a chain is unread
      const [{ subaccount: fresh }] = (await h.q<{ subaccount: string }>(
        "SELECT subaccount FROM registry.portfolio_cache ORDER BY subaccount LIMIT 1",
      )) as [{ subaccount: string }];
      await h.q("DELETE FROM registry.portfolio_cache WHERE subaccount = $1", [fresh]);
      const before = await h.q<Row>(cached);
      expect(before.some((r) => part(r.data, base, true).positions.length > 0)).toBe(true);
      await h.q("DELETE FROM derived.lending_vault_day");
      // chain 8453 at a port nothing listens on (freePorts' block starts at it)
      const dead = new Map([...rpcUrls(), [8453, `http://127.0.0.1:${await freePorts(1)}`]]);
      const pass = await portfolioPass(db, { rpcUrls: dead, indexerSchema: "indexer" }, true);
      expect(pass.failed.map((f) => f.step)).toContain("portfolio");
      expect(pass.failed.map((f) => f.step)).not.toContain("lending vault days");
      expect(pass.portfolio!.unread).toEqual([expect.stringMatching(/^8453: /)]);
      expect(pass.lendingVaultDays).toBeGreaterThan(0);
      const [{ n }] = (await h.q<{ n: number }>("SELECT count(*)::int AS n FROM derived.lending_vault_day")) as [
        { n: number },
      ];
      expect(n).toBe(pass.lendingVaultDays);
      // every stored row written again: chain 8453's part as it was, chain 1's read now
      const during = await h.q<Row>(cached);
      expect(during.map((r) => [r.chain_id, r.subaccount])).toEqual(before.map((r) => [r.chain_id, r.subaccount]));
      for (const [i, r] of during.entries()) {
        expect(r.cached_at.getTime()).toBeGreaterThan(before[i]!.cached_at.getTime());
        expect(part(r.data, base, true)).toEqual(part(before[i]!.data, base, true));
      }
      expect(passError(pass.failed).message).toMatch(/^portfolio pass: portfolio: unread 8453: /);
      // every chain answering again: nothing fails, the subaccount has its rows, chain 1's parts
      // are those the pass without 8453 wrote (its state has not moved)
      expect((await portfolioPass(db, { rpcUrls: rpcUrls(), indexerSchema: "indexer" }, true)).failed).toEqual([]);
      const after = await h.q<Row>(cached);
      expect(after.filter((r) => r.subaccount === fresh).length).toBeGreaterThan(0);
      const rest = after.filter((r) => r.subaccount !== fresh);
      expect(rest.map((r) => part(r.data, base, false))).toEqual(during.map((r) => part(r.data, base, false)));
    } finally {
      await db.destroy();
    }
  });

  it("a node whose multicalls fail after its head answered: the chain unread, no zeros stored", async () => {
    // blocks and code are answered, every eth_call refused: a node that fails in the middle of
    // a run. viem gives such a multicall as each call failing, which read as no balance.
    const proxies = await Promise.all(h.devnet.chains.map((c) => rpcProxy(c.rpcUrl)));
    for (const p of proxies) p.refuse.add("eth_call");
    const db = writer();
    const cached = "SELECT chain_id, subaccount, data, cached_at FROM registry.portfolio_cache ORDER BY 1, 2";
    const days = "SELECT address, day::text, total_account_value, blocks FROM derived.subaccount_day ORDER BY 1, 2";
    try {
      await runPortfolio(db, rpcUrls());
      await runSubaccountDays(db, "indexer", rpcUrls());
      const [rows, series] = [await h.q(cached), await h.q(days)];
      const urls = new Map(h.devnet.chains.map((c, i) => [c.chainId, proxies[i]!.url]));
      const out = await runPortfolio(db, urls);
      expect(out.unread).toEqual(
        h.devnet.chains.map((c) => expect.stringMatching(new RegExp(`^${c.chainId}: multicall of \\d+ calls? failed`))),
      );
      expect(await h.q(cached)).toEqual(rows);
      // (its first failing read is not always a multicall)
      await expect(runSubaccountDays(db, "indexer", urls)).rejects.toThrow(/eth_call/);
      expect(await h.q(days)).toEqual(series);
      for (const p of proxies) expect(p.methods).toContain("eth_call");
    } finally {
      await db.destroy();
      await Promise.all(proxies.map((p) => p.close()));
    }
  });

  it("on chains without Multicall3 the reads put its code there in a state override: the same portfolios", async () => {
    const proxies = await Promise.all(h.devnet.chains.map((c) => rpcProxy(c.rpcUrl)));
    for (const p of proxies) p.hideCode.add(MULTICALL3.toLowerCase());
    const db = writer();
    const cached = "SELECT chain_id, subaccount, data FROM registry.portfolio_cache ORDER BY 1, 2";
    try {
      await runPortfolio(db, rpcUrls());
      const direct = await h.q(cached);
      const urls = new Map(h.devnet.chains.map((c, i) => [c.chainId, proxies[i]!.url]));
      const out = await runPortfolio(db, urls);
      expect(out.unread).toEqual([]);
      expect(await h.q(cached)).toEqual(direct);
      // every multicall went with the override: none found the chain's own
      for (const p of proxies) {
        const calls = p.bodies.flatMap((b) => [JSON.parse(b)].flat() as { method: string; params: unknown[] }[]);
        const multicalls = calls.filter(
          (c) =>
            c.method === "eth_call" && (c.params[0] as { to?: string }).to?.toLowerCase() === MULTICALL3.toLowerCase(),
        );
        expect(multicalls.length).toBeGreaterThan(0);
        for (const c of multicalls) expect(Object.keys((c.params[2] ?? {}) as object)).toContain(MULTICALL3);
      }
      // nodes (other URLs) that take no state override: each chain unread, saying why
      const refusing = await Promise.all(h.devnet.chains.map((c) => rpcProxy(c.rpcUrl)));
      proxies.push(...refusing);
      for (const p of refusing) {
        p.hideCode.add(MULTICALL3.toLowerCase());
        p.maxParams.set("eth_call", 2);
      }
      const at = "SELECT chain_id, subaccount, cached_at FROM registry.portfolio_cache ORDER BY 1, 2";
      const stamped = await h.q(at);
      const none = await runPortfolio(db, new Map(h.devnet.chains.map((c, i) => [c.chainId, refusing[i]!.url])));
      expect(none.unread).toEqual(
        h.devnet.chains.map((c) =>
          expect.stringMatching(
            new RegExp(`^${c.chainId}: no Multicall3 at ${MULTICALL3} on this chain, and the call with its code`),
          ),
        ),
      );
      // no chain read: nothing written
      expect(await h.q(at)).toEqual(stamped);
    } finally {
      await db.destroy();
      await Promise.all(proxies.map((p) => p.close()));
    }
  });

  it("PORTFOLIO_READ_LANES: that many subaccounts read at once per chain, the same rows", async () => {
    // each answer held 20 ms, as from a node a round trip away: the lanes' requests overlap
    const base = await freePorts(2 * h.devnet.chains.length);
    const proxies = await Promise.all(
      [1, 4].flatMap((_, k) =>
        h.devnet.chains.map((c, i) => startRpcProxy(c.rpcUrl, base + k * h.devnet.chains.length + i, 20)),
      ),
    );
    const db = writer();
    const cached = "SELECT chain_id, subaccount, data FROM registry.portfolio_cache ORDER BY 1, 2";
    /** the most requests a proxy had in flight at one moment */
    const mostAtOnce = (calls: { start: number; end: number }[]) => {
      const edges = calls.flatMap((c) => [
        { t: c.start, d: 1 },
        { t: c.end, d: -1 },
      ]);
      edges.sort((a, b) => a.t - b.t || a.d - b.d);
      let now = 0;
      let most = 0;
      for (const e of edges) {
        now += e.d;
        most = Math.max(most, now);
      }
      return most;
    };
    try {
      await runPortfolio(db, rpcUrls());
      const direct = await h.q(cached);
      const atOnce: number[][] = [];
      for (const [k, lanes] of [1, 4].entries()) {
        const mine = proxies.slice(k * h.devnet.chains.length, (k + 1) * h.devnet.chains.length);
        for (const p of mine) p.record();
        const urls = new Map(h.devnet.chains.map((c, i) => [c.chainId, mine[i]!.url]));
        const out = await runPortfolio(db, urls, "indexer", lanes);
        expect(out.unread).toEqual([]);
        expect(await h.q(cached)).toEqual(direct);
        atOnce.push(mine.map((p) => mostAtOnce(p.stop())));
      }
      const subaccounts = Number(
        (await h.q<{ n: string }>("SELECT count(DISTINCT address) n FROM registry.subaccount"))[0]!.n,
      );
      expect(subaccounts).toBeGreaterThanOrEqual(4);
      // one lane: one subaccount's reads at once (5 here: those a read makes side by side);
      // four: up to four subaccounts' (16 here), more than two lanes could make
      for (const [i] of h.devnet.chains.entries()) {
        const [one, four] = [atOnce[0]![i]!, atOnce[1]![i]!];
        expect(one).toBeGreaterThan(0);
        expect(four).toBeGreaterThan(2 * one);
        expect(four).toBeLessThanOrEqual(4 * one);
      }
    } finally {
      await db.destroy();
      await Promise.all(proxies.map((p) => p.close()));
    }
  });

  it("the figures are the chain's: wallet balances, Aave supplies and debts", async () => {
    const rows = await h.q<{ chain_id: number; vault: string; subaccount: string; data: Portfolio }>(
      "SELECT chain_id, vault, subaccount, data FROM registry.portfolio_cache ORDER BY chain_id, subaccount",
    );
    const withAave = rows.filter((r) => r.data.positions.some((p) => p.id === "aave_v3"));
    expect(withAave.length).toBeGreaterThan(0);
    const erc20 = parseAbi(["function balanceOf(address) view returns (uint256)"]);
    const rpcOfSlug = new Map(h.devnet.chains.map((c) => [getChain(c.chainId)!.slug, c.rpcUrl]));
    let tokens = 0;
    for (const r of rows.slice(0, 6)) {
      for (const t of r.data.tokens) {
        tokens++;
        // a subaccount is one account on every chain: its tokens carry their chain
        const client = createPublicClient({ transport: http(rpcOfSlug.get(t.chain)!) });
        const raw = (await client.readContract({
          address: t.id as Address,
          abi: erc20 as Abi,
          functionName: "balanceOf",
          args: [r.subaccount],
        })) as bigint;
        expect(BigInt(t.raw_amount_str), `${r.subaccount} ${t.chain} ${t.id}`).toBe(raw);
      }
    }
    expect(tokens).toBeGreaterThan(6);
    const aave = withAave[0]!.data.positions.find((p) => p.id === "aave_v3")!.portfolio_item_list[0]!;
    expect(aave.stats.asset_usd_value).toBeGreaterThan(0);
    expect(aave.stats.net_usd_value).toBeCloseTo(aave.stats.asset_usd_value - aave.stats.debt_usd_value, 6);
    // every Aave supply and debt is the aToken's and debt token's balance (interest since: tiny)
    let compared = 0;
    for (const r of withAave) {
      const position = r.data.positions.find((p) => p.id === "aave_v3") as unknown as {
        chain: string;
        portfolio_item_list: { pool: { controller: string }; detail: Item["detail"] }[];
      };
      const item = position.portfolio_item_list[0]!;
      const client = createPublicClient({ transport: http(rpcOfSlug.get(position.chain)!) });
      const lists = [
        [item.detail.supply_token_list, 8],
        [item.detail.borrow_token_list, 10],
      ] as const;
      for (const [list, at] of lists) {
        for (const t of list as { id: string; amount: number; decimals: number }[]) {
          const reserve = await client.readContract({
            address: item.pool.controller as Address,
            abi: AAVE_RESERVE,
            functionName: "getReserveData",
            args: [t.id as Address],
          });
          const token = Object.values(reserve)[at] as Address;
          const raw = (await client.readContract({
            address: token,
            abi: erc20,
            functionName: "balanceOf",
            args: [r.subaccount],
          } as never)) as bigint;
          const want = Number(raw) / 10 ** t.decimals;
          expect(Math.abs(t.amount - want) / want, `${r.subaccount} ${t.id}`).toBeLessThan(1e-5);
          compared++;
        }
      }
    }
    expect(compared).toBeGreaterThan(withAave.length);
  });

  it("each token's price_24h_change is its feed now over its feed at the last block a day before", async () => {
    const rows = await h.q<{ data: { tokens: (Portfolio["tokens"][number] & { price_24h_change: number | null })[] } }>(
      "SELECT data FROM registry.portfolio_cache ORDER BY chain_id, subaccount LIMIT 4",
    );
    const feeds = new Map(
      (
        await h.q<{ chain_id: number; protocols: { tokens: { address: string; priceFeed?: { address: string } }[] } }>(
          "SELECT chain_id, protocols FROM registry.chain_protocols",
        )
      ).flatMap((r) =>
        r.protocols.tokens.map((t) => [
          `${getChain(r.chain_id)!.slug}:${t.address.toLowerCase()}`,
          t.priceFeed?.address,
        ]),
      ),
    );
    const rpcOfSlug = new Map(h.devnet.chains.map((c) => [getChain(c.chainId)!.slug, c.rpcUrl]));
    let seen = 0;
    for (const t of rows.flatMap((r) => r.data.tokens)) {
      const feed = feeds.get(`${t.chain}:${t.id.toLowerCase()}`) as Address | undefined;
      if (!feed) {
        expect(t.price_24h_change).toBeNull();
        continue;
      }
      const client = createPublicClient({ transport: http(rpcOfSlug.get(t.chain)!) });
      const head = await client.getBlock();
      const then = (await blockAtOrBefore(client, head.timestamp - 86_400n, head))!;
      const next = await client.getBlock({ blockNumber: then.number + 1n });
      expect(then.timestamp).toBeLessThanOrEqual(head.timestamp - 86_400n);
      expect(next.timestamp).toBeGreaterThan(head.timestamp - 86_400n);
      const answer = (blockNumber: bigint) =>
        client.readContract({ address: feed, abi: FEED, functionName: "latestAnswer", blockNumber });
      const want = Number(await answer(head.number)) / Number(await answer(then.number)) - 1;
      expect(t.price_24h_change, `${t.chain} ${t.id}`).toBeCloseTo(want, 12);
      if (want !== 0) seen++;
    }
    // the simulated feeds move every day
    expect(seen).toBeGreaterThan(0);
  });

  it("time_at is each token's and pool controller's deployment; controllers are the protocols' contracts", async () => {
    type Pool = { id: string; controller: string; time_at: number | null };
    type Data = {
      positions: { id: string; chain: string; portfolio_item_list: { pool: Pool; position_index: string }[] }[];
      tokens: { id: string; chain: string; time_at: number | null }[];
    };
    const rows = await h.q<{ data: Data }>("SELECT data FROM registry.portfolio_cache");
    const catalogue = await h.q<{
      chain_id: number;
      protocols: { aave?: { pool: string }; morpho?: { address: string } };
    }>("SELECT chain_id, protocols FROM registry.chain_protocols");
    const venues = new Map(catalogue.map((r) => [getChain(r.chain_id)!.slug, r.protocols]));
    const rpcOfSlug = new Map(h.devnet.chains.map((c) => [getChain(c.chainId)!.slug, c.rpcUrl]));
    const seen = new Map<string, number | null>();
    for (const { data } of rows) {
      for (const t of data.tokens) seen.set(`${t.chain}:${t.id.toLowerCase()}`, t.time_at);
      for (const p of data.positions) {
        for (const item of p.portfolio_item_list) {
          const { controller, id } = item.pool;
          if (p.id === "aave_v3") expect(controller).toBe(venues.get(p.chain)!.aave!.pool.toLowerCase());
          if (p.id === "morpho_blue") {
            expect(controller).toBe(venues.get(p.chain)!.morpho!.address.toLowerCase());
            expect(id).toBe(item.position_index);
          } else expect(id).toBe(controller);
          seen.set(`${p.chain}:${controller.toLowerCase()}`, item.pool.time_at);
        }
      }
    }
    expect([...seen.keys()].some((k) => k.includes(":0x"))).toBe(true);
    // each time is the block where the contract first has code: none the block before
    for (const [key, timeAt] of seen) {
      const [slug, address] = key.split(":") as [string, Address];
      expect(timeAt, key).not.toBeNull();
      const client = createPublicClient({ transport: http(rpcOfSlug.get(slug)!) });
      const head = await client.getBlock();
      const block = (await blockAtOrBefore(client, BigInt(timeAt!), head))!;
      expect(Number(block.timestamp), key).toBe(timeAt);
      const code = (n: bigint) => client.getCode({ address, blockNumber: n });
      expect((await code(block.number))?.length ?? 0, key).toBeGreaterThan(2);
      expect(await code(block.number - 1n), key).toBeUndefined();
    }
  });

  it("against a node without the state of a day ago, the job still runs; the 24 h changes are null", async () => {
    const pruned = await Promise.all(h.devnet.chains.map((c) => prunedRpc(c.rpcUrl, 4n)));
    const db = writer();
    try {
      const urls = new Map(h.devnet.chains.map((c, i) => [c.chainId, pruned[i]!.url]));
      const out = await runPortfolio(db, urls);
      expect(out.skipped).toEqual([]);
      expect(pruned.reduce((n, p) => n + p.refusals, 0)).toBeGreaterThan(0);
      const rows = await h.q<{ data: { tokens: { price_24h_change: number | null }[] } }>(
        "SELECT data FROM registry.portfolio_cache",
      );
      const tokens = rows.flatMap((r) => r.data.tokens);
      expect(tokens.length).toBeGreaterThan(0);
      for (const t of tokens) expect(t.price_24h_change).toBeNull();
      // back to the archive node, as the tests after this one expect
      await runPortfolio(db, rpcUrls());
    } finally {
      await db.destroy();
      await Promise.all(pruned.map((p) => p.close()));
    }
  });

  it("/portfolio_data serves the stored data keyed by subaccount", async () => {
    const [row] = await h.q<{ chain_id: number; vault: string; subaccount: string }>(
      "SELECT chain_id, vault, subaccount FROM registry.portfolio_cache ORDER BY chain_id, vault LIMIT 1",
    );
    const res = await h.app.request(`/api/v1/tokenized_vault/${row!.vault}/portfolio_data?chain=${row!.chain_id}`);
    expect(res.status).toBe(200);
    const body = (await res.json()) as Record<string, Portfolio>;
    expect(Object.keys(body)).toContain(row!.subaccount);
    expect(body[row!.subaccount]!.tokens.length).toBeGreaterThan(0);
  });
});

describe("the subaccount valuation series", () => {
  it("one row per day per subaccount up to today; a second run recomputes only the last days", async () => {
    const db = writer();
    try {
      // (rows an earlier suite left would make it a later run)
      await h.q("DELETE FROM derived.subaccount_day");
      // the first run reads every transfer from genesis: through providers refusing an eth_getLogs
      // over an eighth of the chain or more it reads them in halves, and stores what a direct run does
      const limited = await Promise.all(
        h.devnet.chains.map(async (c) => {
          const head = await createPublicClient({ transport: http(c.rpcUrl) }).getBlockNumber({ cacheTime: 0 });
          return limitedRpc(c.rpcUrl, head / 8n);
        }),
      );
      try {
        await runSubaccountDays(db, "indexer", new Map(h.devnet.chains.map((c, i) => [c.chainId, limited[i]!.url])));
      } finally {
        await Promise.all(limited.map((l) => l.close()));
      }
      for (const l of limited) expect(l.refusals).toBeGreaterThan(0);
      const figures = `SELECT address, day::text, total_account_value, total_net_deposits, total_pnl, blocks
        FROM derived.subaccount_day ORDER BY address, day`;
      const viaLimited = await h.q(figures);
      await h.q("DELETE FROM derived.subaccount_day");
      // one day at a time (PORTFOLIO_READ_LANES=1), the same rows as four at a time
      const first = await runSubaccountDays(db, "indexer", rpcUrls(), 1);
      expect(await h.q(figures)).toEqual(viaLimited);
      expect(first.subaccounts).toBeGreaterThan(0);
      const gaps = await h.q<{ address: string; n: string; span: string }>(
        `SELECT address, count(*)::text AS n, (max(day) - min(day) + 1)::text AS span
         FROM derived.subaccount_day GROUP BY address`,
      );
      expect(gaps.length).toBe(first.subaccounts);
      for (const g of gaps) expect(g.n, g.address).toBe(g.span);
      const stored = await h.q<{ address: string; day: string; total_net_deposits: number; blocks: unknown }>(
        "SELECT address, day::text, total_net_deposits, blocks FROM derived.subaccount_day ORDER BY 1, 2",
      );
      // the second run through a recording pass-through: the transfers it reads start after
      // the blocks of the rows it keeps, not at genesis
      const base = await freePorts(h.devnet.chains.length);
      const proxies = await Promise.all(h.devnet.chains.map((c, i) => startRpcProxy(c.rpcUrl, base + i)));
      try {
        for (const p of proxies) p.record();
        const urls = new Map(h.devnet.chains.map((c, i) => [c.chainId, proxies[i]!.url]));
        const again = await runSubaccountDays(db, "indexer", urls);
        expect(again.days).toBeLessThanOrEqual(2 * again.subaccounts);
        const TRANSFER_TOPIC = toEventSelector(TRANSFER[0]);
        const topic = (c: { params: unknown }) => (c.params as [{ topics: string[] }])[0].topics[0];
        const getLogs = proxies.flatMap((p) => p.stop()).filter((c) => c.method === "eth_getLogs");
        const [transfers, others] = [true, false].map((t) =>
          getLogs.filter((c) => (topic(c) === TRANSFER_TOPIC) === t),
        );
        // no other logs but the Uniswap stakers' incentives (the staked positions' rewards), read
        // once per RPC client: the perp deposits and their ledger keys come from the indexer
        expect(others!.filter((c) => topic(c) !== INCENTIVE_CREATED_TOPIC)).toEqual([]);
        expect(others!.length).toBeGreaterThan(0);
        // and those from the indexed incentives on: only the blocks around and after the
        // indexer's checkpoint, not the staker's history (db/staker-incentives.ts)
        const lowest = Math.min(...(await readCheckpoints(db, "indexer")).map((c) => c.block));
        for (const c of others!) {
          const [{ fromBlock }] = c.params as [{ fromBlock: string }];
          expect(Number(fromBlock), JSON.stringify(c.params)).toBeGreaterThanOrEqual(lowest - 64);
        }
        for (const p of proxies) p.record();
        await runSubaccountDays(db, "indexer", urls);
        const third = proxies
          .flatMap((p) => p.stop())
          .filter((c) => c.method === "eth_getLogs" && topic(c) === INCENTIVE_CREATED_TOPIC);
        // the same clients again, no block since: the kept scans cover the heads, nothing is read
        // (a rescan would read from the stakers' deployment blocks; reading on past the blocks
        // read, and again after a reorg, is onchain/staker.test.ts's)
        expect(third).toEqual([]);
        expect(transfers!.length).toBeGreaterThan(0);
        for (const c of transfers!) {
          const [{ fromBlock }] = c.params as [{ fromBlock: string }];
          expect(Number(fromBlock), JSON.stringify(c.params)).toBeGreaterThan(0);
        }
      } finally {
        await Promise.all(proxies.map((p) => p.close()));
      }
      // and the days it recomputed have the deposits the first run gave them
      const after = await h.q<{ address: string; day: string; total_net_deposits: number; blocks: unknown }>(
        "SELECT address, day::text, total_net_deposits, blocks FROM derived.subaccount_day ORDER BY 1, 2",
      );
      expect(after.length).toBe(stored.length);
      for (const [i, r] of after.slice(0, -1).entries()) {
        if (r.address !== after[i + 1]!.address) continue; // each subaccount's today: the head
        expect(r.total_net_deposits, `${r.address} ${r.day}`).toBeCloseTo(stored[i]!.total_net_deposits, 6);
        // read at the same blocks: the days a later run reads are the first run's
        expect(r.blocks, `${r.address} ${r.day}`).toEqual(stored[i]!.blocks);
      }
    } finally {
      await db.destroy();
    }
  });

  it("the days' blocks read from a day on are the whole table's, with the last day before it", async () => {
    const whole = await h.q<{ chain_id: number; d: number; b: string }>(
      `SELECT chain_id, floor(timestamp / 86400)::int AS d, max(block_number)::text AS b
       FROM indexer.share_ratio_snapshot GROUP BY 1, 2 ORDER BY 1, 2`,
    );
    const chains = [...new Set(whole.map((r) => r.chain_id))];
    expect(chains.length).toBe(h.devnet.chains.length);
    const firsts = await firstSnapshotDays(h.db, "indexer");
    for (const c of chains) expect(firsts.get(c), `chain ${c}`).toBe(whole.find((r) => r.chain_id === c)!.d);
    const days = [...new Set(whole.map((r) => r.d))].sort((a, b) => a - b);
    const today = days.at(-1)!;
    // from before the first day, the first, the middle, the last, and a day after it; read along
    // the index (a long history before) and in one pass over the table (a short one)
    for (const from of [days[0]! - 3, days[0]!, days[days.length >> 1]!, today, today + 2])
      for (const firstDay of [from - 1000, from]) {
        const got = await snapshotDayBlocks(h.db, "indexer", from, { firstDay, today });
        for (const c of chains) {
          const mine = whole.filter((r) => r.chain_id === c);
          const before = mine.filter((r) => r.d < from).at(-1);
          const want = [...(before ? [before] : []), ...mine.filter((r) => r.d >= from)];
          const read = [...(got.get(c) ?? new Map<number, bigint>())].sort((x, y) => x[0] - y[0]);
          const what = `chain ${c} from day ${from}, first day ${firstDay}`;
          // earlier days may come too (the pass over the table), each with its true block
          expect(
            read.filter(([d]) => d >= (before?.d ?? from)),
            what,
          ).toEqual(want.map((r) => [r.d, BigInt(r.b)]));
          for (const [d, b] of read) expect(b, `${what}: day ${d}`).toBe(BigInt(mine.find((r) => r.d === d)!.b));
        }
      }
  });

  it("a subaccount whose rows an older method computed is valued again from its first day", async () => {
    const db = writer();
    try {
      await runSubaccountDays(db, "indexer", rpcUrls());
      const [top] = await h.q<{ address: string }>(
        "SELECT address FROM derived.subaccount_day GROUP BY address ORDER BY count(*) DESC, address LIMIT 1",
      );
      const address = top!.address;
      const figures = () =>
        h.q<{ day: string; total_net_deposits: number; health_factor: number | null; method: number }>(
          `SELECT day::text, total_net_deposits, health_factor, method FROM derived.subaccount_day
           WHERE address = $1 ORDER BY day`,
          [address],
        );
      const before = await figures();
      expect(before.length).toBeGreaterThan(20);
      for (const r of before) expect(r.method).toBe(VALUATION_METHOD);
      // a past day's row of the current method is kept as stored: only the last days are valued again
      const past = before[5]!.day;
      const tamper = (method: number) =>
        h.q(
          `UPDATE derived.subaccount_day SET total_net_deposits = total_net_deposits + 12345, method = $3
           WHERE address = $1 AND day <= $2::date`,
          [address, past, method],
        );
      await tamper(VALUATION_METHOD);
      await runSubaccountDays(db, "indexer", rpcUrls());
      const kept = await figures();
      expect(kept[5]!.total_net_deposits).toBeCloseTo(before[5]!.total_net_deposits + 12345, 6);
      // rows as an older worker wrote them (method 1, the column's default): every day again
      await tamper(1);
      await runSubaccountDays(db, "indexer", rpcUrls());
      const again = await figures();
      expect(again.map((r) => r.day)).toEqual(before.map((r) => r.day));
      // every day but today (read at the head, which other suites may move) as it was
      for (const [i, r] of again.slice(0, -1).entries()) {
        expect(r.method, r.day).toBe(VALUATION_METHOD);
        expect(r.total_net_deposits, r.day).toBeCloseTo(before[i]!.total_net_deposits, 6);
        expect(r.health_factor, r.day).toEqual(before[i]!.health_factor);
      }
    } finally {
      await db.destroy();
    }
  });

  it("today's row is the live figures; the leveraged subaccount stayed above 1 all along", async () => {
    const manifest = JSON.parse(readFileSync(h.devnet.manifestFile, "utf8")) as {
      chains: { world: { subaccounts: { safe: string; role: string | null; minHealthFactor: number | null }[] } }[];
    };
    const leveraged = manifest.chains.flatMap((c) => c.world.subaccounts).find((x) => x.role === "leveraged")!;
    const address = leveraged.safe.toLowerCase();
    const series = await h.q<{ day: string; health_factor: number | null; total_account_value: number }>(
      "SELECT day::text, health_factor, total_account_value FROM derived.subaccount_day WHERE address = $1 ORDER BY day",
      [address],
    );
    const withDebt = series.filter((r) => r.health_factor != null);
    expect(withDebt.length).toBeGreaterThan(5);
    for (const r of withDebt) expect(r.health_factor!, r.day).toBeGreaterThan(1);
    const res = await h
      .appWith({ rpcUrls: rpcUrls() })
      .request(`/api/v1/subaccounts/health_factor?address=${address}`, { headers: { "x-api-key": h.key } });
    const live = (await res.json()) as {
      total_account_value: number;
      health_factor: number;
      series_as_of: string;
      total_pnl: number | null;
    };
    expect(res.status).toBe(200);
    expect(live.total_account_value).toBeCloseTo(series.at(-1)!.total_account_value, 6);
    expect(live.health_factor).toBeCloseTo(withDebt.at(-1)!.health_factor!, 9);
    expect(live.series_as_of).toBe(series.at(-1)!.day);
    expect(live.total_pnl).not.toBeNull();
  });

  it("the live health factor holds each venue's debt against its own collateral, on its chain", async () => {
    type Protocols = {
      tokens: { address: string; decimals: number; priceFeed?: { address: string; decimals: number } }[];
      aave?: { pool: string } | null;
      morpho?: { address: string; markets: string[] } | null;
    };
    const entries = await h.q<{ chain_id: number; protocols: Protocols }>(
      "SELECT chain_id, protocols FROM registry.chain_protocols",
    );
    const aaveAbi = parseAbi([
      "function getUserAccountData(address) view returns (uint256, uint256, uint256, uint256, uint256, uint256)",
    ]);
    const morphoAbi = parseAbi([
      "function position(bytes32, address) view returns (uint256, uint128, uint128)",
      "function market(bytes32) view returns (uint128, uint128, uint128, uint128, uint128, uint128)",
      "function idToMarketParams(bytes32) view returns (address, address, address, address, uint256)",
    ]);
    let accruing = 0;
    // each venue's own figure, read at the block the route answered for
    async function venueFactors(chainId: number, safe: Address, blockNumber: bigint) {
      const p = entries.find((e) => e.chain_id === chainId)!.protocols;
      const client = createPublicClient({ transport: http(rpcUrls().get(chainId)!) });
      const read = (address: string, abi: Abi, functionName: string, args: unknown[]) =>
        client.readContract({ address: address as Address, abi, functionName, args, blockNumber }) as Promise<
          readonly bigint[]
        >;
      const usd = async (token: string, raw: bigint) => {
        const t = p.tokens.find((x) => x.address.toLowerCase() === token.toLowerCase())!;
        const answer = await client.readContract({
          address: t.priceFeed!.address as Address,
          abi: FEED,
          functionName: "latestAnswer",
          blockNumber,
        });
        return ((Number(raw) / 10 ** t.decimals) * Number(answer)) / 10 ** t.priceFeed!.decimals;
      };
      const factors: number[] = [];
      if (p.aave) {
        const data = await read(p.aave.pool, aaveAbi as Abi, "getUserAccountData", [safe]);
        if (data[1]! > 0n) factors.push(Number(data[5]!) / 1e18);
      }
      for (const id of p.morpho?.markets ?? []) {
        const [, borrowShares, collateral] = await read(p.morpho!.address, morphoAbi as Abi, "position", [id, safe]);
        if (borrowShares === 0n) continue;
        const stored = await read(p.morpho!.address, morphoAbi as Abi, "market", [id]);
        const params = (await read(p.morpho!.address, morphoAbi as Abi, "idToMarketParams", [
          id,
        ])) as unknown as readonly [Address, Address, Address, Address, bigint];
        // the debt as Morpho settles it: interest accrued up to the block (simulated, nothing sent)
        const m = await accruedMarket(client, p.morpho!.address as Address, id as Hex, params, blockNumber);
        if (m[2]! > stored[2]!) accruing++;
        const den = m[3]! + 1_000_000n;
        const borrowed = (borrowShares! * (m[2]! + 1n) + den - 1n) / den;
        const lltv = Number(params[4]) / 1e18;
        factors.push(((await usd(params[1], collateral!)) * lltv) / (await usd(params[0], borrowed)));
      }
      return factors;
    }
    type Live = Omit<Health, "chains"> & {
      total_collateral_value: number;
      chains: {
        chain_id: number;
        block_number: number;
        health_factor: number | null;
        total_collateral_value: number;
        venue_loan_value: number;
        borrowed_loan_value: number;
      }[];
    };
    const subs = await h.q<{ address: string }>("SELECT address FROM registry.subaccount ORDER BY address");
    let apart = 0;
    for (const { address } of subs) {
      const r = await devnetGet<Live>(`/subaccounts/health_factor?address=${address}`);
      expect(r.status, address).toBe(200);
      const all: number[] = [];
      for (const c of r.body.chains) {
        const factors = await venueFactors(c.chain_id, address as Address, BigInt(c.block_number));
        all.push(...factors);
        if (factors.length === 0) expect(c.health_factor, `${address} ${c.chain_id}`).toBeNull();
        else expect(c.health_factor! / Math.min(...factors), `${address} ${c.chain_id}`).toBeCloseTo(1, 9);
      }
      const borrowed = r.body.chains.reduce((t, c) => t + c.borrowed_loan_value, 0);
      if (all.length === 0) continue;
      if (borrowed === 0) expect(r.body.health_factor! / Math.min(...all), address).toBeCloseTo(1, 9);
      else expect(r.body.health_factor!).toBeLessThanOrEqual(Math.min(...all) * (1 + 1e-9));
      // collateral on a chain without venue debt: it secures nothing there, and no debt elsewhere
      const idle = r.body.chains.some((c) => c.venue_loan_value === 0 && c.total_collateral_value > 0);
      if (idle) apart++;
    }
    // the demo's world has such an account (Morpho debt on one chain, Aave collateral on the other)
    expect(apart).toBeGreaterThan(0);
    // and a Morpho market with interest not yet written to its totals, which the figures count
    expect(accruing).toBeGreaterThan(0);
  });

  it("a Uniswap position is valued at what it settles for: its liquidity and every fee earned", async () => {
    type Summary = {
      portfolio: {
        defi_positions: {
          protocol: string;
          chain_id: number;
          token_id?: string;
          staked?: boolean;
          amount0?: number;
          amount1?: number;
          token0?: { decimals: number };
          token1?: { decimals: number };
        }[];
      };
    };
    const npmOf = new Map(
      (
        await h.q<{ chain_id: number; npm: string }>(
          "SELECT chain_id, protocols->'uniswap'->>'positionManager' AS npm FROM registry.chain_protocols",
        )
      ).map((r) => [r.chain_id, r.npm as Address]),
    );
    const npmAbi = parseAbi([
      "function ownerOf(uint256) view returns (address)",
      "function positions(uint256) view returns (uint96, address, address, address, uint24, int24, int24, uint128, uint256, uint256, uint128, uint128)",
      "function decreaseLiquidity((uint256 tokenId, uint128 liquidity, uint256 amount0Min, uint256 amount1Min, uint256 deadline)) returns (uint256, uint256)",
      "function collect((uint256 tokenId, address recipient, uint128 amount0Max, uint128 amount1Max)) returns (uint256, uint256)",
    ]);
    const MAX128 = (1n << 128n) - 1n;
    const subs = await h.q<{ address: string }>("SELECT DISTINCT address FROM registry.subaccount ORDER BY address");
    let positions = 0;
    let unpoked = 0;
    const clients = new Map([...rpcUrls()].map(([id, url]) => [id, createPublicClient({ transport: http(url) })]));
    const heads = async () =>
      new Map(await Promise.all([...clients].map(async ([id, c]) => [id, await c.getBlockNumber()] as const)));
    for (const { address } of subs) {
      // the summary reads at the heads: none moves while this test reads
      const at0 = await heads();
      const r = await devnetGet<Summary>(`/subaccounts/summary?address=${address}`);
      expect(r.status, address).toBe(200);
      expect(await heads()).toEqual(at0);
      for (const d of r.body.portfolio.defi_positions.filter((x) => x.protocol === "uniswap_v3")) {
        const npm = npmOf.get(d.chain_id)!;
        const blockNumber = at0.get(d.chain_id)!;
        const client = clients.get(d.chain_id)!;
        const id = BigInt(d.token_id!);
        const at = { blockNumber };
        const holder = await client.readContract({
          address: npm,
          abi: npmAbi,
          functionName: "ownerOf",
          args: [id],
          ...at,
        });
        const p = await client.readContract({
          address: npm,
          abi: npmAbi,
          functionName: "positions",
          args: [id],
          ...at,
        });
        // the position's holder (the Safe, or the staker holding it) burns it all and collects
        const calls = [
          ...(p[7] > 0n
            ? [
                encodeFunctionData({
                  abi: npmAbi,
                  functionName: "decreaseLiquidity",
                  args: [{ tokenId: id, liquidity: p[7], amount0Min: 0n, amount1Min: 0n, deadline: MAX128 }],
                }),
              ]
            : []),
          encodeFunctionData({
            abi: npmAbi,
            functionName: "collect",
            args: [{ tokenId: id, recipient: holder, amount0Max: MAX128, amount1Max: MAX128 }],
          }),
        ];
        const out = await simulateCalls(client, holder, npm, calls, blockNumber);
        const [c0, c1] = decodeAbiParameters(parseAbiParameters("uint256, uint256"), out.at(-1)!);
        expect(d.amount0!, `${address} ${id}`).toBeCloseTo(Number(c0) / 10 ** d.token0!.decimals, 9);
        expect(d.amount1!, `${address} ${id}`).toBeCloseTo(Number(c1) / 10 ** d.token1!.decimals, 9);
        positions++;
        // fees earned since the manager last counted them: collect pays more than burn + tokensOwed
        if (p[7] > 0n) {
          const [b0, b1] = decodeAbiParameters(parseAbiParameters("uint256, uint256"), out[0]!);
          if (c0 > b0 + p[10] || c1 > b1 + p[11]) unpoked++;
        }
      }
    }
    expect(positions).toBeGreaterThan(0);
    expect(unpoked).toBeGreaterThan(0);
  });

  it("the realized APRs and the list's estimated_apr are the series' returns (modified Dietz)", async () => {
    const days = await h.q<SeriesDay & { address: string }>(
      `SELECT address, day - date '1970-01-01' AS day, net_account_value, total_pnl, total_net_deposits
       FROM derived.subaccount_day ORDER BY address, day`,
    );
    const byAddress = new Map<string, SeriesDay[]>();
    for (const d of days) byAddress.set(d.address, [...(byAddress.get(d.address) ?? []), d]);
    expect(byAddress.size).toBeGreaterThan(1);
    const headers = { "x-api-key": h.key };
    const app = h.appWith({ rpcUrls: rpcUrls() });
    const list = (await (await app.request("/api/v1/subaccounts", { headers })).json()) as {
      address: string;
      estimated_apr: number | null;
    }[];
    let with30 = 0;
    for (const [address, rows] of byAddress) {
      expect(list.find((x) => x.address === address)!.estimated_apr, address).toBeCloseTo(estimatedApr(rows)!, 12);
      const res = await app.request(`/api/v1/subaccounts/health_factor?address=${address}`, { headers });
      const live = (await res.json()) as Record<string, number | null>;
      for (const n of [3, 7, 30]) {
        const want = windowReturn(rows, n);
        expect(live[`total_pnl_${n}d`], `${address} ${n}d`).toBeCloseTo(want.pnl!, 6);
        expect(live[`realized_apr_${n}d`], `${address} ${n}d`).toBeCloseTo(want.apr!, 12);
      }
      expect(live.life_time_apr, address).toBeCloseTo(lifetimeReturn(rows).apr!, 12);
      // the 30-day window of a subaccount whose capital moved in it: not the start's value alone
      const start = rows.at(-31);
      if (start && rows.at(-1)!.total_net_deposits !== start.total_net_deposits) {
        const naive = ((rows.at(-1)!.total_pnl - start.total_pnl) / start.net_account_value) * (365 / 30);
        expect(live.realized_apr_30d, address).not.toBeCloseTo(naive, 6);
        with30++;
      }
    }
    expect(with30).toBeGreaterThan(0);
    // the institutional vault objects' subaccount items give the same estimated APR
    const vaults = (await (await app.request("/api/v1/tokenized_vault", { headers })).json()) as {
      subaccounts: { address: string; estimated_apr: number | null }[];
    }[];
    const items = vaults.flatMap((v) => v.subaccounts).filter((x) => byAddress.has(x.address));
    expect(items.length).toBeGreaterThan(1);
    for (const x of items) expect(x.estimated_apr, x.address).toBeCloseTo(estimatedApr(byAddress.get(x.address)!)!, 12);
  });
});

describe("the subaccount net deposits", () => {
  type Row = {
    day: string;
    total_net_deposits: number;
    total_pnl: number;
    blocks: Record<string, number>;
    funding: string[];
  };
  type World = {
    custody: string;
    subaccounts: { safe: string; role: string | null }[];
    protocols: { tokens: { address: string; decimals: number; feed: string }[] };
  };

  /** Where capital comes from: `from` sending any of `tokens` (lower case) on `chainId`. */
  type Source = { chainId: number; from: Address; tokens: string[] };

  /**
   * Straight from the chains: the USD value the sources moved to `safe` (less what came back) by
   * each row, each transfer counted by the first row whose block on its chain holds it and valued
   * at the feed price at that block. `late`: the transfers made after the last block their own
   * day's row read (so counted the next day).
   */
  async function flowsTo(chains: { chainId: number; world: World }[], safe: Address, rows: Row[], sources: Source[]) {
    const day = (r: Row) => Math.round(Date.parse(`${r.day}T00:00:00Z`) / 86_400_000);
    const out = rows.map(() => 0);
    let late = 0;
    for (const src of sources) {
      const client = createPublicClient({ transport: http(rpcUrls().get(src.chainId)!) });
      const tokens = chains.find((c) => c.chainId === src.chainId)!.world.protocols.tokens;
      const address = src.tokens as Address[];
      const logs = [
        ...(
          await client.getLogs({ address, event: TRANSFER[0], args: { from: src.from, to: safe }, fromBlock: 0n })
        ).map((l) => ({ l, sign: 1n })),
        ...(
          await client.getLogs({ address, event: TRANSFER[0], args: { from: safe, to: src.from }, fromBlock: 0n })
        ).map((l) => ({ l, sign: -1n })),
      ];
      for (const { l, sign } of logs) {
        const token = tokens.find((t) => t.address.toLowerCase() === l.address.toLowerCase());
        expect(token, `${src.from} moved ${l.address}, a token off the catalogue`).toBeDefined();
        const i = rows.findIndex((r) => BigInt(r.blocks[String(src.chainId)] ?? -1) >= l.blockNumber);
        if (i < 0) continue; // after the series' last row
        const at = Number((await client.getBlock({ blockNumber: l.blockNumber })).timestamp);
        if (day(rows[i]!) > Math.floor(at / 86_400)) late++;
        const price = await client.readContract({
          address: token!.feed as Address,
          abi: FEED,
          functionName: "latestAnswer",
          blockNumber: BigInt(rows[i]!.blocks[String(src.chainId)]!),
        });
        const usd = (Number(sign * l.args.value!) / 10 ** token!.decimals) * (Number(price) / 1e8);
        for (let j = i; j < out.length; j++) out[j]! += usd;
      }
    }
    return { out, late };
  }

  /** What the custody wallet sent, of any catalogue token, on every chain. */
  const custodySources = (chains: { chainId: number; world: World }[]): Source[] =>
    chains.map((c) => ({
      chainId: c.chainId,
      from: c.world.custody as Address,
      tokens: c.world.protocols.tokens.map((t) => t.address.toLowerCase()),
    }));

  it("each day's are what its vaults and funding sent up to the blocks its figures are read at", async () => {
    const manifest = JSON.parse(readFileSync(h.devnet.manifestFile, "utf8")) as {
      chains: { chainId: number; world: World }[];
    };
    const custody = manifest.chains[0]!.world.custody.toLowerCase();
    const subs = await h.q<{ address: string; chain_id: number; vault: string; funding: string[]; asset: string }>(
      `SELECT s.address, s.chain_id, lower(s.vault) AS vault, s.funding, lower(v.asset) AS asset
       FROM registry.subaccount s JOIN indexer.vault v ON v.chain_id = s.chain_id AND lower(v.address) = lower(s.vault)`,
    );
    const db = writer();
    try {
      await runSubaccountDays(db, "indexer", rpcUrls());
    } finally {
      await db.destroy();
    }
    let late = 0;
    let checked = 0;
    for (const address of [...new Set(subs.map((s) => s.address))]) {
      const mine = subs.filter((s) => s.address === address);
      const funding = [...new Set(mine.flatMap((s) => s.funding))];
      for (const f of funding) expect(f, `${address}'s funding`).toBe(custody);
      const sources: Source[] = [
        ...mine.map((s) => ({ chainId: s.chain_id, from: s.vault as Address, tokens: [s.asset] })),
        ...(funding.length > 0 ? custodySources(manifest.chains) : []),
      ];
      const rows = await h.q<Row>(
        `SELECT day::text, total_net_deposits, total_pnl, blocks, funding FROM derived.subaccount_day
         WHERE address = $1 ORDER BY day`,
        [address],
      );
      // today's row reads the head, which the other suites move: the days before it
      const past = rows.slice(0, -1);
      const flows = await flowsTo(manifest.chains, address as Address, past, sources);
      late += flows.late;
      for (const [i, r] of past.entries()) {
        const want = flows.out[i]!;
        expect(Math.abs(r.total_net_deposits - want), `${address} ${r.day}`).toBeLessThan(1e-6 * Math.abs(want) + 1e-6);
        checked++;
      }
    }
    expect(checked).toBeGreaterThan(50);
    // the vaults send their subaccounts capital after the day's last snapshot: counted on their
    // own day, that day's PnL would fall by it, and rise back the next
    expect(late).toBeGreaterThan(0);
  });

  it("count what the registry's funding wallets send; a changed list values every day again", async () => {
    const manifest = JSON.parse(readFileSync(h.devnet.manifestFile, "utf8")) as {
      chains: { chainId: number; world: World }[];
    };
    const custody = manifest.chains[0]!.world.custody.toLowerCase();
    const lender = manifest.chains[0]!.world.subaccounts.find((x) => x.role === "lender")!.safe.toLowerCase();
    // every subaccount custody funds: the lender, and those it sends loans, interest and bridge
    // deposits to during the history
    const funded = (
      await h.q<{ address: string }>(
        "SELECT DISTINCT address FROM registry.subaccount WHERE funding = $1 ORDER BY address",
        [[custody]],
      )
    ).map((r) => r.address);
    expect(funded).toContain(lender);
    expect(funded.length).toBeGreaterThan(1);
    const series = (address: string) =>
      h.q<Row>(
        `SELECT day::text, total_net_deposits, total_pnl, blocks, funding FROM derived.subaccount_day
         WHERE address = $1 ORDER BY day`,
        [address],
      );
    const db = writer();
    try {
      await runSubaccountDays(db, "indexer", rpcUrls());
      const withFunding = new Map<string, Row[]>();
      for (const a of funded) withFunding.set(a, await series(a));
      const lenderRows = withFunding.get(lender)!;
      expect(lenderRows.length).toBeGreaterThan(20);
      // its capital came from custody before its first day: a deposit, not a profit
      expect(lenderRows[0]!.total_net_deposits).toBeGreaterThan(100_000);
      expect(Math.abs(lenderRows[0]!.total_pnl)).toBeLessThan(1e-5 * lenderRows[0]!.total_net_deposits);

      await h.q("UPDATE registry.subaccount SET funding = '{}' WHERE address = ANY($1)", [funded]);
      await runSubaccountDays(db, "indexer", rpcUrls());
      for (const a of funded) {
        const rows = withFunding.get(a)!;
        for (const r of rows) expect(r.funding).toEqual([custody]);
        const alone = await series(a);
        expect(alone.map((r) => r.day)).toEqual(rows.map((r) => r.day));
        for (const r of alone) expect(r.funding).toEqual([]);
        const flows = await flowsTo(manifest.chains, a as Address, rows, custodySources(manifest.chains));
        for (const [i, r] of rows.entries()) {
          const diff = r.total_net_deposits - alone[i]!.total_net_deposits;
          const want = flows.out[i]!;
          expect(Math.abs(diff - want), `${a} ${r.day}`).toBeLessThan(1e-6 * Math.abs(want) + 1e-6);
          expect(alone[i]!.total_pnl - r.total_pnl, `${a} ${r.day}`).toBeCloseTo(diff, 4);
        }
      }

      await h.q("UPDATE registry.subaccount SET funding = $2 WHERE address = ANY($1)", [funded, [custody]]);
      await runSubaccountDays(db, "indexer", rpcUrls());
      const again = await series(lender);
      // every day but today (read at the head, which other suites may move) as it was
      for (const [i, r] of again.slice(0, -1).entries()) {
        expect(r.funding).toEqual([custody]);
        expect(r.total_net_deposits, r.day).toBeCloseTo(lenderRows[i]!.total_net_deposits, 6);
      }
    } finally {
      await h.q("UPDATE registry.subaccount SET funding = $2 WHERE address = ANY($1)", [funded, [custody]]);
      await db.destroy();
    }
  });
});

/** The return data of `calls` to `to` from `from`, simulated in order on `blockNumber` (nothing sent). */
async function simulateCalls(
  client: PublicClient,
  from: Address,
  to: Address,
  calls: Hex[],
  blockNumber: bigint,
): Promise<Hex[]> {
  const res = (await client.request({
    method: "eth_simulateV1",
    params: [{ blockStateCalls: [{ calls: calls.map((data) => ({ from, to, data })) }] }, toHex(blockNumber)],
  } as never)) as { calls: { status: Hex; returnData: Hex }[] }[];
  const out = res[0]!.calls;
  for (const c of out) expect(c.status).toBe("0x1");
  return out.map((c) => c.returnData);
}

/** A Morpho market's totals with the interest accrued up to `blockNumber`: accrueInterest, then market(). */
async function accruedMarket(
  client: PublicClient,
  morpho: Address,
  id: Hex,
  params: readonly [Address, Address, Address, Address, bigint],
  blockNumber: bigint,
): Promise<readonly bigint[]> {
  const abi = parseAbi([
    "function accrueInterest((address loanToken, address collateralToken, address oracle, address irm, uint256 lltv))",
    "function market(bytes32) view returns (uint128, uint128, uint128, uint128, uint128, uint128)",
  ]);
  const [loanToken, collateralToken, oracle, irm, lltv] = params;
  const out = await simulateCalls(
    client,
    "0x000000000000000000000000000000000000dEaD",
    morpho,
    [
      encodeFunctionData({
        abi,
        functionName: "accrueInterest",
        args: [{ loanToken, collateralToken, oracle, irm, lltv }],
      }),
      encodeFunctionData({ abi, functionName: "market", args: [id] }),
    ],
    blockNumber,
  );
  return decodeFunctionResult({ abi, functionName: "market", data: out[1]! });
}

async function devnetGet<T>(path: string) {
  const { status, body } = await h.json<T>(`/api/v1${path}`);
  return { status, body };
}

type Token = { address: string; decimals: number; priceFeed?: { address: Address; decimals: number } };
type Health = {
  id: string;
  health_factor: number | null;
  total_loan_value: number;
  total_account_value: number;
  min_health_factor: number | null;
  chains: { chain_id: number; health_factor: number | null }[];
};
type Summary = {
  type: string;
  name: string | null;
  chains: { chain_id: number }[];
  loanbook: { loans: { is_borrow: boolean; book: { address: string } }[]; total_debt: number };
};

type PoolLoan = {
  address: string;
  borrower: string;
  state: string;
  principal_amount: number;
  interest_amount: number;
  principal_token: { price: number | null };
};
const OPEN = (l: { state: string }) => !["closed", "cancelled", "inactive"].includes(l.state);

describe("accounts beyond the registry's subaccounts", () => {
  it("a lending pool's borrower: its health factor holds the pool's open loans on every chain", async () => {
    // what the original's client does: a vault's loan book, then each borrower's health factor
    const pools = await h.q<{ chain_id: number; vault: string }>(
      "SELECT DISTINCT chain_id, vault FROM indexer.loan ORDER BY chain_id, vault",
    );
    expect(pools.length).toBeGreaterThan(0);
    const loans: PoolLoan[] = [];
    for (const p of pools) {
      const r = await devnetGet<{ loans: PoolLoan[] }>(
        `/platform/lending_pool/loanbook?address=${p.vault}&chain=${p.chain_id}`,
      );
      expect(r.status).toBe(200);
      loans.push(...r.body.loans);
    }
    const borrowers = [...new Set(loans.filter(OPEN).map((l) => l.borrower))];
    expect(borrowers.length).toBeGreaterThan(0);
    for (const b of borrowers) {
      // not a subaccount, and no loan registry's party: its debt is the pools' loans alone
      expect(await h.q("SELECT 1 FROM registry.subaccount WHERE address = $1", [b])).toEqual([]);
      expect(await h.q("SELECT 1 FROM indexer.loanbook_loan WHERE borrower = $1 OR lender = $1", [b])).toEqual([]);
      const owed = loans
        .filter((l) => l.borrower === b && OPEN(l))
        .reduce((t, l) => t + (l.principal_amount + l.interest_amount) * l.principal_token.price!, 0);
      expect(owed).toBeGreaterThan(0);
      const r = await devnetGet<Health>(`/subaccounts/health_factor?address=${b}`);
      expect(r.status).toBe(200);
      expect(r.body.id).toBe(b);
      // interest accrues by the second: the same within a millionth
      expect(Math.abs(r.body.total_loan_value / owed - 1)).toBeLessThan(1e-6);
      expect(r.body.min_health_factor).toBeNull();
      // no venue debt: what the account holds over what it owes on the loans
      for (const c of r.body.chains) expect(c.health_factor).toBeNull();
      expect(r.body.health_factor).toBeCloseTo(r.body.total_account_value / r.body.total_loan_value, 9);
      const sum = await devnetGet<Summary>(`/subaccounts/summary?address=${b}`);
      expect(sum.status).toBe(200);
      expect(sum.body).toMatchObject({ type: "eoa", name: null });
      const chains = [...new Set(pools.map((p) => p.chain_id))];
      expect(sum.body.chains.map((c) => c.chain_id)).toEqual(chains);
      const mine = loans.filter((l) => l.borrower === b).map((l) => l.address);
      const listed = sum.body.loanbook.loans.map((l) => l.book.address);
      expect([...new Set(listed)].sort()).toEqual([...new Set(mine)].sort());
      for (const l of sum.body.loanbook.loans) expect(l.is_borrow).toBe(true);
      expect(Math.abs(sum.body.loanbook.total_debt / owed - 1)).toBeLessThan(1e-6);
    }
  });

  it("registered, the pool's borrower's series counts the pool's open loans at each day's blocks", async () => {
    const [loan] = await h.q<{ vault: string; borrower: string }>(
      "SELECT vault, borrower FROM indexer.loan WHERE chain_id = 1 ORDER BY address LIMIT 1",
    );
    const b = loan!.borrower;
    const poolLoans = await h.q<{ chain_id: number; address: Address; principal_token: string }>(
      "SELECT chain_id, address, principal_token FROM indexer.loan WHERE borrower = $1 ORDER BY chain_id, address",
      [b],
    );
    const feeds = new Map<string, { address: Address; decimals: number; tokenDecimals: number }>();
    for (const r of await h.q<{ chain_id: number; protocols: { tokens: Token[] } }>(
      "SELECT chain_id, protocols FROM registry.chain_protocols",
    ))
      for (const t of r.protocols.tokens)
        if (t.priceFeed)
          feeds.set(`${r.chain_id}:${t.address.toLowerCase()}`, { ...t.priceFeed, tokenDecimals: t.decimals });
    const clients = new Map(h.devnet.chains.map((c) => [c.chainId, createPublicClient({ transport: http(c.rpcUrl) })]));
    /** what it owes on the pool's open loans at `blocks`, USD at the feeds there */
    const owedAt = async (blocks: Record<string, number>) => {
      let usd = 0;
      for (const l of poolLoans) {
        const at = blocks[String(l.chain_id)];
        if (at == null) continue;
        const client = clients.get(l.chain_id)!;
        const blockNumber = BigInt(at);
        if ((await client.getCode({ address: l.address, blockNumber })) == null) continue; // not deployed yet
        const read = (functionName: string) =>
          client.readContract({ address: l.address, abi: LoanAbi as Abi, functionName, blockNumber });
        if ([0, 5, 7].includes(Number(await read("loanState")))) continue; // not open
        const [interest, principal] = (await read("getDebt")) as readonly [bigint, bigint];
        const f = feeds.get(`${l.chain_id}:${l.principal_token}`)!;
        const price = (await client.readContract({
          address: f.address,
          abi: FEED,
          functionName: "latestAnswer",
          blockNumber,
        }))!;
        usd += (Number(interest + principal) / 10 ** f.tokenDecimals) * (Number(price) / 10 ** f.decimals);
      }
      return usd;
    };
    await h.q("INSERT INTO registry.subaccount (chain_id, vault, address, internal_name) VALUES (1, $1, $2, $3)", [
      loan!.vault,
      b,
      "pool-borrower",
    ]);
    const db = writer();
    try {
      await runSubaccountDays(db, "indexer", rpcUrls());
      const rows = await h.q<{ day: string; total_loan_value: number; blocks: Record<string, number> }>(
        "SELECT day::text, total_loan_value, blocks FROM derived.subaccount_day WHERE address = $1 ORDER BY day",
        [b],
      );
      expect(rows.length).toBeGreaterThan(20);
      let withDebt = 0;
      for (const r of rows) {
        const want = await owedAt(r.blocks);
        if (want > 0) withDebt++;
        expect(Math.abs(r.total_loan_value - want), r.day).toBeLessThan(1e-9 * want + 1e-9);
      }
      // days before its first loan and days with one
      expect(withDebt).toBeGreaterThan(5);
      expect(withDebt).toBeLessThan(rows.length);
    } finally {
      await h.q("DELETE FROM registry.subaccount WHERE address = $1", [b]);
      await h.q("DELETE FROM derived.subaccount_day WHERE address = $1", [b]);
      await db.destroy();
    }
  });

  it("a summary's chains: those it is registered on and every chain it holds or owes on", async () => {
    type Full = {
      chains: { chain_id: number }[];
      tokens: { chain: number }[];
      portfolio: { defi_positions: { chain_id: number }[]; margin_balances: { chain_id: number }[] };
      loanbook: { loans: { book: { principal_token: { chain: number } } }[] };
    };
    const subs = await h.q<{ address: string; chains: number[] }>(
      `SELECT address, array_agg(DISTINCT chain_id ORDER BY chain_id) AS chains
       FROM registry.subaccount GROUP BY address ORDER BY address`,
    );
    let beyond = 0;
    for (const sub of subs) {
      const r = await devnetGet<Full>(`/subaccounts/summary?address=${sub.address}`);
      expect(r.status).toBe(200);
      const held = [
        ...r.body.tokens.map((t) => t.chain),
        ...r.body.portfolio.defi_positions.map((p) => p.chain_id),
        ...r.body.portfolio.margin_balances.map((m) => m.chain_id),
        ...r.body.loanbook.loans.map((l) => l.book.principal_token.chain),
      ];
      const want = [...new Set([...sub.chains, ...held])].sort((a, b) => a - b);
      expect(
        r.body.chains.map((c) => c.chain_id),
        sub.address,
      ).toEqual(want);
      if (want.length > sub.chains.length) beyond++;
    }
    // the devnet's subaccounts hold on a chain they are not registered on (its Base funds)
    expect(beyond).toBeGreaterThan(0);
  });

  it("a loan registry's party and a vault's EOA operator answer; an unknown address is 404", async () => {
    const [party] = await h.q<{ borrower: string }>(
      `SELECT borrower FROM indexer.loanbook_loan
       WHERE borrower NOT IN (SELECT address FROM registry.subaccount) ORDER BY borrower LIMIT 1`,
    );
    expect(party).toBeDefined();
    const registered = await h.q<{ address: string }>(
      "SELECT address FROM indexer.loanbook_loan WHERE borrower = $1 OR lender = $1",
      [party!.borrower],
    );
    const sum = await devnetGet<Summary>(`/subaccounts/summary?address=${party!.borrower}`);
    expect(sum.status).toBe(200);
    expect(sum.body.type).toBe("eoa");
    expect(sum.body.loanbook.loans.map((l) => l.book.address).sort()).toEqual(registered.map((r) => r.address).sort());

    const [op] = await h.q<{ address: string; name: string; chains: number[] }>(
      `SELECT address, min(name) AS name, array_agg(DISTINCT chain_id ORDER BY chain_id) AS chains
       FROM registry.operator WHERE operator_type = 'eoa'
         AND address NOT IN (SELECT address FROM registry.subaccount)
       GROUP BY address ORDER BY address LIMIT 1`,
    );
    expect(op).toBeDefined();
    const opSum = await devnetGet<Summary>(`/subaccounts/summary?address=${op!.address}`);
    expect(opSum.status).toBe(200);
    expect(opSum.body).toMatchObject({ type: "eoa", name: op!.name });
    // its operator rows' chains, and any other it holds something on
    for (const c of op!.chains) expect(opSum.body.chains.map((x) => x.chain_id)).toContain(c);
    expect((await devnetGet<Health>(`/subaccounts/health_factor?address=${op!.address}`)).status).toBe(200);

    const unknown = await devnetGet<{ detail: string }>(`/subaccounts/summary?address=0x${"78".repeat(20)}`);
    expect(unknown.status).toBe(404);
    expect(unknown.body.detail).toMatch(/not a registered subaccount/);
  });
});

describe("the perp core ledger in a subaccount's value", () => {
  it("its credited deposits are margin balances, priced on their source chain and in its value", async () => {
    type Deposit = {
      chainId: number;
      depositor: string;
      token: string;
      amount: string;
      destination: "perp" | "spot";
      outcome: { status: string };
    };
    const manifest = JSON.parse(readFileSync(h.devnet.manifestFile, "utf8")) as {
      chains: {
        chainId: number;
        world: {
          perp: { deposits: Deposit[]; ledger: string | null };
          protocols: { tokens: { address: string; decimals: number; feed: string }[] };
        };
      }[];
    };
    const credited = manifest.chains
      .flatMap((c) => c.world.perp.deposits)
      .filter((d) => d.outcome.status === "credited");
    const safe = credited[0]!.depositor.toLowerCase();
    const mine = credited.filter((d) => d.depositor.toLowerCase() === safe);
    const ledger = manifest.chains.map((c) => c.world.perp.ledger).find((l) => l != null)! as Address;
    const res = await h
      .appWith({ rpcUrls: rpcUrls() })
      .request(`/api/v1/subaccounts/summary?address=${safe}`, { headers: { "x-api-key": h.key } });
    expect(res.status).toBe(200);
    const body = (await res.json()) as {
      tokens: { value: number | null }[];
      portfolio: {
        margin_balances: {
          chain_id: number;
          account_type: string;
          source_chain_id: number;
          token: { address: string; decimals: number };
          status: string;
          core_hash: string | null;
          raw_balance: string;
          balance: number;
          value: number | null;
        }[];
        defi_positions: { value: number | null }[];
      };
      loanbook: { total_debt: number; total_credit: number };
      net_account_value: number;
    };
    // one balance per source chain, token and destination: the sum of its credits, as the ledger says
    const want = new Map<string, bigint>();
    for (const d of mine) {
      const k = `${d.chainId}:${d.token.toLowerCase()}:${d.destination}`;
      want.set(k, (want.get(k) ?? 0n) + BigInt(d.amount));
    }
    const got = body.portfolio.margin_balances;
    // the history's last relay pass answered every deposit: none is in transit
    expect(got.every((m) => m.status === "credited" && m.core_hash === null)).toBe(true);
    expect(
      new Map(got.map((m) => [`${m.source_chain_id}:${m.token.address}:${m.account_type}`, BigInt(m.raw_balance)])),
    ).toEqual(want);
    const LEDGER = parseAbi(["function balances(address, uint8, uint256, address) view returns (uint256)"]);
    for (const m of got) {
      const core = createPublicClient({ transport: http(rpcUrls().get(m.chain_id)!) });
      const args = [
        safe as Address,
        m.account_type === "spot" ? 1 : 0,
        BigInt(m.source_chain_id),
        m.token.address as Address,
      ] as const;
      expect(await core.readContract({ address: ledger, abi: LEDGER, functionName: "balances", args })).toBe(
        BigInt(m.raw_balance),
      );
      const source = manifest.chains.find((c) => c.chainId === m.source_chain_id)!;
      const token = source.world.protocols.tokens.find((t) => t.address.toLowerCase() === m.token.address)!;
      const client = createPublicClient({ transport: http(rpcUrls().get(m.source_chain_id)!) });
      const price =
        Number(await client.readContract({ address: token.feed as Address, abi: FEED, functionName: "latestAnswer" })) /
        1e8;
      expect(m.balance).toBeCloseTo(Number(m.raw_balance) / 10 ** token.decimals, 9);
      expect(m.value!).toBeCloseTo(m.balance * price, 6);
    }
    // at a block before the ledger was deployed: no balance, not a failed read
    const coreChain = got[0]!.chain_id;
    const coreClient = createPublicClient({ transport: http(rpcUrls().get(coreChain)!) });
    const keys = got.map((m) => ({
      chainId: BigInt(m.source_chain_id),
      token: m.token.address as Address,
      destination: m.account_type === "spot" ? 1 : 0,
    }));
    expect(await coreClient.getCode({ address: ledger, blockNumber: 1n })).toBeUndefined();
    expect(await readMargin(coreClient, ledger, safe as Address, 1n, keys)).toEqual([]);
    // the net account value is everything listed: tokens, positions, margin, loans lent less borrowed
    const sum = (xs: { value: number | null }[]) => xs.reduce((t, x) => t + (x.value ?? 0), 0);
    const listed =
      sum(body.tokens) +
      sum(body.portfolio.defi_positions) +
      sum(got) +
      body.loanbook.total_credit -
      body.loanbook.total_debt;
    expect(body.net_account_value).toBeCloseTo(listed, 4);
  });
});

describe("the lending-vault day series", () => {
  it("each day is the vault's state at its last snapshot block; apy_7d is the growth from 7 days before", async () => {
    const db = writer();
    try {
      const n = await replaceLendingVaultDays(db, "indexer");
      expect(n).toBeGreaterThan(20);
    } finally {
      await db.destroy();
    }
    const days = await h.q<{
      chain_id: number;
      vault: string;
      day: string;
      total_assets: string;
      total_supply: string;
      asset_share_ratio: string;
      block_number: string;
      timestamp: string;
      apy_7d: number | null;
    }>(
      "SELECT chain_id, vault, day::text AS day, total_assets::text, total_supply::text, asset_share_ratio::text, block_number::text, timestamp::text, apy_7d FROM derived.lending_vault_day ORDER BY 1, 2, 3",
    );
    const vaultAbi = parseAbi([
      "function totalAssets() view returns (uint256)",
      "function totalSupply() view returns (uint256)",
    ]);
    // every chain's vault, a few of its days read at their block
    for (const chainId of new Set(days.map((d) => d.chain_id))) {
      const client = createPublicClient({ transport: http(rpcUrls().get(chainId)!) });
      const mine = days.filter((d) => d.chain_id === chainId);
      for (const d of [mine[0]!, mine[Math.floor(mine.length / 2)]!, mine.at(-1)!]) {
        const at = { address: d.vault as Address, abi: vaultAbi, blockNumber: BigInt(d.block_number) };
        expect(String(await client.readContract({ ...at, functionName: "totalAssets" }))).toBe(d.total_assets);
        expect(String(await client.readContract({ ...at, functionName: "totalSupply" }))).toBe(d.total_supply);
        // the last snapshot of the day: none later that day
        const dayEnd = Math.floor(Number(d.timestamp) / 86_400 + 1) * 86_400;
        const [later] = await h.q<{ n: string }>(
          `SELECT count(*)::text AS n FROM indexer.lending_vault_snapshot
            WHERE chain_id = $1 AND vault = $2 AND block_number > $3 AND timestamp < $4`,
          [chainId, d.vault, d.block_number, dayEnd],
        );
        expect(later!.n).toBe("0");
      }
      const byDay = new Map(mine.map((d) => [`${d.vault}:${d.day}`, d]));
      const withApy = mine.filter((d) => d.apy_7d != null);
      expect(withApy.length).toBeGreaterThan(5);
      for (const d of mine) {
        const prevDay = new Date(Date.parse(`${d.day}T00:00:00Z`) - 7 * 86_400_000).toISOString().slice(0, 10);
        const p = byDay.get(`${d.vault}:${prevDay}`);
        if (!p) {
          expect(d.apy_7d).toBeNull();
          continue;
        }
        const growth = Number(d.asset_share_ratio) / Number(p.asset_share_ratio);
        const expected = growth ** ((365 * 86_400) / (Number(d.timestamp) - Number(p.timestamp))) - 1;
        expect(d.apy_7d!).toBeCloseTo(expected, 9);
      }
      // the route serves the newest day's APY
      const last = mine.filter((d) => d.vault === mine.at(-1)!.vault).at(-1)!;
      const sub = (await h.q<{ address: string }>("SELECT address FROM registry.subaccount LIMIT 1"))[0]!.address;
      const res = await h
        .appWith({ rpcUrls: rpcUrls() })
        .request(
          `/api/v1/integrations/lending_vault/apy?vault_address=${last.vault}&subaccount_address=${sub}&chain=${chainId}`,
        );
      expect(res.status).toBe(200);
      const body = (await res.json()) as { apy: number | null; apy_as_of: string | null; window_days: number | null };
      expect(body).toMatchObject({ apy: last.apy_7d, apy_as_of: last.day });
      expect(body.window_days).toBe(last.apy_7d == null ? null : 7);
    }
  });

  it("a run from each vault's last day leaves the table a full rebuild leaves", async () => {
    type Row = { chain_id: number; vault: string; day: string; apy_7d: number | null };
    const all = () =>
      h.q<Row>(
        "SELECT chain_id, vault, day::text AS day, total_assets::text, total_supply::text, asset_share_ratio::text, block_number::text, timestamp::text, apy_7d FROM derived.lending_vault_day ORDER BY 1, 2, 3",
      );
    const db = writer();
    try {
      await replaceLendingVaultDays(db, "indexer", true);
      const whole = await all();
      const vaults = new Set(whole.map((r) => `${r.chain_id}:${r.vault}`));
      expect(vaults.size).toBeGreaterThan(0);
      // nothing new: each vault's last day recomputed, the same
      expect(await replaceLendingVaultDays(db, "indexer", false)).toBe(vaults.size);
      expect(await all()).toEqual(whole);
      // the last three days gone and an older row marked: the days come back from the snapshots,
      // the older row is left as it is (not read again)
      await h.q(
        "DELETE FROM derived.lending_vault_day WHERE day > (SELECT max(day) - 3 FROM derived.lending_vault_day)",
      );
      const first = whole[0]!;
      const mark = [first.chain_id, first.vault, first.day];
      await h.q(
        "UPDATE derived.lending_vault_day SET apy_7d = 42 WHERE chain_id = $1 AND vault = $2 AND day = $3",
        mark,
      );
      await replaceLendingVaultDays(db, "indexer", false);
      const after = await all();
      expect(after.slice(1)).toEqual(whole.slice(1));
      expect(after[0]).toEqual({ ...first, apy_7d: 42 });
      // a vault with no row gets all its days
      await h.q("DELETE FROM derived.lending_vault_day WHERE chain_id = $1 AND vault = $2", mark.slice(0, 2));
      await replaceLendingVaultDays(db, "indexer", false);
      expect(await all()).toEqual(whole);
    } finally {
      await db.destroy();
    }
  });
});

describe("the health-factor series against the indexed events", () => {
  it("each day's health factor is the indexed Aave supplies and borrows at that day's block, within interest", async () => {
    const db = writer();
    try {
      await runSubaccountDays(db, "indexer", rpcUrls());
    } finally {
      await db.destroy();
    }
    const manifest = JSON.parse(readFileSync(h.devnet.manifestFile, "utf8")) as {
      chains: { world: { subaccounts: { safe: string; role: string | null }[] } }[];
    };
    const safe = manifest.chains
      .flatMap((c) => c.world.subaccounts)
      .find((x) => x.role === "leveraged")!
      .safe.toLowerCase();
    const events = await h.q<{ chain_id: number; kind: string; reserve: string; amount: string; block: string }>(
      `SELECT chain_id, kind, reserve, amount::text, block_number::text AS block FROM indexer.aave_event
        WHERE subaccount = $1 ORDER BY block_number, log_index`,
      [safe],
    );
    expect(events.length).toBeGreaterThan(3);
    // the leveraged subaccount's only debt and collateral are on Aave, on one chain
    const [morpho] = await h.q<{ n: string }>(
      "SELECT count(*)::text AS n FROM indexer.morpho_event WHERE subaccount = $1",
      [safe],
    );
    expect(morpho!.n).toBe("0");
    const chainId = events[0]!.chain_id;
    expect(new Set(events.map((e) => e.chain_id))).toEqual(new Set([chainId]));
    const client = createPublicClient({ transport: http(rpcUrls().get(chainId)!) });
    const [entry] = await h.q<{
      protocols: {
        tokens: { address: string; decimals: number; priceFeed: { address: string; decimals: number } }[];
        aave: { dataProvider: string };
      };
    }>("SELECT protocols FROM registry.chain_protocols WHERE chain_id = $1", [chainId]);
    const tokens = new Map(entry!.protocols.tokens.map((t) => [t.address.toLowerCase(), t]));
    const feed = parseAbi(["function latestAnswer() view returns (int256)"]);
    const provider = parseAbi([
      "function getReserveConfigurationData(address) view returns (uint256, uint256, uint256, uint256, uint256, bool, bool, bool, bool, bool)",
    ]);
    const days = await h.q<{ day: string; health_factor: number | null; blocks: Record<string, number> }>(
      "SELECT day::text, health_factor, blocks FROM derived.subaccount_day WHERE address = $1 ORDER BY day",
      [safe],
    );
    let checked = 0;
    for (const d of days) {
      const block = BigInt(d.blocks[String(chainId)]!);
      const held = new Map<string, { supplied: bigint; borrowed: bigint }>();
      for (const e of events.filter((x) => BigInt(x.block) <= block)) {
        const h0 = held.get(e.reserve) ?? { supplied: 0n, borrowed: 0n };
        const a = BigInt(e.amount);
        if (e.kind === "supply") h0.supplied += a;
        else if (e.kind === "withdraw") h0.supplied -= a;
        else if (e.kind === "borrow") h0.borrowed += a;
        else if (e.kind === "repay") h0.borrowed -= a;
        held.set(e.reserve, h0);
      }
      let collateral = 0;
      let debt = 0;
      for (const [reserve, x] of held) {
        const t = tokens.get(reserve)!;
        const price =
          Number(
            await client.readContract({
              address: t.priceFeed.address as Address,
              abi: feed,
              functionName: "latestAnswer",
              blockNumber: block,
            }),
          ) /
          10 ** t.priceFeed.decimals;
        const cfg = await client.readContract({
          address: entry!.protocols.aave.dataProvider as Address,
          abi: provider,
          functionName: "getReserveConfigurationData",
          args: [reserve as Address],
          blockNumber: block,
        });
        const lt = Number(cfg[2]) / 10_000;
        collateral += (Number(x.supplied) / 10 ** t.decimals) * price * lt;
        debt += (Number(x.borrowed) / 10 ** t.decimals) * price;
      }
      if (debt === 0) {
        expect(d.health_factor, d.day).toBeNull();
        continue;
      }
      // the series reads the balances with the interest accrued since; the events are principal
      expect(d.health_factor!, d.day).toBeGreaterThan((collateral / debt) * 0.97);
      expect(d.health_factor!, d.day).toBeLessThan((collateral / debt) * 1.03);
      checked++;
    }
    expect(checked).toBeGreaterThan(5);
  });
});

describe("a perp deposit on its way to the core ledger", () => {
  type Margin = {
    status: string;
    core_hash: string | null;
    source_chain_id: number;
    account_type: string;
    token: { address: string };
    raw_balance: string;
    value: number | null;
  };
  type Summary = {
    tokens: { chain: number; address: string; price: number | null }[];
    portfolio: { margin_balances: Margin[] };
    total_account_value: number;
  };
  const app = () => h.appWith({ rpcUrls: rpcUrls() });
  const summaryOf = async (safe: string) => {
    const a = await readAnswer<Summary>(
      await app().request(`/api/v1/subaccounts/summary?address=${safe}`, { headers: { "x-api-key": h.key } }),
    );
    expect(a.status).toBe(200);
    return a.body;
  };
  const status = async (hash: string) =>
    (
      await readAnswer<{ status: string }>(
        await app().request(`/api/v1/integrations/perp_relayer_a/check_status?core_hash=${hash}`),
      )
    ).body.status;
  /** Sends on `chainId`'s devnet, from an unlocked account, and waits for its success. */
  const sender = (chainId: number) => {
    const url = rpcUrls().get(chainId)!;
    const client = createPublicClient({ transport: http(url) });
    return async (from: Address, to: Address, data: Hex, gas = "0x1c9c380") => {
      const hash = await rpcCall<Hex>(url, "eth_sendTransaction", [{ from, to, data, gas, gasPrice: "0x0" }]);
      const r = await client.waitForTransactionReceipt({ hash, pollingInterval: 20 });
      expect(r.status).toBe("success");
      return r;
    };
  };
  /** A perp_relayer_a deposit of 300 USDC built for `safe` on `chainId`. */
  const buildDeposit = async (safe: string, chainId: number) => {
    const build = (await createKey(h.db, `perp-transit-${chainId}`, ["transactions:build"])).key;
    const built = await readAnswer<{
      core_hash: Hex;
      from: Address;
      target: Address;
      data: Hex;
      gas_limit: string;
      core: { chain_id: number; ledger: string } | null;
    }>(
      await app().request("/api/v1/integrations/perp_relayer_a/deposit", {
        method: "POST",
        headers: { "content-type": "application/json", "x-api-key": build },
        body: JSON.stringify({ subaccount: safe, chain: chainId, amount: "300" }),
      }),
    );
    expect(built.status, JSON.stringify(built.body)).toBe(200);
    return built.body;
  };
  const byHash = (b: Summary, hash: string) => b.portfolio.margin_balances.filter((m) => m.core_hash === hash);
  /** The series' today for `safe`, computed now. */
  const seriesToday = async (safe: string) => {
    const db = writer();
    try {
      await runSubaccountDays(db, "indexer", rpcUrls());
    } finally {
      await db.destroy();
    }
    const [today] = await h.q<{ total_account_value: number }>(
      "SELECT total_account_value FROM derived.subaccount_day WHERE address = $1 ORDER BY day DESC LIMIT 1",
      [safe],
    );
    return today!.total_account_value;
  };
  /**
   * The summary with the deposit `hash` on its way from `source`: one in-transit row of AMOUNT at
   * `price`, the account's value as it was (`held`), and the series' today the same.
   */
  const inTransit = async (safe: string, hash: string, source: number, price: number, held: Summary) => {
    const onWay = await summaryOf(safe);
    expect(byHash(onWay, hash)).toEqual([
      expect.objectContaining({
        status: "in_transit",
        source_chain_id: source,
        account_type: "perp",
        raw_balance: AMOUNT.toString(),
        value: expect.closeTo(300 * price, 6),
      }),
    ]);
    expect(onWay.total_account_value).toBeCloseTo(held.total_account_value, 1);
    expect(await seriesToday(safe)).toBeCloseTo(onWay.total_account_value, 6);
    return onWay;
  };

  it("is in transit in the value, the summary and the series until credited, then a balance", async () => {
    const manifest = loadManifest(h.devnet.manifestFile);
    const chain1 = manifest.chains.find((c) => c.chainId === 1)!;
    const client = createPublicClient({ transport: http(rpcUrls().get(1)!) });
    const sub = chain1.world.subaccounts.find((x) => x.role === "trader" && x.registered)!;
    const safe = sub.safe.toLowerCase() as Address;
    const usdc = chain1.world.protocols.perp.usdc.toLowerCase() as Address;
    const ledger = chain1.world.protocols.core!.ledger as Address;
    const send = sender(1);
    const summary = () => summaryOf(safe);

    await send(sub.trader, usdc, encodeFunctionData({ abi: ERC20_ABI, functionName: "mint", args: [safe, AMOUNT] }));
    // its value with the 300 USDC in the Safe: the deposit moves it, it does not lose it
    const held = await summary();
    const price = held.tokens.find((t) => t.chain === 1 && t.address === usdc)!.price!;
    const p = await buildDeposit(safe, 1);
    const receipt = await send(p.from, p.target, p.data, toHex(BigInt(p.gas_limit)));
    await until("the deposit indexed", 60_000, async () =>
      (await status(p.core_hash)) === "pending" ? true : undefined,
    );

    // in the value, the summary and the series' today (at the same heads)
    const onWay = await inTransit(safe, p.core_hash, 1, price, held);
    // the ledger's answer to it is read once per head block, as the state is: a second request
    // at the same head reads only the head
    const proxy = await startRpcProxy(rpcUrls().get(1)!, await freePorts(1));
    try {
      const one = h.appWith({ responseCacheMs: 0, rpcUrls: new Map([...rpcUrls(), [1, proxy.url]]) });
      const health = async () => {
        const res = await one.request(`/api/v1/subaccounts/health_factor?address=${safe}`, {
          headers: { "x-api-key": h.key },
        });
        expect(res.status).toBe(200);
      };
      proxy.record();
      await health();
      expect(proxy.stop().filter((c) => c.method === "eth_call").length).toBeGreaterThan(1);
      // a pair of requests between which nothing changed (a block, or the indexer catching up
      // on the chain, as under load, is a new state to read): the second reads only the head
      let second: string[] = [];
      for (let attempt = 0; attempt < 5; attempt++) {
        proxy.record();
        await health();
        second = proxy.stop().map((c) => c.method);
        if (second.length === 1) break;
      }
      expect(second).toEqual(["eth_getBlockByNumber"]);
    } finally {
      await proxy.close();
    }
    // with nothing indexed (an indexer behind the chain) the bridge's nonce and logs find it
    const bridges = [chain1.world.protocols.perp.bridgeA, chain1.world.protocols.perp.bridgeB] as Address[];
    const read = await readDeposits(client, 1, bridges, safe, receipt.blockNumber, []);
    expect(read.find((d) => d.coreHash === p.core_hash)).toMatchObject({ raw: AMOUNT, answeredAt: null });
    const open = await readInTransit(client, ledger, read, receipt.blockNumber);
    expect(open.map((d) => d.coreHash)).toEqual([p.core_hash]);

    // the relayer credits it: a ledger balance, no longer in transit, the value the same
    const credit = encodeFunctionData({
      abi: CoreLedgerAbi,
      functionName: "credit",
      args: [p.core_hash, chain1.world.protocols.perp.bridgeA as Address, 1n, safe, usdc, AMOUNT, 0],
    });
    await send(chain1.world.perp.relayer, ledger, credit);
    await until("the credit indexed", 60_000, async () =>
      (await status(p.core_hash)) === "credited" ? true : undefined,
    );
    const landed = await summary();
    expect(byHash(landed, p.core_hash)).toEqual([]);
    const perpUsdc = (b: Summary) =>
      BigInt(
        b.portfolio.margin_balances.find(
          (m) =>
            m.status === "credited" && m.source_chain_id === 1 && m.account_type === "perp" && m.token.address === usdc,
        )?.raw_balance ?? "0",
      );
    expect(perpUsdc(landed) - perpUsdc(onWay)).toBe(AMOUNT);
    expect(landed.total_account_value).toBeCloseTo(held.total_account_value, 1);
    // with nothing indexed (the indexer behind): the credited deposit the bridge's logs found is
    // no longer in transit, and its ledger key, named by no indexed row, is read with it
    const entry = (await readChainProtocols(h.db)).get(1)!;
    const top = await client.getBlock();
    const unindexed = [await readChainState(client, entry, safe, top, { deposits: [], credits: [] })];
    const [followed] = await withInTransit(
      unindexed,
      transitFrom(() => client),
      marginFrom(() => client),
    );
    const [unfollowed] = await withInTransit(
      unindexed,
      transitFrom(() => client),
    );
    const perpKey = (m: { chainId: number; token: string; destination: string }) =>
      m.chainId === 1 && m.token === usdc && m.destination === "perp";
    expect(followed!.inTransit.map((d) => d.coreHash)).not.toContain(p.core_hash);
    expect(followed!.margin.find(perpKey)?.raw).toBe(perpUsdc(landed));
    // before: in neither list, so out of the value until the indexer caught up
    expect(unfollowed!.margin.find(perpKey)).toBeUndefined();
    // a credit of no indexed deposit (not through the catalogue's bridges): its balance is read
    // under the key of the ledger's indexed credit, and counts in the value
    const accepted = [usdc, ...chain1.world.protocols.perp.tokensB.map((t) => t.address.toLowerCase())];
    const other = chain1.world.protocols.tokens.find((t) => !accepted.includes(t.address.toLowerCase()))!;
    const units = 5n * 10n ** BigInt(other.decimals);
    const unknownHash = keccak256(toHex("a credit of no indexed deposit"));
    const stranger = "0x00000000000000000000000000000000000b41d6";
    const args = [unknownHash, stranger, 1n, safe, other.address as Address, units, 1] as const;
    await send(
      chain1.world.perp.relayer,
      ledger,
      encodeFunctionData({ abi: CoreLedgerAbi, functionName: "credit", args }),
    );
    await until("the other credit indexed", 60_000, async () =>
      (await h.q("SELECT 1 FROM indexer.perp_core_event WHERE core_hash = $1", [unknownHash])).length
        ? true
        : undefined,
    );
    const otherPrice =
      Number(await client.readContract({ address: other.feed as Address, abi: FEED, functionName: "latestAnswer" })) /
      1e8;
    const extra = await summary();
    const spot = extra.portfolio.margin_balances.find(
      (m) => m.source_chain_id === 1 && m.account_type === "spot" && m.token.address === other.address.toLowerCase(),
    );
    expect(spot).toMatchObject({ status: "credited", core_hash: null, raw_balance: units.toString() });
    expect(spot!.value).toBeCloseTo(5 * otherPrice, 6);
    expect(extra.total_account_value).toBeCloseTo(landed.total_account_value + 5 * otherPrice, 1);
    expect(await readInTransit(client, ledger, read, await client.getBlockNumber({ cacheTime: 0 }))).toEqual([]);
    expect((await readInTransit(client, ledger, read, receipt.blockNumber)).map((d) => d.coreHash)).toEqual([
      p.core_hash,
    ]);
  });

  it("from a chain whose protocols entry names no ledger: followed to the registry's one ledger", async () => {
    // the demo's Base entry lists its bridges and no core: the relayer credits them on chain 1
    const [stored] = await h.q<{ core: unknown }>(
      "SELECT protocols->'perp'->'core' AS core FROM registry.chain_protocols WHERE chain_id = 8453",
    );
    expect(stored!.core).toBeNull();
    const manifest = loadManifest(h.devnet.manifestFile);
    const base = manifest.chains.find((c) => c.chainId === 8453)!;
    const chain1 = manifest.chains.find((c) => c.chainId === 1)!;
    const ledger = chain1.world.protocols.core!.ledger as Address;
    const sub = base.world.subaccounts.find((x) => x.role === "trader" && x.registered)!;
    const safe = sub.safe.toLowerCase() as Address;
    const usdc = base.world.protocols.perp.usdc.toLowerCase() as Address;
    const send = sender(8453);
    const mint = encodeFunctionData({ abi: ERC20_ABI, functionName: "mint", args: [safe, AMOUNT] });
    await send(sub.trader, usdc, mint);
    const held = await summaryOf(safe);
    const price = held.tokens.find((t) => t.chain === 8453 && t.address === usdc)!.price!;
    const p = await buildDeposit(safe, 8453);
    expect(p.core).toEqual({ chain_id: 1, ledger: chain1.world.protocols.core!.ledger });
    await send(p.from, p.target, p.data, toHex(BigInt(p.gas_limit)));
    await until("the deposit indexed", 60_000, async () =>
      (await status(p.core_hash)) === "pending" ? true : undefined,
    );
    // on its way: in the value at Base's price, not missing from it
    await inTransit(safe, p.core_hash, 8453, price, held);
    // credited on chain 1: a balance from Base, the value the same
    const credit = encodeFunctionData({
      abi: CoreLedgerAbi,
      functionName: "credit",
      args: [p.core_hash, base.world.protocols.perp.bridgeA as Address, 8453n, safe, usdc, AMOUNT, 0],
    });
    await sender(1)(chain1.world.perp.relayer, ledger, credit);
    await until("the credit indexed", 60_000, async () =>
      (await status(p.core_hash)) === "credited" ? true : undefined,
    );
    const landed = await summaryOf(safe);
    expect(byHash(landed, p.core_hash)).toEqual([]);
    expect(landed.total_account_value).toBeCloseTo(held.total_account_value, 1);
  });
});
