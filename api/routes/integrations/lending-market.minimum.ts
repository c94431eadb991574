/**
 * What a lending-market borrow or withdrawal changes on its chain, for the operator's floor
 * (api/lib/build/health-floor.ts): this chain's Aave figures change by what the simulation read
 * before and after the transaction. Supply and repay cannot lower the health factor: they are not
 * checked.
 */
import { type ChainState, tokenPrice } from "../../../onchain/valuation.js";
import type { Change } from "../../lib/build/health-floor.js";
import type { Operation } from "./lending-market.lib.js";

/** The operations that can lower the health factor: the ones checked. */
export const lowersHealth = (op: Operation) => op === "borrow" || op === "withdraw";

/** Aave's getUserAccountData: collateral, debt (base, 8 decimals), …, liquidation threshold (bps). */
export type AccountData = readonly [bigint, bigint, bigint, bigint, bigint, bigint];

/** What the simulation read, before and after: account data, underlying and aToken balances. */
export interface SimulatedAave {
  before: { account: AccountData; underlying: bigint; aToken: bigint };
  after: { account: AccountData; underlying: bigint; aToken: bigint };
  underlying: { address: string; decimals: number };
}

/** The change on `chainId`: Aave's collateral, debt and liquidation collateral, and what is held. */
export function aaveChange(chainId: number, sim: SimulatedAave): Change {
  const [collB, debtB, , ltB] = sim.before.account;
  const [collA, debtA, , ltA] = sim.after.account;
  const base = (v: bigint) => Number(v) / 1e8;
  const held = (x: SimulatedAave["before"]) => x.underlying + x.aToken;
  const moved = Number(held(sim.after) - held(sim.before)) / 10 ** sim.underlying.decimals;
  return (states: readonly ChainState[]) => {
    const state = states.find((s) => s.chainId === chainId);
    const price = state ? (tokenPrice(state, sim.underlying.address) ?? 0) : 0;
    return {
      collateral: base(collA) - base(collB),
      debt: base(debtA) - base(debtB),
      liquidation: (base(collA) * Number(ltA)) / 10_000 - (base(collB) * Number(ltB)) / 10_000,
      value: moved * price,
    };
  };
}
