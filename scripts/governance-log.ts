/** Manual entries of a vault's governance audit log (registry.audit_entry): `npm run governance-log -- --help`. */
import { userInfo } from "node:os";
import { parseDateOrDateTime } from "../db/days.js";
import {
  CLI_DB_TIMEOUTS,
  type Command,
  commandFailed,
  databaseUrl,
  HELP_OPTION,
  missingTable,
  parseCommandLine,
  refuse,
  textArgument,
} from "./lib/cli.js";

const CMD: Command = {
  name: "governance-log",
  usage:
    "usage: npm run governance-log -- add --vault <address> [--chain <id>] --category <name> --text <text>\n" +
    "                                     [--time <ISO date-time>] [--author <name>]\n" +
    "       | list --vault <address> [--chain <id>] | remove <entry id>",
  help: `
Manual entries of a vault's governance audit log (registry.audit_entry), merged by
GET /api/v1/platform/governance/{vault}/audit_log with the timelock actions and on-chain events.

  add --vault <address> [--chain <id>] --category <name> --text <text> [--time <ISO>] [--author <name>]
      --category: 1 to 40 lower-case letters, digits, _ or - (e.g. incident, note, upgrade)
      --time: an ISO 8601 date-time with a time zone (default now), not before the vault's launch
      --author: default the OS user
  list --vault <address> [--chain <id>]
      the vault's entries, newest first, each with its chain: without --chain, the entries of that
      address on every chain it is registered on
  remove <entry id>   the entry's id (a UUID) is in list's first column

The vault must be in the registry (npm run registry -- load). An address registered on several
chains (every demo vault is on chains 1 and 8453) needs --chain for add.

Environment: DATABASE_URL (required). add and remove apply the database migrations first; list
reads only.`,
};

const ISO = /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}(:\d{2}(\.\d{1,6})?)?(Z|[+-]\d{2}:\d{2})$/;
const UUID = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i;

async function main(): Promise<void> {
  const parsed = parseCommandLine(CMD, {
    allowPositionals: true,
    options: {
      ...HELP_OPTION,
      vault: { type: "string" },
      chain: { type: "string" },
      category: { type: "string" },
      text: { type: "string" },
      time: { type: "string" },
      author: { type: "string" },
    },
  });
  const [cmd, id, ...rest] = parsed.positionals;
  const a = parsed.values;
  if (rest.length) refuse(CMD, `unexpected arguments: ${rest.join(" ")}`);
  if (!["add", "list", "remove"].includes(cmd ?? "")) {
    refuse(CMD, cmd ? `unknown command "${cmd}"` : "give a command: add, list or remove");
  }
  if (cmd === "remove") {
    if (!id || !UUID.test(id)) refuse(CMD, "remove needs the entry id (a UUID, from list)");
    if (Object.entries(a).some(([k, v]) => k !== "help" && v !== undefined)) {
      refuse(CMD, "remove takes only the entry id");
    }
  } else {
    if (id) refuse(CMD, `${cmd} takes no positional argument`);
    if (!a.vault || !/^[0-9A-Za-z]{1,128}$/.test(a.vault)) {
      refuse(CMD, "--vault <address> is required (an EVM 0x address or another chain's address)");
    }
  }
  // a chain id is a Postgres integer (int4) in the tables
  if (a.chain !== undefined && !(/^-?\d{1,10}$/.test(a.chain) && Math.abs(Number(a.chain)) <= 2 ** 31 - 1))
    refuse(CMD, `--chain: "${a.chain}" is not a chain id`);
  let at: Date | null = null;
  if (cmd === "add") {
    if (!a.category || !/^[a-z][a-z0-9_-]{0,39}$/.test(a.category)) {
      const rule = "must be 1 to 40 lower-case letters, digits, _ or - (e.g. incident, note, upgrade)";
      refuse(CMD, `--category: "${a.category ?? ""}" ${rule}`);
    }
    if (a.text === undefined || !a.text.trim()) refuse(CMD, "add needs --text");
    textArgument(CMD, "--text", a.text, 5000, { multiline: true });
    if (a.author !== undefined) textArgument(CMD, "--author", a.author, 100);
    if (a.time !== undefined) {
      const t = ISO.test(a.time) ? parseDateOrDateTime(a.time) : null;
      if (!t) {
        refuse(CMD, `--time: "${a.time}" is not an ISO 8601 date-time with a time zone (e.g. 2026-11-20T14:00:00Z)`);
      }
      at = new Date(t.ms);
      // a log of what happened: not of what is planned
      if (at.getTime() > Date.now() + 60_000) refuse(CMD, `--time ${at.toISOString()} is in the future`);
    } else at = new Date();
  } else if (cmd === "list" && (a.category || a.text || a.time || a.author)) {
    refuse(CMD, "list takes only --vault and --chain");
  }

  const url = databaseUrl(CMD);
  // loaded after the command line: --help and refusals load nothing else
  const { createDb, createPool, migrateToLatest } = await import("../db/client.js");
  const db = createDb(createPool(url, 1, "vault-governance-log-cli", CLI_DB_TIMEOUTS));
  try {
    if (cmd === "remove") {
      await migrateToLatest(db);
      const r = await db
        .deleteFrom("registry.audit_entry")
        .where("id", "=", id!)
        .returning(["chain_id", "vault", "category"])
        .executeTakeFirst();
      if (!r) {
        console.error(`governance-log: no entry ${id}`);
        process.exitCode = 1;
      } else console.log(`removed entry ${id} (${r.category}) of ${r.vault} on chain ${r.chain_id}`);
      return;
    }
    if (cmd === "list") {
      const missing = await missingTable(db, ["registry.vault", "registry.audit_entry"]);
      if (missing) {
        console.error(`governance-log: ${missing}`);
        process.exitCode = 1;
        return;
      }
    } else await migrateToLatest(db);

    const address = /^0x[0-9a-fA-F]{40}$/.test(a.vault!) ? a.vault!.toLowerCase() : a.vault!;
    let q = db
      .selectFrom("registry.vault")
      .select(["chain_id", "address", "name", "start_datetime"])
      .where("address", "=", address);
    if (a.chain !== undefined) q = q.where("chain_id", "=", Number(a.chain));
    const vaults = await q.orderBy("chain_id").execute();
    if (vaults.length === 0) {
      const where = a.chain !== undefined ? ` on chain ${a.chain}` : "";
      console.error(`governance-log: no vault ${a.vault}${where} in the registry`);
      process.exitCode = 1;
      return;
    }
    const chains = vaults.map((v) => v.chain_id);
    if (cmd === "list") {
      // one address on several chains is several vaults: every line names its chain
      const rows = await db
        .selectFrom("registry.audit_entry")
        .selectAll()
        .where("vault", "=", address)
        .where("chain_id", "in", chains)
        .orderBy("occurred_at", "desc")
        .orderBy("chain_id")
        .execute();
      console.log("id\tchain\toccurred_at\tcategory\tauthor\ttext");
      if (rows.length === 0) {
        const on = `chain${chains.length > 1 ? "s" : ""} ${chains.join(", ")}`;
        console.log(`(no governance-log entries for ${address} on ${on} yet)`);
      }
      for (const r of rows) {
        const when = new Date(r.occurred_at).toISOString();
        console.log(`${r.id}\t${r.chain_id}\t${when}\t${r.category}\t${r.author}\t${r.text}`);
      }
      return;
    }
    if (vaults.length > 1) {
      refuse(CMD, `vault ${address} is registered on chains ${chains.join(" and ")}: say which with --chain <id>`);
    }
    const v = vaults[0]!;
    if (v.start_datetime && at! < new Date(v.start_datetime)) {
      const launch = new Date(v.start_datetime).toISOString();
      refuse(CMD, `--time ${at!.toISOString()} is before the launch of ${v.name} (${launch}): the log starts there`);
    }
    const row = await db
      .insertInto("registry.audit_entry")
      .values({
        chain_id: v.chain_id,
        vault: v.address,
        category: a.category!,
        text: a.text!.trim(),
        occurred_at: at!,
        author: (a.author ?? userInfo().username).trim(),
      })
      .returning("id")
      .executeTakeFirstOrThrow();
    console.log(`entry ${row.id}: ${a.category} on ${v.name} (chain ${v.chain_id}) at ${at!.toISOString()}`);
  } finally {
    await db.destroy();
  }
}

main().catch((err) => commandFailed("governance-log", err));
