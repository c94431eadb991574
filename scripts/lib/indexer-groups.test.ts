import { describe, expect, it } from "vitest";
import {
  chooseDeployments,
  type GroupDeployment,
  groupDeploymentSchema,
  ident,
  type Shape,
  shapeDiff,
  unionViewSql,
} from "./indexer-groups.js";

const shape = (extra: string[] = []): Shape =>
  new Map([
    ["vault", ["chain_id integer", "address text", ...extra]],
    ["_ponder_checkpoint", ["chain_name text", "chain_id bigint"]],
  ]);

const dep = (group: string, schema: string, chainIds: number[], minute: number): GroupDeployment => ({
  group,
  schema,
  chainIds,
  readyAt: new Date(Date.UTC(2026, 10, 23, 12, minute)),
  publishedAt: null,
});

describe("groupDeploymentSchema", () => {
  it("depends on the build, the chain set (in any order) and the group", () => {
    const s = groupDeploymentSchema("app_0123456789ab", "a", [8453, 1]);
    expect(s).toMatch(/^app_[0-9a-f]{12}_a$/);
    expect(groupDeploymentSchema("app_0123456789ab", "a", [1, 8453])).toBe(s);
    expect(groupDeploymentSchema("app_0123456789ab", "a", [1])).not.toBe(s);
    expect(groupDeploymentSchema("app_ffffffffffff", "a", [1, 8453])).not.toBe(s);
    expect(groupDeploymentSchema("app_0123456789ab", "b", [1, 8453]).slice(0, -2)).toBe(s.slice(0, -2));
  });

  it("refuses a name that is not a group name", () => {
    for (const bad of ["", "A", "1a", "a-b", "a".repeat(17), 'a"; drop'])
      expect(() => groupDeploymentSchema("app_0123456789ab", bad, [1])).toThrow(/must match/);
    expect(groupDeploymentSchema("app_0123456789ab", "a".repeat(16), [1]).length).toBeLessThanOrEqual(63);
  });
});

describe("unionViewSql", () => {
  it("drops and re-creates the view over every deployment, in a stable order", () => {
    expect(unionViewSql("indexer", "vault", ["app_b_g2", "app_a_g1"])).toEqual([
      'DROP VIEW IF EXISTS "indexer"."vault"',
      'CREATE VIEW "indexer"."vault" AS SELECT * FROM "app_a_g1"."vault" UNION ALL SELECT * FROM "app_b_g2"."vault"',
    ]);
    expect(unionViewSql("indexer", "_ponder_checkpoint", ["app_a_g1"])[1]).toBe(
      'CREATE VIEW "indexer"."_ponder_checkpoint" AS SELECT * FROM "app_a_g1"."_ponder_checkpoint"',
    );
  });

  it("quotes identifiers and refuses an empty union", () => {
    expect(ident('we"ird')).toBe('"we""ird"');
    expect(() => unionViewSql("indexer", "vault", [])).toThrow(/no deployment/);
  });
});

describe("shapeDiff", () => {
  it("names missing, extra and changed relations", () => {
    expect(shapeDiff(shape(), shape())).toEqual([]);
    expect(shapeDiff(shape(), shape(["name text"]))).toEqual([
      "vault has columns (chain_id integer, address text, name text) instead of (chain_id integer, address text)",
    ]);
    const fewer = new Map(shape());
    fewer.delete("vault");
    fewer.set("loan", []);
    expect(shapeDiff(shape(), fewer)).toEqual(["no vault", "an extra loan"]);
  });
});

describe("chooseDeployments", () => {
  const shapes = new Map<string, Shape>([
    ["app_1_a", shape()],
    ["app_1_b", shape()],
    ["app_2_a", shape(["name text"])],
    ["app_2_b", shape(["name text"])],
  ]);

  it("shows the publishing deployment beside every other group's newest of the same tables", () => {
    const a = dep("a", "app_1_a", [1], 1);
    const b = dep("b", "app_1_b", [8453], 2);
    expect(chooseDeployments([a, b], shapes, a)).toEqual({ chosen: [a, b], reasons: [] });
    expect(chooseDeployments([a], shapes, a)).toEqual({ chosen: [a], reasons: [] });
  });

  it("waits while another group has no deployment with the same tables, then switches all", () => {
    const a1 = dep("a", "app_1_a", [1], 1);
    const b1 = dep("b", "app_1_b", [8453], 2);
    const a2 = dep("a", "app_2_a", [1], 3);
    const waiting = chooseDeployments([a1, b1, a2], shapes, a2);
    expect(waiting.chosen).toBeNull();
    expect(waiting.reasons).toEqual([
      "group b has no deployment with the tables of app_2_a (its newest, app_1_b, has vault has columns " +
        "(chain_id integer, address text) instead of (chain_id integer, address text, name text))",
    ]);
    const b2 = dep("b", "app_2_b", [8453], 4);
    expect(chooseDeployments([a1, b1, a2, b2], shapes, b2).chosen).toEqual([a2, b2]);
    // the old group b restarting meanwhile keeps the old union, not the pending a2
    expect(chooseDeployments([a1, b1, a2], shapes, b1).chosen).toEqual([a1, b1]);
  });

  it("refuses two groups showing the same chain", () => {
    const a = dep("a", "app_1_a", [1, 8453], 1);
    const b = dep("b", "app_1_b", [8453], 2);
    expect(chooseDeployments([a, b], shapes, b)).toEqual({
      chosen: null,
      reasons: ["chain 8453 is in group a and group b"],
    });
  });

  it("skips deployments whose schema is gone", () => {
    const a = dep("a", "app_1_a", [1], 1);
    const gone = dep("b", "app_gone_b", [8453], 2);
    expect(chooseDeployments([a, gone], shapes, a).reasons).toEqual([
      "group b has no deployment with the tables of app_1_a (no deployment left)",
    ]);
    expect(chooseDeployments([a], shapes, gone).reasons).toEqual(["deployment app_gone_b does not exist"]);
  });
});
