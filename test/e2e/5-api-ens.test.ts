/**
 * The points leaderboard's `ens_name`, resolved through viem on the chain `chain` against the
 * devnet's ENS Universal Resolver (a TestUniversalResolver the simulator deploys on every chain,
 * with `wallet<i>.eth` names for a few share holders; the harness passes it as ensResolvers).
 * A name that does not resolve, for whatever reason, gives 200 with no items, never an error;
 * only an ens_name the route schema rejects (empty, longer than 255 characters) is a 422.
 */

import { createPublicClient, http } from "viem";
import { getEnsAddress } from "viem/ens";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { type ApiHarness, setupApi } from "../api-harness.js";

let h: ApiHarness;

interface Balance {
  wallet: string;
  total_points: string;
  streak_days: number;
  rank_total: number;
  rank_streak: number;
  top_vault: string | null;
  top_vault_chain_id: number | null;
}
type Item = {
  rank: number;
  userAddress: string;
  topVault: { address: string; chainId: number } | null;
  streakDays: number;
  totalPoints: number;
};
type Board = { page: number; perPage: number; totalItems: number; totalPages: number; items: Item[] };

const board = (query: Record<string, string | number>, app?: ReturnType<ApiHarness["appWith"]>) => {
  const qs = new URLSearchParams(Object.entries(query).map(([k, v]): [string, string] => [k, String(v)])).toString();
  const path = `/api/v1/platform/points/leaderboard?${qs}`;
  if (!app) return h.json<Board>(path);
  return Promise.resolve(app.request(path, { headers: { "x-api-key": h.key } })).then(async (res) => ({
    status: res.status,
    body: (await res.json()) as Board,
  }));
};
const balanceOf = async (w: string) =>
  (await h.q<Balance>("SELECT * FROM derived.points_balance WHERE wallet = $1", [w]))[0];
const empty = { totalItems: 0, totalPages: 0, items: [] };

/** per chain: [name, wallet, its points_balance row (undefined: not ranked)] */
const named: { chainId: number; name: string; wallet: string; balance: Balance | undefined }[] = [];

beforeAll(async () => {
  h = await setupApi();
  for (const c of h.devnet.chains) {
    for (const [name, wallet] of Object.entries(c.ensNames))
      named.push({ chainId: c.chainId, name, wallet, balance: await balanceOf(wallet) });
  }
}, 400_000);

afterAll(async () => {
  await h?.close();
});

describe("leaderboard ens_name", () => {
  it("the devnet registers names on every chain, resolvable by viem itself", async () => {
    for (const c of h.devnet.chains) {
      expect(c.ensUniversalResolver).toMatch(/^0x[0-9a-f]{40}$/);
      expect(Object.keys(c.ensNames).filter((n) => /^wallet\d+\.eth$/.test(n)).length).toBeGreaterThanOrEqual(3);
      const client = createPublicClient({ transport: http(c.rpcUrl) });
      for (const [name, wallet] of Object.entries(c.ensNames)) {
        const got = await getEnsAddress(client, { name, universalResolverAddress: c.ensUniversalResolver });
        expect(got?.toLowerCase(), name).toBe(wallet);
      }
      expect(
        await getEnsAddress(client, { name: "nobody.eth", universalResolverAddress: c.ensUniversalResolver }),
      ).toBeNull();
    }
    // share holders earn points: most named wallets are on the leaderboard
    expect(named.filter((n) => n.balance).length).toBeGreaterThanOrEqual(3);
  });

  it("a registered name gives exactly its wallet, with its rank from derived.points_balance", async () => {
    for (const n of named) {
      const r = await board({ ens_name: n.name, chain: n.chainId });
      expect(r.status, n.name).toBe(200);
      if (!n.balance) {
        expect(r.body, n.name).toMatchObject(empty);
        continue;
      }
      expect(r.body, n.name).toMatchObject({ page: 1, perPage: 10, totalItems: 1, totalPages: 1 });
      expect(r.body.items).toHaveLength(1);
      expect(r.body.items[0]).toMatchObject({
        rank: n.balance.rank_total,
        userAddress: n.wallet,
        totalPoints: Number(n.balance.total_points),
        streakDays: n.balance.streak_days,
      });
      // the same as asking by address
      const byAddress = await board({ wallet_address: n.wallet });
      expect(r.body.items).toEqual(byAddress.body.items);
    }
  });

  it("normalises the name (case, surrounding spaces), follows sortBy, and ignores page", async () => {
    const n = named.find((x) => x.balance)!;
    const b = n.balance!;
    for (const spelling of [n.name.toUpperCase(), ` ${n.name} `, n.name.replace(/^w/, "W")]) {
      const r = await board({ ens_name: spelling, chain: n.chainId, page: 3 });
      expect(r.status, spelling).toBe(200);
      expect(
        r.body.items.map((i) => [i.userAddress, i.rank]),
        spelling,
      ).toEqual([[n.wallet, b.rank_total]]);
    }
    const s = await board({ ens_name: n.name, chain: n.chainId, sortBy: "streakDays" });
    expect(s.body.items.map((i) => i.rank)).toEqual([b.rank_streak]);
  });

  it("chain defaults to 1, and a name resolves only on the chain it is registered on", async () => {
    const c1 = h.devnet.chains.find((c) => c.chainId === 1)!;
    const n1 = named.find((n) => n.chainId === 1 && n.balance)!;
    const r = await board({ ens_name: n1.name });
    expect(r.body.items.map((i) => i.userAddress)).toEqual([n1.wallet]);
    // chain<id>.eth is registered on chain <id> only
    expect(c1.ensNames["chain8453.eth"]).toBeUndefined();
    const elsewhere = named.find((n) => n.chainId === 8453 && n.name === "chain8453.eth")!;
    expect(elsewhere).toBeDefined();
    expect((await board({ ens_name: elsewhere.name, chain: 8453 })).body.items.map((i) => i.userAddress)).toEqual(
      elsewhere.balance ? [elsewhere.wallet] : [],
    );
    expect((await board({ ens_name: elsewhere.name, chain: 1 })).body).toMatchObject(empty);
    expect((await board({ ens_name: elsewhere.name })).body).toMatchObject(empty);
    expect((await board({ ens_name: "chain1.eth", chain: 8453 })).body).toMatchObject(empty);
  });

  it("an unknown name, or a name whose address has no points: 200 with no items", async () => {
    for (const chain of h.devnet.chains.map((c) => c.chainId)) {
      for (const name of ["nobody.eth", "wallet9999.eth", "unranked.eth", "eth"]) {
        const r = await board({ ens_name: name, chain });
        expect(r.status, `${name} on ${chain}`).toBe(200);
        expect(r.body, `${name} on ${chain}`).toMatchObject(empty);
      }
    }
  });

  it("a chain without an RPC endpoint or a resolver, or an RPC that is down: 200 with no items, quickly", async () => {
    const n1 = named.find((n) => n.chainId === 1 && n.balance)!;
    // OP Mainnet is a catalogue chain the test API has no RPC for
    expect((await board({ ens_name: n1.name, chain: 10 })).body).toMatchObject(empty);
    // no configured resolvers: Base has none viem knows; on chain 1 viem's mainnet resolver
    // address has no code on the devnet, which is a failed lookup, not a 500
    const noResolvers = h.appWith({ ensResolvers: new Map() });
    const base = named.find((n) => n.chainId === 8453)!;
    expect((await board({ ens_name: base.name, chain: 8453 }, noResolvers)).body).toMatchObject(empty);
    const r = await board({ ens_name: n1.name, chain: 1 }, noResolvers);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject(empty);
    // an RPC endpoint nobody listens on
    const down = h.appWith({ rpcUrls: new Map([[1, "http://127.0.0.1:9"]]) });
    const t0 = Date.now();
    const d = await board({ ens_name: n1.name, chain: 1 }, down);
    expect(d.status).toBe(200);
    expect(d.body).toMatchObject(empty);
    expect(Date.now() - t0).toBeLessThan(5_000);
  });

  it("a name ENS normalisation rejects gives no items; an empty or over-long ens_name is a 422", async () => {
    for (const name of ["a b.eth", "a..eth", ".eth", "wallet0.eth.", "x\u200by.eth", "<script>.eth", "%"]) {
      const r = await board({ ens_name: name, chain: 1 });
      expect(r.status, name).toBe(200);
      expect(r.body, name).toMatchObject(empty);
    }
    for (const name of ["", `${"a".repeat(252)}.eth`]) {
      const r = await h.json<{ detail: { loc: string[] }[] }>(`/api/v1/platform/points/leaderboard?ens_name=${name}`);
      expect(r.status, name).toBe(422);
      expect(r.body.detail[0]!.loc).toEqual(["query", "ens_name"]);
    }
  });

  it("an ens_name that is a 0x address is that wallet (no resolution); wallet_address wins over ens_name", async () => {
    const [a, b] = named.filter((n) => n.balance);
    const upper = `0x${a!.wallet.slice(2).toUpperCase()}`;
    for (const chain of [1, 10]) {
      const r = await board({ ens_name: upper, chain });
      expect(r.body.items.map((i) => [i.userAddress, i.rank])).toEqual([[a!.wallet, a!.balance!.rank_total]]);
    }
    if (b && b.wallet !== a!.wallet) {
      const r = await board({ wallet_address: b.wallet, ens_name: a!.name, chain: a!.chainId });
      expect(r.body.items.map((i) => i.userAddress)).toEqual([b.wallet]);
    }
  });
});
