/**
 * The dex_pool builders on a protocol world of their own (an anvil of this file's): every payload
 * an answer carries is sent by the subaccount's trader and the chain is held to what the answer
 * said: the position NFT and its liquidity and range, the Safe's balances to the unit, fees and
 * the v3 staker's rewards (time advanced so they accrue; each payload sent at its simulated
 * block's time), stakes kept or moved, and no approval left behind. Each refusal is recorded in
 * registry.build_audit and changes nothing on-chain.
 */

import Ajv2020 from "ajv/dist/2020.js";
import addFormats from "ajv-formats";
import {
  type Abi,
  type Address,
  createPublicClient,
  decodeErrorResult,
  encodeAbiParameters,
  getAddress,
  type Hex,
  http,
  type PublicClient,
  parseAbi,
} from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SubaccountModuleAbi } from "../../abis/SubaccountModuleAbi.js";
import { createKey } from "../../api/keys.js";
import { uniswap as uniArt } from "../../contracts/devnet/protocols/artifacts.js";
import { deploy, ERC20_ABI } from "../../contracts/devnet/protocols/tx.js";
import { createdLogs, incentiveId } from "../../onchain/staker.js";
import { rpc } from "../../scripts/lib/anvil.js";
import { type ApiHarness, readAnswer, setupApi } from "../api-harness.js";
import { PORT_OFFSET } from "../helpers.js";
import { limitedRpc } from "../limited-rpc.js";
import { actor, buildWorld, call, moduleCall, registerWorld, type World } from "../protocol-world.js";
import { type RpcProxy, rpcProxy } from "../swap-world.js";

const E18 = 10n ** 18n;
const E6 = 10n ** 6n;
const MAX_UINT128 = (1n << 128n) - 1n;
const STAKER = parseAbi([
  "struct IncentiveKey { address rewardToken; address pool; uint256 startTime; uint256 endTime; address refundee; }",
  "function deposits(uint256) view returns (address owner, uint48 numberOfStakes, int24 tickLower, int24 tickUpper)",
  "function stakes(uint256 tokenId, bytes32 incentiveId) view returns (uint160, uint128 liquidity)",
  "function rewards(address rewardToken, address owner) view returns (uint256)",
  "function getRewardInfo(IncentiveKey key, uint256 tokenId) view returns (uint256 reward, uint160 secondsInsideX128)",
]);

let h: ApiHarness;
let w: World;
/** counts the API's RPC calls to the world's chain */
let proxy: RpcProxy;
let drop: () => Promise<void>;
let client: PublicClient;
let key: string;
let keyId: string;
let plainKey: string;
let pool: { address: Address; token0: Address; token1: Address; fee: number; tickSpacing: number };
let usdc: Address;
let weth: Address;
let npm: Address;
let staker: Address;
/** the pool's tick before the tests */
const r0 = { tick: 0 };

beforeAll(async () => {
  h = await setupApi();
  w = await buildWorld(`dex-pool-test-${PORT_OFFSET}`, 18_900 + PORT_OFFSET + 10);
  client = createPublicClient({ transport: http(w.anvil.rpcUrl), pollingInterval: 50 }) as PublicClient;
  [usdc, weth] = [getAddress(w.token("USDC")), getAddress(w.token("WETH"))];
  npm = getAddress(w.p.uniswap.positionManager);
  staker = getAddress(w.p.uniswap.staker);
  pool = w.p.uniswap.pools.find((p) => p.address === w.p.uniswap.incentive.pool)!;
  await mint(usdc, w.sub.safe, 100_000n * E6);
  await mint(weth, w.sub.safe, 30n * E18);
  drop = await registerWorld(h, w);
  proxy = await rpcProxy(w.anvil.rpcUrl);
  const k = await createKey(h.db, "dex-pool-builder", ["transactions:build"]);
  [key, keyId] = [k.key, k.id];
  plainKey = (await createKey(h.db, "dex-pool-plain")).key;
  const slot0 = await read<readonly unknown[]>(
    pool.address,
    parseAbi(["function slot0() view returns (uint160, int24 tick, uint16, uint16, uint16, uint8, bool)"]),
    "slot0",
  );
  r0.tick = Number(slot0[1]);
}, 600_000);

afterAll(async () => {
  await proxy?.close();
  await drop?.();
  await w?.anvil.stop();
  await h?.close();
});

const mint = (t: Address, to: Address, amount: bigint) =>
  w.s.send(w.deployer, t, call(ERC20_ABI, "mint", [to, amount]), "mint");
const read = async <T>(to: Address, abi: Abi, fn: string, args: readonly unknown[] = []): Promise<T> =>
  (await client.readContract({ address: to, abi, functionName: fn, args: args as unknown[] })) as T;
const balance = (t: Address, who: Address = w.sub.safe) => read<bigint>(t, ERC20_ABI as Abi, "balanceOf", [who]);
const npmAbi = () => uniArt.positionManager().abi as Abi;
const position = async (id: string | bigint) => {
  const p = await read<readonly unknown[]>(npm, npmAbi(), "positions", [BigInt(id)]);
  return { tickLower: Number(p[5]), tickUpper: Number(p[6]), liquidity: p[7] as bigint, owed0: p[10], owed1: p[11] };
};
const ownerOf = (id: string | bigint) => read<Address>(npm, npmAbi(), "ownerOf", [BigInt(id)]);
type DefiRow = {
  protocol: string;
  type: string;
  token_id?: string;
  value: number | null;
  amount0?: number;
  amount1?: number;
  token?: { address: string };
  raw?: string;
  incentive_rewards?: { incentive: string; token: { address: string }; raw: string; value: number | null }[];
};

/** The subaccount summary's Uniswap rows and totals, read at the head as the tests' own reads are. */
async function summary() {
  const res = await app().request(`/api/v1/subaccounts/summary?address=${w.sub.safe}`, {
    headers: { "x-api-key": key },
  });
  const text = await res.text();
  expect(res.status, text).toBe(200);
  const b = JSON.parse(text) as { portfolio: { defi_positions: DefiRow[] }; total_account_value: number };
  const uni = b.portfolio.defi_positions.filter((p) => p.protocol === "uniswap_v3");
  return {
    total: b.total_account_value,
    position: (id: string) => uni.find((p) => p.type === "liquidity" && p.token_id === id),
    rewards: uni.filter((p) => p.type === "rewards"),
  };
}

/** The side of the pool a token is. */
const side = (t: Address) => (pool.token0 === t ? "0" : "1");

const app = () =>
  h.appWith({
    rpcUrls: new Map([...h.devnet.chains.map((c) => [c.chainId, c.rpcUrl] as const), [w.s.chainId, proxy.url]]),
  });

type Units = { raw: string; amount: number };
type Pair = { amount0: Units; amount1: Units };
type Incentive = { id: Hex; reward_token: string; pool: string; start_time: number; end_time: number };
type Pos = {
  token_id: string;
  owner: string;
  staked: boolean;
  tick_lower: number;
  tick_upper: number;
  liquidity: string;
};
type Payload = {
  build_id: string;
  from: Address;
  target: Address;
  data: Hex;
  value: string;
  gas_limit: string;
  calls: { target: string; description: string }[];
  approvals: { token: string; spender: string; amount_raw: string }[];
  simulated_timestamp: number;
  pool: { tick: number; price: number; tick_spacing: number };
  [k: string]: unknown;
};
/** The OpenAPI document's schema of each operation's answer by status: every answer is held to it. */
let validators: Map<string, (body: unknown) => boolean> | undefined;
async function validatorOf(op: string, status: number) {
  if (!validators) {
    validators = new Map();
    const doc = (await (await app().request("/api/v1/openapi.json")).json()) as {
      paths: Record<
        string,
        { post: { responses: Record<string, { content: { "application/json": { schema: object } } }> } }
      >;
      components: object;
    };
    const ajv = new Ajv2020({ strict: false, allErrors: true });
    addFormats(ajv);
    ajv.addSchema({ $id: "doc", components: doc.components });
    for (const [path, item] of Object.entries(doc.paths)) {
      if (!path.startsWith("/integrations/dex_pool/")) continue;
      for (const [code, res] of Object.entries(item.post.responses)) {
        const schema = JSON.stringify(res.content["application/json"].schema);
        const v = ajv.compile(JSON.parse(schema.replaceAll('"#/components/', '"doc#/components/')));
        validators.set(`${path.split("/")[4]} ${code}`, (b) => {
          const ok = v(b);
          expect(ok ? [] : v.errors?.slice(0, 5)).toEqual([]);
          return ok;
        });
      }
    }
  }
  const v = validators.get(`${op} ${status}`);
  expect(v, `${op} documents its ${status}`).toBeDefined();
  return v!;
}

type Refusal = { detail: string; code: string; reasons?: { kind: string; name: string; message: string }[] };

async function build<T = Payload>(
  op: string,
  body: Record<string, unknown>,
  opts: { pool?: string; key?: string | null; from?: Address | null; via?: ReturnType<typeof app> } = {},
) {
  const from = opts.from === undefined ? w.trader : opts.from;
  const headers: Record<string, string> = { "content-type": "application/json" };
  const k = opts.key === undefined ? key : opts.key;
  if (k) headers["x-api-key"] = k;
  const to = opts.via ?? app();
  const res = await to.request(`/api/v1/integrations/dex_pool/${opts.pool ?? pool.address}/${op}/${w.sub.safe}`, {
    method: "POST",
    headers,
    body: JSON.stringify({ chain: 8453, ...(from ? { from } : {}), ...body }),
  });
  const answer = await readAnswer<T>(res);
  expect((await validatorOf(op, answer.status))(answer.body)).toBe(true);
  if (answer.status === 200 && body.amount0_min_raw == null && body.amount1_min_raw == null) {
    expectExactMinimums(op, answer.body as Payload, Number(body.max_slippage_bps ?? 50));
  }
  return answer;
}

/**
 * The builders set the minimums from what they compute the pool will move, before simulating:
 * the pool's own arithmetic on the state they read. It is exact, so the minimums sit exactly
 * `bps` below the amounts the simulation moved; a rebalance's mint is given exactly what the
 * decrease and collect yield (its approvals).
 */
function expectExactMinimums(op: string, b: Payload, bps: number) {
  const moved = { deposit: "deposited", withdraw: "withdrawn", rebalance: "deposited" }[op];
  if (!moved) return;
  const min = (u: Units) => ((BigInt(u.raw) * BigInt(10_000 - bps)) / 10_000n).toString();
  const amounts = b[moved] as Pair;
  const mins = b.minimums as Pair;
  expect([mins.amount0.raw, mins.amount1.raw]).toEqual([min(amounts.amount0), min(amounts.amount1)]);
  if (op === "rebalance") {
    const [w, f] = [b.withdrawn as Pair, b.fees as Pair];
    const out = (i: 0 | 1) => {
      const k = `amount${i}` as const;
      return (BigInt(w[k].raw) + BigInt(f[k].raw)).toString();
    };
    expect(b.approvals.map((a) => a.amount_raw)).toEqual([out(0), out(1)].filter((x) => x !== "0"));
  }
}

/** Sends a payload as its trader at its simulated block's time; the receipt must succeed. */
async function send(p: Payload) {
  const head = await client.getBlock();
  if (BigInt(p.simulated_timestamp) > head.timestamp) {
    await rpc(w.anvil.rpcUrl, "evm_setNextBlockTimestamp", [p.simulated_timestamp]);
  }
  const hash = await rpc<Hex>(w.anvil.rpcUrl, "eth_sendTransaction", [
    {
      from: p.from,
      to: p.target,
      data: p.data,
      value: `0x${BigInt(p.value).toString(16)}`,
      gas: `0x${BigInt(p.gas_limit).toString(16)}`,
      gasPrice: "0x0",
    },
  ]);
  const receipt = await client.waitForTransactionReceipt({ hash });
  expect(receipt.status).toBe("success");
  expect(receipt.gasUsed).toBeLessThanOrEqual(BigInt(p.gas_limit));
  await w.s.syncClock();
  return receipt;
}

/** The Safe's balances of both pool tokens. */
const balances = async () => ({ t0: await balance(pool.token0), t1: await balance(pool.token1) });

async function noLingeringApprovals() {
  for (const t of [usdc, weth]) {
    for (const spender of [npm, staker]) {
      expect(await read<bigint>(t, ERC20_ABI as Abi, "allowance", [w.sub.safe, spender])).toBe(0n);
    }
  }
}

async function auditOf(buildId: string) {
  const [row] = await h.q<{ action: string; status: number; outcome: string; chain_id: number; subaccount: string }>(
    "SELECT action, status, outcome, chain_id, subaccount FROM registry.build_audit WHERE id = $1",
    [buildId],
  );
  return row;
}

/** Swaps through the pool both ways so positions in range earn fees in both tokens. */
async function churn(usdAmount: bigint) {
  const sw = actor("dex-pool-test:swapper");
  const router = w.p.uniswap.swapRouter;
  const routerAbi = uniArt.swapRouter().abi as Abi;
  await mint(usdc, sw, usdAmount * E6);
  for (const t of [usdc, weth]) await w.s.send(sw, t, call(ERC20_ABI, "approve", [router, MAX_UINT128]), "approve");
  const swap = (tokenIn: Address, tokenOut: Address, amountIn: bigint) =>
    w.s.send(
      sw,
      router,
      call(routerAbi, "exactInputSingle", [
        {
          tokenIn,
          tokenOut,
          fee: pool.fee,
          recipient: sw,
          deadline: BigInt(w.s.clock + 3600),
          amountIn,
          amountOutMinimum: 0n,
          sqrtPriceLimitX96: 0n,
        },
      ]),
      "swap",
    );
  await swap(usdc, weth, usdAmount * E6);
  await swap(weth, usdc, await balance(weth, sw));
}

async function advance(seconds: number) {
  await w.s.rpc("evm_increaseTime", [seconds]);
  await w.s.rpc("evm_mine", []);
  await w.s.syncClock();
}

/**
 * The trader stakes position `id` in the incentive `key` (the NFT goes to the staker with the
 * key as its data), encoded here, not by the code under test.
 */
async function stakeIn(
  id: string,
  key: { rewardToken: Address; pool: Address; startTime: bigint; endTime: bigint; refundee: Address },
) {
  const keyData = encodeAbiParameters(
    [
      {
        type: "tuple",
        components: [
          { name: "rewardToken", type: "address" },
          { name: "pool", type: "address" },
          { name: "startTime", type: "uint256" },
          { name: "endTime", type: "uint256" },
          { name: "refundee", type: "address" },
        ],
      },
    ],
    [key],
  );
  const data = call(npmAbi(), "safeTransferFrom", [w.sub.safe, staker, BigInt(id), keyData]);
  await w.s.send(w.trader, w.sub.module, moduleCall("execute", [npm, 0n, data]), "stake");
}

const incentiveKey = () => {
  const inc = w.p.uniswap.incentive;
  return { ...inc, startTime: BigInt(inc.startTime), endTime: BigInt(inc.endTime) };
};

let minted: string; // the position the operations below work on

describe("POST /integrations/dex_pool/{pool}/deposit/{address}", () => {
  it("mints a position owned by the Safe with the simulated token id, liquidity and amounts", async () => {
    const before = await balances();
    const r = await build<
      Payload & { operation: string; position: Pos; deposited: Pair; desired: Pair; liquidity_added: string }
    >("deposit", { [`amount${side(usdc)}`]: "3200", width_bps: 1000 });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const b = r.body;
    expect(b.operation).toBe("mint");
    expect(Math.abs(b.position.tick_lower % b.pool.tick_spacing)).toBe(0);
    expect(Math.abs(b.position.tick_upper % b.pool.tick_spacing)).toBe(0);
    expect(b.position.tick_lower).toBeLessThan(b.pool.tick);
    expect(b.position.tick_upper).toBeGreaterThan(b.pool.tick);
    // the side given is used whole, the other as the range needs; approvals are the desired amounts
    expect(b.deposited[`amount${side(usdc)}`].raw).toBe((3200n * E6).toString());
    expect(b.approvals.map((a) => [a.token, a.spender, a.amount_raw])).toEqual([
      [pool.token0, npm, b.desired.amount0.raw],
      [pool.token1, npm, b.desired.amount1.raw],
    ]);
    await send(b);
    minted = b.position.token_id;
    expect(await ownerOf(minted)).toBe(w.sub.safe);
    const onChain = await position(minted);
    expect(onChain).toMatchObject({ tickLower: b.position.tick_lower, tickUpper: b.position.tick_upper });
    expect(onChain.liquidity.toString()).toBe(b.liquidity_added);
    expect(onChain.liquidity.toString()).toBe(b.position.liquidity);
    const after = await balances();
    expect(before.t0 - after.t0).toBe(BigInt(b.deposited.amount0.raw));
    expect(before.t1 - after.t1).toBe(BigInt(b.deposited.amount1.raw));
    await noLingeringApprovals();
    expect(await auditOf(b.build_id)).toMatchObject({
      action: "dex_pool.deposit",
      status: 200,
      outcome: "built",
      chain_id: 8453,
      subaccount: w.sub.safe.toLowerCase(),
    });
  });

  it("adds to an existing position (increaseLiquidity) with both amounts given", async () => {
    const before = await balances();
    const l0 = (await position(minted)).liquidity;
    const r = await build<Payload & { operation: string; deposited: Pair; liquidity_added: string; position: Pos }>(
      "deposit",
      {
        token_id: minted,
        amount0_raw: side(usdc) === "0" ? "1000000000" : "500000000000000000",
        amount1_raw: side(usdc) === "1" ? "1000000000" : "500000000000000000",
      },
    );
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.operation).toBe("increase");
    await send(r.body);
    const l1 = (await position(minted)).liquidity;
    expect(l1 - l0).toBe(BigInt(r.body.liquidity_added));
    expect(l1.toString()).toBe(r.body.position.liquidity);
    const after = await balances();
    expect(before.t0 - after.t0).toBe(BigInt(r.body.deposited.amount0.raw));
    expect(before.t1 - after.t1).toBe(BigInt(r.body.deposited.amount1.raw));
    await noLingeringApprovals();
  });
});

describe("POST /integrations/dex_pool/{pool}/claim_rewards/{address}", () => {
  it("a staked position: fees collected, staker rewards claimed, staked again", async () => {
    // the trader stakes the position in the incentive (the NFT goes to the staker with the key)
    await stakeIn(minted, incentiveKey());
    expect(await ownerOf(minted)).toBe(staker);
    await churn(100_000n);
    await advance(86_400);
    // the summary counts the staked position's reward in its value, as the staker computes it at
    // the block read (USDC, priced 1)
    const owedBefore = await read<bigint>(staker, STAKER, "rewards", [usdc, w.sub.safe]);
    const valued = await summary();
    const accrued = await read<readonly bigint[]>(staker, STAKER, "getRewardInfo", [incentiveKey(), BigInt(minted)]);
    expect(accrued[0]).toBeGreaterThan(0n);
    const row = valued.position(minted)!;
    expect(row.incentive_rewards).toEqual([
      expect.objectContaining({
        token: expect.objectContaining({ address: usdc.toLowerCase() }),
        raw: String(accrued[0]),
      }),
    ]);
    expect(row.incentive_rewards![0]!.value).toBeCloseTo(Number(accrued[0]) / 1e6, 6);
    expect(valued.rewards.map((x) => x.raw)).toEqual(owedBefore > 0n ? [String(owedBefore)] : []);
    const before = { usdc: await balance(usdc), weth: await balance(weth) };
    const r = await build<
      Payload & {
        fees: Pair;
        incentive_rewards: { incentive: Incentive; reward: Units }[];
        rewards_claimed: { token: { address: string }; amount: Units }[];
        received: { token: { address: string }; amount: Units }[];
        restaked_in: Incentive[];
        position: Pos;
      }
    >("claim_rewards", { token_id: minted });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const b = r.body;
    expect(BigInt(b.fees.amount0.raw)).toBeGreaterThan(0n);
    expect(BigInt(b.fees.amount1.raw)).toBeGreaterThan(0n);
    // the key was found in the staker's logs: the devnet's incentive
    const inc = w.p.uniswap.incentive;
    expect(b.incentive_rewards).toHaveLength(1);
    expect(b.incentive_rewards[0]!.incentive).toMatchObject({
      reward_token: inc.rewardToken,
      pool: inc.pool,
      start_time: inc.startTime,
      end_time: inc.endTime,
    });
    const reward = BigInt(b.incentive_rewards[0]!.reward.raw);
    expect(reward).toBeGreaterThan(0n);
    expect(b.rewards_claimed).toEqual([
      { token: expect.objectContaining({ address: usdc }), amount: b.incentive_rewards[0]!.reward },
    ]);
    expect(b.restaked_in.map((x) => x.id)).toEqual([b.incentive_rewards[0]!.incentive.id]);
    expect(b.position).toMatchObject({ owner: staker, staked: true });
    await send(b);
    // the Safe received exactly the fees and the reward (USDC is both a pool token and the reward)
    const got = { usdc: (await balance(usdc)) - before.usdc, weth: (await balance(weth)) - before.weth };
    const fee = (t: Address) => BigInt(b.fees[`amount${side(t)}`].raw);
    expect(got.usdc).toBe(fee(usdc) + reward);
    expect(got.weth).toBe(fee(weth));
    const received = new Map(b.received.map((x) => [x.token.address, BigInt(x.amount.raw)]));
    expect(received.get(usdc)).toBe(got.usdc);
    expect(received.get(weth)).toBe(got.weth);
    // still staked for the Safe, nothing owed left
    expect(await ownerOf(minted)).toBe(staker);
    const dep = await read<readonly unknown[]>(staker, STAKER, "deposits", [BigInt(minted)]);
    expect(dep[0]).toBe(w.sub.safe);
    expect(dep[1]).toBe(1);
    const stake = await read<readonly bigint[]>(staker, STAKER, "stakes", [
      BigInt(minted),
      b.incentive_rewards[0]!.incentive.id,
    ]);
    expect(stake[1]).toBeGreaterThan(0n);
    expect(await read<bigint>(staker, STAKER, "rewards", [usdc, w.sub.safe])).toBe(0n);
    const p = await position(minted);
    expect([p.owed0, p.owed1]).toEqual([0n, 0n]);
    await noLingeringApprovals();
  });
});

describe("POST /integrations/dex_pool/{pool}/withdraw/{address}", () => {
  it("half of a staked position: unstaked, decreased and collected, staked again", async () => {
    await advance(3_600);
    const before = await balances();
    const l0 = (await position(minted)).liquidity;
    const r = await build<
      Payload & {
        liquidity_removed: string;
        withdrawn: Pair;
        fees: Pair;
        received: Pair;
        position: Pos;
        staker_rewards_accrued: { token: { address: string }; amount: Units }[];
      }
    >("withdraw", { token_id: minted, fraction: 0.5 });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const b = r.body;
    expect(b.calls.map((c) => c.description)).toEqual([
      expect.stringMatching(/^unstake/),
      expect.stringMatching(/out of the v3 staker/),
      expect.stringMatching(/^take liquidity/),
      expect.stringMatching(/^collect/),
      expect.stringMatching(/^deposit .* staked in/),
    ]);
    expect(BigInt(b.liquidity_removed)).toBe(l0 / 2n);
    await send(b);
    const p = await position(minted);
    expect(p.liquidity).toBe(l0 - BigInt(b.liquidity_removed));
    expect(p.liquidity.toString()).toBe(b.position.liquidity);
    const after = await balances();
    expect(after.t0 - before.t0).toBe(BigInt(b.received.amount0.raw));
    expect(after.t1 - before.t1).toBe(BigInt(b.received.amount1.raw));
    expect(BigInt(b.received.amount0.raw)).toBe(BigInt(b.withdrawn.amount0.raw) + BigInt(b.fees.amount0.raw));
    expect(await ownerOf(minted)).toBe(staker);
    // the hour's reward was credited to the Safe in the staker by the unstake
    const accrued = BigInt(b.staker_rewards_accrued[0]!.amount.raw);
    expect(accrued).toBeGreaterThan(0n);
    expect(await read<bigint>(staker, STAKER, "rewards", [usdc, w.sub.safe])).toBe(accrued);
    await noLingeringApprovals();
  });
});

describe("a deposit into a staked position", () => {
  it("unstakes, adds the liquidity and stakes again: the staker counts the whole of it", async () => {
    const id = incentiveId(incentiveKey());
    const staked0 = (await read<readonly bigint[]>(staker, STAKER, "stakes", [BigInt(minted), id]))[1]!;
    expect(staked0).toBe((await position(minted)).liquidity);
    const r = await build<
      Payload & {
        liquidity_added: string;
        position: Pos;
        unstaked_from: Incentive[];
        restaked_in: Incentive[];
        staker_rewards_accrued: { amount: Units }[];
      }
    >("deposit", { token_id: minted, [`amount${side(usdc)}`]: "100" });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const b = r.body;
    expect(b.calls.map((c) => c.description)).toEqual([
      expect.stringMatching(/^unstake/),
      expect.stringMatching(/^add liquidity/),
      expect.stringMatching(/^stake position .* again/),
    ]);
    expect(b.unstaked_from.map((x) => x.id)).toEqual([id]);
    expect(b.restaked_in.map((x) => x.id)).toEqual([id]);
    expect(b.position).toMatchObject({ owner: staker, staked: true });
    await send(b);
    const l1 = (await position(minted)).liquidity;
    expect(l1).toBe(staked0 + BigInt(b.liquidity_added));
    expect(l1.toString()).toBe(b.position.liquidity);
    // the stake now holds the added liquidity too
    expect((await read<readonly bigint[]>(staker, STAKER, "stakes", [BigInt(minted), id]))[1]).toBe(l1);
    expect(await ownerOf(minted)).toBe(staker);
    // the unstake credited the reward since the last stake to the Safe, as the answer said
    const accrued = BigInt(b.staker_rewards_accrued[0]!.amount.raw);
    expect(accrued).toBeGreaterThan(0n);
    await noLingeringApprovals();
  });
});

describe("POST /integrations/dex_pool/{pool}/rebalance/{address}", () => {
  it("a node without eth_simulateV1: a restaking rebalance through eth_call answers what eth_simulateV1 does", async () => {
    const noSim = await rpcProxy(w.anvil.rpcUrl);
    noSim.refuse.add("eth_simulateV1");
    const devnet = h.devnet.chains.map((c) => [c.chainId, c.rpcUrl] as const);
    const via = h.appWith({ rpcUrls: new Map([...devnet, [w.s.chainId, noSim.url]]) });
    try {
      const body = { token_id: minted, width_bps: 500, restake: true };
      // the same head for both: nothing is sent between them
      const [a, b] = [await build("rebalance", body), await build("rebalance", body, { via })];
      expect(b.status, JSON.stringify(b.body)).toBe(200);
      const sim = (p: Payload) => p.simulation as { method: string; gas_used: string };
      expect([sim(a.body).method, sim(b.body).method]).toEqual(["eth_simulateV1", "eth_call"]);
      expect(BigInt(sim(b.body).gas_used)).toBeGreaterThanOrEqual(BigInt(sim(a.body).gas_used));
      const same = (p: Payload) => ({
        ...p,
        build_id: null,
        gas_limit: null,
        simulation: { ...(p.simulation as object), method: null, gas_used: null },
      });
      expect(same(b.body)).toEqual(same(a.body));
      expect(noSim.methods).toContain("eth_call");
    } finally {
      await noSim.close();
    }
  });

  it("moves a staked position's range: the old one emptied, the new one minted and staked", async () => {
    const before = await balances();
    const r = await build<
      Payload & { old_position: Pos; new_position: Pos; leftover: Pair; deposited: Pair; restaked_in: Incentive[] }
    >("rebalance", { token_id: minted, width_bps: 500, restake: true });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const b = r.body;
    expect(b.old_position.liquidity).toBe("0");
    expect(b.new_position.token_id).not.toBe(minted);
    expect(b.restaked_in).toHaveLength(1);
    await send(b);
    const old = await position(minted);
    expect(old.liquidity).toBe(0n);
    expect(await ownerOf(minted)).toBe(w.sub.safe);
    const fresh = await position(b.new_position.token_id);
    expect(fresh).toMatchObject({ tickLower: b.new_position.tick_lower, tickUpper: b.new_position.tick_upper });
    expect(fresh.liquidity.toString()).toBe(b.new_position.liquidity);
    expect(b.new_position.tick_upper - b.new_position.tick_lower).toBeLessThan(old.tickUpper - old.tickLower);
    expect(await ownerOf(b.new_position.token_id)).toBe(staker);
    const dep = await read<readonly unknown[]>(staker, STAKER, "deposits", [BigInt(b.new_position.token_id)]);
    expect([dep[0], dep[1]]).toEqual([w.sub.safe, 1]);
    // what came out and the new position did not take stays in the Safe
    const after = await balances();
    expect(after.t0 - before.t0).toBe(BigInt(b.leftover.amount0.raw));
    expect(after.t1 - before.t1).toBe(BigInt(b.leftover.amount1.raw));
    await noLingeringApprovals();
    minted = b.new_position.token_id;
  });

  it("a restake whose simulated id a mint of the Safe's own took first: reverts, stakes nothing", async () => {
    // both built on the same head: each expects the next position id
    const [re, dep] = await Promise.all([
      build<Payload & { new_position: Pos }>("rebalance", { token_id: minted, width_bps: 800, restake: true }),
      build<Payload & { position: Pos }>("deposit", { [`amount${side(usdc)}`]: "50", width_bps: 1000 }),
    ]);
    expect([re.status, dep.status], JSON.stringify([re.body, dep.body])).toEqual([200, 200]);
    expect(dep.body.position.token_id).toBe(re.body.new_position.token_id);
    await send(dep.body);
    const res = await fetch(w.anvil.rpcUrl, {
      method: "POST",
      headers: { "content-type": "application/json" },
      body: JSON.stringify({
        jsonrpc: "2.0",
        id: 1,
        method: "eth_call",
        params: [{ from: re.body.from, to: re.body.target, data: re.body.data }, "latest"],
      }),
    });
    const error = ((await res.json()) as { error?: { data?: Hex } }).error;
    expect(error?.data, "the stale restake must revert").toBeDefined();
    const decoded = decodeErrorResult({ abi: SubaccountModuleAbi, data: error!.data! });
    const taken = BigInt(dep.body.position.token_id);
    expect(decoded).toMatchObject({ errorName: "UnexpectedPosition", args: [taken + 1n, taken] });
    // the deposit's position stays the Safe's, unstaked; the old one stays staked
    expect(await ownerOf(dep.body.position.token_id)).toBe(w.sub.safe);
    expect(await ownerOf(minted)).toBe(staker);
  });
});

describe("an unstaked position: withdrawn whole, rewards owed claimed", () => {
  let full: string;

  it("a full-range mint from both amounts, then all of it withdrawn", async () => {
    const r = await build<Payload & { position: Pos }>("deposit", {
      [`amount${side(usdc)}`]: "1000",
      [`amount${side(weth)}`]: "0.5",
      full_range: true,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    await send(r.body);
    full = r.body.position.token_id;
    const before = await balances();
    const wd = await build<Payload & { received: Pair; position: Pos }>("withdraw", { token_id: full, fraction: 1 });
    expect(wd.status, JSON.stringify(wd.body)).toBe(200);
    expect(wd.body.calls).toHaveLength(2);
    await send(wd.body);
    expect((await position(full)).liquidity).toBe(0n);
    expect(await ownerOf(full)).toBe(w.sub.safe);
    const after = await balances();
    expect(after.t0 - before.t0).toBe(BigInt(wd.body.received.amount0.raw));
    expect(after.t1 - before.t1).toBe(BigInt(wd.body.received.amount1.raw));
    await noLingeringApprovals();
  });

  it("claim_rewards pays out the rewards the staker still owes the Safe", async () => {
    const owed = await read<bigint>(staker, STAKER, "rewards", [usdc, w.sub.safe]);
    expect(owed).toBeGreaterThan(0n); // the withdraw's and the rebalance's unstakes
    // counted in the account's value before the claim, as what the staker holds for it
    const valued = await summary();
    expect(valued.rewards).toEqual([
      expect.objectContaining({ type: "rewards", token: expect.objectContaining({ address: usdc.toLowerCase() }) }),
    ]);
    expect(valued.rewards[0]!.raw).toBe(String(owed));
    expect(valued.rewards[0]!.value).toBeCloseTo(Number(owed) / 1e6, 6);
    const before = await balance(usdc);
    const r = await build<Payload & { rewards_claimed: { amount: Units }[] }>("claim_rewards", { token_id: full });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.rewards_claimed.map((x) => BigInt(x.amount.raw))).toEqual([owed]);
    await send(r.body);
    expect((await balance(usdc)) - before).toBe(owed);
    expect(await read<bigint>(staker, STAKER, "rewards", [usdc, w.sub.safe])).toBe(0n);
    // a claim moves value from the staker to the Safe's tokens: it adds none (unstaked positions,
    // so nothing accrues meanwhile; the fees the claim collected were counted before it too)
    const after = await summary();
    expect(after.rewards).toEqual([]);
    // (a block passes: the other staked position's reward grows by a second's, a small part of it)
    expect(Math.abs(after.total - valued.total)).toBeLessThan(Number(owed) / 1e6 / 10);
  });

  it("claim_rewards with no fee and no reward owed: 409 nothing_to_claim, not a transaction that moves nothing", async () => {
    const r = await build<Payload & { code: string; detail: string }>("claim_rewards", { token_id: full });
    expect(r.status, JSON.stringify(r.body)).toBe(409);
    expect(r.body.code).toBe("nothing_to_claim");
    expect(r.body.detail).toMatch(/owes no fees/);
  });

  it("withdraw from an emptied position: a body fault is a 422 before the position's 409", async () => {
    type Items = { detail: { loc: string[]; msg: string; type: string }[] };
    for (const body of [{ token_id: full }, { token_id: full, fraction: 0.5, liquidity: "1" }]) {
      const r = await build<Items>("withdraw", body);
      expect(r.status, JSON.stringify(r.body)).toBe(422);
      expect(r.body.detail).toEqual([
        expect.objectContaining({
          loc: ["body", "fraction"],
          msg: "Give exactly one of fraction and liquidity",
          type: "value_error",
        }),
      ]);
    }
    const r = await build<{ code: string }>("withdraw", { token_id: full, fraction: 0.5 });
    expect(r.status, JSON.stringify(r.body)).toBe(409);
    expect(r.body.code).toBe("empty_position");
  });
});

describe("ranges by price and by ticks, widened outwards to the tick spacing", () => {
  let priced: string;

  it("a mint over a price range", async () => {
    const r = await build<Payload & { position: Pos & { price_lower: number; price_upper: number } }>("deposit", {
      [`amount${side(usdc)}`]: "500",
      price_lower: side(usdc) === "1" ? 2_800 : 1 / 3_600,
      price_upper: side(usdc) === "1" ? 3_600 : 1 / 2_800,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const p = r.body.position;
    const step = 1.0001 ** pool.tickSpacing;
    const [lo, hi] = side(usdc) === "1" ? [2_800, 3_600] : [1 / 3_600, 1 / 2_800];
    expect(p.price_lower).toBeLessThanOrEqual(lo * (1 + 1e-9));
    expect(p.price_lower * step).toBeGreaterThan(lo);
    expect(p.price_upper).toBeGreaterThanOrEqual(hi * (1 - 1e-9));
    expect(p.price_upper / step).toBeLessThan(hi);
    await send(r.body);
    priced = p.token_id;
    expect(await position(priced)).toMatchObject({ tickLower: p.tick_lower, tickUpper: p.tick_upper });
  });

  it("a rebalance of an unstaked position to ticks off the spacing: decrease, collect, mint", async () => {
    const tick = r0.tick;
    const from = proxy.methods.length;
    const r = await build<Payload & { new_position: Pos; old_position: Pos; leftover: Pair }>("rebalance", {
      token_id: priced,
      tick_lower: tick - 1_234,
      tick_upper: tick + 777,
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    const b = r.body;
    const s = pool.tickSpacing;
    expect(b.new_position.tick_lower).toBe(Math.floor((tick - 1_234) / s) * s);
    expect(b.new_position.tick_upper).toBe(Math.ceil((tick + 777) / s) * s);
    expect(b.calls.map((c) => c.description.split(" ")[0])).toEqual(["take", "collect", "mint"]);
    // the first build to read this position learns its range, then reads the fee growth over it
    expect(roundTrips(from)).toEqual(["eth_call", "eth_call", "eth_simulateV1"]);
    const before = await balances();
    await send(b);
    expect((await position(priced)).liquidity).toBe(0n);
    expect(await ownerOf(b.new_position.token_id)).toBe(w.sub.safe);
    const fresh = await position(b.new_position.token_id);
    expect(fresh).toMatchObject({ tickLower: b.new_position.tick_lower, tickUpper: b.new_position.tick_upper });
    expect(fresh.liquidity.toString()).toBe(b.new_position.liquidity);
    const after = await balances();
    expect(after.t0 - before.t0).toBe(BigInt(b.leftover.amount0.raw));
    expect(after.t1 - before.t1).toBe(BigInt(b.leftover.amount1.raw));
    await noLingeringApprovals();
    priced = b.new_position.token_id;
  });

  it("warm builds on a known position are two RPC round trips: the state at the head, one simulation", async () => {
    const ops: [string, Record<string, unknown>][] = [
      ["deposit", { token_id: priced, [`amount${side(usdc)}`]: "100" }],
      ["withdraw", { token_id: priced, fraction: 0.25 }],
      ["rebalance", { token_id: priced, width_bps: 800 }],
    ];
    for (const [op, body] of ops) {
      if (op === "rebalance") await churn(20_000n); // fees for it to reinvest
      const from = proxy.methods.length;
      const r = await build<Payload & { fees?: Pair }>(op, body);
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(roundTrips(from), op).toEqual(["eth_call", "eth_simulateV1"]);
      if (op === "rebalance") {
        expect(BigInt(r.body.fees!.amount0.raw) + BigInt(r.body.fees!.amount1.raw)).toBeGreaterThan(0n);
      }
      await send(r.body);
      if (op === "rebalance") priced = (r.body as unknown as { new_position: Pos }).new_position.token_id;
    }
    await noLingeringApprovals();
  });
});

describe("the pool's arithmetic, held to the chain", () => {
  it("mints over ranges below, around and above the price: minimums exactly below the simulated amounts", async () => {
    const spacing = pool.tickSpacing;
    const t = Math.floor(r0.tick / spacing) * spacing;
    // ranges of every kind relative to the price, amounts of both sides, a few of them tiny
    const cases: [number, number, Record<string, string>][] = [
      [t - 20 * spacing, t - 2 * spacing, { [`amount${side(usdc)}`]: "250" }],
      [t - 20 * spacing, t - 2 * spacing, { [`amount${side(weth)}`]: "0.1" }],
      [t + spacing, t + 30 * spacing, { [`amount${side(usdc)}`]: "250" }],
      [t + spacing, t + 30 * spacing, { [`amount${side(weth)}`]: "0.1" }],
      [t - spacing, t + spacing, { [`amount${side(usdc)}`]: "77.777777" }],
      [t - 700 * spacing, t + 3 * spacing, { [`amount${side(weth)}`]: "0.000123456789" }],
      [t, t + spacing, { [`amount${side(usdc)}_raw`]: "987654321", [`amount${side(weth)}_raw`]: "123456789012345" }],
      [
        t - 5 * spacing,
        t + 9 * spacing,
        { [`amount${side(usdc)}_raw`]: "1", [`amount${side(weth)}_raw`]: `${E18 / 10n}` },
      ],
    ];
    let built = 0;
    for (const [lower, upper, amounts] of cases) {
      const r = await build<Payload & { deposited: Pair }>("deposit", {
        tick_lower: lower,
        tick_upper: upper,
        max_slippage_bps: built * 7,
        ...amounts,
      });
      // a range below the price holds only token1, one above only token0: given only the other
      // token, it is refused (422, naming that amount); every other case builds
      const only = Object.keys(amounts);
      const refused =
        only.length === 1 &&
        ((upper <= r0.tick && only[0]!.startsWith("amount0")) || (lower > r0.tick && only[0]!.startsWith("amount1")));
      if (refused) {
        expect(r.status, JSON.stringify(r.body)).toBe(422);
        expect(JSON.stringify(r.body)).toContain(only[0]!);
        continue;
      }
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      built++;
    }
    expect(built).toBe(6);
  });
});

/** The builds' RPC calls through the proxy since `from`, less the staker's incentive scan (kept 30 s). */
const roundTrips = (from: number) =>
  proxy.methods.slice(from).filter((m) => m !== "eth_getLogs" && m !== "eth_blockNumber");

describe("refusals: recorded in the build audit, nothing changed on-chain", () => {
  async function refused(
    op: string,
    body: Record<string, unknown>,
    status: number,
    code: string,
    opts: { pool?: string; from?: Address | null } = {},
  ) {
    const head = await client.getBlockNumber({ cacheTime: 0 });
    const bal = await balances();
    const r = await build<Refusal & { detail: unknown }>(op, body, opts);
    expect(r.status, JSON.stringify(r.body)).toBe(status);
    const [row] = await h.q<{ action: string; status: number; outcome: string; code: string; answer: unknown }>(
      "SELECT action, status, outcome, code, answer FROM registry.build_audit WHERE principal_id = $1 ORDER BY at DESC LIMIT 1",
      [keyId],
    );
    expect(row).toMatchObject({ action: `dex_pool.${op}`, status, outcome: "refused", code });
    expect(row!.answer).toEqual(r.body);
    expect(await client.getBlockNumber({ cacheTime: 0 })).toBe(head);
    expect(await balances()).toEqual(bal);
    return r.body;
  }

  it("a pool the chain's factory did not make: 404 unknown_pool", async () => {
    // a real v3 pool of the same tokens, from another factory
    const ctx = { s: w.s, from: w.deployer };
    const factory = await deploy(ctx, uniArt.factory(), [], "second UniswapV3Factory");
    await w.s.send(
      w.deployer,
      factory,
      call(uniArt.factory().abi as Abi, "createPool", [usdc, weth, 500]),
      "createPool",
    );
    const foreign = await read<Address>(factory, uniArt.factory().abi as Abi, "getPool", [usdc, weth, 500]);
    const f = await refused("deposit", { amount0: "1", full_range: true }, 404, "unknown_pool", { pool: foreign });
    expect(f.detail).toMatch(/its factory is/);
    for (const p of [usdc, actor("dex-pool-test:nobody")]) {
      const b = await refused("deposit", { amount0: "1", full_range: true }, 404, "unknown_pool", { pool: p });
      expect(b.detail).toMatch(/not a Uniswap v3 pool/);
    }
  });

  it("positions that are not the subaccount's: 404 unknown or of another pool, 409 someone else's", async () => {
    const lp = w.p.uniswap.pools.find((p) => p.address === pool.address)!.positionId;
    const b = await refused("withdraw", { token_id: lp, fraction: 1 }, 409, "position_not_owned");
    expect(b.detail).toMatch(/not by the subaccount/);
    await refused("claim_rewards", { token_id: "999999" }, 404, "unknown_position");
    const other = w.p.uniswap.pools.find((p) => p.address !== pool.address)!.positionId;
    const o = await refused("rebalance", { token_id: other, full_range: true }, 404, "unknown_position");
    expect(o.detail).toMatch(/not a position of pool/);
  });

  it("a token the module does not allow: 422 before any simulation", async () => {
    const setTokens = (allowed: boolean) =>
      w.s.send(w.governance, w.sub.module, moduleCall("setTokens", [[weth], allowed]), "setTokens");
    await setTokens(false);
    try {
      const b = (await refused(
        "deposit",
        { [`amount${side(usdc)}`]: "100", width_bps: 500 },
        422,
        "token_not_allowed",
      )) as unknown as {
        detail: { loc: string[]; msg: string; type: string }[];
      };
      expect(b.detail[0]).toMatchObject({ loc: ["path", "pool_address"], type: "token_not_allowed" });
      expect(b.detail[0]!.msg).toMatch(/WETH/);
    } finally {
      await setTokens(true);
    }
  });

  it("a sender that is not a trader: 409 with NotTrader decoded", async () => {
    const b = await refused("deposit", { [`amount${side(usdc)}`]: "100", width_bps: 500 }, 409, "simulation_failed", {
      from: actor("dex-pool-test:stranger"),
    });
    expect(b.reasons![0]).toMatchObject({ kind: "subaccount", name: "NotTrader" });
  });

  it("more than the Safe holds: 422 on the amount before any simulation, also for a derived side", async () => {
    const detail = async (body: Record<string, unknown>) =>
      ((await refused("deposit", body, 422, "insufficient_balance")) as unknown as { detail: Item[] }).detail[0]!;
    type Item = { loc: string[]; msg: string; type: string };
    const calls = proxy.methods.length;
    const big = await detail({ [`amount${side(usdc)}`]: "10000000", width_bps: 500 });
    expect(big).toMatchObject({ loc: ["body", `amount${side(usdc)}`], type: "insufficient_balance" });
    expect(big.msg).toMatch(/the Safe holds [\d.]+ USDC/);
    expect(proxy.methods.slice(calls)).not.toContain("eth_simulateV1");
    // the whole of a uint256 on one side: the other side's need is past any balance (and a
    // uint256, so it could not even be encoded: a 500 until it was checked here)
    const max = ((1n << 256n) - 1n).toString();
    for (const full of [{ width_bps: 1000 }, { full_range: true }]) {
      const d = await detail({ [`amount${side(usdc)}_raw`]: max, ...full });
      expect(d.loc).toEqual(["body", `amount${side(usdc)}_raw`]);
      // token0 is checked first: the USDC amount's own, or the other token that amount sets
      expect(d.msg).toMatch(
        side(usdc) === "0"
          ? /^Above the Safe's balance: the deposit takes \d+(\.\d+)? USDC at/
          : /^Above the Safe's balance: for the amount1_raw given the deposit takes token0: \d+(\.\d+)? \S+ at/,
      );
    }
  });

  it("minimums no price can meet: 409 with the reasons decoded", async () => {
    const slip = await refused(
      "withdraw",
      { token_id: minted, fraction: 0.5, [`amount${side(usdc)}_min_raw`]: (10n ** 15n).toString() },
      409,
      "simulation_failed",
    );
    expect(slip.reasons![0]).toMatchObject({ kind: "uniswap", name: "Price slippage check" });
  });

  it("one token for a range that takes only the other: 422 on that amount", async () => {
    // above the price a position holds token0 only
    const b = (await refused(
      "deposit",
      { amount1: "1", tick_lower: r0.tick + 1_000, tick_upper: r0.tick + 2_000 },
      422,
      "value_error",
    )) as unknown as { detail: { loc: string[]; msg: string }[] };
    expect(b.detail[0]!.loc).toEqual(["body", "amount1"]);
    expect(b.detail[0]!.msg).toMatch(/only token0/);
  });

  it("a rebalance into a range the position's tokens cannot fund: 409 range_unfundable naming them", async () => {
    // above the price a position holds token0 only; a range around the price also takes token1
    const m = await build<Payload & { position: Pos }>("deposit", {
      amount0: "1",
      tick_lower: r0.tick + 1_000,
      tick_upper: r0.tick + 2_000,
    });
    expect(m.status, JSON.stringify(m.body)).toBe(200);
    await send(m.body);
    const [t0, t1] = [pool.token0, pool.token1].map((a) => (a === usdc ? "USDC" : "WETH"));
    const b = await refused(
      "rebalance",
      { token_id: m.body.position.token_id, width_bps: 500 },
      409,
      "range_unfundable",
    );
    expect(b.detail).toMatch(new RegExp(`takes both tokens .*yields [\\d.]+ ${t0} and 0 ${t1}: too little ${t1} `));
  });

  it("inconsistent bodies: 422 naming the field (recorded), unknown fields 422 before any build", async () => {
    const two = (await refused(
      "deposit",
      { amount0: "1", width_bps: 100, full_range: true },
      422,
      "value_error",
    )) as unknown as {
      detail: { loc: string[] }[];
    };
    expect(two.detail[0]!.loc).toEqual(["body", "full_range"]);
    const range = async (prices: [number, number]) =>
      (
        (await refused(
          "deposit",
          { amount0: "1", price_lower: prices[0], price_upper: prices[1] },
          422,
          "value_error",
        )) as unknown as { detail: { loc: string[]; msg: string }[] }
      ).detail[0]!;
    expect(await range([2, 1])).toMatchObject({ loc: ["body", "price_upper"], msg: expect.stringMatching(/below/) });
    // a price past the tick scale's ends, with the other inside it or past it too: refused, not
    // clamped to the scale's end
    expect(await range([1e300, 1e301])).toMatchObject({
      loc: ["body", "price_lower"],
      msg: expect.stringMatching(/^Above the highest/),
    });
    expect(await range([1e-300, 1e-299])).toMatchObject({
      loc: ["body", "price_lower"],
      msg: expect.stringMatching(/^Below the lowest/),
    });
    expect(await range([1e-300, 1])).toMatchObject({
      loc: ["body", "price_lower"],
      msg: expect.stringMatching(/^Below the lowest/),
    });
    expect(await range([1e-9, 1e300])).toMatchObject({
      loc: ["body", "price_upper"],
      msg: expect.stringMatching(/^Above the highest/),
    });
    // a price as a string: a strict body's number, pydantic's float type
    const text = await build<{ detail: { loc: string[]; type: string }[] }>("deposit", {
      amount0: "1",
      price_lower: "0.0003",
      price_upper: 0.0004,
    });
    expect(text.status).toBe(422);
    expect(text.body.detail[0]).toMatchObject({ loc: ["body", "price_lower"], type: "float_type" });
    // integers as strings: pydantic's strict int type, on each field
    const ints = await build<{ detail: { loc: string[]; msg: string; type: string }[] }>("deposit", {
      amount0: "1",
      tick_lower: "-600",
      tick_upper: 600,
      max_slippage_bps: "50",
    });
    expect(ints.status).toBe(422);
    expect(ints.body.detail.map((d) => [d.loc[1], d.type, d.msg])).toEqual([
      ["max_slippage_bps", "int_type", "Input should be a valid integer"],
      ["tick_lower", "int_type", "Input should be a valid integer"],
    ]);
    // past 2^53: the field's own bound; a literal's other value: pydantic's literal_error
    for (const [body, item] of [
      [{ width_bps: 1e30 }, ["width_bps", "less_than_equal", "Input should be less than or equal to 9999"]],
      [{ full_range: false }, ["full_range", "literal_error", "Input should be True"]],
    ] as const) {
      const r = await build<{ detail: { loc: string[]; msg: string; type: string }[] }>("deposit", {
        amount0: "1",
        ...body,
      });
      expect(r.status).toBe(422);
      expect(r.body.detail.map((d) => [d.loc[1], d.type, d.msg])).toEqual([item]);
    }
    // ticks past the scale: the schema's bounds, before any read
    const ticks = await build<{ detail: { loc: string[]; type: string }[] }>("deposit", {
      amount0: "1",
      tick_lower: -900_000,
      tick_upper: 900_000,
    });
    expect(ticks.status).toBe(422);
    expect(ticks.body.detail.map((d) => [d.loc[1], d.type])).toEqual([
      ["tick_lower", "greater_than_equal"],
      ["tick_upper", "less_than_equal"],
    ]);
    // within the scale but past the spacing's last usable tick on both sides: nothing between
    const s = pool.tickSpacing;
    if (s > 1) {
      const top = Math.floor(887_272 / s) * s;
      const far = await build<{ detail: { loc: string[]; msg: string }[] }>("deposit", {
        amount0: "1",
        tick_lower: top + 1,
        tick_upper: 887_272,
      });
      expect(far.status).toBe(422);
      expect(far.body.detail[0]!.msg).toBe("The range is outside the ticks the pool allows");
    }
    const extra = await build<{ detail: { loc: string[]; type: string }[] }>("deposit", {
      amount0: "1",
      full_range: true,
      slippage: 1,
    });
    expect(extra.status).toBe(422);
    expect(extra.body.detail[0]).toMatchObject({ loc: ["body", "slippage"], type: "extra_forbidden" });
  });

  it("integers a uint cannot hold: 422 on the field, before any chain call", async () => {
    const over = (bits: number) => (1n << BigInt(bits)).toString();
    const detail = async (op: string, body: Record<string, unknown>, code: string) =>
      ((await refused(op, body, 422, code)) as unknown as { detail: { loc: string[]; msg: string }[] }).detail[0]!;
    const calls = proxy.methods.length;
    // token ids and minimums are uint256, liquidity uint128 (decreaseLiquidity's argument)
    expect(await detail("withdraw", { token_id: over(256), fraction: 0.5 }, "validation_error")).toMatchObject({
      loc: ["body", "token_id"],
      msg: "must be at most 2^256 - 1 (uint256)",
    });
    expect(await detail("claim_rewards", { token_id: over(256) }, "validation_error")).toMatchObject({
      loc: ["body", "token_id"],
    });
    expect(await detail("withdraw", { token_id: minted, liquidity: over(128) }, "validation_error")).toMatchObject({
      loc: ["body", "liquidity"],
      msg: "must be at most 2^128 - 1 (uint128)",
    });
    const min = { token_id: minted, fraction: 0.5, amount0_min_raw: over(256) };
    expect(await detail("withdraw", min, "validation_error")).toMatchObject({ loc: ["body", "amount0_min_raw"] });
    expect(roundTrips(calls)).toEqual([]); // the staker scan may refresh in the background
    // in whole units, known too large once the token's decimals are
    const whole = { [`amount${side(usdc)}`]: `1${"0".repeat(72)}`, width_bps: 500 };
    expect(await detail("deposit", whole, "less_than_equal")).toMatchObject({
      loc: ["body", `amount${side(usdc)}`],
      msg: "Too large: more than 2^256 - 1 raw units",
    });
  });

  it("keys: none 401, one without transactions:build 403", async () => {
    expect((await build("deposit", { amount0: "1", full_range: true }, { key: null })).status).toBe(401);
    const r = await build<Refusal>("deposit", { amount0: "1", full_range: true }, { key: plainKey });
    expect(r.status).toBe(403);
    expect(r.body.code).toBe("insufficient_scope");
  });
});

describe("the staker's incentive keys from a provider that limits log ranges", () => {
  it("a refused eth_getLogs range is read in halves, with the same logs as one read", async () => {
    const limited = await limitedRpc(w.anvil.rpcUrl, 8n, -32005); // blocks a request may span
    try {
      const direct = createPublicClient({ transport: http(w.anvil.rpcUrl) });
      const client = createPublicClient({ transport: http(limited.url, { retryCount: 0 }) });
      const to = await direct.getBlockNumber();
      const all = await createdLogs(direct, staker, 0n, to, 1n);
      expect(all.length).toBeGreaterThan(0);
      const split = await createdLogs(client, staker, 0n, to, 1n);
      expect(limited.refusals).toBeGreaterThan(0);
      expect(split.map((l) => l.transactionHash)).toEqual(all.map((l) => l.transactionHash));
      // below the smallest range it splits to, the provider's refusal is the caller's
      await expect(createdLogs(client, staker, 0n, to, to)).rejects.toThrow(/range too wide/);
    } finally {
      await limited.close();
    }
  });
});

describe("an incentive created again before its start (the staker adds to its reward)", () => {
  it("is one incentive: its reward counted once, unstaked, claimed and staked again once", async () => {
    // a second incentive on the pool, starting in a minute, created twice: two IncentiveCreated
    // logs of one key
    const t = (await client.getBlock()).timestamp;
    const key2 = {
      rewardToken: usdc,
      pool: pool.address,
      startTime: t + 60n,
      endTime: t + 60n + 30n * 86_400n,
      refundee: w.deployer,
    };
    const half = 5_000n * E6;
    const create = parseAbi([
      "struct IncentiveKey { address rewardToken; address pool; uint256 startTime; uint256 endTime; address refundee; }",
      "function createIncentive(IncentiveKey key, uint256 reward)",
    ]);
    await mint(usdc, w.deployer, 2n * half);
    await w.s.send(w.deployer, usdc, call(ERC20_ABI, "approve", [staker, 2n * half]), "approve");
    for (const label of ["incentive", "top-up"])
      await w.s.send(w.deployer, staker, call(create, "createIncentive", [key2, half]), label);
    const id2 = incentiveId(key2);
    const logs = await createdLogs(client, staker, 0n, await client.getBlockNumber({ cacheTime: 0 }));
    expect(logs.filter((l) => l.args.startTime === key2.startTime)).toHaveLength(2);
    await advance(120);
    // a new position of the Safe, staked in that incentive alone
    const dep = await build<Payload & { position: Pos }>("deposit", {
      [`amount${side(usdc)}`]: "500",
      width_bps: 1000,
    });
    expect(dep.status, JSON.stringify(dep.body)).toBe(200);
    await send(dep.body);
    const id = dep.body.position.token_id;
    await stakeIn(id, key2);
    await churn(50_000n);
    await advance(3_600);
    // the summary: one reward of the incentive, what the staker computes for it
    const accrued = await read<readonly bigint[]>(staker, STAKER, "getRewardInfo", [key2, BigInt(id)]);
    expect(accrued[0]).toBeGreaterThan(0n);
    const row = (await summary()).position(id)!;
    expect(row.incentive_rewards).toEqual([expect.objectContaining({ incentive: id2, raw: String(accrued[0]) })]);
    // claim_rewards: unstaked from it once, claimed, staked in it again once
    const r = await build<
      Payload & { incentive_rewards: { incentive: Incentive; reward: Units }[]; restaked_in: Incentive[] }
    >("claim_rewards", { token_id: id });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body.incentive_rewards.map((x) => x.incentive.id)).toEqual([id2]);
    expect(r.body.restaked_in.map((x) => x.id)).toEqual([id2]);
    await send(r.body);
    expect(await ownerOf(id)).toBe(staker);
    expect((await read<readonly bigint[]>(staker, STAKER, "stakes", [BigInt(id), id2]))[1]).toBeGreaterThan(0n);
    expect((await read<readonly unknown[]>(staker, STAKER, "deposits", [BigInt(id)]))[1]).toBe(1);
  });
});
