/**
 * The operator's floor of a build: the subaccount's registry `min_health_factor` against its
 * account-wide health factor, as GET /subaccounts/health_factor computes it (every chain, venue
 * and loan it borrows), before and after the transaction. The builder says what the transaction
 * changes (a `VenueChange` on its chain, from what its simulation read); below the minimum and
 * lower than before, the build is a 409 `below_min_health_factor` unless the request allows it; with
 * a debt no price values the health factor is unknown, and the build a 409 `health_factor_unknown`.
 * The minimum is the one the builders' registry list holds (kept 10 s, `buildSubaccount`), so a
 * change to it applies within 10 s. Used by the lending-market borrow and withdraw and the swaps
 * (what a swap gives up to fees and price impact lowers what secures the loans it borrows).
 */
import { z } from "@hono/zod-openapi";
import { indexedLoans } from "../../../db/loan-parties.js";
import {
  accountFigures,
  type ChainState,
  type UnpricedDebt,
  unpricedText,
  type VenueChange,
  withVenueChange,
} from "../../../onchain/valuation.js";
import { readChains } from "../account-chains.js";
import type { ChainReads } from "../chain-reads.js";
import { NoRpc } from "../protocols.js";
import type { AppDeps } from "../router.js";
import { BuildRefusal, errMessage } from "./refusal.js";
import type { BuildSubaccount } from "./subaccount.js";

export interface AccountHealth {
  minimum: number;
  before: number | null;
  after: number | null;
  /** below the minimum, or not known to be above it (a debt no price values) */
  below: boolean;
  /** the debts no price values: with one, the health factor is unknown and `below` is true */
  unpriced: UnpricedDebt[];
}

/** The request field that builds it anyway. */
export const allowBelowField = z
  .boolean()
  .optional()
  .openapi({
    description:
      "true: build it even if it takes the subaccount's health factor below its min_health_factor (the answer still " +
      "reports it)",
    example: false,
  });

/** The answer's `subaccount_health_factor`; `after` says where this builder's figure comes from. */
export const accountHealthSchema = (after: string, unchecked: string) =>
  z
    .object({
      minimum: z.number().openapi({ description: "The registry's min_health_factor of the subaccount" }),
      before: z.number().nullable().openapi({ description: "null: no debt" }),
      after: z.number().nullable(),
    })
    .nullable()
    .openapi({
      description:
        "The subaccount's account-wide health factor (as GET /subaccounts/health_factor computes it: every chain, " +
        `venue and loan it borrows) before and after, against its min_health_factor. After: ${after}. Checked on the ` +
        "chain's state at the build's head: builds handed out and not yet mined are not counted (two borrows built " +
        `together may each pass and together go below), and the chain does not enforce it. null: ${unchecked}no ` +
        "minimum in the registry",
    });

/** The answer's field from a check's result. */
export const healthField = (h: AccountHealth | null) => h && { minimum: h.minimum, before: h.before, after: h.after };

type Settled<T> = { value: T } | { error: unknown };
const settle = <T>(p: Promise<T>): Promise<Settled<T>> =>
  p.then(
    (value) => ({ value }),
    (error: unknown) => ({ error }),
  );

/** What a transaction changes on its chain, USD (the account's states at the head given). */
export type Change = (states: readonly ChainState[]) => Omit<VenueChange, "chainId">;

/**
 * The floor check of one build, started once the subaccount is resolved: when the registry sets
 * it a minimum and the transaction can lower its health factor (`lowers`), the account is read on
 * every chain (shared with the health factor route at each head) beside the build's own reads and
 * simulation; `check()` then compares. An error waits for `check()`: none goes unhandled.
 */
export function healthFloor(deps: AppDeps, reads: ChainReads, sub: BuildSubaccount, lowers: boolean) {
  const { db, config } = deps;
  const minimum = sub.minHealthFactor;
  const address = sub.safe.toLowerCase();
  const read = async () => {
    const loans = await reads.recent(`loans:${address}`, () => indexedLoans(db, config.indexerSchema, address));
    return readChains(db, config.indexerSchema, reads, config.rpcUrls, { address, loans });
  };
  const states = lowers && minimum != null ? settle(read()) : null;
  return {
    /** The health factor before and after against the minimum; null when none applies. */
    async check(change: Change): Promise<AccountHealth | null> {
      if (!states || minimum == null) return null;
      const s = await states;
      if ("error" in s) throw unavailable(s.error);
      const after = withVenueChange(s.value, { chainId: sub.chainId, ...change(s.value) });
      const hfBefore = accountFigures(s.value, address).health_factor;
      const { health_factor: hfAfter, unpriced_debts: unpriced } = accountFigures(after, address);
      const below =
        unpriced.length > 0 || (hfAfter != null && hfAfter < minimum && (hfBefore == null || hfAfter < hfBefore));
      return { minimum, before: hfBefore, after: hfAfter, below, unpriced };
    },
  };
}

function unavailable(err: unknown): BuildRefusal {
  const why = "the subaccount's health factor is read on every chain for its min_health_factor";
  if (err instanceof NoRpc) return new BuildRefusal(503, "no_rpc", `${err.message}: ${why}`);
  return new BuildRefusal(503, "chain_unavailable", `A chain did not answer (${errMessage(err)}): ${why}`);
}

/** The 409 of a build that would take the account below its minimum; `what`: "The borrow". */
export function belowMinimum(what: string, h: AccountHealth): BuildRefusal {
  if (h.unpriced.length > 0) {
    return new BuildRefusal(
      409,
      "health_factor_unknown",
      `${what} may lower the subaccount's health factor, which is unknown: no price values its debt of ` +
        `${unpricedText(h.unpriced)}, so its min_health_factor ${h.minimum} (registry) cannot be checked: send ` +
        "allow_below_min_health_factor: true to build it anyway",
    );
  }
  const f = (x: number | null) => (x == null ? "none (no debt)" : x.toFixed(4));
  return new BuildRefusal(
    409,
    "below_min_health_factor",
    `${what} would take the subaccount's health factor from ${f(h.before)} to ${f(h.after)}, ` +
      `below its min_health_factor ${h.minimum} (registry): send allow_below_min_health_factor: true to build it ` +
      "anyway",
  );
}
