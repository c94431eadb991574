import { z } from "@hono/zod-openapi";
import { describe, expect, it } from "vitest";
import { ChainIdParam, EvmChainIdParam, vaultChainQuery } from "./chain.js";
import { validationItems } from "./errors.js";
import { INT_PARSING } from "./router.js";

const items = (schema: z.ZodType, value: unknown) => {
  const r = schema.safeParse(value);
  return r.success ? [] : validationItems(r.error, "query");
};

describe("chain parameters", () => {
  const q = z.object({ chain: ChainIdParam, evm: EvmChainIdParam.optional() });

  it("read a chain id as every query integer is read: a sign and blanks are fine, anything else is int_parsing", () => {
    for (const [text, id] of [
      ["8453", 8453],
      ["+1", 1],
      [" 10 ", 10],
      ["-1", -1],
      ["0", 0],
    ] as const) {
      expect(q.parse({ chain: text }).chain, text).toBe(id);
    }
    for (const bad of ["abc", "", "1.0", "1e3", "0x1", "--1", "8453x"]) {
      expect(items(q, { chain: bad }), JSON.stringify(bad)).toEqual([
        { loc: ["query", "chain"], msg: INT_PARSING, type: "int_parsing" },
      ]);
    }
    expect(items(q, {})).toEqual([{ loc: ["query", "chain"], msg: "Field required", type: "missing" }]);
  });

  it("an integer outside the list is one `enum` item, EVM-only parameters included", () => {
    expect(items(q, { chain: "12345" })).toEqual([
      { loc: ["query", "chain"], msg: expect.stringMatching(/supported chain id/), type: "enum" },
    ]);
    for (const evm of ["12345", "0", "-1"]) {
      expect(items(q, { chain: "1", evm }), evm).toEqual([
        { loc: ["query", "evm"], msg: expect.stringMatching(/EVM chain id/), type: "enum" },
      ]);
    }
    expect(q.parse({ chain: "-2", evm: "8453" })).toEqual({ chain: -2, evm: 8453 });
  });
});

describe("a one-vault query", () => {
  const q = vaultChainQuery({});

  it("ignores a parameter it does not know, as FastAPI does", () => {
    expect(q.parse({ chian: "8453", chain_id: "10" })).toEqual({ chain_id: 10 });
  });

  it("still refuses its two spellings disagreeing", () => {
    expect(items(q, { chain_id: "1", chain: "10" })).toEqual([
      { loc: ["query", "chain"], msg: expect.stringMatching(/disagree/), type: "value_error" },
    ]);
  });
});
