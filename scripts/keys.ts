/**
 * npm run keys -- create <name> [--scope <scope>]...   prints the key once; stored hashed. A key
 *   reads every institutional route; each write route needs its scope (api/auth/scopes.ts).
 * npm run keys -- list
 * npm run keys -- revoke <id or prefix>
 * Reads DATABASE_URL.
 */
import { parseArgs } from "node:util";
import { createKey, revokeKey } from "../api/keys.js";
import { isScope, SCOPE_NAMES } from "../api/auth/scopes.js";
import { createDb, createPool, migrateToLatest } from "../jobs/db/client.js";
import { errMessage } from "./lib/procs.js";

function fail(msg: string): never {
  console.error(`keys: ${msg}`);
  console.error("usage: npm run keys -- create <name> [--scope <scope>]... | list | revoke <id or prefix>");
  process.exit(2);
}

async function main(): Promise<void> {
  let parsed;
  try {
    parsed = parseArgs({ allowPositionals: true, options: { scope: { type: "string", multiple: true } }, strict: true });
  } catch (err) {
    fail(errMessage(err));
  }
  const [cmd, arg, ...rest] = parsed.positionals;
  if (rest.length) fail(`unexpected arguments: ${rest.join(" ")}`);
  if (cmd === "create" && !arg?.trim()) fail("create needs a name");
  if (cmd === "revoke" && !arg) fail("revoke needs a key id or prefix");
  if (cmd === "list" && arg) fail("list takes no argument");
  if (!["create", "list", "revoke"].includes(cmd ?? "")) fail(cmd ? `unknown command "${cmd}"` : "give a command: create, list or revoke");
  for (const s of parsed.values.scope ?? []) if (!isScope(s)) fail(`--scope: "${s}" is not a scope (known: ${SCOPE_NAMES.join(", ")})`);
  const url = process.env.DATABASE_URL;
  if (!url || !/^postgres(ql)?:\/\//.test(url)) fail("DATABASE_URL must be set to a postgres:// URL");
  const db = createDb(createPool(url, 1, "vault-keys-cli"));
  try {
    await migrateToLatest(db);
    if (cmd === "create") {
      const { id, key } = await createKey(db, arg!.trim(), parsed.values.scope ?? []);
      console.log(`key ${id} for "${arg!.trim()}" (shown once; store it now):`);
      console.log(key);
    } else if (cmd === "list") {
      for (const k of await db.selectFrom("auth.api_key").selectAll().orderBy("created_at").execute()) {
        console.log(`${k.id}\tvk_${k.prefix}_…\t${k.name}\t${k.scopes.join(",") || "-"}\t${k.created_at.toISOString()}\t${k.revoked_at ? `revoked ${new Date(k.revoked_at).toISOString()}` : "active"}`);
      }
    } else {
      const n = await revokeKey(db, arg!);
      if (n === 0) {
        console.error(`keys: no active key with id or prefix "${arg}"`);
        process.exitCode = 1;
      } else console.log(`revoked ${n} key(s)`);
    }
  } finally {
    await db.destroy();
  }
}

main().catch((err) => {
  console.error(`keys failed: ${errMessage(err)}`);
  process.exit(1);
});
