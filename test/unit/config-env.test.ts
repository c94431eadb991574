/**
 * The settings every process shares: DATABASE_URL and REDIS_URL are checked by one rule each
 * (jobs/config.ts) in the API, the workers, the relayer, the indexer and the demo, and a variable
 * set to nothing counts as unset everywhere (README, "Configuration").
 */
import { describe, expect, it } from "vitest";
import { apiConfig } from "../../api/env.js";
import { createDb, createPool, migrateToLatest } from "../../db/client.js";
import { jobsConfig } from "../../jobs/config.js";
import { relayerConfig } from "../../jobs/relayer/config.js";
import { demoConfig } from "../../scripts/lib/demo-config.js";

const DB = "postgresql://u@h/db";
const RELAYER = {
  RELAYER_PRIVATE_KEY: `0x${"11".repeat(32)}`,
  CORE_CHAIN_ID: "1",
  PERP_CORE_LEDGER: `0x${"22".repeat(20)}`,
  PERP_BRIDGES_1: `0x${"33".repeat(20)}`,
  PONDER_RPC_URL_1: "http://a:1",
};

/** The message a config function throws, or "" when it accepts the settings. */
function refusal(f: () => unknown): string {
  try {
    f();
    return "";
  } catch (err) {
    return (err as Error).message;
  }
}

describe("demo configuration", () => {
  it("a variable set to nothing counts as unset: its default", () => {
    const c = demoConfig({ PORT: "", DEMO_SEED: "", DEMO_DAYS: " ", INDEXER_PORT: "", REDIS_URL: "" });
    expect(c).toMatchObject({ apiPort: 8000, seed: "demo", days: 125, indexerPort: 42069, redisUrl: undefined });
  });

  it("lists every bad value, naming it", () => {
    expect(refusal(() => demoConfig({ DEMO_DAYS: "10", PORT: "0x1F90" }))).toMatch(
      /^invalid demo configuration:\n {2}DEMO_DAYS: at least 120 days of history\n {2}PORT: must be a decimal number$/,
    );
  });

  it("checks REDIS_URL at start-up, by the workers' rule", () => {
    expect(demoConfig({ REDIS_URL: " redis://127.0.0.1:6379/0 " }).redisUrl).toBe("redis://127.0.0.1:6379/0");
    expect(demoConfig({ REDIS_URL: "rediss://:pw@cache.example:6380" }).redisUrl).toBe(
      "rediss://:pw@cache.example:6380",
    );
    for (const bad of ["http://x", "localhost:6379", "redis://", "redis://h:notaport"]) {
      const demo = refusal(() => demoConfig({ REDIS_URL: bad }));
      expect(demo, bad).toMatch(/^invalid demo configuration:\n {2}REDIS_URL: /);
      // the same line the workers, the API and the relayer give
      const line = demo.split("\n")[1];
      expect(refusal(() => jobsConfig({ DATABASE_URL: DB, REDIS_URL: bad })).split("\n")[1]).toBe(line);
      expect(refusal(() => apiConfig({ DATABASE_URL: DB, REDIS_URL: bad })).split("\n")[1]).toBe(line);
      expect(refusal(() => relayerConfig({ ...RELAYER, REDIS_URL: bad })).split("\n")[1]).toBe(line);
    }
  });
});

describe("DATABASE_URL", () => {
  const starts = [
    (DATABASE_URL?: string) => apiConfig({ DATABASE_URL }),
    (DATABASE_URL?: string) => jobsConfig({ DATABASE_URL }),
  ];

  it("unset: the API and the workers say it is required, and what it is", () => {
    expect(refusal(() => apiConfig({}))).toMatch(/\n {2}DATABASE_URL: required: the postgres:\/\/ URL of the service/);
    expect(refusal(() => jobsConfig({}))).toMatch(
      /\n {2}DATABASE_URL: required: the postgres:\/\/ URL of the database/,
    );
    expect(refusal(() => jobsConfig({ DATABASE_URL: " " }))).toMatch(/DATABASE_URL: required/);
    expect(refusal(() => jobsConfig({}))).not.toMatch(/expected string/);
  });

  it("a postgres:// URL that does not parse is refused by name, never echoed (it holds a password)", () => {
    for (const bad of [
      "postgres://u:secret@127.0.0.1:notaport/db",
      "postgresql://u:secret@h:99999/db",
      "postgres://u:secret#1@h/db",
    ]) {
      for (const start of starts) {
        const msg = refusal(() => start(bad));
        expect(msg, bad).toMatch(/^invalid (API|worker) configuration:\n {2}DATABASE_URL: is not a valid URL \(/);
        expect(msg).not.toContain("secret");
      }
    }
    expect(refusal(() => jobsConfig({ DATABASE_URL: "mysql://x" }))).toMatch(
      /\n {2}DATABASE_URL: must be a postgres:\/\/ URL$/,
    );
  });

  it("takes every form pg reads: no host (a socket), a host parameter, IPv6, spaces around it", () => {
    for (const ok of [
      "postgres://u:p@/db",
      "postgres:///db?host=/var/run/postgresql",
      "postgresql://[::1]:5432/db",
      "postgres://u:p%23w@h:5432/db?sslmode=require",
    ]) {
      for (const start of starts)
        expect(
          refusal(() => start(ok)),
          ok,
        ).toBe("");
    }
    expect(jobsConfig({ DATABASE_URL: ` ${DB} ` }).databaseUrl).toBe(DB);
  });

  it("a migration that cannot connect names no empty migration", async () => {
    const db = createDb(createPool("postgres://u:p@127.0.0.1:notaport/db", 1));
    try {
      await expect(migrateToLatest(db)).rejects.toThrow(/^migration failed: Invalid URL$/);
    } finally {
      await db.destroy();
    }
  });
});
