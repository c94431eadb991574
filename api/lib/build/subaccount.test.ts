import {
  createPublicClient,
  custom,
  decodeFunctionData,
  encodeFunctionResult,
  getAddress,
  type Hex,
  parseAbi,
  toFunctionSelector,
} from "viem";
import { describe, expect, it } from "vitest";
import { lookupModule } from "./subaccount.js";

const SAFE_ABI = parseAbi([
  "function getModulesPaginated(address start, uint256 pageSize) view returns (address[] array, address next)",
]);
const MODULE_ABI = parseAbi(["function safe() view returns (address)"]);
const SAFE = "0x00000000000000000000000000000000000000aa";
const OTHER = "0x00000000000000000000000000000000000000b1";
const MODULE = "0x00000000000000000000000000000000000000b2";
const SAFE_SELECTOR = toFunctionSelector("safe()");

/** A node of a Safe with modules OTHER (no `safe()`: it reverts) and MODULE; `safeCall` answers MODULE's `safe()`. */
function node(safeCall: () => Hex) {
  return createPublicClient({
    transport: custom(
      {
        async request({ method, params }: { method: string; params: unknown[] }) {
          if (method !== "eth_call") throw new Error(`unexpected ${method}`);
          const { data } = params[0] as { to: string; data: Hex };
          const to = (params[0] as { to: string }).to.toLowerCase();
          if (to === SAFE) {
            decodeFunctionData({ abi: SAFE_ABI, data });
            return encodeFunctionResult({
              abi: SAFE_ABI,
              functionName: "getModulesPaginated",
              result: [[OTHER, MODULE], "0x0000000000000000000000000000000000000001"],
            });
          }
          expect(data).toBe(SAFE_SELECTOR);
          if (to === OTHER) throw Object.assign(new Error("execution reverted"), { code: 3, data: "0x" });
          return safeCall();
        },
      },
      { retryCount: 0 },
    ),
  });
}

describe("lookupModule", () => {
  it("skips a module without safe() (it reverts) and finds the Safe's own", async () => {
    const client = node(() => encodeFunctionResult({ abi: MODULE_ABI, functionName: "safe", result: SAFE }));
    expect(await lookupModule(client, SAFE)).toEqual({ module: getAddress(MODULE) });
  });

  it("a module of another Safe is not the Safe's", async () => {
    const client = node(() => encodeFunctionResult({ abi: MODULE_ABI, functionName: "safe", result: OTHER }));
    expect(await lookupModule(client, SAFE)).toEqual({ module: null });
  });

  it("throws where the node fails to answer, rather than find no module", async () => {
    const client = node(() => {
      throw Object.assign(new Error("rate limited"), { code: -32005 });
    });
    await expect(lookupModule(client, SAFE)).rejects.toThrow(/rate limited|limit/i);
  });
});

/** A node of a Safe with `count` modules, MODULE last (the Safe's own unless `own` is false). */
function manyModules(count: number, { code = true, own = true } = {}) {
  const all = Array.from(
    { length: count },
    (_, i): Hex => (i === count - 1 ? MODULE : `0x${(0xc00 + i).toString(16).padStart(40, "0")}`),
  );
  const pages: string[] = [];
  return {
    pages,
    client: createPublicClient({
      transport: custom(
        {
          async request({ method, params }: { method: string; params: unknown[] }) {
            if (method !== "eth_call") throw new Error(`unexpected ${method}`);
            const { to, data } = params[0] as { to: string; data: Hex };
            if (to.toLowerCase() === SAFE) {
              if (!code) return "0x"; // no contract at the address
              const { args } = decodeFunctionData({ abi: SAFE_ABI, data });
              const [start, size] = args as [string, bigint];
              pages.push(start.toLowerCase());
              const from = start.toLowerCase() === SENTINEL_ADDRESS ? 0 : all.indexOf(start.toLowerCase() as Hex);
              const page = all.slice(from, from + Number(size));
              const next = all[from + Number(size)] ?? SENTINEL_ADDRESS;
              return encodeFunctionResult({ abi: SAFE_ABI, functionName: "getModulesPaginated", result: [page, next] });
            }
            const owner = own && to.toLowerCase() === MODULE ? SAFE : OTHER;
            return encodeFunctionResult({ abi: MODULE_ABI, functionName: "safe", result: owner });
          },
        },
        { retryCount: 0 },
      ),
    }),
  };
}
const SENTINEL_ADDRESS = "0x0000000000000000000000000000000000000001";

describe("lookupModule's pages and a missing Safe", () => {
  it("finds a module past the first page of ten", async () => {
    const { client, pages } = manyModules(23);
    expect(await lookupModule(client, SAFE)).toEqual({ module: getAddress(MODULE) });
    expect(pages.length).toBe(3);
    expect(pages[0]).toBe(SENTINEL_ADDRESS);
  });

  it("reads every page, then finds none, when no module is the Safe's", async () => {
    const { client, pages } = manyModules(12, { own: false });
    expect(await lookupModule(client, SAFE)).toEqual({ module: null });
    expect(pages.length).toBe(2);
  });

  it("an address with no contract on the chain is no Safe, not a node failure", async () => {
    const { client } = manyModules(1, { code: false });
    expect(await lookupModule(client, SAFE)).toEqual({ module: null, noSafe: true });
  });
});
