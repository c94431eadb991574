/**
 * The operator's floor of a lending-market borrow or withdrawal: the subaccount's registry
 * `min_health_factor` against its account-wide health factor, as GET /subaccounts/health_factor
 * computes it (every chain, venue and loan it borrows), before and after. After: this chain's
 * Aave figures change by what the simulation read before and after the transaction. Below the
 * minimum and lower than before, the build is a 409 `below_min_health_factor`, unless the
 * request allows it. Supply and repay cannot lower it: they are not checked. The minimum is the
 * one the builders' registry list holds (kept 10 s, `buildSubaccount`), so a change to it applies
 * within 10 s.
 */
import type { Context } from "hono";
import { indexedLoans } from "../../../db/loan-parties.js";
import { accountFigures, type ChainState, tokenPrice, withVenueChange } from "../../../onchain/valuation.js";
import { BuildRefusal, errMessage } from "../../lib/build/refusal.js";
import type { BuildSubaccount } from "../../lib/build/subaccount.js";
import { NoRpc } from "../../lib/protocols.js";
import type { AppEnv } from "../../lib/router.js";
import { readChains } from "../subaccounts/subaccounts.lib.js";
import type { Operation } from "./lending-market.lib.js";

export interface AccountHealth {
  minimum: number;
  before: number | null;
  after: number | null;
  below: boolean;
}

/** The operations that can lower the health factor: the ones checked. */
export const lowersHealth = (op: Operation) => op === "borrow" || op === "withdraw";

type Settled<T> = { value: T } | { error: unknown };
const settle = <T>(p: Promise<T>): Promise<Settled<T>> =>
  p.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );

/** Aave's getUserAccountData: collateral, debt (base, 8 decimals), …, liquidation threshold (bps). */
type AccountData = readonly [bigint, bigint, bigint, bigint, bigint, bigint];

/** What the simulation read, before and after: account data, underlying and aToken balances. */
export interface SimulatedAave {
  before: { account: AccountData; underlying: bigint; aToken: bigint };
  after: { account: AccountData; underlying: bigint; aToken: bigint };
  underlying: { address: string; decimals: number };
}

/**
 * The floor check of one build, started once the subaccount is resolved: when the registry sets
 * it a minimum and the operation can lower the health factor, the account is read on every chain
 * (shared with the health factor route at each head) beside the build's own reads and simulation;
 * `check()` then compares. An error waits for `check()`: none goes unhandled.
 */
export function floorCheck(c: Context<AppEnv>, op: Operation, sub: BuildSubaccount) {
  const { db, config } = c.var.deps;
  const minimum = sub.minHealthFactor;
  const address = sub.safe.toLowerCase();
  const states =
    lowersHealth(op) && minimum != null
      ? settle(
          indexedLoans(db, config.indexerSchema, address).then((loans) =>
            readChains(db, config.indexerSchema, c.var.chainReads, config.rpcUrls, { address, loans }),
          ),
        )
      : null;
  return {
    /** The health factor before and after against the minimum; null when none applies. */
    async check(sim: SimulatedAave): Promise<AccountHealth | null> {
      if (!states || minimum == null) return null;
      const s = await states;
      if ("error" in s) throw unavailable(s.error);
      return compare(address, minimum, s.value, sub.chainId, sim);
    },
  };
}

function unavailable(err: unknown): BuildRefusal {
  const why = "the subaccount's health factor is read on every chain for its min_health_factor";
  if (err instanceof NoRpc) return new BuildRefusal(503, "no_rpc", `${err.message}: ${why}`);
  return new BuildRefusal(503, "chain_unavailable", `A chain did not answer (${errMessage(err)}): ${why}`);
}

function compare(
  address: string,
  minimum: number,
  states: ChainState[],
  chainId: number,
  sim: SimulatedAave,
): AccountHealth {
  const [collB, debtB, , ltB] = sim.before.account;
  const [collA, debtA, , ltA] = sim.after.account;
  const base = (v: bigint) => Number(v) / 1e8;
  const state = states.find((s) => s.chainId === chainId);
  const price = state ? (tokenPrice(state, sim.underlying.address) ?? 0) : 0;
  const held = (x: SimulatedAave["before"]) => x.underlying + x.aToken;
  const moved = Number(held(sim.after) - held(sim.before)) / 10 ** sim.underlying.decimals;
  const after = withVenueChange(states, {
    chainId,
    collateral: base(collA) - base(collB),
    debt: base(debtA) - base(debtB),
    liquidation: (base(collA) * Number(ltA)) / 10_000 - (base(collB) * Number(ltB)) / 10_000,
    value: moved * price,
  });
  const hfBefore = accountFigures(states, address).health_factor;
  const hfAfter = accountFigures(after, address).health_factor;
  const below = hfAfter != null && hfAfter < minimum && (hfBefore == null || hfAfter < hfBefore);
  return { minimum, before: hfBefore, after: hfAfter, below };
}

/** The 409 of a build that would take the account below its minimum. */
export function belowMinimum(op: Operation, h: AccountHealth): BuildRefusal {
  const f = (x: number | null) => (x == null ? "none (no debt)" : x.toFixed(4));
  return new BuildRefusal(
    409,
    "below_min_health_factor",
    `The ${op} would take the subaccount's health factor from ${f(h.before)} to ${f(h.after)}, ` +
      `below its min_health_factor ${h.minimum} (registry): send allow_below_min_health_factor: true to build it anyway`,
  );
}
