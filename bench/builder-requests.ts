/**
 * The requests bench:builders times: for each builder, candidates made from the demo's manifest
 * (its subaccounts, their traders, the protocol world's pools, reserves and bridges) with amounts
 * from what the Safes hold, tried until the API builds one (200). A builder the devnet's state gives
 * no buildable request for fails the bench, loudly.
 */
import { type Address, erc20Abi, type PublicClient } from "viem";
import type { Manifest } from "../contracts/devnet/index.js";

export interface BuilderRequest {
  name: string;
  chainId: number;
  path: string;
  body: Record<string, unknown>;
}

type Chain = Manifest["chains"][number];

/** Each builder's candidate requests on one chain, best first. */
export async function candidates(c: Chain, client: PublicClient): Promise<Map<string, BuilderRequest[]>> {
  const out = new Map<string, BuilderRequest[]>();
  const add = (r: BuilderRequest) => out.set(r.name, [...(out.get(r.name) ?? []), r]);
  const subs = c.world.subaccounts.filter((s) => s.registered);
  const p = c.world.protocols;
  const balance = (token: Address, owner: Address) =>
    client.readContract({ address: token, abi: erc20Abi, functionName: "balanceOf", args: [owner] });
  for (const s of subs) {
    const base = { chain: c.chainId, from: s.trader };
    for (const r of p.aave.reserves) {
      const market = `/integrations/lending_market/${r.aToken}`;
      const held = await balance(r.asset, s.safe);
      if (held > 100n) {
        add({
          name: "lending supply",
          chainId: c.chainId,
          path: `${market}/supply/${s.safe}`,
          body: { ...base, amount_raw: String(held / 100n) },
        });
      }
      const supplied = await balance(r.aToken, s.safe);
      if (supplied > 100n) {
        add({
          name: "lending withdraw",
          chainId: c.chainId,
          path: `${market}/withdraw/${s.safe}`,
          body: { ...base, amount_raw: String(supplied / 100n) },
        });
      }
      const owed = await balance(r.variableDebtToken, s.safe);
      if (owed > 100n && held > owed / 100n) {
        add({
          name: "lending repay",
          chainId: c.chainId,
          path: `${market}/repay/${s.safe}`,
          body: { ...base, amount_raw: String(owed / 100n) },
        });
        add({
          name: "lending borrow",
          chainId: c.chainId,
          path: `${market}/borrow/${s.safe}`,
          body: { ...base, amount_raw: String(owed / 1000n) },
        });
      }
    }
    for (const pool of p.uniswap.pools) {
      const held0 = await balance(pool.token0, s.safe);
      if (held0 > 1000n && (await balance(pool.token1, s.safe)) > 0n) {
        add({
          name: "dex_pool deposit",
          chainId: c.chainId,
          path: `/integrations/dex_pool/${pool.address}/deposit/${s.safe}`,
          body: { ...base, amount0_raw: String(held0 / 1000n), width_bps: 1000 },
        });
      }
    }
    for (const pos of c.world.positions.filter((x) => x.subaccount === s.safe)) {
      const dex = `/integrations/dex_pool/${pos.pool}`;
      const tokenId = pos.tokenId;
      add({
        name: "dex_pool withdraw",
        chainId: c.chainId,
        path: `${dex}/withdraw/${s.safe}`,
        body: { ...base, token_id: tokenId, fraction: 0.01 },
      });
      add({
        name: "dex_pool rebalance",
        chainId: c.chainId,
        path: `${dex}/rebalance/${s.safe}`,
        body: { ...base, token_id: tokenId, width_bps: 2000 },
      });
      add({
        name: "dex_pool claim_rewards",
        chainId: c.chainId,
        path: `${dex}/claim_rewards/${s.safe}`,
        body: { ...base, token_id: tokenId },
      });
    }
    // swaps between two tokens the module allows, from one the Safe holds
    for (const tin of s.tokens) {
      const held = await balance(tin, s.safe);
      if (held < 1000n) continue;
      for (const tout of s.tokens.filter((t) => t !== tin)) {
        const body = { ...base, token_in: tin, token_out: tout, amount_raw: String(held / 1000n) };
        add({ name: "swap", chainId: c.chainId, path: `/subaccounts/${s.safe}/swaps`, body });
      }
    }
    const usdc = p.perp.usdc;
    const cash = await balance(usdc, s.safe);
    if (cash > 0n) {
      const amount = String(cash / 10n);
      add({
        name: "perp_relayer_a deposit",
        chainId: c.chainId,
        path: "/integrations/perp_relayer_a/deposit",
        body: { subaccount: s.safe, ...base, amount_raw: amount },
      });
      add({
        name: "perp_relayer_b deposit",
        chainId: c.chainId,
        path: "/integrations/perp_relayer_b/deposit",
        body: { subaccount: s.safe, ...base, amount_raw: amount, token: usdc },
      });
    }
  }
  return out;
}
