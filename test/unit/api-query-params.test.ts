/**
 * How the routes read their query and path parameters, as FastAPI does: a chain that is not an
 * integer is `int_parsing`, a parameter a route does not know is ignored, one given twice is its
 * last value, and the institutional vault list filters on every vault status. On an app whose
 * database only counts the requests that reach it (a request that passed validation); it answers
 * none of them.
 */
import { describe, expect, it } from "vitest";
import { createApp } from "../../api/app.js";
import type { AppDeps } from "../../api/lib/router.js";

const VAULT = "0x2c622344b5dc29dccc034ca76f123d4479d24122";
const TX = `0x${"ab".repeat(32)}`;

function app() {
  const reached = { n: 0 };
  const db = new Proxy(
    {},
    {
      get(_, prop) {
        reached.n++;
        throw new Error(`no database here (${String(prop)})`);
      },
    },
  ) as AppDeps["db"];
  const config = { indexerSchema: "indexer", rpcUrls: new Map<number, string>(), corsOrigins: [] };
  const a = createApp({ db, config: { ...config, rateLimitPerMinute: 1e6 }, redis: null, now: () => new Date() });
  return { a, reached };
}

type Detail = { loc: (string | number)[]; msg: string; type: string }[];

async function refused(url: string): Promise<Detail> {
  const res = await app().a.request(url);
  expect(res.status, url).toBe(422);
  return ((await res.json()) as { detail: Detail }).detail;
}

/** The request passed validation: its handler asked the database. */
async function accepted(url: string): Promise<void> {
  const { a, reached } = app();
  const res = await a.request(url);
  expect(res.status, url).not.toBe(422);
  expect(reached.n, `${url} reached its handler`).toBeGreaterThan(0);
}

const INT = { msg: "Input should be a valid integer, unable to parse string as an integer", type: "int_parsing" };

describe("chain parameters", () => {
  it("a chain that is not an integer is int_parsing, in the query and in the path", async () => {
    expect(await refused(`/api/v1/tokenized_vault/${VAULT}?chain_id=abc`)).toEqual([
      { loc: ["query", "chain_id"], ...INT },
    ]);
    expect(await refused(`/v1/tokenized_vaults/${VAULT}?chain=1.5`)).toEqual([{ loc: ["query", "chain"], ...INT }]);
    expect(await refused(`/api/v1/withdrawals/abc/${VAULT}`)).toEqual([{ loc: ["path", "chain"], ...INT }]);
    expect(await refused(`/api/v1/revert_reason?tx_hash=${TX}&chain=x`)).toEqual([{ loc: ["query", "chain"], ...INT }]);
  });

  it("a chain outside the list is one error item, on an EVM-only parameter too", async () => {
    for (const url of [
      `/api/v1/revert_reason?tx_hash=${TX}&chain=12345`,
      `/api/v1/revert_reason?tx_hash=${TX}&chain=-1`,
    ]) {
      expect(await refused(url), url).toEqual([{ loc: ["query", "chain"], msg: expect.any(String), type: "enum" }]);
    }
    expect(await refused(`/api/v1/withdrawals/12345/${VAULT}`)).toEqual([
      { loc: ["path", "chain"], msg: expect.any(String), type: "enum" },
    ]);
  });

  it("a chain is read as every query integer is: a sign and blanks are fine", async () => {
    await accepted(`/api/v1/tokenized_vault/${VAULT}?chain_id=%2B1`);
    await accepted(`/api/v1/tokenized_vault/${VAULT}/historical-timeseries?chain_id=%2B1&n_days=%2B5`);
    await accepted(`/api/v1/withdrawals/%2B8453/${VAULT}`);
  });
});

describe("query parameters a route does not know", () => {
  it("are ignored, on the one-vault routes as on the lists", async () => {
    for (const url of [
      `/api/v1/tokenized_vault/${VAULT}?chian=8453`,
      `/v1/tokenized_vaults/${VAULT}/annualized_apy?foo=1`,
      `/api/v1/platform/vault_history/${VAULT}?strategist=x`,
      `/api/v1/platform/governance/${VAULT}/roles?chain_id=1&extra=1`,
      "/api/v1/tokenized_vault?foo=1",
    ]) {
      await accepted(url);
    }
  });
});

describe("a query parameter given twice", () => {
  it("is its last value, as FastAPI reads a scalar parameter", async () => {
    const history = `/api/v1/platform/vault_history/${VAULT}`;
    await accepted(`${history}?limit=abc&limit=5`);
    expect(await refused(`${history}?limit=5&limit=abc`)).toEqual([{ loc: ["query", "limit"], ...INT }]);
    await accepted(`/api/v1/tokenized_vault/${VAULT}?chain_id=x&chain_id=1`);
    expect(await refused(`/api/v1/tokenized_vault/${VAULT}?chain_id=1&chain_id=x`)).toEqual([
      { loc: ["query", "chain_id"], ...INT },
    ]);
  });
});

describe("the vault list's status filter", () => {
  it("takes every vault status on the institutional list, the spec's two on the public one", async () => {
    for (const s of ["active", "closed", "migrated"]) await accepted(`/api/v1/tokenized_vault?status=${s}`);
    for (const s of ["active", "closed"]) await accepted(`/v1/tokenized_vaults?status=${s}`);
    expect(await refused("/v1/tokenized_vaults?status=migrated")).toEqual([
      { loc: ["query", "status"], msg: expect.any(String), type: "enum" },
    ]);
    expect((await refused("/api/v1/tokenized_vault?status=gone"))[0]).toMatchObject({ loc: ["query", "status"] });
  });
});
