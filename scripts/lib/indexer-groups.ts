/**
 * Indexer groups: several indexer processes, each on its own set of chains and its own deployment
 * schema (`app_<hash>_<group>`), behind ONE views schema (`indexer`) whose every view is the
 * `UNION ALL` of the same table in the current deployment of every group.
 *
 * A group's deployment, once at every one of its chains' heads, is recorded in `ops.indexer_group`
 * (this module is that table's one writer), and the views are re-created over the newest
 * deployment of every group that has the same tables and columns as the one publishing, in one
 * transaction serialised by an advisory lock (two groups publishing at once take turns). When
 * another group has no such deployment yet (an upgrade that changes the tables, half rolled
 * out), or two groups would show the same chain, the views stay as they are and the reason is
 * returned: the last group to publish the new build switches them all.
 *
 * Every indexed table has a `chain_id` column (the handlers' `withdrawal_match` keys start with
 * the chain id), so the groups' rows never collide; `_ponder_checkpoint` holds one row per chain
 * and `_ponder_meta` one row (key `app`) per group's deployment.
 */
import { createHash } from "node:crypto";
import pg from "pg";
import { inViewSwitch } from "./view-switch.js";

export const GROUP_TABLE = "ops.indexer_group";
export const GROUP_NAME = /^[a-z][a-z0-9_]{0,15}$/;

/** Double-quoted SQL identifier. */
export const ident = (name: string) => `"${name.replaceAll('"', '""')}"`;

/**
 * The deployment schema of a group: the build's `app_<hash>` hashed again with the group's chain
 * ids (Ponder's build id covers the contracts and so the chains: a group whose chains change
 * needs a schema of its own), then the group's name.
 */
export function groupDeploymentSchema(buildSchema: string, group: string, chainIds: readonly number[]): string {
  if (!GROUP_NAME.test(group)) throw new Error(`INDEXER_GROUP "${group}": must match ${GROUP_NAME.source}`);
  const h = createHash("sha256")
    .update(buildSchema)
    .update(`:${[...chainIds].sort((a, b) => a - b).join(",")}`);
  return `app_${h.digest("hex").slice(0, 12)}_${group}`;
}

/** The statements that re-point one view at the union of `schemas` (sorted: a stable order). */
export function unionViewSql(viewsSchema: string, name: string, schemas: readonly string[]): string[] {
  if (schemas.length === 0) throw new Error(`view ${name}: no deployment to show`);
  const body = [...schemas]
    .sort()
    .map((s) => `SELECT * FROM ${ident(s)}.${ident(name)}`)
    .join(" UNION ALL ");
  const view = `${ident(viewsSchema)}.${ident(name)}`;
  return [`DROP VIEW IF EXISTS ${view}`, `CREATE VIEW ${view} AS ${body}`];
}

/** Relation name → its columns in order (`name type`): what a `SELECT *` of each returns. */
export type Shape = Map<string, string[]>;

/** How `b` differs from `a`, in words; empty when the two have the same relations and columns. */
export function shapeDiff(a: Shape, b: Shape): string[] {
  const out: string[] = [];
  for (const [name, cols] of a) {
    const other = b.get(name);
    if (!other) out.push(`no ${name}`);
    else if (other.join(",") !== cols.join(","))
      out.push(`${name} has columns (${other.join(", ")}) instead of (${cols.join(", ")})`);
  }
  for (const name of b.keys()) if (!a.has(name)) out.push(`an extra ${name}`);
  return out;
}

export interface GroupDeployment {
  group: string;
  schema: string;
  chainIds: number[];
  readyAt: Date;
  publishedAt: Date | null;
}

export interface Choice {
  /** the deployment shown for every group, when every group has one fitting the target */
  chosen: GroupDeployment[] | null;
  /** why not, one sentence per group or chain in the way */
  reasons: string[];
}

/**
 * Picks, for every group, its newest deployment with the target's shape; `target` itself for its
 * own group. Refuses (chosen null, with reasons) when a group has none, or when two chosen
 * deployments index the same chain.
 */
export function chooseDeployments(
  rows: readonly GroupDeployment[],
  shapes: ReadonlyMap<string, Shape>,
  target: GroupDeployment,
): Choice {
  const targetShape = shapes.get(target.schema);
  if (!targetShape) return { chosen: null, reasons: [`deployment ${target.schema} does not exist`] };
  const groups = [...new Set([target.group, ...rows.map((r) => r.group)])].sort();
  const chosen: GroupDeployment[] = [];
  const reasons: string[] = [];
  for (const g of groups) {
    if (g === target.group) {
      chosen.push(target);
      continue;
    }
    const own = rows.filter((r) => r.group === g).sort((a, b) => b.readyAt.getTime() - a.readyAt.getTime());
    const fit = own.find((r) => {
      const s = shapes.get(r.schema);
      return s !== undefined && shapeDiff(targetShape, s).length === 0;
    });
    if (fit) chosen.push(fit);
    else {
      const newest = own.find((r) => shapes.has(r.schema));
      const diff = newest ? shapeDiff(targetShape, shapes.get(newest.schema)!) : ["no deployment left"];
      reasons.push(
        `group ${g} has no deployment with the tables of ${target.schema} ` +
          `(${newest ? `its newest, ${newest.schema}, has ` : ""}${diff.slice(0, 3).join("; ")}` +
          `${diff.length > 3 ? "; ..." : ""})`,
      );
    }
  }
  const owner = new Map<number, string>();
  for (const d of chosen)
    for (const c of d.chainIds) {
      const other = owner.get(c);
      if (other)
        reasons.push(`chain ${c} is in group ${other}${other === d.group ? " twice" : ` and group ${d.group}`}`);
      else owner.set(c, d.group);
    }
  return reasons.length ? { chosen: null, reasons } : { chosen, reasons };
}

/** The relations a deployment's views show and their columns; null when the schema is gone. */
export async function deploymentShape(client: pg.ClientBase, schema: string): Promise<Shape | null> {
  const found = await client.query("SELECT to_regclass($1) IS NOT NULL AS ok", [`${ident(schema)}._ponder_meta`]);
  if (!found.rows[0]?.ok) return null;
  const meta = await client.query<{ value: { table_names?: string[]; view_names?: string[] } }>(
    `SELECT value FROM ${ident(schema)}._ponder_meta WHERE key = 'app'`,
  );
  const app = meta.rows[0]?.value;
  if (!app?.table_names) throw new Error(`schema ${schema} holds no Ponder app of a compatible version`);
  const names = [...app.table_names, ...(app.view_names ?? []), "_ponder_meta", "_ponder_checkpoint"].sort();
  const cols = await client.query<{ table_name: string; col: string }>(
    `SELECT c.relname AS table_name, a.attname || ' ' || format_type(a.atttypid, a.atttypmod) AS col
       FROM pg_attribute a JOIN pg_class c ON c.oid = a.attrelid JOIN pg_namespace n ON n.oid = c.relnamespace
      WHERE n.nspname = $1 AND c.relname = ANY($2) AND a.attnum > 0 AND NOT a.attisdropped
      ORDER BY c.relname, a.attnum`,
    [schema, names],
  );
  const shape: Shape = new Map(names.map((n) => [n, []]));
  for (const r of cols.rows) shape.get(r.table_name)!.push(r.col);
  return shape;
}

/**
 * Taken (in a transaction) around every CREATE ... IF NOT EXISTS in `ops`: two processes creating
 * the same schema or table at once fail on a unique index otherwise, IF NOT EXISTS or not.
 */
export const opsDdlLock = "SELECT pg_advisory_xact_lock(hashtext('vaults:ops-ddl'))";

async function ensureTable(client: pg.ClientBase): Promise<void> {
  await client.query(opsDdlLock);
  await client.query("CREATE SCHEMA IF NOT EXISTS ops");
  await client.query(`CREATE TABLE IF NOT EXISTS ${GROUP_TABLE} (
    views_schema text NOT NULL,
    group_name text NOT NULL,
    deployment_schema text NOT NULL,
    chain_ids integer[] NOT NULL,
    ready_at timestamptz NOT NULL DEFAULT now(),
    published_at timestamptz,
    PRIMARY KEY (views_schema, group_name, deployment_schema)
  )`);
}

async function readGroups(client: pg.ClientBase, viewsSchema: string): Promise<GroupDeployment[]> {
  const res = await client.query<{
    group_name: string;
    deployment_schema: string;
    chain_ids: number[];
    ready_at: Date;
    published_at: Date | null;
  }>(
    `SELECT group_name, deployment_schema, chain_ids, ready_at, published_at FROM ${GROUP_TABLE}
      WHERE views_schema = $1 ORDER BY group_name, ready_at DESC`,
    [viewsSchema],
  );
  return res.rows.map((r) => ({
    group: r.group_name,
    schema: r.deployment_schema,
    chainIds: r.chain_ids,
    readyAt: r.ready_at,
    publishedAt: r.published_at,
  }));
}

/** One transaction holding the views schema's lock (serialises every writer of its groups). */
async function locked<T>(databaseUrl: string, viewsSchema: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 10_000 });
  await client.connect();
  try {
    // bounded lock waits, retried (view-switch.ts): a reader of one view holds no other back
    return await inViewSwitch(client, async () => {
      await client.query("SELECT pg_advisory_xact_lock(hashtext($1))", [`vaults:indexer-views:${viewsSchema}`]);
      await ensureTable(client);
      return fn(client);
    });
  } finally {
    await client.end();
  }
}

/** Re-creates every view over `chosen`, marks them published and forgets what they superseded. */
async function switchViews(
  client: pg.ClientBase,
  viewsSchema: string,
  shape: Shape,
  chosen: readonly GroupDeployment[],
  rows: readonly GroupDeployment[],
): Promise<void> {
  await client.query(`CREATE SCHEMA IF NOT EXISTS ${ident(viewsSchema)}`);
  const schemas = chosen.map((d) => d.schema);
  for (const name of shape.keys()) for (const s of unionViewSql(viewsSchema, name, schemas)) await client.query(s);
  for (const d of chosen) {
    const older = rows.filter((r) => r.group === d.group && r.schema !== d.schema && r.readyAt <= d.readyAt);
    await client.query(
      `DELETE FROM ops.indexer_group WHERE views_schema = $1 AND group_name = $2 AND deployment_schema = ANY($3)`,
      [viewsSchema, d.group, older.map((r) => r.schema)],
    );
    await client.query(
      `UPDATE ops.indexer_group SET published_at = CASE WHEN deployment_schema = $3 THEN now() END
        WHERE views_schema = $1 AND group_name = $2`,
      [viewsSchema, d.group, d.schema],
    );
  }
}

export interface PublishResult {
  /** the deployments the views now show, or null when they were left as they were */
  shown: GroupDeployment[] | null;
  reasons: string[];
}

/** Loads the rows and the shapes of their deployments, forgetting rows whose schema was dropped. */
async function groupsWithShapes(client: pg.ClientBase, viewsSchema: string) {
  const rows = await readGroups(client, viewsSchema);
  const shapes = new Map<string, Shape>();
  const live: GroupDeployment[] = [];
  for (const r of rows) {
    const s = await deploymentShape(client, r.schema);
    if (s) {
      shapes.set(r.schema, s);
      live.push(r);
    } else
      await client.query(`DELETE FROM ops.indexer_group WHERE views_schema = $1 AND deployment_schema = $2`, [
        viewsSchema,
        r.schema,
      ]);
  }
  return { rows: live, shapes };
}

/**
 * A group's deployment is at its chains' heads: records it and, when every other group has a
 * deployment of the same tables and no chain is shown twice, re-points every view of
 * `viewsSchema` at the union (one transaction). Otherwise the views are left as they are and the
 * reasons returned; the deployment stays recorded, to be shown when the other groups catch up.
 */
export async function publishGroup(
  databaseUrl: string,
  opts: { group: string; schema: string; chainIds: readonly number[]; viewsSchema: string },
): Promise<PublishResult> {
  if (!GROUP_NAME.test(opts.group)) throw new Error(`group "${opts.group}": must match ${GROUP_NAME.source}`);
  return locked(databaseUrl, opts.viewsSchema, async (client) => {
    await client.query(
      `INSERT INTO ops.indexer_group (views_schema, group_name, deployment_schema, chain_ids) VALUES ($1, $2, $3, $4)
       ON CONFLICT (views_schema, group_name, deployment_schema)
       DO UPDATE SET chain_ids = EXCLUDED.chain_ids, ready_at = now()`,
      [opts.viewsSchema, opts.group, opts.schema, [...opts.chainIds]],
    );
    const { rows, shapes } = await groupsWithShapes(client, opts.viewsSchema);
    const target = rows.find((r) => r.group === opts.group && r.schema === opts.schema);
    if (!target) throw new Error(`deployment schema ${opts.schema} does not exist`);
    const { chosen, reasons } = chooseDeployments(rows, shapes, target);
    if (!chosen) return { shown: null, reasons };
    await switchViews(client, opts.viewsSchema, shapes.get(target.schema)!, chosen, rows);
    return { shown: chosen, reasons: [] };
  });
}

/**
 * Forgets a group (its process stopped first) and re-points the views at the other groups: their
 * newest deployments of the newest shape that fits together. Refused for the last group, whose
 * views would have nothing left to show. The group's deployment schema is not dropped.
 */
export async function removeGroup(
  databaseUrl: string,
  opts: { group: string; viewsSchema: string },
): Promise<GroupDeployment[]> {
  return locked(databaseUrl, opts.viewsSchema, async (client) => {
    const all = await readGroups(client, opts.viewsSchema);
    if (!all.some((r) => r.group === opts.group))
      throw new Error(`no group "${opts.group}" behind the views "${opts.viewsSchema}"`);
    if (all.every((r) => r.group === opts.group))
      throw new Error(
        `group "${opts.group}" is the only group behind "${opts.viewsSchema}": start another group (or a single ` +
          `indexer) first`,
      );
    await client.query(`DELETE FROM ops.indexer_group WHERE views_schema = $1 AND group_name = $2`, [
      opts.viewsSchema,
      opts.group,
    ]);
    const { rows, shapes } = await groupsWithShapes(client, opts.viewsSchema);
    const reasons: string[] = [];
    for (const target of [...rows].sort((a, b) => b.readyAt.getTime() - a.readyAt.getTime())) {
      const { chosen, reasons: why } = chooseDeployments(rows, shapes, target);
      if (chosen) {
        await switchViews(client, opts.viewsSchema, shapes.get(target.schema)!, chosen, rows);
        return chosen;
      }
      reasons.push(...why);
    }
    throw new Error(
      `the other groups' deployments do not fit together (nothing changed): ${[...new Set(reasons)].join("; ")}`,
    );
  });
}

/** Every group deployment recorded for `viewsSchema` (empty without the table). */
export async function listGroups(databaseUrl: string, viewsSchema: string): Promise<GroupDeployment[]> {
  const client = new pg.Client({ connectionString: databaseUrl, connectionTimeoutMillis: 10_000 });
  await client.connect();
  try {
    const exists = await client.query("SELECT to_regclass($1) IS NOT NULL AS ok", [GROUP_TABLE]);
    return exists.rows[0]?.ok ? await readGroups(client, viewsSchema) : [];
  } finally {
    await client.end();
  }
}
