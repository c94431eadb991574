/**
 * Chains split across indexer processes behind one views schema: group `a` indexes chain 1, group
 * `b` chain 8453, each in its own process and deployment schema; the views show the union of both,
 * equal row for row to the single-process deployment of the global setup, and a reader polling
 * them while a group republishes never sees an error or a missing chain.
 *
 * Groups following one registry file: a change of one chain's vaults redeploys that chain's group
 * only; the other's deployment serves on.
 *
 * The views schema here is `indexer_groups`, not `indexer`, so the later test files keep reading
 * the single deployment.
 */
import { execFile } from "node:child_process";
import { appendFileSync, cpSync, mkdirSync, readFileSync, rmSync, symlinkSync, writeFileSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import { promisify } from "node:util";
import { afterAll, beforeAll, describe, expect, inject, it } from "vitest";
import { loadRegistry } from "../../config/registry.js";
import { createDb, createPool, migrateToLatest } from "../../db/client.js";
import { readCheckpoints } from "../../db/progress.js";
import { loadRegistryData } from "../../db/registry-load.js";
import {
  type IndexerHandle,
  type IndexerOptions,
  indexedBlocks,
  publishAtHead,
  REPO_ROOT,
  startIndexer,
} from "../../scripts/lib/indexer.js";
import { publishGroup, removeGroup } from "../../scripts/lib/indexer-groups.js";
import { LiveIndexer } from "../../scripts/lib/live-indexer.js";
import { ensureAnalystRole } from "../../scripts/lib/postgres.js";
import { freePort, freePorts, rows, sleep, withDb } from "../helpers.js";

const devnet = inject("devnet");
const VIEWS = "indexer_groups";
const TABLES = [
  "vault",
  "vault_event",
  "share_transfer",
  "withdrawal_request",
  "withdrawal_match",
  "share_ratio_snapshot",
  "timelock_operation",
  "timelock_source",
  "governance_event",
  "fee_event",
  "loan",
  "loan_event",
  "subaccount",
  "subaccount_module",
  "subaccount_event",
  "aave_event",
  "morpho_event",
  "uniswap_position",
  "uniswap_event",
  "perp_deposit",
  "perp_core_event",
  "loanbook_loan",
  "loanbook_event",
  "lending_vault_event",
  "lending_vault_snapshot",
];

interface Group {
  name: string;
  options: IndexerOptions;
  handle: IndexerHandle;
  exited: boolean;
}

const groups: Group[] = [];
/** every deployment schema the tests made, dropped at the end */
const made = new Set<string>();
let analystUrl = "";

function startGroup(name: string, chainId: number, port: number, existing?: Group, root?: string): Group {
  const chain = devnet.chains.find((c) => c.chainId === chainId)!;
  const g: Group = existing ?? ({ name, exited: false } as Group);
  g.exited = false;
  g.options = {
    databaseUrl: devnet.dbUrl,
    registryFile: devnet.registryFile,
    chains: [chain],
    port,
    logFile: join(devnet.dir, `group-${name}.log`),
    group: { name, viewsSchema: VIEWS },
    onExit: () => (g.exited = true),
    ...(root ? { root } : {}),
  };
  g.handle = startIndexer(g.options);
  made.add(g.handle.schema);
  return g;
}

const publish = (g: Group) => publishAtHead(g.options, g.handle, { timeoutMs: 300_000, isAlive: () => !g.exited });

/** Polls the union views as the analyst: every error, and every read's chains and counts. */
function startReader() {
  const errors: string[] = [];
  const reads: { chains: number[]; events: string }[] = [];
  let on = true;
  const done = withDb(analystUrl, async (c) => {
    while (on) {
      try {
        const cp = await rows<{ chain_id: string }>(c, `SELECT chain_id FROM ${VIEWS}._ponder_checkpoint`);
        const [ev] = await rows<{ n: string }>(c, `SELECT count(*) AS n FROM ${VIEWS}.vault_event`);
        reads.push({ chains: cp.map((r) => Number(r.chain_id)).sort((a, b) => a - b), events: ev!.n });
      } catch (err) {
        errors.push((err as Error).message);
      }
      await sleep(50);
    }
  });
  return {
    errors,
    reads,
    stop: async () => {
      on = false;
      await done;
    },
  };
}

const viewDefinition = (name: string) =>
  withDb(devnet.dbUrl, async (c) => {
    const [r] = await rows<{ definition: string }>(
      c,
      "SELECT definition FROM pg_views WHERE schemaname = $1 AND viewname = $2",
      [VIEWS, name],
    );
    return r?.definition ?? "";
  });

const groupRows = () =>
  withDb(devnet.dbUrl, (c) =>
    rows<{ group_name: string; deployment_schema: string; chain_ids: number[]; published_at: Date | null }>(
      c,
      "SELECT group_name, deployment_schema, chain_ids, published_at FROM ops.indexer_group WHERE views_schema = $1 ORDER BY 1, 2",
      [VIEWS],
    ),
  );

beforeAll(async () => {
  analystUrl = await ensureAnalystRole(devnet.dbUrl, {
    viewsSchema: VIEWS,
    extraSchemas: ["derived", "registry", "ops"],
  });
});

afterAll(async () => {
  await Promise.all(groups.map((g) => g.handle.stop()));
  await withDb(devnet.dbUrl, async (c) => {
    await c.query(`DROP SCHEMA IF EXISTS ${VIEWS} CASCADE`);
    await c.query("DELETE FROM ops.indexer_group WHERE views_schema = $1", [VIEWS]).catch(() => undefined);
    for (const schema of made) await c.query(`DROP SCHEMA IF EXISTS "${schema}" CASCADE`);
  });
});

describe("indexer groups", () => {
  it("two processes, one chain each, publish one union equal to a single deployment", async () => {
    // a's port is held by something else: Ponder takes the next one, and a's handle follows it
    // (Ponder walks one port only: a second port in use stops it)
    const port = await freePorts(4);
    const holder = createServer();
    await new Promise<void>((r) => holder.listen(port, r));
    const a = startGroup("a", 1, port);
    const b = startGroup("b", 8453, port + 3);
    groups.push(a, b);
    expect(a.handle.schema).toMatch(/^app_[0-9a-f]{12}_a$/);
    expect(b.handle.schema).toMatch(/^app_[0-9a-f]{12}_b$/);
    let reader: ReturnType<typeof startReader> | null = null;
    const first = (g: Group) =>
      publish(g).then((r) => {
        reader ??= startReader();
        return r;
      });
    let results: Awaited<ReturnType<typeof publish>>[];
    try {
      results = await Promise.all([first(a), first(b)]);
      await sleep(500);
    } finally {
      await (reader as ReturnType<typeof startReader> | null)?.stop();
      holder.close();
    }
    expect([a.handle.url, b.handle.url]).toEqual([`http://127.0.0.1:${port + 1}`, `http://127.0.0.1:${port + 3}`]);
    // each process indexed only its own chain
    for (const [g, id] of [
      [a, 1],
      [b, 8453],
    ] as const) {
      const blocks = await withDb(devnet.dbUrl, (c) => indexedBlocks(c, g.handle.schema));
      expect([...blocks!.keys()]).toEqual([id]);
    }
    // each showed its own deployment at once; the second to publish showed both
    const shown = results!.map((r) => r.group!.shown!.map((d) => d.group).join(","));
    expect(shown[0]).toMatch(/^(a|a,b)$/);
    expect(shown[1]).toMatch(/^(b|a,b)$/);
    expect(shown).toContain("a,b");

    // what a reader saw while the second group published: no error, a chain once shown stays
    const r = reader! as ReturnType<typeof startReader>;
    expect(r.errors).toEqual([]);
    expect(r.reads.length).toBeGreaterThan(5);
    let seen = new Set<number>();
    for (const read of r.reads) {
      for (const c of seen) expect(read.chains).toContain(c);
      seen = new Set([...seen, ...read.chains]);
    }
    expect(r.reads.at(-1)!.chains).toEqual([1, 8453]);

    // row for row, every table equals the single-process deployment's
    await withDb(devnet.dbUrl, async (c) => {
      for (const t of TABLES) {
        const [d] = await rows<{ n: string; total: string }>(
          c,
          `SELECT (SELECT count(*) FROM (SELECT * FROM ${VIEWS}."${t}" EXCEPT ALL SELECT * FROM "${devnet.schema}"."${t}") x)
                + (SELECT count(*) FROM (SELECT * FROM "${devnet.schema}"."${t}" EXCEPT ALL SELECT * FROM ${VIEWS}."${t}") y) AS n,
                  (SELECT count(*) FROM ${VIEWS}."${t}") AS total`,
        );
        expect({ t, diff: d!.n }).toEqual({ t, diff: "0" });
        if (["vault", "vault_event", "share_ratio_snapshot"].includes(t)) expect(Number(d!.total)).toBeGreaterThan(0);
      }
      const perChain = await rows<{ chain_id: number; n: string }>(
        c,
        `SELECT chain_id, count(*) AS n FROM ${VIEWS}.vault_event GROUP BY 1 ORDER BY 1`,
      );
      expect(perChain.map((p) => p.chain_id)).toEqual([1, 8453]);
      const meta = await rows<{ key: string }>(c, `SELECT key FROM ${VIEWS}._ponder_meta`);
      expect(meta.map((m) => m.key)).toEqual(["app", "app"]);
    });

    // db/progress.ts reads one checkpoint per chain through the union, the single deployment's
    const db = createDb(createPool(analystUrl, 1, "groups-test"));
    try {
      const union = await readCheckpoints(db, VIEWS);
      const single = await readCheckpoints(db, "indexer");
      expect(union.map((c) => c.chainId)).toEqual([1, 8453]);
      expect(union.map((c) => c.block)).toEqual(single.map((c) => c.block));
    } finally {
      await db.destroy();
    }
    expect((await groupRows()).map((g) => [g.group_name, g.chain_ids, g.published_at !== null])).toEqual([
      ["a", [1], true],
      ["b", [8453], true],
    ]);
  }, 600_000);

  it("a reader sees every chain, unchanged, while a group's new build takes over", async () => {
    // a changed build of group a (one handler file edited, the same tables), in its own root
    const root = join(devnet.dir, "groups-root");
    rmSync(root, { recursive: true, force: true });
    mkdirSync(root, { recursive: true });
    for (const f of ["ponder.config.ts", "ponder.schema.ts", "package.json", "tsconfig.json", "src", "abis", "config"])
      cpSync(join(REPO_ROOT, f), join(root, f), { recursive: true });
    symlinkSync(join(REPO_ROOT, "node_modules"), join(root, "node_modules"));
    appendFileSync(join(root, "src", "snapshots.ts"), "\n// changed build for the indexer groups test\n");

    const [a, b] = groups as [Group, Group];
    const next = startGroup("a", 1, await freePort(), undefined, root);
    groups.push(next);
    expect(next.handle.schema).toMatch(/_a$/);
    expect(next.handle.schema).not.toBe(a.handle.schema);
    const reader = startReader();
    try {
      const { group } = await publish(next);
      expect(group!.shown!.map((d) => d.schema)).toEqual([next.handle.schema, b.handle.schema]);
      await sleep(500);
    } finally {
      await reader.stop();
    }
    expect(reader.errors).toEqual([]);
    expect(reader.reads.length).toBeGreaterThan(20);
    expect(new Set(reader.reads.map((r) => JSON.stringify(r)))).toEqual(new Set([JSON.stringify(reader.reads[0])]));
    expect(reader.reads[0]!.chains).toEqual([1, 8453]);
    expect(await viewDefinition("vault_event")).toContain(next.handle.schema);
    expect(await viewDefinition("vault_event")).not.toContain(a.handle.schema);
    // the superseded deployment of group a is forgotten
    expect((await groupRows()).map((g) => g.deployment_schema)).toEqual([next.handle.schema, b.handle.schema]);
    await a.handle.stop();
    groups.splice(groups.indexOf(a), 1);
  }, 600_000);

  it("a reader sees every chain while a restarted group republishes", async () => {
    const b = groups.find((g) => g.name === "b")!;
    const before = (await groupRows()).find((g) => g.group_name === "b")!.published_at!;
    await b.handle.stop();
    // stopped with SIGINT, Ponder has unlocked its schema: the restart need not wait out the lock
    const [meta] = await withDb(devnet.dbUrl, (c) =>
      rows<{ locked: string }>(
        c,
        `SELECT value->>'is_locked' AS locked FROM "${b.handle.schema}"._ponder_meta WHERE key = 'app'`,
      ),
    );
    expect(meta!.locked).toBe("0");
    const reader = startReader();
    try {
      startGroup("b", 8453, await freePort(), b);
      await publish(b);
      await sleep(500);
    } finally {
      await reader.stop();
    }
    expect(reader.errors).toEqual([]);
    expect(reader.reads.length).toBeGreaterThan(20);
    // Ponder's restart re-indexes the chain's unfinalized blocks, whose rows vanish for a moment
    // (as with one process): the count moves, the chains are always both there
    for (const r of reader.reads) expect(r.chains).toEqual([1, 8453]);
    expect(reader.reads.at(-1)!.events).toBe(reader.reads[0]!.events);
    const after = (await groupRows()).find((g) => g.group_name === "b")!.published_at!;
    expect(after.getTime()).toBeGreaterThan(before.getTime());
  }, 600_000);

  it("refuses to union different tables or one chain twice, and removes a group", async () => {
    const a = groups.find((g) => g.name === "a")!;
    const b = groups.find((g) => g.name === "b")!;
    const viewBefore = await viewDefinition("vault");
    // a deployment of group b whose `vault` has one column more (a build with changed tables)
    const changed = `${b.handle.schema}_x`;
    await withDb(devnet.dbUrl, async (c) => {
      await c.query(`CREATE SCHEMA "${changed}"`);
      for (const t of [...TABLES, "_ponder_meta", "_ponder_checkpoint"])
        await c.query(`CREATE TABLE "${changed}"."${t}" AS SELECT * FROM "${b.handle.schema}"."${t}"`);
      await c.query(`ALTER TABLE "${changed}".vault ADD COLUMN extra integer`);
    });
    try {
      const refused = await publishGroup(devnet.dbUrl, {
        group: "b",
        schema: changed,
        chainIds: [8453],
        viewsSchema: VIEWS,
      });
      expect(refused.shown).toBeNull();
      expect(refused.reasons.join("\n")).toMatch(
        new RegExp(`group a has no deployment with the tables of ${changed} .*vault has columns`),
      );
      expect(await viewDefinition("vault")).toBe(viewBefore);
      expect((await groupRows()).filter((g) => g.published_at === null).map((g) => g.deployment_schema)).toEqual([
        changed,
      ]);
    } finally {
      await withDb(devnet.dbUrl, (c) => c.query(`DROP SCHEMA "${changed}" CASCADE`));
    }

    // a group claiming a chain another group shows
    const twice = await publishGroup(devnet.dbUrl, {
      group: "c",
      schema: a.handle.schema,
      chainIds: [1],
      viewsSchema: VIEWS,
    });
    expect(twice.shown).toBeNull();
    expect(twice.reasons).toEqual(["chain 1 is in group a and group c"]);
    const back = await removeGroup(devnet.dbUrl, { group: "c", viewsSchema: VIEWS });
    expect(back.map((d) => d.group)).toEqual(["a", "b"]);
    // the dropped deployment was forgotten on the way
    expect((await groupRows()).map((g) => g.deployment_schema)).toEqual([a.handle.schema, b.handle.schema]);

    // the operator's command: remove group b, the views show chain 1 only; b publishes again
    const cli = (...args: string[]) =>
      promisify(execFile)(join(REPO_ROOT, "node_modules", ".bin", "tsx"), ["scripts/indexer-groups.ts", ...args], {
        cwd: REPO_ROOT,
        env: { ...process.env, DATABASE_URL: devnet.dbUrl },
      });
    const removed = await cli("remove", "b", "--views", VIEWS);
    expect(removed.stdout).toContain(`group b removed; views "${VIEWS}" now show ${a.handle.schema} (group a)`);
    const chains = () =>
      withDb(analystUrl, (c) => rows<{ chain_id: string }>(c, `SELECT chain_id FROM ${VIEWS}._ponder_checkpoint`));
    expect((await chains()).map((r) => Number(r.chain_id))).toEqual([1]);
    await expect(cli("remove", "a", "--views", VIEWS)).rejects.toMatchObject({
      stderr: expect.stringContaining('group "a" is the only group'),
    });
    await publishGroup(devnet.dbUrl, { group: "b", schema: b.handle.schema, chainIds: [8453], viewsSchema: VIEWS });
    expect((await chains()).map((r) => Number(r.chain_id)).sort((x, y) => x - y)).toEqual([1, 8453]);
    const listed = await cli("list", "--views", VIEWS);
    expect(listed.stdout.trim().split("\n").slice(1)).toEqual([
      expect.stringMatching(new RegExp(`^a\\t1\\t${a.handle.schema}\\t.*\\tshown$`)),
      expect.stringMatching(new RegExp(`^b\\t8453\\t${b.handle.schema}\\t.*\\tshown$`)),
    ]);
  }, 300_000);

  it("following one registry file, a change of chain 8453's vaults redeploys group b only", async () => {
    for (const g of groups.splice(0)) await g.handle.stop();
    // the registry tables each change is loaded into, as `npm run indexer` makes them at start-up
    const db = createDb(createPool(devnet.dbUrl, 1, "groups-test-registry"));
    await migrateToLatest(db);
    const file = join(devnet.dir, "groups-registry.json");
    cpSync(devnet.registryFile, file);
    const logs: Record<string, string[]> = { a: [], b: [] };
    const live = (name: "a" | "b", chainId: number, port: number) => {
      const chain = devnet.chains.find((c) => c.chainId === chainId)!;
      return new LiveIndexer({
        registryFile: file,
        databaseUrl: devnet.dbUrl,
        ports: [port, port + 1],
        base: { logFile: join(devnet.dir, `live-group-${name}.log`), group: { name, viewsSchema: VIEWS } },
        planEnv: { [`PONDER_RPC_URL_${chainId}`]: chain.rpcUrl },
        snapshotIntervals: new Map([[chainId, chain.snapshotInterval]]),
        pollMs: 300,
        timeoutMs: 300_000,
        log: (m) => logs[name]!.push(m),
        onServingExit: () => logs[name]!.push("exited"),
      });
    };
    const port = await freePorts(4); // two for each group's deployments in turn
    const la = live("a", 1, port);
    const lb = live("b", 8453, port + 2);
    const waitFor = async (name: "a" | "b", re: RegExp) => {
      for (let i = 0; i < 1200 && !logs[name]!.some((l) => re.test(l)); i++) await sleep(250);
      expect(logs[name], `group ${name}: ${re}`).toContainEqual(expect.stringMatching(re));
    };
    try {
      await Promise.all([la.start(), lb.start()]);
      const [schemaA, schemaB] = [la.schema!, lb.schema!];
      for (const s of [schemaA, schemaB]) made.add(s);
      const health = (url: string) =>
        fetch(`${url}/health`).then(
          (r) => r.status,
          () => "down",
        );
      const oldB = lb.handle!.url; // Ponder's port: the one asked for, or the next free one
      expect(await health(oldB)).toBe(200);
      // the registry tables cannot be loaded this time: the switch stands all the same
      await withDb(devnet.dbUrl, (c) => c.query("ALTER TABLE registry.strategist RENAME TO strategist_away"));
      try {
        // group b's vaults change (one renamed); chain 1's do not
        const reg = JSON.parse(readFileSync(file, "utf8")) as { vaults: { chainId: number; name: string }[] };
        const renamed = reg.vaults.find((v) => v.chainId === 8453)!;
        renamed.name = `${renamed.name} (renamed)`;
        writeFileSync(file, `${JSON.stringify(reg, null, 2)}\n`);
        await waitFor("a", /^registry changed outside this group's chains \(1\): app_\w+_a serves on \(loading/);
        await waitFor("b", /^registry change published: views "indexer" now show app_\w+_b .*loading the registry/);
        made.add(lb.schema!);
      } finally {
        await withDb(devnet.dbUrl, (c) => c.query("ALTER TABLE registry.strategist_away RENAME TO strategist"));
      }
      // the old deployment of b is stopped; the new one (the other port) serves
      expect(await health(oldB)).toBe("down");
      expect(lb.handle!.url).not.toBe(oldB);
      expect(await health(lb.handle!.url)).toBe(200);
      expect(la.schema).toBe(schemaA);
      expect(logs.a!.filter((l) => l.includes("deployment"))).toEqual([]);
      expect(lb.schema).not.toBe(schemaB);
      expect((await groupRows()).filter((g) => g.published_at).map((g) => g.deployment_schema)).toEqual([
        schemaA,
        lb.schema,
      ]);
      const names = await withDb(analystUrl, (c) =>
        rows<{ name: string }>(c, `SELECT name FROM ${VIEWS}.vault WHERE chain_id = 8453`),
      );
      expect(names.map((n) => n.name)).toContainEqual(expect.stringMatching(/ \(renamed\)$/));
      expect(logs.a).not.toContain("exited");
      expect(logs.b).not.toContain("exited");
    } finally {
      await Promise.all([la.stop(), lb.stop()]);
      // the registry tables back to the devnet's registry, as the later test files expect them
      try {
        await loadRegistryData(db, loadRegistry(devnet.registryFile));
      } finally {
        await db.destroy();
      }
    }
  }, 600_000);
});
