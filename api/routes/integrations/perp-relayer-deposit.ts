/**
 * POST /api/v1/integrations/perp_relayer_a/deposit and /perp_relayer_b/deposit: builds and
 * simulates a subaccount's deposit on a perp bridge of its chain (the registry's `perp` entry)
 * through its SubaccountModule, and answers the transaction with the `core_hash` the core ledger
 * will know the deposit by (the bridge's `nextCoreHash(Safe)` at the head, checked against the
 * simulated deposit's own return), the bridge's minimum, and where to follow it (check_status).
 * The transaction is pinned to that hash (the module's `executeExpecting`): mined after another
 * deposit of the Safe on the same bridge, it reverts instead of landing under another hash.
 *
 * Below the minimum the core side rejects a deposit and the tokens stay locked in the bridge
 * (lost, as with Hyperliquid's Bridge2): such a deposit is always refused (422 `below_minimum`),
 * on both bridges; nothing is built that could only lose funds.
 */
import { createRoute, type RouteHandler, z } from "@hono/zod-openapi";
import {
  type Address,
  decodeAbiParameters,
  decodeFunctionResult,
  encodeAbiParameters,
  encodeFunctionData,
  getAddress,
  type Hex,
  parseAbi,
} from "viem";
import { SubaccountModuleAbi } from "../../../abis/SubaccountModuleAbi.js";
import { allowedRead, requireAllowed } from "../../lib/build/allowed.js";
import { runBuild } from "../../lib/build/audit.js";
import { remember, tokenFacts } from "../../lib/build/facts.js";
import { readAtHead } from "../../lib/build/head.js";
import { type InnerCall, moduleTransaction } from "../../lib/build/module-call.js";
import { aggregate, readValue } from "../../lib/build/multicall.js";
import {
  amountFields,
  buildFields,
  builtResponse,
  rawAmount,
  requireOneAmount,
  TransactionPayloadSchema,
  transactionPayload,
  Units,
  units,
  wholeText,
} from "../../lib/build/payload.js";
import { BuildRefusal } from "../../lib/build/refusal.js";
import { simulate } from "../../lib/build/simulate.js";
import { type BuildSubaccount, buildSubaccount } from "../../lib/build/subaccount.js";
import { type AppEnv, EvmAddress, keySecurity } from "../../lib/router.js";
import { requireScope } from "../../middleware/auth.js";
import { buildResponses, chainRead, ERC20, requireSimulated } from "./builder.lib.js";

type Relayer = "perp_relayer_a" | "perp_relayer_b";

const BRIDGE = parseAbi([
  "function nextCoreHash(address depositor) view returns (bytes32)",
  "function nonces(address depositor) view returns (uint256)",
  "function minimumDepositOf(address token) view returns (uint256)",
  "function usdc() view returns (address)",
  "function deposit(uint256 amount) returns (bytes32)",
  "function deposit(address token, uint256 amount, uint8 destination) returns (bytes32)",
]);

/** One body for both bridges, as the spec has it: each refuses what it cannot do. */
const Body = z
  .strictObject({
    subaccount: EvmAddress.openapi({ description: "The subaccount (its Safe): the depositor the core side credits" }),
    ...buildFields,
    ...amountFields,
    token: EvmAddress.optional().openapi({
      description:
        "The token deposited: one the bridge supports (minimumDepositOf > 0). Default: the chain's USDC (bridge A's " +
        "`usdc()`), the only token bridge A takes",
    }),
    destination: z.enum(["perp", "spot"]).default("perp").openapi({
      description: "The core account credited. Bridge A credits the perp account only",
    }),
  })
  .openapi("PerpRelayerDepositRequest", {
    example: {
      subaccount: "0x5afe000000000000000000000000000000000001",
      chain: 8453,
      amount: "250",
      token: "0x833589fcd6edb6e08f4c7c32d4f71b54bda02913",
      destination: "perp",
    },
  });

const NOTE =
  "core_hash is keccak256(chainId, bridge, depositor, nonce), nonce the Safe's deposit count on the bridge. The " +
  "transaction is pinned to it (the module's executeExpecting): if another deposit of this Safe on this bridge " +
  "lands first, this one reverts with UnexpectedResult and deposits nothing; build it again.";

const PerpDeposit = TransactionPayloadSchema.extend({
  relayer: z.enum(["perp_relayer_a", "perp_relayer_b"]),
  bridge: z.string(),
  core_hash: z.string().openapi({ description: "What the core ledger and check_status will know the deposit by" }),
  nonce: z.string().openapi({ description: "The Safe's deposit number on this bridge the hash is for" }),
  core_hash_note: z.string().openapi({ example: NOTE }),
  status_url: z.string().openapi({ description: "Where to follow it (GET)" }),
  token: z.object({ address: z.string(), symbol: z.string(), decimals: z.number().int() }),
  amount: Units,
  destination: z.enum(["perp", "spot"]),
  minimum: Units.openapi({ description: "The bridge's minimum for the token: below it the deposit would be lost" }),
  core: z
    .object({ chain_id: z.number().int(), ledger: z.string() })
    .nullable()
    .openapi({ description: "The core ledger crediting it, when the registry names it" }),
}).openapi("PerpDepositTransaction");

const describe = (relayer: Relayer) =>
  `${
    relayer === "perp_relayer_a"
      ? "Bridge A (like Hyperliquid's Bridge2): USDC only, to the perp account: `deposit(amount)`. Another " +
        "`token` is refused (422 `token_not_supported`), as is `destination` `spot` (422 " +
        "`destination_not_supported`)."
      : "Bridge B (a deposit wallet): any token it supports (the chain's USDC unless `token` names another), to " +
        "the perp or the spot account: `deposit(token, amount, destination)`."
  } ` +
  "Both bridges take the same body. Built as `executeExpecting` of the subaccount's module (an exact approval " +
  "of the bridge, reset to 0 after, and the deposit's return pinned to the core hash); simulated on top of the " +
  `head.\n\nThe answer carries the \`core_hash\` the deposit will have (${NOTE}) and the bridge's minimum. A deposit below the minimum is refused (422 ` +
  "`below_minimum`): the core side would reject it and the tokens would stay in the bridge, lost. Follow the " +
  `deposit with \`GET /integrations/${relayer}/check_status?core_hash=\`. Needs an API key with the scope ` +
  "`transactions:build`; every build and refusal is recorded (registry.build_audit).";

const responses = {
  200: builtResponse("The deposit transaction, simulated, with its core hash", PerpDeposit),
  ...buildResponses({
    404: "`unknown_subaccount`, or `unknown_bridge` (the chain's registry entry has no perp bridges)",
    409: "`simulation_failed` (each decoded revert in `reasons`, e.g. the module's NotTrader) or `stale_subaccount`",
    422:
      "Validation error; also `below_minimum`, `token_not_supported` (by the bridge), `destination_not_supported` " +
      "(bridge A and `spot`), `token_not_allowed` (by the module) or `insufficient_balance`, before any simulation",
  }),
};

export const perpRelayerADeposit = createRoute({
  method: "post",
  path: "/integrations/perp_relayer_a/deposit",
  tags: ["integrations"],
  summary: "Build a subaccount's perp deposit through bridge A",
  description: describe("perp_relayer_a"),
  middleware: [requireScope("transactions:build")],
  security: keySecurity,
  request: { body: { required: true, content: { "application/json": { schema: Body } } } },
  responses,
});

export const perpRelayerBDeposit = createRoute({
  method: "post",
  path: "/integrations/perp_relayer_b/deposit",
  tags: ["integrations"],
  summary: "Build a subaccount's perp or spot deposit through bridge B",
  description: describe("perp_relayer_b"),
  middleware: [requireScope("transactions:build")],
  security: keySecurity,
  request: { body: { required: true, content: { "application/json": { schema: Body } } } },
  responses,
});

type DepositBody = z.infer<typeof Body>;

/** The core hash the simulated deposit returned (module → bytes → bytes32). */
function returnedHash(data: Hex): Hex {
  const inner = decodeFunctionResult({ abi: SubaccountModuleAbi, functionName: "executeExpecting", data }) as Hex;
  return decodeAbiParameters([{ type: "bytes32" }], inner)[0];
}

async function build(sub: BuildSubaccount, relayer: Relayer, body: DepositBody) {
  const perp = sub.protocols.perp;
  if (!perp) {
    throw new BuildRefusal(404, "unknown_bridge", `Chain ${sub.chainId} has no perp bridges in the registry`);
  }
  const bridge = getAddress(relayer === "perp_relayer_a" ? perp.bridgeA : perp.bridgeB);
  // the chain's USDC, as bridge A names it: bridge A's only token, bridge B's default (read only
  // where needed: a bridge B deposit of a named token does not depend on bridge A)
  const bridgeA = getAddress(perp.bridgeA);
  const chainUsdc = () =>
    remember(sub, `perp-usdc:${bridgeA}`, async () => {
      const [read] = await chainRead(sub, () =>
        aggregate(sub.rpcUrl, [{ address: bridgeA, abi: BRIDGE, functionName: "usdc" }]),
      );
      const a = readValue<Address>(read);
      if (!a) throw new BuildRefusal(404, "unknown_bridge", `${bridgeA} answers no usdc(): not bridge A`);
      return getAddress(a);
    });
  const tokenAddress = body.token ? getAddress(body.token) : await chainUsdc();
  const destination = body.destination;
  if (relayer === "perp_relayer_a") {
    const usdc = await chainUsdc();
    if (tokenAddress !== usdc) {
      throw BuildRefusal.field(
        ["body", "token"],
        `Bridge A takes only USDC (${usdc}); bridge B takes other tokens`,
        "token_not_supported",
      );
    }
    if (destination !== "perp") {
      throw BuildRefusal.field(
        ["body", "destination"],
        "Bridge A credits the core perp account only; bridge B can credit the spot account",
        "destination_not_supported",
      );
    }
  }
  const tokenLoc = body.token ? ["body", "token"] : ["body"];
  const token = (await tokenFacts(sub, [tokenAddress], tokenLoc))[0]!;
  const { head, results } = await readAtHead(sub, [
    { address: bridge, abi: BRIDGE, functionName: "minimumDepositOf", args: [token.address] },
    allowedRead(sub, token.address),
    { address: token.address, abi: ERC20, functionName: "balanceOf", args: [sub.safe] },
    { address: bridge, abi: BRIDGE, functionName: "nextCoreHash", args: [sub.safe] },
    { address: bridge, abi: BRIDGE, functionName: "nonces", args: [sub.safe] },
  ]);
  const minimum = readValue<bigint>(results[0]) ?? 0n;
  if (minimum === 0n) {
    throw BuildRefusal.field(
      ["body", "token"],
      `Bridge ${bridge} does not take ${token.symbol}`,
      "token_not_supported",
    );
  }
  requireAllowed([token], [readValue<boolean>(results[1])], tokenLoc);
  const amount = rawAmount(body, token.decimals);
  const field = ["body", body.amount_raw != null ? "amount_raw" : "amount"];
  if (amount < minimum) {
    throw BuildRefusal.field(
      field,
      `Below the bridge's minimum of ${minimum} raw units of ${token.symbol}: the core side would reject the deposit ` +
        "and the tokens would be lost in the bridge",
      "below_minimum",
    );
  }
  const held = readValue<bigint>(results[2]) ?? 0n;
  if (amount > held) {
    throw BuildRefusal.field(
      field,
      `Above the Safe's balance: it holds ${wholeText(held, token.decimals)} ${token.symbol}, ${held} raw units`,
      "insufficient_balance",
    );
  }
  const data =
    relayer === "perp_relayer_a"
      ? encode("deposit", [amount])
      : encode("deposit", [token.address, amount, destination === "spot" ? 1 : 0]);
  const call: InnerCall = {
    target: bridge,
    value: 0n,
    data,
    description:
      `deposit ${wholeText(amount, token.decimals)} ${token.symbol} to the core ${destination} account through ` +
      `${relayer}`,
  };
  const expected = readValue<Hex>(results[3]);
  const nonce = readValue<bigint>(results[4]);
  if (expected == null || nonce == null) {
    throw new BuildRefusal(404, "unknown_bridge", `${bridge} answers no nextCoreHash or nonces: not a perp bridge`);
  }
  // pinned: the deposit returns this hash or the transaction reverts (another deposit of the Safe
  // on this bridge mined first would give it the next nonce's hash)
  const pin = encodeAbiParameters([{ type: "bytes32" }], [expected]);
  const approval = { token: token.address, spender: bridge, amount };
  const tx = moduleTransaction(sub.module, [call], [approval], { expect: pin });
  const sim = await simulate(sub, tx, {}, head);
  requireSimulated(sim, `${relayer}.deposit`);
  const coreHash = returnedHash(sim.returnData);
  if (coreHash !== expected) throw new Error(`the simulated deposit returned ${coreHash}, nextCoreHash ${expected}`);
  return { bridge, token: token, amount, minimum, destination, tx, sim, coreHash, nonce };
}

function encode(functionName: "deposit", args: readonly unknown[]): Hex {
  return encodeFunctionData({ abi: BRIDGE, functionName, args: args as never });
}

function handler(relayer: Relayer): RouteHandler<typeof perpRelayerADeposit, AppEnv> {
  return async (c) => {
    const body = c.req.valid("json");
    return runBuild(c, `${relayer}.deposit`, { ...body, address: body.subaccount }, async () => {
      requireOneAmount(body);
      const sub = await buildSubaccount(c.var.deps, body.subaccount, body.chain, body.from);
      const b = await build(sub, relayer, body);
      const core = sub.protocols.perp?.core ?? null;
      return {
        chainId: sub.chainId,
        subaccount: sub.safe,
        body: (buildId: string) => ({
          ...transactionPayload(buildId, sub, b.tx, b.sim),
          relayer,
          bridge: b.bridge,
          core_hash: b.coreHash,
          nonce: b.nonce.toString(),
          core_hash_note: NOTE,
          status_url: `/api/v1/integrations/${relayer}/check_status?core_hash=${b.coreHash}`,
          token: b.token,
          amount: units(b.amount, b.token.decimals),
          destination: b.destination,
          minimum: units(b.minimum, b.token.decimals),
          core: core ? { chain_id: core.chainId, ledger: getAddress(core.ledger) } : null,
        }),
      };
    });
  };
}

export const perpRelayerADepositHandler = handler("perp_relayer_a");
// the same body and answer: the routes' types differ only by their paths
export const perpRelayerBDepositHandler = handler("perp_relayer_b") as unknown as RouteHandler<
  typeof perpRelayerBDeposit,
  AppEnv
>;
