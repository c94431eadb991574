import { toFunctionSelector } from "viem";
import { describe, expect, it } from "vitest";
import { type EventRow, groupPermissions, type ModuleRow } from "./governance.permissions.js";

const POOL = "0x00000000000000000000000000000000000000a1";
const ROUTER = "0x00000000000000000000000000000000000000b2";
const ODD = "0x00000000000000000000000000000000000000c3";
const USDC = "0x00000000000000000000000000000000000000d4";
const WETH = "0x00000000000000000000000000000000000000e5";
const [S1, S2] = ["0x0000000000000000000000000000000000000101", "0x0000000000000000000000000000000000000202"];
const SUPPLY = toFunctionSelector("supply(address,uint256,address,uint16)");
const BORROW = toFunctionSelector("borrow(address,uint256,uint256,uint16,address)");
const SWAP = toFunctionSelector("exactInputSingle((address,address,uint24,address,uint256,uint256,uint256,uint160))");

const call = (safe: string, target: string, selector: string, allowed: boolean, chain_id = 1): EventRow => ({
  chain_id,
  safe,
  event: "CallAllowanceSet",
  args: { target, selector, allowed },
});
const token = (safe: string, t: string, allowed: boolean): EventRow => ({
  chain_id: 1,
  safe,
  event: "TokenAllowanceSet",
  args: { token: t, allowed },
});
const integration = (_: number, target: string) =>
  target === POOL ? "lending_market" : target === ROUTER ? "swap" : ("other" as const);
const symbol = (_: number, t: string) => (t === USDC ? "USDC" : t === WETH ? "WETH" : t);

describe("governance permissions from the modules' events", () => {
  const modules: ModuleRow[] = [
    { chain_id: 1, safe: S1, roles: { OWNER: ["0x1"], TRADER: ["0x2"], RELAYER: [] } },
    { chain_id: 1, safe: S2, roles: { OWNER: ["0x1"], RELAYER: ["0x3"] } },
  ];

  it("the last word on each call and token stands; groups union their subaccounts", () => {
    const events = [
      token(S1, USDC, true),
      token(S1, WETH, true),
      token(S1, WETH, false), // revoked
      call(S1, POOL, SUPPLY, true),
      call(S1, POOL, BORROW, true),
      call(S1, POOL, BORROW, false), // revoked
      call(S1, ROUTER, SWAP, false),
      call(S1, ROUTER, SWAP, true), // allowed again
      token(S2, WETH, true),
      call(S2, POOL, BORROW, true),
      call(S2, ODD, "0xdeadbeef", true),
    ];
    const rows = groupPermissions(modules, events, integration, symbol);
    expect(rows).toEqual([
      {
        integration: "lending_market",
        chain_id: 1,
        protocol: "Aave v3",
        tokens: ["USDC", "WETH"],
        roles: ["OWNER", "RELAYER", "TRADER"],
        spenders: [POOL],
        contracts: [{ address: POOL, functions: ["borrow", "supply"] }],
        subaccounts: [S1, S2],
      },
      {
        integration: "other",
        chain_id: 1,
        protocol: "contracts the registry does not name",
        tokens: ["WETH"],
        roles: ["OWNER", "RELAYER"],
        spenders: [ODD],
        contracts: [{ address: ODD, functions: ["0xdeadbeef"] }],
        subaccounts: [S2],
      },
      {
        integration: "swap",
        chain_id: 1,
        protocol: "Uniswap v3 and v2 routers",
        tokens: ["USDC"],
        roles: ["OWNER", "TRADER"],
        spenders: [ROUTER],
        contracts: [{ address: ROUTER, functions: ["exactInputSingle"] }],
        subaccounts: [S1],
      },
    ]);
  });

  it("a module whose calls were all revoked, or not enabled now, gives nothing", () => {
    const events = [
      call(S1, POOL, SUPPLY, true),
      call(S1, POOL, SUPPLY, false),
      // a module of S2 on chain 8453, which `modules` (the enabled ones) does not list
      call(S2, POOL, SUPPLY, true, 8453),
    ];
    expect(groupPermissions(modules, events, integration, symbol)).toEqual([]);
  });
});
