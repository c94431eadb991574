/**
 * GET /api/v1/revert_reason on real failures: on an anvil of its own with the protocol world, a
 * subaccount's transactions are mined failing (explicit gas) for each kind of reason (a module
 * refusal, Uniswap's slippage, Aave's '36', a Safe GSxxx), and the route names each one from the
 * call trace, or from a replay when the node lacks `debug_*`.
 */
import { readFileSync } from "node:fs";
import type { Address, Hex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { aave as aaveArt, safe as safeArt, uniswap as uniArt } from "../../contracts/devnet/protocols/artifacts.js";
import type { ProtocolsManifest, Subaccount } from "../../contracts/devnet/protocols/index.js";
import { ERC20_ABI } from "../../contracts/devnet/protocols/tx.js";
import type { ChainSession } from "../../contracts/devnet/session.js";
import type { AnvilInstance } from "../../scripts/lib/anvil.js";
import { type ApiHarness, setupApi } from "../api-harness.js";
import { PORT_OFFSET } from "../helpers.js";
import { actor, buildWorld, call, mineRaw, moduleCall, type World } from "../protocol-world.js";

const CHAIN = 8453;
const STRANGER = actor("revert-test:stranger");
const E18 = 10n ** 18n;
const E6 = 10n ** 6n;

let h: ApiHarness;
let w: World;
let anvil: AnvilInstance;
let s: ChainSession;
let p: ProtocolsManifest;
let sub: Subaccount;
let usdc: Address;
let weth: Address;
const failed: Record<string, Hex> = {};
let succeeded: Hex;

const mine = (from: Address, to: Address, data: Hex) => mineRaw(w, from, to, data);

beforeAll(async () => {
  h = await setupApi();
  w = await buildWorld(`revert-test-${PORT_OFFSET}`, 18_730 + PORT_OFFSET, CHAIN);
  ({ anvil, s, p, sub } = w);
  const [DEPLOYER, TRADER] = [w.deployer, w.trader];
  [usdc, weth] = [w.token("USDC"), w.token("WETH")];
  await s.send(DEPLOYER, usdc, call(ERC20_ABI, "mint", [sub.safe, 10_000n * E6]), "mint");
  await s.send(DEPLOYER, weth, call(ERC20_ABI, "mint", [sub.safe, 10n * E18]), "mint");

  const router = p.uniswap.swapRouter;
  const swap = (min: bigint) =>
    call(uniArt.swapRouter().abi, "exactInputSingle", [
      {
        tokenIn: usdc,
        tokenOut: weth,
        fee: 500,
        recipient: sub.safe,
        deadline: BigInt(s.clock + 100_000),
        amountIn: 1_000n * E6,
        amountOutMinimum: min,
        sqrtPriceLimitX96: 0n,
      },
    ]);
  const swapWithApproval = (min: bigint) =>
    moduleCall("executeWithApprovals", [
      [{ token: usdc, spender: router, amount: 1_000n * E6 }],
      router,
      0n,
      swap(min),
    ]);
  failed.notTrader = await mine(STRANGER, sub.module, swapWithApproval(0n));
  failed.replay = await mine(STRANGER, sub.module, swapWithApproval(0n));
  failed.shared = await mine(STRANGER, sub.module, swapWithApproval(0n));
  failed.slippage = await mine(TRADER, sub.module, swapWithApproval(1_000n * E18));
  const pool = p.aave.pool;
  const poolAbi = aaveArt.pool().abi;
  await s.send(
    TRADER,
    sub.module,
    moduleCall("executeWithApprovals", [
      [{ token: weth, spender: pool, amount: 1n * E18 }],
      pool,
      0n,
      call(poolAbi, "supply", [weth, 1n * E18, sub.safe, 0]),
    ]),
    "supply",
  );
  failed.aave36 = await mine(
    TRADER,
    sub.module,
    moduleCall("execute", [pool, 0n, call(poolAbi, "borrow", [usdc, 100_000n * E6, 2n, 0, sub.safe])]),
  );
  // a Safe transaction signed by no owner: GS026 (invalid owner)
  const safeAbi = safeArt.singletonL2().abi;
  const zero = "0x0000000000000000000000000000000000000000";
  const sig = `0x${STRANGER.slice(2).padStart(64, "0")}${"0".repeat(64)}01` as Hex;
  failed.safe = await mine(
    STRANGER,
    sub.safe,
    call(safeAbi, "execTransaction", [usdc, 0n, "0x", 0, 0n, 0n, 0n, zero, zero, sig]),
  );
  succeeded = (await s.send(DEPLOYER, usdc, call(ERC20_ABI, "mint", [DEPLOYER, 1n]), "mint")).transactionHash;
  await s.syncClock();
}, 600_000);

afterAll(async () => {
  await anvil?.stop();
  await h?.close();
});

type Reason = { kind: string; name: string; args: string[]; message: string; contract: string | null };
type Body = {
  status: string;
  source: string;
  error_messages: string[];
  revert_reasons: Reason[];
  universal_subaccount_errors: Reason[];
  detail?: string;
};

async function ask(hash: string, chain: number = CHAIN, rpcUrl: string | null = anvil.rpcUrl) {
  const app = h.appWith({ rpcUrls: new Map(rpcUrl ? [[CHAIN, rpcUrl]] : []) });
  const res = await app.request(`/api/v1/revert_reason?tx_hash=${hash}&chain=${chain}`);
  return { status: res.status, body: (await res.json()) as Body };
}

describe("GET /api/v1/revert_reason", () => {
  it("names the reason of every deliberately failed transaction of the simulated devnet", async () => {
    const manifest = JSON.parse(readFileSync(h.devnet.manifestFile, "utf8")) as {
      chains: {
        chainId: number;
        world: { failures: { txHash: string; display: string; reason: { type: string } }[] };
      }[];
    };
    let checked = 0;
    for (const c of manifest.chains)
      for (const f of c.world.failures) {
        const res = await h.app.request(`/api/v1/revert_reason?tx_hash=${f.txHash}&chain=${c.chainId}`);
        const body = (await res.json()) as Body;
        expect(res.status, f.txHash).toBe(200);
        expect(body.status).toBe("reverted");
        const first = body.revert_reasons[0]!;
        // the manifest's one-line reason: `NotTrader(0x…)`, `36`, `GS025`, `Too little received`
        const shown = first.kind === "subaccount" ? first.message : (first.args[0] ?? first.name);
        expect(shown?.toLowerCase(), `${f.txHash}: ${first.message}`).toBe(f.display.toLowerCase());
        if (f.reason.type === "custom") expect(body.universal_subaccount_errors).toHaveLength(1);
        checked++;
      }
    expect(checked).toBeGreaterThanOrEqual(10);
  });

  it("a module refusal is a universal subaccount error, named with its argument", async () => {
    const r = await ask(failed.notTrader!);
    expect(r.status).toBe(200);
    expect(r.body).toMatchObject({ status: "reverted", source: "trace" });
    expect(r.body.universal_subaccount_errors).toEqual([
      expect.objectContaining({ kind: "subaccount", name: "NotTrader", args: [STRANGER] }),
    ]);
    expect(r.body.error_messages[0]).toBe(`NotTrader(${STRANGER})`);
  });

  it("Uniswap's slippage and Aave's '36' come up through the module with their meaning", async () => {
    const slip = await ask(failed.slippage!);
    expect(slip.body.revert_reasons[0]).toMatchObject({ kind: "uniswap", name: "Too little received" });
    expect(slip.body.revert_reasons[0]!.contract).toBe(p.uniswap.swapRouter.toLowerCase());
    expect(slip.body.universal_subaccount_errors).toEqual([]);
    const aave = await ask(failed.aave36!);
    expect(aave.body.revert_reasons[0]).toMatchObject({
      kind: "aave",
      name: "COLLATERAL_CANNOT_COVER_NEW_BORROW",
      args: ["36"],
    });
    expect(aave.body.error_messages[0]).toBe("Aave v3 error '36': COLLATERAL_CANNOT_COVER_NEW_BORROW");
  });

  it("a Safe's GSxxx code is named", async () => {
    const r = await ask(failed.safe!);
    expect(r.body.revert_reasons[0]).toMatchObject({ kind: "safe", name: "GS026" });
    expect(r.body.error_messages[0]).toBe("Safe GS026: Invalid owner provided");
  });

  it("without debug_* the reason comes from a replay at the parent block, marked approximate", async () => {
    // a proxy that refuses debug_* as a public RPC does
    const { createServer } = await import("node:http");
    const server = createServer(async (req, res) => {
      let body = "";
      for await (const chunk of req) body += chunk;
      const msg = JSON.parse(body) as { id: number; method: string };
      res.setHeader("content-type", "application/json");
      if (msg.method.startsWith("debug_")) {
        res.end(JSON.stringify({ jsonrpc: "2.0", id: msg.id, error: { code: -32601, message: "method not found" } }));
        return;
      }
      const up = await fetch(anvil.rpcUrl, { method: "POST", body, headers: { "content-type": "application/json" } });
      res.end(await up.text());
    });
    await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
    const port = (server.address() as { port: number }).port;
    try {
      const r = await ask(failed.replay!, CHAIN, `http://127.0.0.1:${port}`);
      expect(r.body).toMatchObject({ status: "reverted", source: "replay" });
      expect(r.body.universal_subaccount_errors[0]).toMatchObject({ name: "NotTrader", args: [STRANGER] });
    } finally {
      server.close();
    }
  });

  it("requests for one transaction at once share one trace, whatever the hash's letter case", async () => {
    // a pass-through counting the node's traces
    const { createServer } = await import("node:http");
    let traces = 0;
    const server = createServer(async (req, res) => {
      let body = "";
      for await (const chunk of req) body += chunk;
      if ((JSON.parse(body) as { method: string }).method === "debug_traceTransaction") traces++;
      const up = await fetch(anvil.rpcUrl, { method: "POST", body, headers: { "content-type": "application/json" } });
      res.setHeader("content-type", "application/json");
      res.end(await up.text());
    });
    await new Promise<void>((ok) => server.listen(0, "127.0.0.1", ok));
    const url = `http://127.0.0.1:${(server.address() as { port: number }).port}`;
    try {
      const hash = failed.shared!;
      const cases = [
        hash,
        `0x${hash.slice(2).toUpperCase()}`,
        hash,
        `0x${hash.slice(2, 40).toUpperCase()}${hash.slice(40)}`,
      ];
      const answers = await Promise.all(cases.map((x) => ask(x, CHAIN, url)));
      expect(answers.map((a) => a.status)).toEqual([200, 200, 200, 200]);
      for (const a of answers) expect(a.body.universal_subaccount_errors[0]).toMatchObject({ name: "NotTrader" });
      expect(traces).toBe(1);
    } finally {
      server.close();
    }
  });

  it("a successful transaction has no reasons; unknown 404, no or a dead RPC 503, bad input 422", async () => {
    const ok = await ask(succeeded);
    expect(ok.body).toMatchObject({ status: "success", error_messages: [], revert_reasons: [] });
    expect((await ask(`0x${"12".repeat(32)}`)).status).toBe(404);
    const noRpc = await ask(failed.notTrader!, CHAIN, null);
    // (answered from the cache of the first ask: a mined transaction's reasons do not change)
    expect(noRpc.status).toBe(200);
    expect((await ask(`0x${"34".repeat(32)}`, CHAIN, null)).status).toBe(503);
    // a node that does not answer is an outage (503), not a transaction it does not have (404)
    const dead = await ask(`0x${"56".repeat(32)}`, CHAIN, "http://127.0.0.1:1");
    expect(dead.status).toBe(503);
    expect(dead.body.detail).toMatch(/did not answer/);
    expect((await ask("0x1234")).status).toBe(422);
    expect((await ask(failed.notTrader!, 999_999)).status).toBe(422);
    // a non-EVM chain of the catalogue has no node to ask: the caller's error, not an outage
    for (const chain of [0, -1]) {
      const r = await ask(`0x${"34".repeat(32)}`, chain);
      expect(r.status).toBe(422);
      expect(r.body.detail).toMatchObject([{ loc: ["query", "chain"] }]);
      expect(JSON.stringify(r.body.detail)).toContain("EVM chain");
    }
  });
});
