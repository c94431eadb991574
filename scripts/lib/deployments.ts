/**
 * The indexer's deployment schemas (`app_<hash>`, `app_<hash>_<group>`) and which of them may go:
 * every registry change and every new build leaves the previous deployment's schema behind (a
 * return to it resumes it), a full copy of the indexed tables. `npm run indexer-prune` lists them
 * and drops those nothing needs.
 *
 * A deployment is kept when a view outside it reads it (the `indexer` views, a group union, an
 * analyst's own view), when a Ponder instance holds it (locked, its heartbeat fresh), or when an
 * indexer group records it (shown or pending, `ops.indexer_group`).
 */
import pg from "pg";
import { GROUP_TABLE, ident } from "./indexer-groups.js";

/** Ponder's own lock expiry (databaseHeartbeatTimeout): a heartbeat older than this is a stopped instance. */
const HEARTBEAT_TIMEOUT_MS = 25_000;
const DEPLOYMENT = /^app_[0-9a-f]{12}(_[a-z][a-z0-9_]{0,15})?$/;

export interface Deployment {
  schema: string;
  bytes: number;
  /** views outside the schema that read it */
  views: string[];
  /** a Ponder instance holds it now */
  running: boolean;
  /** an indexer group records it */
  group: string | null;
  /** when its instance last beat (null: never recorded) */
  lastActive: Date | null;
}

/** Why a deployment is kept, or null when nothing needs it. */
export function keptBecause(d: Deployment): string | null {
  if (d.views.length) return `read by ${d.views.slice(0, 3).join(", ")}${d.views.length > 3 ? ", ..." : ""}`;
  if (d.running) return "a running indexer holds it";
  if (d.group) return `recorded by indexer group ${d.group}`;
  return null;
}

export const droppable = (d: Deployment) => keptBecause(d) === null;

/** Views in other schemas that depend on relations of `schema`. */
const DEPENDENT_VIEWS = `
  SELECT DISTINCT vn.nspname || '.' || v.relname AS name
  FROM pg_depend d
  JOIN pg_rewrite r ON r.oid = d.objid
  JOIN pg_class v ON v.oid = r.ev_class
  JOIN pg_namespace vn ON vn.oid = v.relnamespace
  JOIN pg_class t ON t.oid = d.refobjid
  JOIN pg_namespace tn ON tn.oid = t.relnamespace
  WHERE d.classid = 'pg_rewrite'::regclass AND d.refclassid = 'pg_class'::regclass
    AND tn.nspname = $1 AND vn.nspname <> $1
  UNION
  SELECT DISTINCT cn.nspname || '.' || c.relname || ' (foreign key)'
  FROM pg_constraint k
  JOIN pg_class c ON c.oid = k.conrelid
  JOIN pg_namespace cn ON cn.oid = c.relnamespace
  JOIN pg_class t ON t.oid = k.confrelid
  JOIN pg_namespace tn ON tn.oid = t.relnamespace
  WHERE k.contype = 'f' AND tn.nspname = $1 AND cn.nspname <> $1
  ORDER BY 1`;

async function deploymentState(c: pg.ClientBase, schema: string, groups: Map<string, string>): Promise<Deployment> {
  const views = (await c.query<{ name: string }>(DEPENDENT_VIEWS, [schema])).rows.map((r) => r.name);
  const size = await c.query<{ bytes: string }>(
    `SELECT coalesce(sum(pg_total_relation_size(c.oid)), 0)::text AS bytes
     FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
     WHERE n.nspname = $1 AND c.relkind IN ('r', 'm', 'p')`,
    [schema],
  );
  const meta = await c.query<{ value: { is_locked?: number; heartbeat_at?: number } }>(
    `SELECT value FROM ${ident(schema)}._ponder_meta WHERE key = 'app'`,
  );
  const app = meta.rows[0]?.value;
  const beat = typeof app?.heartbeat_at === "number" ? app.heartbeat_at : null;
  return {
    schema,
    bytes: Number(size.rows[0]!.bytes),
    views,
    running: app?.is_locked === 1 && beat !== null && beat + HEARTBEAT_TIMEOUT_MS > Date.now(),
    group: groups.get(schema) ?? null,
    lastActive: beat === null ? null : new Date(beat),
  };
}

async function recordedGroups(c: pg.ClientBase): Promise<Map<string, string>> {
  const { rows } = await c.query<{ exists: boolean }>("SELECT to_regclass($1) IS NOT NULL AS exists", [GROUP_TABLE]);
  if (!rows[0]!.exists) return new Map();
  const groups = await c.query<{ deployment_schema: string; group_name: string; views_schema: string }>(
    `SELECT deployment_schema, group_name, views_schema FROM ${GROUP_TABLE}`,
  );
  return new Map(groups.rows.map((r) => [r.deployment_schema, `${r.group_name} (views ${r.views_schema})`]));
}

/** Every deployment schema of the database (a Ponder `_ponder_meta` in an `app_…` schema), by name. */
export async function listDeployments(databaseUrl: string): Promise<Deployment[]> {
  const c = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 10_000 });
  await c.connect();
  try {
    const { rows } = await c.query<{ schema: string }>(
      `SELECT n.nspname AS schema FROM pg_namespace n
       WHERE to_regclass(quote_ident(n.nspname) || '._ponder_meta') IS NOT NULL ORDER BY 1`,
    );
    const groups = await recordedGroups(c);
    const out: Deployment[] = [];
    for (const r of rows) {
      if (!DEPLOYMENT.test(r.schema)) continue;
      try {
        out.push(await deploymentState(c, r.schema, groups));
      } catch (err) {
        // dropped meanwhile (another prune): no longer a deployment to list
        if (!(droppedMeanwhile(err) && !(await schemaExists(c, r.schema)))) throw err;
      }
    }
    return out;
  } finally {
    await c.end();
  }
}

/** An error of a query naming a relation or schema that is not there (any more). */
const droppedMeanwhile = (err: unknown) => ["42P01", "3F000"].includes((err as { code?: string }).code ?? "");

async function schemaExists(c: pg.ClientBase, schema: string): Promise<boolean> {
  const { rows } = await c.query("SELECT 1 FROM pg_namespace WHERE nspname = $1", [schema]);
  return rows.length > 0;
}

/** What dropDeployment did: dropped it, kept it (why), or found it gone (another prune dropped it). */
export type DropOutcome = { outcome: "dropped" } | { outcome: "kept"; why: string } | { outcome: "gone" };

/**
 * Drops one deployment schema if nothing needs it, checked again with its tables locked, so a
 * view created meanwhile waits for this transaction (and then fails) instead of being dropped
 * with the schema. A schema another command dropped first (two prunes at once) is "gone".
 */
export async function dropDeployment(databaseUrl: string, schema: string): Promise<DropOutcome> {
  if (!DEPLOYMENT.test(schema)) throw new Error(`"${schema}" is not a deployment schema name`);
  const c = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 10_000 });
  await c.connect();
  try {
    await c.query("BEGIN");
    await c.query("SET LOCAL lock_timeout = '10s'");
    const tables = await c.query<{ relname: string }>(
      `SELECT c.relname FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace
       WHERE n.nspname = $1 AND c.relkind IN ('r', 'p')`,
      [schema],
    );
    if (tables.rows.length > 0) {
      const list = tables.rows.map((t) => `${ident(schema)}.${ident(t.relname)}`).join(", ");
      await c.query(`LOCK TABLE ${list} IN ACCESS EXCLUSIVE MODE`);
    }
    if (!(await schemaExists(c, schema))) {
      await c.query("ROLLBACK");
      return { outcome: "gone" };
    }
    const why = keptBecause(await deploymentState(c, schema, await recordedGroups(c)));
    if (why) {
      await c.query("ROLLBACK");
      return { outcome: "kept", why };
    }
    await c.query(`DROP SCHEMA ${ident(schema)} CASCADE`);
    await c.query("COMMIT");
    return { outcome: "dropped" };
  } catch (err) {
    await c.query("ROLLBACK").catch(() => undefined);
    // its tables dropped while this waited for their locks: gone, if the schema is
    if (droppedMeanwhile(err) && !(await schemaExists(c, schema))) return { outcome: "gone" };
    throw err;
  } finally {
    await c.end();
  }
}
