/**
 * The lending-market builders' logic on Aave v3: the market (an aToken of the chain's Aave pool)
 * resolved on the chain, the operation's module transaction (supply and repay with an exact
 * approval the module resets, borrow and withdraw without), the checks made before simulating,
 * and the account figures read before and after it in the simulated block.
 */
import { type Address, encodeFunctionData, getAddress, maxUint256, parseAbi } from "viem";
import { allowedRead, requireAllowed } from "../../lib/build/allowed.js";
import { remember, type TokenFacts, tokenFacts } from "../../lib/build/facts.js";
import { readAtHead } from "../../lib/build/head.js";
import type { Approval, InnerCall } from "../../lib/build/module-call.js";
import { aggregate, type Read, readValue } from "../../lib/build/multicall.js";
import { rawAmount, requireOneAmount, wholeText } from "../../lib/build/payload.js";
import { BuildRefusal } from "../../lib/build/refusal.js";
import type { SimRead } from "../../lib/build/simulate.js";
import type { BuildSubaccount } from "../../lib/build/subaccount.js";
import { chainRead, ERC20 } from "./builder.lib.js";

export const OPERATIONS = ["supply", "borrow", "repay", "withdraw"] as const;
export type Operation = (typeof OPERATIONS)[number];
export type RateMode = "variable" | "stable";

const A_TOKEN = parseAbi([
  "function UNDERLYING_ASSET_ADDRESS() view returns (address)",
  "function POOL() view returns (address)",
]);
export const AAVE_POOL = parseAbi([
  "function getUserAccountData(address user) view returns (uint256 totalCollateralBase, uint256 totalDebtBase, uint256 availableBorrowsBase, uint256 currentLiquidationThreshold, uint256 ltv, uint256 healthFactor)",
  "function getReserveData(address asset) view returns ((uint256 data) configuration, uint128 liquidityIndex, uint128 currentLiquidityRate, uint128 variableBorrowIndex, uint128 currentVariableBorrowRate, uint128 currentStableBorrowRate, uint40 lastUpdateTimestamp, uint16 id, address aTokenAddress, address stableDebtTokenAddress, address variableDebtTokenAddress, address interestRateStrategyAddress, uint128 accruedToTreasury, uint128 unbacked, uint128 isolationModeTotalDebt)",
  "function supply(address asset, uint256 amount, address onBehalfOf, uint16 referralCode)",
  "function borrow(address asset, uint256 amount, uint256 interestRateMode, uint16 referralCode, address onBehalfOf)",
  "function repay(address asset, uint256 amount, uint256 interestRateMode, address onBehalfOf) returns (uint256)",
  "function withdraw(address asset, uint256 amount, address to) returns (uint256)",
]);

export interface Market {
  pool: Address;
  aToken: Address;
  aTokenSymbol: string;
  underlying: TokenFacts;
  variableDebtToken: TokenFacts;
  stableDebtToken: TokenFacts;
}

/**
 * The aToken `market` as a reserve of the chain's Aave pool, or a 404 `unknown_market`. What it
 * resolves to never changes at the address: read once (two multicalls) and kept.
 */
export async function resolveMarket(sub: BuildSubaccount, market: string): Promise<Market> {
  const pool = sub.protocols.aave?.pool;
  if (!pool) {
    throw new BuildRefusal(
      404,
      "unknown_market",
      `${market} is not a lending market: chain ${sub.chainId} has no Aave pool in the registry's protocols entry`,
    );
  }
  const aToken = getAddress(market);
  return remember(sub, `aave-market:${getAddress(pool)}:${aToken}`, () => readMarket(sub, getAddress(pool), aToken));
}

async function readMarket(sub: BuildSubaccount, pool: Address, aToken: Address): Promise<Market> {
  const unknown = (why: string) => new BuildRefusal(404, "unknown_market", `${aToken} is not a lending market: ${why}`);
  const read = (reads: Read[]) => chainRead(sub, () => aggregate(sub.rpcUrl, reads));
  const [u, p] = await read([
    { address: aToken, abi: A_TOKEN, functionName: "UNDERLYING_ASSET_ADDRESS" },
    { address: aToken, abi: A_TOKEN, functionName: "POOL" },
  ]);
  const underlying = readValue<Address>(u);
  const aTokenPool = readValue<Address>(p);
  // a contract without these views (or no contract) is not an aToken
  if (!underlying || !aTokenPool)
    throw unknown("it is not an Aave v3 aToken (it answers no UNDERLYING_ASSET_ADDRESS and POOL)");
  if (aTokenPool.toLowerCase() !== pool.toLowerCase()) {
    throw unknown(`its pool ${aTokenPool} is not the chain's Aave pool ${pool}`);
  }
  // outputs in order: aTokenAddress is the 9th, stableDebtTokenAddress the 10th, variableDebtTokenAddress the 11th
  const [r] = await read([{ address: pool, abi: AAVE_POOL, functionName: "getReserveData", args: [underlying] }]);
  const reserve = readValue<readonly unknown[]>(r);
  if (!reserve) throw unknown(`the pool has no reserve of ${underlying}`);
  const [reserveAToken, stableDebt, variableDebt] = reserve.slice(8, 11) as Address[];
  if (reserveAToken!.toLowerCase() !== aToken.toLowerCase()) {
    throw unknown(`the pool's aToken of ${underlying} is ${reserveAToken}`);
  }
  const [a, und, variable, stable] = await tokenFacts(
    sub,
    [aToken, underlying, variableDebt!, stableDebt!],
    ["path", "market_token_address"],
  );
  return {
    pool,
    aToken,
    aTokenSymbol: a!.symbol,
    underlying: und!,
    variableDebtToken: variable!,
    stableDebtToken: stable!,
  };
}

/**
 * The build's read stage (`readAtHead`): the module's allowance of the underlying and the Safe's
 * balances of the underlying, the aToken and both debt tokens, with the head they were read at.
 */
export async function readAccount(sub: BuildSubaccount, m: Market) {
  const bal = (token: Address): Read => ({ address: token, abi: ERC20, functionName: "balanceOf", args: [sub.safe] });
  const { head, results } = await readAtHead(sub, [
    allowedRead(sub, m.underlying.address),
    bal(m.underlying.address),
    bal(m.aToken),
    bal(m.variableDebtToken.address),
    bal(m.stableDebtToken.address),
  ]);
  const n = (i: number) => readValue<bigint>(results[i]) ?? 0n;
  return {
    head,
    allowed: readValue<boolean>(results[0]) === true,
    underlying: n(1),
    aToken: n(2),
    variableDebt: n(3),
    stableDebt: n(4),
  };
}

export type AccountState = Awaited<ReturnType<typeof readAccount>>;

export interface LendingRequest {
  amount?: string | undefined;
  amount_raw?: string | undefined;
  all?: boolean | undefined;
  interest_rate_mode?: RateMode | undefined;
}

export interface LendingPlan {
  /** the amount asked for; null for `all` */
  amount: bigint | null;
  rateMode: RateMode | null;
  debtToken: Address;
  debtSymbol: string;
  call: InnerCall;
  approvals: Approval[];
}

/** Interest accrued between the simulation and the block the repayment lands in: 0.1 % of the debt. */
const REPAY_ALL_MARGIN_DEN = 1000n;
/** What a repayment of the whole debt approves: the debt and that margin, at most `cap`. */
function wholeDebtApproval(debt: bigint, cap: bigint): bigint {
  const need = debt + debt / REPAY_ALL_MARGIN_DEN + 1n;
  return need < cap ? need : cap;
}

/**
 * The request's amount as given: `all: true` (repay and withdraw) or exactly one amount, not both;
 * true for all. Needs no chain read: the route checks it before reading.
 */
export function checkAmountForm(op: Operation, body: LendingRequest): boolean {
  const all = body.all === true;
  if (all && (body.amount != null || body.amount_raw != null)) {
    throw BuildRefusal.field(["body", "all"], "Give either all: true or an amount, not both");
  }
  if (!all) requireOneAmount(body, ["body"], op === "repay" || op === "withdraw");
  return all;
}

/**
 * The call of `op`, after the checks a simulation would only report less clearly: the token on
 * the module's list, the amount within the Safe's balance (of the underlying for supply and
 * repay, of the aToken for withdraw), all as read at the head. 422s, before anything is simulated.
 */
export function planOperation(
  sub: BuildSubaccount,
  m: Market,
  state: AccountState,
  op: Operation,
  body: LendingRequest,
): LendingPlan {
  requireAllowed([m.underlying], [state.allowed], ["path", "market_token_address"]);
  const t = m.underlying;
  const rateMode = op === "borrow" || op === "repay" ? (body.interest_rate_mode ?? "variable") : null;
  const debtFacts = rateMode === "stable" ? m.stableDebtToken : m.variableDebtToken;
  const debtToken = debtFacts.address;
  const debtSymbol = debtFacts.symbol;
  // the form (all, or one amount) was checked by the route before the read: checkAmountForm
  const all = body.all === true;
  const amount = all ? null : rawAmount(body, t.decimals, ["body"], op === "repay" || op === "withdraw");
  // amounts in whole tokens in what people read (descriptions, refusals), raw units in the calls
  const whole = (x: bigint) => `${wholeText(x, t.decimals)} ${t.symbol}`;
  const short = (held: bigint, what: string) =>
    BuildRefusal.field(
      ["body", all ? "all" : body.amount_raw != null ? "amount_raw" : "amount"],
      `Above the Safe's balance: it holds ${wholeText(held, t.decimals)} ${what}, ${held} raw units`,
      "insufficient_balance",
    );
  const safe = sub.safe;
  const pool = m.pool;
  const mode = rateMode === "stable" ? 1n : 2n;
  const call = (description: string, data: `0x${string}`): InnerCall => ({
    target: pool,
    value: 0n,
    data,
    description,
  });
  const enc = (functionName: "supply" | "borrow" | "repay" | "withdraw", args: readonly unknown[]) =>
    encodeFunctionData({ abi: AAVE_POOL, functionName, args: args as never });
  switch (op) {
    case "supply": {
      const held = state.underlying;
      if (amount! > held) throw short(held, t.symbol);
      return {
        amount,
        rateMode,
        debtToken,
        debtSymbol,
        call: call(`supply ${whole(amount!)} to Aave for the Safe`, enc("supply", [t.address, amount, safe, 0])),
        approvals: [{ token: t.address, spender: pool, amount: amount! }],
      };
    }
    case "borrow":
      return {
        amount,
        rateMode,
        debtToken,
        debtSymbol,
        call: call(
          `borrow ${whole(amount!)} from Aave at the ${rateMode} rate`,
          enc("borrow", [t.address, amount, mode, 0, safe]),
        ),
        approvals: [],
      };
    case "repay": {
      const held = state.underlying;
      const debt = rateMode === "stable" ? state.stableDebt : state.variableDebt;
      let approval = 0n;
      if (all) {
        // Aave takes the whole debt as of the block it lands in: approve it with a margin for the
        // interest accrued meanwhile (the module resets what is left to 0)
        if (debt > held) throw short(held, `${t.symbol} (the ${rateMode} debt is ${whole(debt)})`);
        approval = wholeDebtApproval(debt, held);
      }
      // Aave takes at most the debt: more than it repays it all, the rest stays in the Safe, so
      // the Safe need hold only the debt (approved with the margin, up to what it holds)
      const over = !all && debt > 0n && amount! > debt;
      if (over) {
        if (debt > held) throw short(held, `${t.symbol} (the ${rateMode} debt is ${whole(debt)})`);
        approval = wholeDebtApproval(debt, amount! < held ? amount! : held);
      } else if (!all) {
        if (amount! > held) throw short(held, t.symbol);
        approval = amount!;
      }
      const repaid = all ? maxUint256 : amount!;
      return {
        amount,
        rateMode,
        debtToken,
        debtSymbol,
        call: call(
          all
            ? `repay all of the ${rateMode} ${t.symbol} debt on Aave`
            : over
              ? `repay all of the ${rateMode} ${t.symbol} debt on Aave (${whole(debt)} at the head; ` +
                `${whole(amount!)} asked, the rest stays in the Safe)`
              : `repay ${whole(amount!)} on Aave`,
          enc("repay", [t.address, repaid, mode, safe]),
        ),
        approvals: [{ token: t.address, spender: pool, amount: approval }],
      };
    }
    case "withdraw": {
      const held = state.aToken;
      // what the Safe can withdraw is its aToken balance: the underlying supplied, with interest
      if (all && held === 0n) {
        const msg = `Nothing to withdraw: the Safe has no ${t.symbol} supplied (its aToken balance is 0)`;
        throw BuildRefusal.field(["body", "all"], msg, "insufficient_balance");
      }
      if (!all && amount! > held) throw short(held, `${t.symbol} supplied (its aToken balance)`);
      return {
        amount,
        rateMode,
        debtToken,
        debtSymbol,
        call: call(
          all ? `withdraw all ${t.symbol} supplied to Aave` : `withdraw ${whole(amount!)} from Aave`,
          enc("withdraw", [t.address, all ? maxUint256 : amount, safe]),
        ),
        approvals: [],
      };
    }
  }
}

/** Read before and after the transaction, in this order. */
export function accountReads(sub: BuildSubaccount, m: Market, debtToken: Address): SimRead[] {
  const bal = (token: Address): SimRead => ({ to: token, abi: ERC20, functionName: "balanceOf", args: [sub.safe] });
  return [
    { to: m.pool, abi: AAVE_POOL, functionName: "getUserAccountData", args: [sub.safe] },
    bal(m.underlying.address),
    bal(m.aToken),
    bal(debtToken),
  ];
}
