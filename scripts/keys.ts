/** API keys of the institutional surface: `npm run keys -- --help`. */

import { isScope, SCOPE_NAMES } from "../api/auth/scopes.js";
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
  name: "keys",
  usage: "usage: npm run keys -- create <name> [--scope <scope>]... | list | revoke <id or prefix>",
  help: `
API keys of the institutional surface (/api/v1), sent as the x-api-key header.

  create <name> [--scope <scope>]...  creates a key and prints it once (only its SHA-256 hash is
                                      stored); without --scope the key only reads. The name: up
                                      to 100 characters, no tab, line break or control character
  list                                every key: id, prefix, name, scopes, created, status
  revoke <id or prefix>               revokes the key (refused by every API process within 2 s);
                                      the key itself, or as list shows it, also names it

Scopes: ${SCOPE_NAMES.join(", ")} (each write route needs its own).

Environment: DATABASE_URL (required). create and revoke apply the database migrations first;
list reads only.`,
};

async function main(): Promise<void> {
  const parsed = parseCommandLine(CMD, {
    allowPositionals: true,
    options: { ...HELP_OPTION, scope: { type: "string", multiple: true } },
  });
  const [cmd, arg, ...rest] = parsed.positionals;
  if (rest.length) refuse(CMD, `unexpected arguments: ${rest.join(" ")}`);
  if (cmd === "create" && !arg?.trim()) refuse(CMD, "create needs a name");
  if (cmd === "create") textArgument(CMD, "the key's name", arg, 100);
  if (cmd === "revoke" && !arg) refuse(CMD, "revoke needs a key id or prefix");
  if (cmd === "list" && arg) refuse(CMD, "list takes no argument");
  if (!["create", "list", "revoke"].includes(cmd ?? "")) {
    refuse(CMD, cmd ? `unknown command "${cmd}"` : "give a command: create, list or revoke");
  }
  const scopes = parsed.values.scope ?? [];
  for (const s of scopes) {
    if (!isScope(s)) refuse(CMD, `--scope: "${s}" is not a scope (known: ${SCOPE_NAMES.join(", ")})`);
  }
  if (cmd !== "create" && scopes.length) refuse(CMD, `${cmd} takes no --scope`);
  const url = databaseUrl(CMD);
  // loaded after the command line: --help and refusals load nothing else
  const [{ createKey, revokeKey }, { createDb, createPool, migrateToLatest }] = await Promise.all([
    import("../api/keys.js"),
    import("../db/client.js"),
  ]);
  const db = createDb(createPool(url, 1, "vault-keys-cli", CLI_DB_TIMEOUTS));
  try {
    if (cmd === "list") {
      const missing = await missingTable(db, ["auth.api_key"]);
      if (missing) {
        console.error(`keys: ${missing}`);
        process.exitCode = 1;
        return;
      }
      const keys = await db.selectFrom("auth.api_key").selectAll().orderBy("created_at").execute();
      console.log("id\tkey\tname\tscopes\tcreated\tstatus");
      if (keys.length === 0) console.log("(no API keys yet: npm run keys -- create <name>)");
      for (const k of keys) {
        const status = k.revoked_at ? `revoked ${new Date(k.revoked_at).toISOString()}` : "active";
        const scopes = k.scopes.join(",") || "-";
        console.log(`${k.id}\tvk_${k.prefix}_…\t${k.name}\t${scopes}\t${k.created_at.toISOString()}\t${status}`);
      }
      return;
    }
    await migrateToLatest(db);
    if (cmd === "create") {
      const { id, key } = await createKey(db, arg!.trim(), scopes);
      console.log(`key ${id} for "${arg!.trim()}" (shown once; store it now):`);
      console.log(key);
    } else {
      // the key as list shows it (vk_<prefix>_…) or whole: its prefix
      const n = await revokeKey(db, /^vk_([0-9a-f]{12})(_.*)?$/.exec(arg!)?.[1] ?? arg!);
      if (n === 0) {
        console.error(`keys: no active key with id or prefix "${arg}"`);
        process.exitCode = 1;
      } else console.log(`revoked ${n} key(s)`);
    }
  } finally {
    await db.destroy();
  }
}

main().catch((err) => commandFailed("keys", err));
