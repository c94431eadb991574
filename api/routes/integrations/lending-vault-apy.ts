/**
 * GET /api/v1/integrations/lending_vault/apy: a lending vault's (ERC-4626 over a Morpho market)
 * APY, from the job's day series of its share price (derived.lending_vault_day), and its share
 * price and a subaccount's position in it read on the chain at the head, once per head block for
 * all the requests about them (api/lib/chain-reads.ts). Open, as the spec leaves it.
 */
import { createRoute, type RouteHandler, z } from "@hono/zod-openapi";
import { type Abi, type Address, type PublicClient, parseAbi } from "viem";
import type { ChainProtocols } from "../../../config/registry.js";
import { serviceFault } from "../../lib/build/refusal.js";
import { ChainIdParam } from "../../lib/chain.js";
import { type Head, objectKey } from "../../lib/chain-reads.js";
import { ErrorSchema } from "../../lib/errors.js";
import { chainClient, chainProtocols } from "../../lib/protocols.js";
import { publicMessage } from "../../lib/public-error.js";
import { type AppEnv, EvmAddress, errorResponses, jsonResponse, openReadAuthResponses } from "../../lib/router.js";
import { openRoute } from "../../middleware/auth.js";

const VAULT = parseAbi([
  "function asset() view returns (address)",
  "function decimals() view returns (uint8)",
  "function balanceOf(address) view returns (uint256)",
  "function convertToAssets(uint256) view returns (uint256)",
]);
const ERC20 = parseAbi(["function symbol() view returns (string)", "function decimals() view returns (uint8)"]);
const FEED = parseAbi(["function latestAnswer() view returns (int256)"]);
const WINDOW_DAYS = 7;

const LendingVaultApy = z
  .object({
    apy: z
      .number()
      .nullable()
      .openapi({
        description:
          `Compound APY of the share price over the ${WINDOW_DAYS} days to the newest day of the job's series ` +
          `(derived.lending_vault_day), a fraction; null under ${WINDOW_DAYS} days of history`,
      }),
    window_days: z.number().nullable(),
    apy_as_of: z.string().nullable().openapi({
      format: "date",
      description: "The day of the series (derived.lending_vault_day) the APY is of; null before the job ran",
    }),
    share_price: z.number().openapi({ description: "Assets per whole share now" }),
    vault_positions: z.array(
      z.object({
        subaccount: z.string(),
        shares: z.string().openapi({ description: "Raw shares" }),
        assets: z.number().openapi({ description: "Whole asset units" }),
        value: z.number().nullable().openapi({ description: "USD" }),
      }),
    ),
    token: z.object({
      symbol: z.string(),
      address: z.string(),
      decimals: z.number().int(),
      price: z.number().nullable(),
    }),
    block_number: z.number().int(),
  })
  .openapi("LendingVaultApy");

export const lendingVaultApy = createRoute({
  method: "get",
  path: "/integrations/lending_vault/apy",
  tags: ["integrations"],
  summary: "A lending vault's APY and a subaccount's position in it",
  description:
    "The APY is history: the compound growth of the vault's share price over the 7 days to the " +
    "newest day of the job's series (derived.lending_vault_day), null under 7 days. The share " +
    "price and the subaccount's shares, assets and USD value are read on the chain at its head " +
    "(`block_number`), once per head block for every request about them. 404 when " +
    "`vault_address` is not a lending vault (ERC-4626 over a Morpho market) of the chain's " +
    "registry entry; 503 when the chain has no RPC or it does not answer.",
  ...openRoute,
  request: {
    query: z.object({
      vault_address: EvmAddress.openapi({ description: "A lending vault of the chain's registry entry" }),
      subaccount_address: EvmAddress,
      chain: ChainIdParam.openapi({ type: "integer", example: 1 }),
    }),
  },
  responses: {
    200: jsonResponse("APY and position", LendingVaultApy),
    404: jsonResponse("Not a lending vault of the chain's registry entry", ErrorSchema),
    503: jsonResponse("No RPC for the chain, or it did not answer", ErrorSchema),
    ...openReadAuthResponses,
    ...errorResponses,
  },
});

export const lendingVaultApyHandler: RouteHandler<typeof lendingVaultApy, AppEnv> = async (c) => {
  const { db, config } = c.var.deps;
  const q = c.req.valid("query");
  const vault = q.vault_address.toLowerCase() as Address;
  const sub = q.subaccount_address.toLowerCase() as Address;
  const entry = (await chainProtocols(db)).get(q.chain);
  if (!entry?.morpho?.lendingVaults.includes(vault))
    return c.json({ detail: `${q.vault_address} is not a lending vault of chain ${q.chain}'s registry entry` }, 404);
  const url = config.rpcUrls.get(q.chain);
  if (!url) return c.json({ detail: `No RPC is configured for chain ${q.chain} (PONDER_RPC_URL_${q.chain})` }, 503);
  const client = chainClient(url);
  try {
    // read once per head block for every request about this vault and subaccount
    const key = `lending-vault-apy:${vault}:${sub}:${objectKey(entry)}`;
    const { value } = await c.var.chainReads.atHead(url, client, key, (head) =>
      positionAt(client, entry, vault, sub, head),
    );
    // the APY is history: the job's day series (derived.lending_vault_day), its newest day
    const [day] = await db
      .selectFrom("derived.lending_vault_day")
      .select(["day", "apy_7d"])
      .where("chain_id", "=", q.chain)
      .where("vault", "=", vault)
      .orderBy("day", "desc")
      .limit(1)
      .execute();
    const apy = day?.apy_7d ?? null;
    const answer = {
      apy,
      window_days: apy == null ? null : WINDOW_DAYS,
      ...value,
      apy_as_of: day ? String(day.day) : null,
    };
    return c.json(answer, 200);
  } catch (err) {
    if (serviceFault(err)) throw err; // a programming error: a 500, logged
    return c.json({ detail: `The RPC of chain ${q.chain} did not answer: ${publicMessage(err)}` }, 503);
  }
};

/** The vault's share price and the subaccount's position in it, read at `head`. */
async function positionAt(client: PublicClient, entry: ChainProtocols, vault: Address, sub: Address, head: Head) {
  const read = <T>(address: Address, abi: Abi, functionName: string, args: unknown[] = [], blockNumber = head.number) =>
    client.readContract({ address, abi, functionName, args, blockNumber }) as Promise<T>;
  const [asset, shareDecimals, shares] = await Promise.all([
    read<Address>(vault, VAULT as Abi, "asset"),
    read<number>(vault, VAULT as Abi, "decimals"),
    read<bigint>(vault, VAULT as Abi, "balanceOf", [sub]),
  ]);
  const a = asset.toLowerCase() as Address;
  const [symbol, decimals] = await Promise.all([
    read<string>(a, ERC20 as Abi, "symbol"),
    read<number>(a, ERC20 as Abi, "decimals"),
  ]);
  const feed = entry.tokens.find((t) => t.address === a)?.priceFeed;
  const answer = feed ? await read<bigint>(feed.address, FEED as Abi, "latestAnswer") : null;
  const price = answer != null && answer > 0n ? Number(answer) / 10 ** feed!.decimals : null;
  const one = 10n ** BigInt(shareDecimals);
  const pricePerShare = async (block: bigint) =>
    Number(await read<bigint>(vault, VAULT as Abi, "convertToAssets", [one], block)) / 10 ** Number(decimals);
  const now = await pricePerShare(head.number);
  const assets = Number(await read<bigint>(vault, VAULT as Abi, "convertToAssets", [shares])) / 10 ** Number(decimals);
  return {
    share_price: now,
    vault_positions: [
      { subaccount: sub, shares: shares.toString(), assets, value: price == null ? null : assets * price },
    ],
    token: { symbol, address: a, decimals: Number(decimals), price },
    block_number: Number(head.number),
  };
}
