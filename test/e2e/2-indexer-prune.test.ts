/**
 * `npm run indexer-prune` on a database of its own (in the devnet's Postgres) holding deployment
 * schemas in every state: read by a view, held by a running indexer, recorded by a group, idle
 * for days, idle for an hour, left locked by a crashed instance, and a Ponder schema not named as
 * ours. Only the unused ones go, and only with --yes.
 */
import { execFile } from "node:child_process";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { dropDeployment } from "../../scripts/lib/deployments.js";
import { REPO_ROOT } from "../../scripts/lib/indexer.js";
import { rows, until, withDb } from "../helpers.js";

const devnet = inject("devnet");
const DB = "prune_test";
let url = "";

const HOUR = 3600_000;
const IDLE_DAYS = "app_000000000001";
const SHOWN = "app_000000000002";
const RUNNING = "app_000000000003";
const GROUPED = "app_000000000004_g";
const IDLE_HOUR = "app_000000000005";
const CRASHED = "app_000000000006";
const NOT_OURS = "my_ponder_app";

async function deployment(schema: string, locked: 0 | 1, beatAgoMs: number) {
  await withDb(url, async (c) => {
    await c.query(`CREATE SCHEMA "${schema}"`);
    await c.query(`CREATE TABLE "${schema}"._ponder_meta (key text PRIMARY KEY, value jsonb)`);
    await c.query(`INSERT INTO "${schema}"._ponder_meta VALUES ('app', $1)`, [
      JSON.stringify({ is_locked: locked, heartbeat_at: Date.now() - beatAgoMs, is_dev: 0 }),
    ]);
    await c.query(
      `CREATE TABLE "${schema}".vault AS SELECT g AS chain_id, repeat('x', 200) AS name FROM generate_series(1, 2000) g`,
    );
  });
}

const schemas = () =>
  withDb(url, (c) =>
    rows<{ s: string }>(
      c,
      "SELECT nspname AS s FROM pg_namespace WHERE nspname LIKE 'app_%' OR nspname = $1 ORDER BY 1",
      [NOT_OURS],
    ),
  ).then((r) => r.map((x) => x.s));

const cli = (...args: string[]) =>
  promisify(execFile)(`${REPO_ROOT}/node_modules/.bin/tsx`, ["scripts/indexer-prune.ts", ...args], {
    cwd: REPO_ROOT,
    env: { ...process.env, DATABASE_URL: url },
  });

beforeAll(async () => {
  await withDb(devnet.dbUrl, async (c) => {
    await c.query(`DROP DATABASE IF EXISTS ${DB}`);
    await c.query(`CREATE DATABASE ${DB}`);
  });
  const u = new URL(devnet.dbUrl);
  u.pathname = `/${DB}`;
  url = u.toString();
  await deployment(IDLE_DAYS, 0, 72 * HOUR);
  await deployment(SHOWN, 0, 72 * HOUR);
  await deployment(RUNNING, 1, 1000);
  await deployment(GROUPED, 0, 72 * HOUR);
  await deployment(IDLE_HOUR, 0, HOUR);
  await deployment(CRASHED, 1, 72 * HOUR);
  await deployment(NOT_OURS, 0, 72 * HOUR);
  await withDb(url, async (c) => {
    await c.query("CREATE SCHEMA indexer");
    await c.query(`CREATE VIEW indexer.vault AS SELECT * FROM "${SHOWN}".vault`);
    await c.query("CREATE SCHEMA ops");
    await c.query(`CREATE TABLE ops.indexer_group (views_schema text, group_name text, deployment_schema text,
      chain_ids integer[], ready_at timestamptz DEFAULT now(), published_at timestamptz)`);
    await c.query(`INSERT INTO ops.indexer_group VALUES ('indexer', 'g', $1, '{1}', now(), NULL)`, [GROUPED]);
  });
}, 120_000);

afterAll(async () => {
  await withDb(devnet.dbUrl, (c) => c.query(`DROP DATABASE IF EXISTS ${DB}`));
});

describe("npm run indexer-prune", () => {
  it("lists every deployment and what keeps it; a dry run drops nothing", async () => {
    const before = await schemas();
    const { stdout } = await cli();
    const line = (s: string) => stdout.split("\n").find((l) => l.startsWith(`${s}\t`)) ?? "";
    expect(line(SHOWN)).toMatch(/kept: read by indexer\.vault$/);
    expect(line(RUNNING)).toMatch(/kept: a running indexer holds it$/);
    expect(line(GROUPED)).toMatch(/kept: recorded by indexer group g \(views indexer\)$/);
    for (const s of [IDLE_DAYS, IDLE_HOUR, CRASHED]) expect(line(s)).toMatch(/\t0\.\d MiB\t.*\tunused$/);
    expect(stdout).not.toContain(NOT_OURS);
    expect(stdout).toMatch(/3 unused deployment\(s\), [\d.]+ MiB: run again with --yes to drop them/);
    expect(await schemas()).toEqual(before);
  });

  it("with --idle-hours keeps what ran recently; --yes drops the rest, keeping what is needed", async () => {
    const first = await cli("--idle-hours", "24", "--yes");
    expect(first.stdout).toContain(`${IDLE_HOUR}\t`);
    expect(first.stdout).toMatch(/unused, active within 24 h: kept/);
    expect(first.stdout).toContain(`${IDLE_DAYS}: dropped`);
    expect(first.stdout).toContain(`${CRASHED}: dropped`);
    expect(first.stdout).toContain("2 deployment(s) dropped");
    expect(await schemas()).toEqual([SHOWN, RUNNING, GROUPED, IDLE_HOUR, NOT_OURS].sort());
    const second = await cli("--yes");
    expect(second.stdout).toContain(`${IDLE_HOUR}: dropped`);
    expect(await schemas()).toEqual([SHOWN, RUNNING, GROUPED, NOT_OURS].sort());
    // the views and the group record still read what they read
    const [n] = await withDb(url, (c) => rows<{ n: string }>(c, "SELECT count(*) AS n FROM indexer.vault"));
    expect(n!.n).toBe("2000");
    expect((await cli("--yes")).stdout).toContain("nothing to drop");
  });

  it("checks again before dropping: a schema a view came to read is kept", async () => {
    await deployment("app_000000000007", 0, 72 * HOUR);
    await withDb(url, (c) => c.query('CREATE VIEW public.late AS SELECT * FROM "app_000000000007".vault'));
    expect(await dropDeployment(url, "app_000000000007")).toEqual({ outcome: "kept", why: "read by public.late" });
    expect(await schemas()).toContain("app_000000000007");
    await expect(dropDeployment(url, "indexer")).rejects.toThrow(/not a deployment schema name/);
  });

  /** Runs `during` while `schema`'s vault table is held (ACCESS SHARE), released once `waiting` locks queue behind it. */
  async function whileHeld<T>(schema: string, waiting: number, during: () => Promise<T>): Promise<T> {
    let release = () => {};
    const held = new Promise<void>((r) => {
      release = r;
    });
    let holder: Promise<unknown> = Promise.resolve();
    await new Promise<void>((ready, failed) => {
      holder = withDb(url, async (c) => {
        await c.query("BEGIN");
        await c.query(`LOCK TABLE "${schema}".vault IN ACCESS SHARE MODE`);
        ready();
        await held;
        await c.query("COMMIT");
      }).catch(failed);
    });
    const running = during();
    await until(`${waiting} lock requests on ${schema}`, 60_000, async () => {
      const [w] = await withDb(url, (c) =>
        rows<{ n: number }>(
          c,
          `SELECT count(*)::int AS n FROM pg_locks l JOIN pg_class t ON t.oid = l.relation
           JOIN pg_namespace n ON n.oid = t.relnamespace WHERE n.nspname = $1 AND NOT l.granted`,
          [schema],
        ),
      );
      return w!.n >= waiting ? true : undefined;
    });
    release();
    await holder;
    return running;
  }

  it("one deployment dropped by two at once: one drops it, the other finds it gone", async () => {
    const s = "app_0000000000b1";
    await deployment(s, 0, 72 * HOUR);
    const outcomes = await whileHeld(s, 2, () => Promise.all([dropDeployment(url, s), dropDeployment(url, s)]));
    expect(outcomes.map((o) => o.outcome).sort()).toEqual(["dropped", "gone"]);
    expect(await schemas()).not.toContain(s);
  });

  it("two prunes at once: each deployment dropped once, both succeed", async () => {
    const idle = ["app_0000000000a1", "app_0000000000a2", "app_0000000000a3", "app_0000000000a4"];
    for (const s of idle) await deployment(s, 0, 72 * HOUR);
    // however the two overlap (the race itself is the test above: a lock held here could outlast
    // a prune's 10 s lock_timeout when the other starts late on a loaded machine)
    const [a, b] = await Promise.all([cli("--yes"), cli("--yes")]);
    const line = (out: string, s: string) => out.split("\n").find((l) => l.startsWith(`${s}: `)) ?? "";
    for (const s of idle) {
      const said = [a, b].map((r) => line(r.stdout, s));
      expect(
        said.filter((l) => l.startsWith(`${s}: dropped (`)),
        s,
      ).toHaveLength(1);
      // the other found it gone, listed after it went, or (not overlapping) found nothing to drop
      expect(
        said.filter((l) => l === `${s}: already dropped (by another command meanwhile)` || l === ""),
        s,
      ).toHaveLength(1);
    }
    expect((await schemas()).filter((s) => idle.includes(s))).toEqual([]);
  });

  it("refuses bad arguments with exit 2", async () => {
    for (const args of [["--idle-hours", "soon"], ["now"], ["--force"]]) {
      await expect(cli(...args)).rejects.toMatchObject({ code: 2, stderr: expect.stringContaining("indexer-prune:") });
    }
  });
});
