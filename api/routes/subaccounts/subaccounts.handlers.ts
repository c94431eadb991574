/** Handlers of /api/v1/subaccounts (subaccounts.routes.ts). */
import type { RouteHandler, z } from "@hono/zod-openapi";
import type { Context } from "hono";
import type { LoanView } from "../../../onchain/loans.js";
import {
  accountFigures,
  type ChainState,
  chainLoanTotals,
  loanDebtValue,
  marginValue,
  tokenDecimals,
  tokenPrice,
  tokenSymbol,
} from "../../../onchain/valuation.js";
import { readChains } from "../../lib/account-chains.js";
import { serviceFault } from "../../lib/build/refusal.js";
import { loanJson } from "../../lib/loans.js";
import { chainClient, chainProtocols, NoRpc } from "../../lib/protocols.js";
import { publicMessage } from "../../lib/public-error.js";
import type { AppEnv } from "../../lib/router.js";
import {
  type Account,
  chainName,
  estimatedAprs,
  findAccount,
  type SubaccountRow,
  seriesFigures,
  subaccountRows,
} from "./subaccounts.lib.js";
import type {
  healthFactor,
  PublicSubaccountRead,
  SubaccountSummary,
  subaccountList,
  summary,
} from "./subaccounts.routes.js";

const num = (v: string | null) => (v == null ? null : Number(v));

export const subaccountListHandler: RouteHandler<typeof subaccountList, AppEnv> = async (c) => {
  const [rows, aprOf] = await Promise.all([subaccountRows(c.var.deps.db), estimatedAprs(c.var.deps.db)]);
  const byAddress = new Map<string, SubaccountRow[]>();
  for (const r of rows) byAddress.set(r.address, [...(byAddress.get(r.address) ?? []), r]);
  const out: z.infer<typeof PublicSubaccountRead>[] = [...byAddress.values()].map((rs) => {
    const first = rs[0]!;
    const chains = new Map<number, string>();
    for (const r of rs) if (!chains.has(r.chain_id)) chains.set(r.chain_id, r.id);
    return {
      id: first.id,
      address: first.address,
      internal_name: first.internal_name,
      friendly_name: first.friendly_name,
      chains: [...chains].map(([chain_id, id]) => ({ chain_id, name: chainName(chain_id), id })),
      status: first.status,
      subaccount_type: first.subaccount_type,
      min_health_factor: num(first.min_health_factor),
      estimated_apr: aprOf.get(first.address) ?? null,
    };
  });
  return c.json(out, 200);
};

/** The account and its live state, or the answer when there is none (404, 503). */
async function load(c: Context<AppEnv>, address: string) {
  const { db, config } = c.var.deps;
  const account = await findAccount(db, config.indexerSchema, address);
  if (!account)
    return {
      res: c.json(
        { detail: `${address} is not a registered subaccount, a vault's EOA operator or a party to an indexed loan` },
        404,
      ),
    };
  try {
    const states = await readChains(db, config.indexerSchema, c.var.chainReads, config.rpcUrls, account);
    return { account, states };
  } catch (err) {
    // the service's own fault (a programming error) is a 500, logged; not the chain's 503
    if (serviceFault(err)) throw err;
    const detail = err instanceof NoRpc ? err.message : `A chain's RPC did not answer: ${publicMessage(err)}`;
    return { res: c.json({ detail }, 503) };
  }
}

export const healthFactorHandler: RouteHandler<typeof healthFactor, AppEnv> = async (c) => {
  const address = c.req.valid("query").address.toLowerCase();
  const r = await load(c, address);
  if ("res" in r) return r.res as never;
  const t = accountFigures(r.states, address);
  const newest = Math.max(0, ...r.states.map((s) => s.timestamp));
  const series = await seriesFigures(c.var.deps.db, address);
  return c.json(
    {
      id: address,
      datetime: new Date((newest || Date.now() / 1000) * 1000).toISOString(),
      health_factor: t.health_factor,
      unpriced_debts: t.unpriced_debts,
      total_collateral_value: t.total_collateral_value,
      total_loan_value: t.total_loan_value,
      total_account_value: t.total_account_value,
      net_account_value: t.net_account_value,
      min_health_factor: num(r.account.minHealthFactor),
      total_equity_value: t.net_account_value,
      total_loan_interest_amount: t.total_loan_interest_amount,
      margin_fraction: t.total_account_value > 0 ? t.net_account_value / t.total_account_value : null,
      maintenance_margin_fraction: t.maintenance_margin_fraction,
      series_as_of: series?.as_of ?? null,
      total_pnl: series?.total_pnl ?? null,
      total_net_deposits: series?.total_net_deposits ?? null,
      percent_return: series?.percent_return ?? null,
      life_time_apr: series?.life_time_apr ?? null,
      total_pnl_3d: series?.total_pnl_3d ?? null,
      total_pnl_7d: series?.total_pnl_7d ?? null,
      total_pnl_30d: series?.total_pnl_30d ?? null,
      realized_apr_3d: series?.realized_apr_3d ?? null,
      realized_apr_7d: series?.realized_apr_7d ?? null,
      realized_apr_30d: series?.realized_apr_30d ?? null,
      chains: r.states.map((s) => {
        const borrowed = chainLoanTotals(s, address).borrowed;
        return {
          chain_id: s.chainId,
          block_number: Number(s.positions.blockNumber),
          health_factor: s.positions.healthFactor,
          total_collateral_value: s.positions.totals.collateralValue,
          total_loan_value: s.positions.totals.loanValue + borrowed,
          venue_loan_value: s.positions.totals.loanValue,
          borrowed_loan_value: borrowed,
        };
      }),
    },
    200,
  );
};

/**
 * The summary's `type`: `subaccount` for a registered one, `eoa` for a vault's EOA operator; a
 * loan's party is `eoa` when it has no code on any chain read, else `subaccount` (a smart account).
 */
async function accountType(c: Context<AppEnv>, account: Account, states: readonly ChainState[]) {
  if (account.kind !== "loan_party") return account.kind === "subaccount" ? "subaccount" : "eoa";
  const codes = await Promise.all(
    states.map((s) =>
      chainClient(c.var.deps.config.rpcUrls.get(s.chainId)!).getCode({
        address: account.address as `0x${string}`,
        blockNumber: s.blockNumber,
      }),
    ),
  );
  return codes.some((x) => x != null && x !== "0x") ? "subaccount" : "eoa";
}

/** Whether the account holds, lends or owes anything on the chain (one account on every chain). */
const holdsOrOwes = (s: ChainState) =>
  s.positions.tokens.length > 0 ||
  (s.positions.aave?.reserves.length ?? 0) > 0 ||
  s.positions.morpho.length > 0 ||
  s.positions.lendingVaults.length > 0 ||
  s.positions.uniswap.length > 0 ||
  s.positions.stakerRewards.length > 0 ||
  s.loans.length > 0 ||
  s.margin.length > 0 ||
  s.inTransit.length > 0;

/** A loan of the account's chain state in the loan-book shape, its token's price through `price`. */
const bookOf = (l: LoanView, s: ChainState, price: (usd: number | null) => number | null) =>
  loanJson(
    l,
    {
      symbol: tokenSymbol(s, l.principalToken) ?? "?",
      decimals: tokenDecimals(s, l.principalToken),
      price: price(tokenPrice(s, l.principalToken)),
    },
    s.chainId,
  );

export const summaryHandler: RouteHandler<typeof summary, AppEnv> = async (c) => {
  const q = c.req.valid("query");
  const address = q.address.toLowerCase();
  // the denomination: USD, or a catalogue token of denomination_chain valued at its feed
  let denom = { symbol: "USD", address: null as string | null, chain_id: null as number | null, price: 1 };
  if (q.denomination_address && q.denomination_address !== "USD") {
    const cat = (await chainProtocols(c.var.deps.db)).get(q.denomination_chain);
    const t = cat?.tokens.find((x) => x.address === q.denomination_address!.toLowerCase());
    if (!t?.priceFeed)
      return c.json(
        {
          detail: [
            {
              loc: ["query", "denomination_address"],
              msg: `Not a token with a price feed on chain ${q.denomination_chain}`,
              type: "value_error",
            },
          ],
        },
        422,
      ) as never;
    denom = { symbol: t.symbol, address: t.address, chain_id: q.denomination_chain, price: Number.NaN };
  }
  const r = await load(c, address);
  if ("res" in r) return r.res as never;
  if (denom.address) {
    const s = r.states.find((x) => x.chainId === denom.chain_id);
    const p = s ? tokenPrice(s, denom.address) : null;
    if (p == null || !(p > 0)) {
      return c.json(
        { detail: `No price for ${denom.symbol} on chain ${denom.chain_id} (the subaccount is not there)` },
        503,
      ) as never;
    }
    denom.price = p;
  }
  const d = (usd: number) => usd / denom.price;
  const dn = (usd: number | null) => (usd == null ? null : usd / denom.price);
  let type: "subaccount" | "eoa";
  try {
    type = await accountType(c, r.account, r.states);
  } catch (err) {
    if (serviceFault(err)) throw err;
    return c.json({ detail: `A chain's RPC did not answer: ${publicMessage(err)}` }, 503) as never;
  }
  const t = accountFigures(r.states, address);
  const tokens = r.states.flatMap((s) =>
    s.positions.tokens.map((h) => ({
      type: "erc20" as const,
      name: h.token.symbol,
      address: h.token.address,
      chain: s.chainId,
      symbol: h.token.symbol,
      decimals: h.token.decimals,
      img_url: null,
      price: dn(h.price),
      raw_balance: h.raw.toString(),
      balance: h.balance,
      value: dn(h.value),
    })),
  );
  // its balances on the perp core ledger and its deposits on their way there, each priced on the
  // chain the deposit came from
  const margin = r.states.flatMap((s) =>
    [
      ...s.margin.map((m) => ({ ...m, status: "credited" as const, coreHash: null })),
      ...s.inTransit.map((m) => ({ ...m, status: "in_transit" as const })),
    ].map((m) => {
      const v = marginValue(m, r.states);
      const source = r.states.find((x) => x.chainId === m.chainId);
      return {
        venue: "perp_core" as const,
        chain_id: s.chainId,
        account_type: m.destination,
        source_chain_id: m.chainId,
        token: {
          address: m.token,
          symbol: source?.positions.prices.get(m.token)?.symbol ?? null,
          decimals: v.decimals,
        },
        status: m.status,
        core_hash: m.coreHash as string | null,
        raw_balance: m.raw.toString(),
        balance: v.balance,
        value: dn(v.value),
        usd: v.value ?? 0,
      };
    }),
  );
  const defi = r.states.flatMap((s) => [
    ...(s.positions.aave?.reserves ?? []).map((x) => ({
      protocol: "aave_v3" as const,
      chain_id: s.chainId,
      type: "lending" as const,
      token: x.token,
      supplied: Number(x.supplied) / 10 ** x.token.decimals,
      borrowed: Number(x.borrowed) / 10 ** x.token.decimals,
      value: dn((x.suppliedValue ?? 0) - (x.borrowedValue ?? 0)),
    })),
    ...s.positions.morpho.map((m) => ({
      protocol: "morpho_blue" as const,
      chain_id: s.chainId,
      type: "lending" as const,
      market_id: m.marketId,
      loan_token: m.loanToken,
      collateral_token: m.collateralToken,
      supplied: Number(m.supplied) / 10 ** m.loanToken.decimals,
      borrowed: Number(m.borrowed) / 10 ** m.loanToken.decimals,
      collateral: Number(m.collateral) / 10 ** m.collateralToken.decimals,
      value: dn((m.suppliedValue ?? 0) + (m.collateralValue ?? 0) - (m.borrowedValue ?? 0)),
    })),
    ...s.positions.lendingVaults.map((v) => ({
      protocol: "lending_vault" as const,
      chain_id: s.chainId,
      type: "vault" as const,
      vault: v.vault,
      asset: v.asset,
      shares: v.shares.toString(),
      assets: Number(v.assets) / 10 ** v.asset.decimals,
      value: dn(v.value),
    })),
    ...s.positions.uniswap.map((u) => ({
      protocol: "uniswap_v3" as const,
      chain_id: s.chainId,
      type: "liquidity" as const,
      token_id: u.tokenId.toString(),
      pool: u.pool,
      token0: u.token0,
      token1: u.token1,
      fee: u.fee,
      tick_lower: u.tickLower,
      tick_upper: u.tickUpper,
      in_range: u.inRange,
      staked: u.staked,
      amount0: u.amount0,
      amount1: u.amount1,
      incentive_rewards: u.rewards.map((x) => ({
        incentive: x.incentive,
        token: x.token,
        raw: x.raw.toString(),
        amount: x.amount,
        value: dn(x.value),
      })),
      value: dn(u.value),
    })),
    ...s.positions.stakerRewards.map((x) => ({
      protocol: "uniswap_v3" as const,
      chain_id: s.chainId,
      type: "rewards" as const,
      token: x.token,
      raw: x.raw.toString(),
      amount: x.amount,
      value: dn(x.value),
    })),
  ]);
  const collateral = r.states.flatMap((s) => [
    ...(s.positions.aave?.reserves ?? [])
      .filter((x) => x.supplied > 0n)
      .map((x) => ({ protocol: "aave_v3" as const, chain_id: s.chainId, token: x.token, value: dn(x.suppliedValue) })),
    ...s.positions.morpho
      .filter((m) => m.collateral > 0n)
      .map((m) => ({
        protocol: "morpho_blue" as const,
        chain_id: s.chainId,
        token: m.collateralToken,
        value: dn(m.collateralValue),
      })),
  ]);
  const loans = r.states.flatMap((s) =>
    s.loans.map((l) => {
      const isBorrow = l.borrower === address;
      const dec = tokenDecimals(s, l.principalToken);
      const w = (x: bigint) => Number(x) / 10 ** dec;
      const v = loanDebtValue(l, s);
      return {
        subaccount_address: address,
        book: { ...bookOf(l, s, dn), total_interest_payment_fees: 0 },
        is_borrow: isBorrow,
        debt_info: {
          interest_owed: isBorrow ? w(l.interestOwed) : 0,
          principal_debt_owed: isBorrow ? w(l.principalDebtOwed) : 0,
          interest_repaid: isBorrow ? w(l.totalInterestRepaid) : 0,
          principal_undrawn: isBorrow ? w(l.undrawn) : 0,
        },
        credit_info: {
          net_interest_owed: isBorrow ? 0 : w(l.interestOwed),
          principal_debt_owed: isBorrow ? 0 : w(l.principalDebtOwed),
          net_interest_repaid: isBorrow ? 0 : w(l.totalInterestRepaid),
        },
        value: v.value,
        undrawnUsd: isBorrow ? v.undrawnValue : 0,
      };
    }),
  );
  const open = (l: (typeof loans)[number]) => !["closed", "cancelled", "inactive"].includes(String(l.book.state));
  const totalDebt = loans.filter((l) => l.is_borrow && open(l)).reduce((x, l) => x + (l.value ?? 0), 0);
  const totalCredit = loans.filter((l) => !l.is_borrow && open(l)).reduce((x, l) => x + (l.value ?? 0), 0);
  // what it may still draw of the loans it borrows: its own, as in total_value
  const undrawn = loans.filter(open).reduce((x, l) => x + l.undrawnUsd, 0);
  const discounted =
    r.states.reduce(
      (x, s) =>
        x +
        s.positions.totals.totalValue -
        s.positions.totals.collateralValue +
        s.positions.totals.liquidationCollateral,
      0,
    ) + margin.reduce((x, m) => x + m.usd, 0);
  type Aggregate = { token: string; chain_id: number; symbol: string; total_debt: number; total_credit: number };
  const byToken = new Map<string, Aggregate>();
  for (const l of loans.filter(open)) {
    const k = `${l.book.principal_token.chain}:${l.book.principal_token.address}`;
    const a = byToken.get(k) ?? {
      token: l.book.principal_token.address,
      chain_id: l.book.principal_token.chain,
      symbol: l.book.principal_token.symbol,
      total_debt: 0,
      total_credit: 0,
    };
    const owed = l.is_borrow
      ? l.debt_info.interest_owed + l.debt_info.principal_debt_owed
      : l.credit_info.net_interest_owed + l.credit_info.principal_debt_owed;
    if (l.is_borrow) a.total_debt += owed;
    else a.total_credit += owed;
    byToken.set(k, a);
  }
  return c.json(
    {
      address,
      name: r.account.name,
      type,
      chains: [...new Set([...r.account.chains, ...r.states.filter(holdsOrOwes).map((x) => x.chainId)])]
        .sort((a, b) => a - b)
        .map((id) => ({ name: chainName(id), chain_id: id })),
      denomination: { symbol: denom.symbol, address: denom.address, chain_id: denom.chain_id },
      portfolio: {
        tokens: tokens.map((x) => ({
          value: x.value,
          balance: x.balance,
          token: {
            type: x.type,
            name: x.name,
            address: x.address,
            chain: x.chain,
            symbol: x.symbol,
            decimals: x.decimals,
            img_url: x.img_url,
          },
        })),
        margin_balances: margin.map(({ usd: _usd, ...m }) => m),
        collateral_balances: collateral,
        cefi_positions: [],
        defi_positions: defi,
        trs_positions: [],
        strategy_contract_positions: [],
        legacy_hedger_positions: [],
        otc_positions: [],
        total_value: d(t.total_account_value),
        discounted_value: d(discounted + totalCredit + undrawn),
      },
      loanbook: {
        loans: loans.map(({ value: _v, undrawnUsd: _u, ...l }) => l),
        total_debt: d(totalDebt),
        total_credit: d(totalCredit),
        aggregates_by_token: [...byToken.values()],
      },
      tokens,
      total_account_value: d(t.total_account_value),
      total_collateral_value: d(t.total_collateral_value),
      total_loan_value: d(t.total_loan_value),
      health_factor: t.health_factor,
      unpriced_debts: t.unpriced_debts,
      net_account_value: d(t.net_account_value),
      total_equity_value: d(t.net_account_value),
    } satisfies z.infer<typeof SubaccountSummary>,
    200,
  );
};
