/**
 * What docs/operations.md §7 says of the migrations, each on a database of its own (the solo files'
 * Postgres): an upgrade from every earlier release point ends in the same schema as a fresh
 * database, with the rows written before it kept; every `down` undoes its `up` (down to nothing,
 * then up again, the same schema); pending migrations apply all or none; simultaneous starts apply
 * each once; older code refuses a database with a migration it does not know, by name.
 */
import { type Kysely, type Migration, Migrator, sql } from "kysely";
import { afterAll, describe, expect, inject, it } from "vitest";
import { createDb, createPool, migrateToLatest } from "../../db/client.js";
import { migrations } from "../../db/migrations/index.js";
import { withDb } from "../helpers.js";

const cluster = inject("cluster");
const SCHEMAS = ["derived", "registry", "auth"];
const NAMES = Object.keys(migrations);
const made: string[] = [];

/** A new empty database; its URL. */
async function scratch(name: string): Promise<string> {
  await withDb(cluster.dbUrl, async (c) => {
    await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
    await c.query(`CREATE DATABASE ${name}`);
  });
  if (!made.includes(name)) made.push(name);
  return cluster.dbUrl.replace(/\/[^/]+$/, `/${name}`);
}

afterAll(async () => {
  await withDb(cluster.dbUrl, async (c) => {
    for (const name of made) await c.query(`DROP DATABASE IF EXISTS ${name} WITH (FORCE)`);
  });
});

/** The migrator the service uses, over `list` (default every migration). */
// biome-ignore lint/suspicious/noExplicitAny: Kysely's Migrator takes a database of any schema
function migrator(db: Kysely<any>, list: Record<string, Migration> = migrations) {
  return new Migrator({ db, provider: { getMigrations: async () => list }, migrationTableSchema: "derived" });
}

/** Every table, column, constraint, index, view and function of the service's schemas, as text. */
async function schemaOf(url: string): Promise<string[]> {
  return withDb(url, async (c) => {
    const q = async (text: string) => (await c.query<{ x: string }>(text, [SCHEMAS])).rows.map((r) => r.x);
    return [
      ...(await q(`SELECT 'schema ' || nspname AS x FROM pg_namespace WHERE nspname = ANY($1)`)),
      ...(await q(
        `SELECT format('column %s.%s.%s %s %s %s', table_schema, table_name, column_name, data_type,
                is_nullable, coalesce(column_default, '')) AS x
           FROM information_schema.columns WHERE table_schema = ANY($1)`,
      )),
      ...(await q(
        `SELECT format('constraint %s.%s %s', n.nspname, con.conname, pg_get_constraintdef(con.oid)) AS x
           FROM pg_constraint con JOIN pg_namespace n ON n.oid = con.connamespace WHERE n.nspname = ANY($1)`,
      )),
      ...(await q(`SELECT 'index ' || indexdef AS x FROM pg_indexes WHERE schemaname = ANY($1)`)),
      ...(await q(
        `SELECT format('view %s.%s %s', schemaname, viewname, definition) AS x FROM pg_views
          WHERE schemaname = ANY($1)`,
      )),
      ...(await q(
        `SELECT format('function %s.%s %s', n.nspname, p.proname, pg_get_functiondef(p.oid)) AS x
           FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = ANY($1)`,
      )),
    ].sort();
  });
}

describe("migrations (operations §7)", () => {
  it("an upgrade from every earlier release point: the fresh schema, and the rows written before it", async () => {
    const fresh = await scratch("mig_fresh");
    const fdb = createDb(createPool(fresh, 2, "mig-test"));
    try {
      expect(await migrateToLatest(fdb)).toEqual(NAMES);
      expect(await migrateToLatest(fdb)).toEqual([]); // nothing pending: nothing applied
    } finally {
      await fdb.destroy();
    }
    const want = await schemaOf(fresh);
    expect(want.length).toBeGreaterThan(100);

    for (let k = 1; k < NAMES.length; k++) {
      const url = await scratch("mig_upgrade");
      const db = createDb(createPool(url, 2, "mig-test"));
      try {
        // the database as release k left it (migrations 1..k), with a row written then
        const older = Object.fromEntries(NAMES.slice(0, k).map((n) => [n, migrations[n]!]));
        const { error } = await migrator(db, older).migrateToLatest();
        expect(error, `up to ${NAMES[k - 1]}`).toBeUndefined();
        const found = await sql<{ t: string | null }>`SELECT to_regclass('registry.strategist')::text AS t`.execute(db);
        const hasStrategist = found.rows[0]!.t !== null; // from the third migration on
        expect(hasStrategist).toBe(k >= 3);
        if (hasStrategist) await sql`INSERT INTO registry.strategist (name) VALUES ('kept')`.execute(db);
        // then the current code starts
        expect(await migrateToLatest(db), `from ${NAMES[k - 1]}`).toEqual(NAMES.slice(k));
        expect(await schemaOf(url), `upgraded from ${NAMES[k - 1]}`).toEqual(want);
        const kept = await sql<{ name: string }>`SELECT name FROM registry.strategist`.execute(db);
        expect(kept.rows, `rows kept from ${NAMES[k - 1]}`).toEqual(hasStrategist ? [{ name: "kept" }] : []);
      } finally {
        await db.destroy();
      }
    }
  }, 300_000);

  it("every down undoes its up: down to nothing, up again, the same schema", async () => {
    const url = await scratch("mig_down");
    const db = createDb(createPool(url, 2, "mig-test"));
    try {
      await migrateToLatest(db);
      const want = await schemaOf(url);
      for (let k = NAMES.length - 1; k >= 0; k--) {
        const { error, results } = await migrator(db).migrateDown();
        expect(error, `down of ${NAMES[k]}`).toBeUndefined();
        expect(results?.map((r) => r.migrationName)).toEqual([NAMES[k]]);
      }
      // nothing of the service's is left but the migrator's own table (and the schema holding it)
      const left = (await schemaOf(url)).filter((x) => !/kysely_migration|^schema derived$/.test(x));
      expect(left).toEqual([]);
      expect(await migrateToLatest(db)).toEqual(NAMES);
      expect(await schemaOf(url)).toEqual(want);
    } finally {
      await db.destroy();
    }
  }, 120_000);

  it("pending migrations apply all or none: a failing one leaves the database as it was", async () => {
    const url = await scratch("mig_atomic");
    const db = createDb(createPool(url, 2, "mig-test"));
    try {
      const first = Object.fromEntries(NAMES.slice(0, 5).map((n) => [n, migrations[n]!]));
      await migrator(db, first).migrateToLatest();
      const before = await schemaOf(url);
      const broken: Record<string, Migration> = {
        ...migrations,
        "2099-01-01-9999-broken": { up: async (d) => void (await sql`SELECT * FROM no_such_table`.execute(d)) },
      };
      const { error, results } = await migrator(db, broken).migrateToLatest();
      expect(String(error)).toMatch(/no_such_table/);
      expect(results?.find((r) => r.status === "Error")?.migrationName).toBe("2099-01-01-9999-broken");
      expect(await schemaOf(url)).toEqual(before);
      const applied = await sql<{ name: string }>`SELECT name FROM derived.kysely_migration ORDER BY name`.execute(db);
      expect(applied.rows.map((r) => r.name)).toEqual(NAMES.slice(0, 5));
    } finally {
      await db.destroy();
    }
  }, 120_000);

  it("simultaneous starts apply each migration once", async () => {
    // rounds of starts on an empty database, their connections open first so that they collide
    for (let round = 0; round < 5; round++) {
      const url = await scratch("mig_race");
      const dbs = Array.from({ length: 6 }, () => createDb(createPool(url, 2, "mig-test")));
      try {
        await Promise.all(dbs.map((db) => sql`SELECT 1`.execute(db)));
        const applied = await Promise.all(dbs.map((db) => migrateToLatest(db)));
        expect(applied.flat().sort()).toEqual([...NAMES].sort());
        const n = await sql<{ n: number }>`SELECT count(*)::int AS n FROM derived.kysely_migration`.execute(dbs[0]!);
        expect(n.rows[0]!.n).toBe(NAMES.length);
      } finally {
        await Promise.all(dbs.map((db) => db.destroy()));
      }
    }
  }, 120_000);

  it("older code refuses a database with a migration it does not know, naming it", async () => {
    const url = await scratch("mig_newer");
    const db = createDb(createPool(url, 2, "mig-test"));
    try {
      const newer: Record<string, Migration> = {
        ...migrations,
        "2099-01-01-9999-newer": { up: async (d) => void (await sql`CREATE TABLE derived.newer (x int)`.execute(d)) },
      };
      await migrator(db, newer).migrateToLatest();
      await expect(migrateToLatest(db)).rejects.toThrow(/2099-01-01-9999-newer/);
    } finally {
      await db.destroy();
    }
  }, 120_000);
});
