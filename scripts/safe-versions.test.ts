import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { createServer as createHttpServer } from "node:http";
import { createServer } from "node:net";
import { tmpdir } from "node:os";
import { join } from "node:path";
import {
  AbiDecodingZeroDataError,
  ContractFunctionExecutionError,
  ContractFunctionRevertedError,
  ContractFunctionZeroDataError,
  HttpRequestError,
  parseAbi,
  RpcRequestError,
} from "viem";
import { afterAll, describe, expect, it } from "vitest";
import { indexerPlan } from "../config/indexer.js";
import { checkSafeVersions, transportFailure } from "./lib/safe-versions.js";

const dir = mkdtempSync(join(tmpdir(), "safe-versions-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

/** a port nothing listens on: taken, then released */
async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((r) => server.listen(0, "127.0.0.1", r));
  const port = (server.address() as { port: number }).port;
  await new Promise((r) => server.close(r));
  return port;
}

function plan(subaccounts: string[], rpcUrl: string) {
  const file = join(dir, `vaults-${subaccounts.length}.json`);
  const vault = {
    chainId: 1,
    address: "0xbaf6f71241be6fa7bd2c92c3ae3a94d7c92fb3c9",
    family: "lendingPool",
    kind: "stablecoin",
    name: "V",
    symbol: "V",
    startBlock: 6,
    asset: { address: "0x573d31ebec18b3642ccac086e659e77a12b841c6", symbol: "USDC", decimals: 6 },
    subaccounts,
  };
  writeFileSync(file, JSON.stringify({ version: 1, vaults: [vault] }));
  return indexerPlan({ VAULT_REGISTRY: file, PONDER_RPC_URL_1: rpcUrl });
}

describe("the subaccount Safes' versions checked against the chains", () => {
  it("names a chain it cannot ask, apart from the registry's problems", async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    const check = await checkSafeVersions(plan(["0x00000000000000000000000000000000000000a1"], url));
    expect(check.problems).toEqual([]);
    expect(check.unreachable).toHaveLength(1);
    expect(check.unreachable[0]).toMatch(new RegExp(`^chain 1 \\(${url}\\): `));
  });

  it("asks a chain's next RPC URL when the first does not answer", async () => {
    // a node with no code anywhere: every subaccount is a Safe not yet deployed there
    const node = createHttpServer((req, res) => {
      let body = "";
      req.on("data", (d) => {
        body += d;
      });
      req.on("end", () => {
        const parsed = JSON.parse(body) as { id: number } | { id: number }[];
        const answer = (r: { id: number }) => ({ jsonrpc: "2.0", id: r.id, result: "0x" });
        res.setHeader("content-type", "application/json");
        res.end(JSON.stringify(Array.isArray(parsed) ? parsed.map(answer) : answer(parsed)));
      });
    });
    await new Promise<void>((r) => node.listen(0, "127.0.0.1", r));
    try {
      const alive = `http://127.0.0.1:${(node.address() as { port: number }).port}`;
      const dead = `http://127.0.0.1:${await closedPort()}`;
      const check = await checkSafeVersions(plan(["0x00000000000000000000000000000000000000a1"], `${dead},${alive}`));
      expect(check).toEqual({ problems: [], unreachable: [] });
    } finally {
      await new Promise((r) => node.close(r));
    }
  });

  it("asks nothing when there are no subaccounts", async () => {
    const url = `http://127.0.0.1:${await closedPort()}`;
    expect(await checkSafeVersions(plan([], url))).toEqual({ problems: [], unreachable: [] });
  });
});

describe("a failed VERSION() call", () => {
  const abi = parseAbi(["function VERSION() view returns (string)"]);
  const call = (cause: Error) =>
    new ContractFunctionExecutionError(cause as never, { abi, functionName: "VERSION", args: [] });

  it("answered by the contract (a revert, no data, not a string) is not the transport's", () => {
    const rpc = new RpcRequestError({ body: {}, error: { code: 3, message: "execution reverted" }, url: "http://x" });
    const revert = new ContractFunctionRevertedError({ abi, functionName: "VERSION", message: "execution reverted" });
    Object.assign(revert, { cause: rpc }); // viem's revert carries the node's error among its causes
    expect(transportFailure(call(revert))).toBe(false);
    expect(transportFailure(call(new ContractFunctionZeroDataError({ functionName: "VERSION" })))).toBe(false);
    expect(transportFailure(call(new AbiDecodingZeroDataError()))).toBe(false);
  });

  it("on the way (no answer, or the node's error) is the transport's", () => {
    expect(transportFailure(call(new HttpRequestError({ url: "http://x", details: "ECONNREFUSED" })))).toBe(true);
    const node = new RpcRequestError({
      body: {},
      error: { code: -32000, message: "header not found" },
      url: "http://x",
    });
    expect(transportFailure(call(node))).toBe(true);
    expect(transportFailure(new Error("socket hang up"))).toBe(true);
  });
});
