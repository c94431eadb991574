/**
 * Manual entries of a vault's governance audit log (registry.audit_entry), merged by
 * GET /api/v1/platform/governance/{vault}/audit_log with the timelock actions and on-chain events.
 *
 *   npm run governance-log -- add --vault <address> [--chain <id>] --category <name> --text <text> [--time <ISO date-time>] [--author <name>]
 *   npm run governance-log -- list --vault <address> [--chain <id>]
 *   npm run governance-log -- remove <entry id>
 *
 * The vault must be in the registry (`--chain` when its address is on several chains); the time
 * defaults to now and may not precede the vault's launch (the log starts there). The author
 * defaults to the OS user. Reads DATABASE_URL.
 */
import { userInfo } from "node:os";
import { parseArgs } from "node:util";
import { createDb, createPool, migrateToLatest } from "../jobs/db/client.js";
import { errMessage } from "./lib/procs.js";

const USAGE =
  "usage: npm run governance-log -- add --vault <address> [--chain <id>] --category <name> --text <text> [--time <ISO date-time>] [--author <name>] | list --vault <address> [--chain <id>] | remove <entry id>";

function fail(msg: string): never {
  console.error(`governance-log: ${msg}`);
  console.error(USAGE);
  process.exit(2);
}

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})$/;

async function main(): Promise<void> {
  let parsed;
  try {
    parsed = parseArgs({
      allowPositionals: true,
      options: {
        vault: { type: "string" },
        chain: { type: "string" },
        category: { type: "string" },
        text: { type: "string" },
        time: { type: "string" },
        author: { type: "string" },
      },
      strict: true,
    });
  } catch (err) {
    fail(errMessage(err));
  }
  const [cmd, id, ...rest] = parsed.positionals;
  const a = parsed.values;
  if (rest.length) fail(`unexpected arguments: ${rest.join(" ")}`);
  if (!["add", "list", "remove"].includes(cmd ?? "")) fail(cmd ? `unknown command "${cmd}"` : "give a command: add, list or remove");
  if (cmd === "remove") {
    if (!id || !/^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(id)) fail("remove needs the entry id (a UUID, from list)");
  } else {
    if (id) fail(`${cmd} takes no positional argument`);
    if (!a.vault || !/^[0-9A-Za-z]{1,128}$/.test(a.vault)) fail("--vault <address> is required (an EVM 0x address or another chain's address)");
  }
  if (a.chain !== undefined && !/^[1-9]\d{0,9}$/.test(a.chain)) fail(`--chain: "${a.chain}" is not a chain id`);
  let at: Date | null = null;
  if (cmd === "add") {
    if (!a.category || !/^[a-z][a-z0-9_-]{0,39}$/.test(a.category)) fail(`--category: "${a.category ?? ""}" must be 1 to 40 lower-case letters, digits, _ or - (e.g. incident, note, upgrade)`);
    if (!a.text?.trim()) fail("add needs --text");
    if (a.text.length > 5000) fail("--text is longer than 5000 characters");
    if (a.author !== undefined && !a.author.trim()) fail("--author is empty");
    if (a.time !== undefined) {
      if (!ISO.test(a.time) || Number.isNaN(Date.parse(a.time))) fail(`--time: "${a.time}" is not an ISO 8601 date-time with a time zone (e.g. 2026-11-20T14:00:00Z)`);
      at = new Date(a.time);
    } else at = new Date();
  } else if (a.category || a.text || a.time || a.author) fail(`${cmd} takes only --vault and --chain`);

  const url = process.env.DATABASE_URL;
  if (!url || !/^postgres(ql)?:\/\//.test(url)) fail("DATABASE_URL must be set to a postgres:// URL");
  const db = createDb(createPool(url, 1, "vault-governance-log-cli"));
  try {
    await migrateToLatest(db);
    if (cmd === "remove") {
      const r = await db.deleteFrom("registry.audit_entry").where("id", "=", id!).returning(["vault", "category"]).executeTakeFirst();
      if (!r) {
        console.error(`governance-log: no entry ${id}`);
        process.exitCode = 1;
      } else console.log(`removed entry ${id} (${r.category}) of ${r.vault}`);
      return;
    }
    const address = /^0x[0-9a-fA-F]{40}$/.test(a.vault!) ? a.vault!.toLowerCase() : a.vault!;
    let q = db.selectFrom("registry.vault").select(["chain_id", "address", "name", "start_datetime"]).where("address", "=", address);
    if (a.chain) q = q.where("chain_id", "=", Number(a.chain));
    const vaults = await q.orderBy("chain_id").execute();
    if (vaults.length === 0) {
      console.error(`governance-log: no vault ${a.vault}${a.chain ? ` on chain ${a.chain}` : ""} in the registry`);
      process.exitCode = 1;
      return;
    }
    if (vaults.length > 1) fail(`vault ${address} is on chains ${vaults.map((v) => v.chain_id).join(", ")}: give --chain`);
    const v = vaults[0]!;
    if (cmd === "list") {
      const rows = await db.selectFrom("registry.audit_entry").selectAll().where("chain_id", "=", v.chain_id).where("vault", "=", v.address).orderBy("occurred_at", "desc").execute();
      for (const r of rows) console.log(`${r.id}\t${new Date(r.occurred_at).toISOString()}\t${r.category}\t${r.author}\t${r.text}`);
      return;
    }
    if (v.start_datetime && at! < new Date(v.start_datetime)) {
      fail(`--time ${at!.toISOString()} is before the launch of ${v.name} (${new Date(v.start_datetime).toISOString()}): the log starts at launch`);
    }
    const row = await db
      .insertInto("registry.audit_entry")
      .values({ chain_id: v.chain_id, vault: v.address, category: a.category!, text: a.text!.trim(), occurred_at: at!, author: (a.author ?? userInfo().username).trim() })
      .returning("id")
      .executeTakeFirstOrThrow();
    console.log(`entry ${row.id}: ${a.category} on ${v.name} (chain ${v.chain_id}) at ${at!.toISOString()}`);
  } finally {
    await db.destroy();
  }
}

main().catch((err) => {
  console.error(`governance-log failed: ${errMessage(err)}`);
  process.exit(1);
});
