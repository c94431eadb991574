/** Manual points entries (registry.manual_points): `npm run points -- --help`. */
import { userInfo } from "node:os";
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
  name: "points",
  usage:
    "usage: npm run points -- add --wallet <address> --points <number> --reason <text> [--author <name>]\n" +
    "       | list [--wallet <address>]",
  help: `
Operator entries of manual points (registry.manual_points), e.g. a campaign bonus or a correction
(negative points). They count in the ledger and a wallet's totals as soon as they are committed
(derived.points_entry is a view over this table); the API's ranks follow within
POINTS_STANDINGS_MS.

  add --wallet <address> --points <number> --reason <text> [--author <name>]
        --points: a decimal other than 0, with up to 18 decimals and 30 digits before the point,
        negative written --points=-5; --reason: up to 500 characters, --author (up to 100)
        defaults to the OS user; neither may hold a tab, a line break or another control character
  list [--wallet <address>]   every entry (or one wallet's): id, created, wallet, points, author, reason

Environment: DATABASE_URL (required). add applies the database migrations first; list reads only.`,
};

async function main(): Promise<void> {
  const parsed = parseCommandLine(CMD, {
    allowPositionals: true,
    options: {
      ...HELP_OPTION,
      wallet: { type: "string" },
      points: { type: "string" },
      reason: { type: "string" },
      author: { type: "string" },
    },
  });
  const [cmd, ...rest] = parsed.positionals;
  const a = parsed.values;
  if (rest.length > 0) refuse(CMD, `unexpected arguments: ${rest.join(" ")}`);
  if (cmd !== "add" && cmd !== "list") refuse(CMD, cmd ? `unknown command "${cmd}"` : "give a command: add or list");
  if (a.wallet !== undefined && !/^0x[0-9a-fA-F]{40}$/.test(a.wallet)) {
    refuse(CMD, `--wallet: "${a.wallet}" is not a 0x-prefixed 20-byte address`);
  }
  if (cmd === "add") {
    if (!a.wallet) refuse(CMD, "add needs --wallet");
    // the tables are numeric(78,18), 60 digits before the point, and a wallet's total is a sum:
    // 30 digits an entry keep every sum the rollup makes within them
    if (!a.points || !/^-?\d{1,30}(\.\d{1,18})?$/.test(a.points)) {
      refuse(CMD, `--points: "${a.points ?? ""}" is not a decimal number (up to 30 digits and 18 decimals)`);
    }
    if (/^-?0*(\.0*)?$/.test(a.points)) refuse(CMD, "--points: 0 changes nothing; give the points to add");
    if (a.reason === undefined) refuse(CMD, "add needs --reason");
    textArgument(CMD, "--reason", a.reason, 500);
    if (a.author !== undefined) textArgument(CMD, "--author", a.author, 100);
  } else if (a.points !== undefined || a.reason !== undefined || a.author !== undefined) {
    refuse(CMD, "list takes only --wallet");
  }
  const url = databaseUrl(CMD);
  // loaded after the command line: --help and refusals load nothing else
  const { createDb, createPool, migrateToLatest } = await import("../db/client.js");
  const db = createDb(createPool(url, 1, "vault-points-cli", CLI_DB_TIMEOUTS));
  try {
    if (cmd === "list") {
      const missing = await missingTable(db, ["registry.manual_points"]);
      if (missing) {
        console.error(`points: ${missing}`);
        process.exitCode = 1;
        return;
      }
      let q = db.selectFrom("registry.manual_points").selectAll().orderBy("id");
      if (a.wallet) q = q.where("wallet", "=", a.wallet.toLowerCase());
      const rows = await q.execute();
      console.log("id\tcreated\twallet\tpoints\tauthor\treason");
      const whose = a.wallet ? ` for ${a.wallet.toLowerCase()}` : "";
      if (rows.length === 0) console.log(`(no manual points entries${whose} yet)`);
      for (const r of rows) {
        console.log(`${r.id}\t${r.created_at.toISOString()}\t${r.wallet}\t${r.points}\t${r.author}\t${r.reason}`);
      }
      return;
    }
    await migrateToLatest(db);
    const row = await db
      .insertInto("registry.manual_points")
      .values({
        wallet: a.wallet!.toLowerCase(),
        points: a.points!,
        reason: a.reason!.trim(),
        author: a.author?.trim() ?? userInfo().username,
      })
      .returning(["id", "created_at"])
      .executeTakeFirstOrThrow();
    console.log(`manual points entry ${row.id}: ${a.points} to ${a.wallet!.toLowerCase()} (${a.reason!.trim()})`);
  } finally {
    await db.destroy();
  }
}

main().catch((err) => commandFailed("points", err));
