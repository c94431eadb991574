/**
 * GET /api/v1/platform/lending_pool/loanbook and /platform/lending_pool/subaccounts_loanbook: the
 * loans a lending pool deployed (indexed `loan` rows) and the loans its subaccounts lend (the
 * chain's LoanRegistry), each read live at the head through the loan's own views (getDebt,
 * getUpcomingPayment, loanState, ...), once per head block for all the requests about a book
 * (api/lib/chain-reads.ts). Open, as the spec leaves the loan-book routes.
 */
import { createRoute, type RouteHandler, z } from "@hono/zod-openapi";
import { sql } from "kysely";
import { type Abi, type Address, type PublicClient, parseAbi } from "viem";
import { multicallEach } from "../../../config/multicall3.js";
import { LOAN_STATES, type LoanView, loansOf, readLoans } from "../../../onchain/loans.js";
import { serviceFault } from "../../lib/build/refusal.js";
import { ChainIdParam } from "../../lib/chain.js";
import { objectKey } from "../../lib/chain-reads.js";
import { ErrorSchema } from "../../lib/errors.js";
import { loanJson } from "../../lib/loans.js";
import { chainClient, chainProtocols } from "../../lib/protocols.js";
import { publicMessage } from "../../lib/public-error.js";
import {
  type AppEnv,
  EvmAddress,
  errorResponses,
  jsonResponse,
  openReadAuthResponses,
  QueryBool,
} from "../../lib/router.js";
import { isMissingRelation } from "../../lib/vaults.js";
import { openRoute } from "../../middleware/auth.js";

const Loan = z
  .object({
    address: z.string(),
    lender: z.string(),
    borrower: z.string(),
    state: z.enum(LOAN_STATES),
    total_repaid: z.number(),
    principal_token: z.object({
      symbol: z.string(),
      address: z.string(),
      decimals: z.number().int(),
      price: z.number().nullable(),
      chain: z.number().int(),
    }),
    principal_amount: z.number().openapi({ description: "Outstanding principal, whole tokens" }),
    interest_amount: z.number().openapi({ description: "Interest accrued and not repaid, whole tokens" }),
    upcoming_payment: z.object({
      amount: z.number(),
      due_date: z.string().nullable().openapi({ format: "date-time" }),
    }),
    apr: z.number().openapi({ description: "Percent: 12 is 12 %" }),
    initial_principal_amount: z.number(),
    deployed_date: z.string().nullable().openapi({ format: "date-time" }),
    payment_interval: z.number().int().openapi({ description: "Seconds between payments" }),
    late: z.boolean(),
    called: z.boolean(),
    lender_apr: z.number().optional().openapi({
      description: "The lender's APR, percent (subaccount loan books): the loan's APR, no fee being taken",
    }),
  })
  .openapi("Loan");

const LoanbookResponse = z.object({ loans: z.array(Loan) }).openapi("LendingPoolLoanbookResponse");

const query = (activeDefault: boolean) =>
  z.object({
    address: EvmAddress.openapi({ description: "The lending pool (vault) address" }),
    chain: ChainIdParam.openapi({ type: "integer", example: 1, description: "Chain id of the pool" }),
    active: QueryBool(activeDefault).openapi({ description: "Only the active loans" }),
  });

const responses = {
  200: jsonResponse("Loans", LoanbookResponse),
  404: jsonResponse("Not a vault on that chain", ErrorSchema),
  503: jsonResponse("No RPC for the chain, or it did not answer", ErrorSchema),
  ...openReadAuthResponses,
  ...errorResponses,
};

export const loanbook = createRoute({
  method: "get",
  path: "/platform/lending_pool/loanbook",
  tags: ["loans"],
  summary: "The loans a lending pool deployed",
  description:
    "The loans the pool deployed (indexed `loan` rows, in the order they were deployed), each " +
    "read live at the chain's head through the loan's own views: state, outstanding principal " +
    "and interest, the upcoming payment and its due date, APR, late and called. Amounts are " +
    "whole tokens, priced through the token's feed where the chain's registry entry has one. " +
    "`active` (default false) keeps the active loans only. 404 when `address` is not a vault on " +
    "`chain`; 503 when the chain has no RPC or it does not answer.",
  ...openRoute,
  request: { query: query(false) },
  responses,
});

export const subaccountsLoanbook = createRoute({
  method: "get",
  path: "/platform/lending_pool/subaccounts_loanbook",
  tags: ["loans"],
  summary: "The loans a vault's subaccounts lend",
  description:
    "The loans whose lender is one of the vault's subaccounts (registry.subaccount), found in " +
    "the chain's LoanRegistry and read live at the head as in the pool's loan book, each with " +
    "the lender's APR (`lender_apr`). `active` defaults to true here. 404 when `address` is not " +
    "a vault on `chain`; 503 when the chain has no RPC or it does not answer.",
  ...openRoute,
  request: { query: query(true) },
  responses,
});

const ERC20 = parseAbi(["function symbol() view returns (string)", "function decimals() view returns (uint8)"]);
const FEED = parseAbi(["function latestAnswer() view returns (int256)"]);

/** Symbol, decimals and USD price of each principal token (the catalogue's feed, else none). */
async function tokenInfo(
  client: PublicClient,
  chainId: number,
  feeds: Map<string, { address: Address; decimals: number }>,
  tokens: Address[],
  block: bigint,
) {
  const uniq = [...new Set(tokens)];
  const res = await multicallEach(client, {
    blockNumber: block,
    contracts: uniq.flatMap((t) => {
      const feed = feeds.get(t);
      return [
        { address: t, abi: ERC20 as Abi, functionName: "symbol" },
        { address: t, abi: ERC20 as Abi, functionName: "decimals" },
        { address: feed?.address ?? t, abi: FEED as Abi, functionName: "latestAnswer" },
      ];
    }),
  });
  return new Map(
    uniq.map((t, i) => {
      const ok = (k: number) => (res[3 * i + k]?.status === "success" ? res[3 * i + k]!.result : undefined);
      const feed = feeds.get(t);
      const answer = feed ? (ok(2) as bigint | undefined) : undefined;
      return [
        t,
        {
          symbol: (ok(0) as string | undefined) ?? "?",
          decimals: Number((ok(1) as number | bigint | undefined) ?? 18),
          price: answer != null && answer > 0n ? Number(answer) / 10 ** feed!.decimals : null,
          chain: chainId,
        },
      ];
    }),
  );
}

/** A table not made yet (no indexer run) holds no vault; any other error (the database down) is thrown. */
const noTable = (err: unknown): undefined => {
  if (isMissingRelation(err)) return undefined;
  throw err;
};

async function answer(c: Parameters<RouteHandler<typeof loanbook, AppEnv>>[0], which: "pool" | "subaccounts") {
  const { db, config } = c.var.deps;
  const { address, chain, active } = c.req.valid("query");
  const pool = address.toLowerCase();
  const known = await db
    .selectFrom("registry.vault")
    .select("address")
    .where("chain_id", "=", chain)
    .where("address", "=", pool)
    .executeTakeFirst()
    .catch(noTable);
  const indexed =
    known ??
    (await sql<{ address: string }>`SELECT address FROM ${sql.id(config.indexerSchema, "vault")}
      WHERE chain_id = ${chain} AND address = ${pool}`
      .execute(db)
      .then((r) => r.rows[0])
      .catch(noTable));
  if (!indexed) return c.json({ detail: `No vault ${address} on chain ${chain}` }, 404);
  const url = config.rpcUrls.get(chain);
  if (!url) return c.json({ detail: `No RPC is configured for chain ${chain} (PONDER_RPC_URL_${chain})` }, 503);
  const client = chainClient(url);
  const catalogue = (await chainProtocols(db)).get(chain);
  const feeds = new Map(
    (catalogue?.tokens ?? []).flatMap((t) => (t.priceFeed ? [[t.address as string, t.priceFeed]] : [])),
  );
  try {
    // the loans are read at the head once per head block for every request about this book
    const reads = c.var.chainReads;
    const head = await reads.head(url, client);
    const block = head.number;
    const listed =
      which === "pool"
        ? (
            await sql<{ address: Address }>`SELECT address FROM ${sql.id(config.indexerSchema, "loan")}
              WHERE chain_id = ${chain} AND vault = ${pool} ORDER BY block_number, log_index`.execute(db)
          ).rows.map((r) => r.address)
        : (
            await db
              .selectFrom("registry.subaccount")
              .select("address")
              .where("chain_id", "=", chain)
              .where("vault", "=", pool)
              .execute()
          ).map((r) => r.address as Address);
    const key = `loanbook:${which}:${pool}:${catalogue ? objectKey(catalogue) : 0}:${listed.join(",")}`;
    const book = await reads.at(url, head, key, async () => {
      let loans: LoanView[];
      if (which === "pool") loans = await readLoans(client, listed, block);
      else {
        // the loans each subaccount lends, from the chain's LoanRegistry
        const registry = catalogue?.loanRegistry;
        loans = [];
        if (registry)
          for (const s of listed)
            loans.push(...(await loansOf(client, registry, s, block)).filter((l) => l.lender === s));
      }
      const info = await tokenInfo(
        client,
        chain,
        feeds,
        loans.map((l) => l.principalToken),
        block,
      );
      return { loans, info };
    });
    const info = book.info;
    const loans = active ? book.loans.filter((l) => l.state === "active") : book.loans;
    return c.json(
      {
        loans: loans.map((l) => ({
          ...loanJson(l, info.get(l.principalToken)!, chain),
          ...(which === "subaccounts" ? { lender_apr: Number(l.apr) / 100 } : {}),
        })),
      },
      200,
    );
  } catch (err) {
    if (serviceFault(err)) throw err; // a programming error: a 500, logged
    return c.json({ detail: `The RPC of chain ${chain} did not answer: ${publicMessage(err)}` }, 503);
  }
}

export const loanbookHandler: RouteHandler<typeof loanbook, AppEnv> = (c) => answer(c, "pool") as never;
export const subaccountsLoanbookHandler: RouteHandler<typeof subaccountsLoanbook, AppEnv> = (c) =>
  answer(c as never, "subaccounts") as never;
