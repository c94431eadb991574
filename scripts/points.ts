/**
 * npm run points -- add --wallet <address> --points <number> --reason <text> [--author <name>]
 * npm run points -- list [--wallet <address>]
 *
 * Operator entries of manual points (registry.manual_points). The next fan-out (within
 * FANOUT_EVERY_S, or at once with `npm run recompute`) puts them into the ledger and balances.
 * Reads DATABASE_URL.
 */
import { parseArgs } from "node:util";
import { userInfo } from "node:os";
import { createDb, createPool, migrateToLatest } from "../jobs/db/client.js";
import { errMessage } from "./lib/procs.js";

function fail(msg: string): never {
  console.error(`points: ${msg}`);
  console.error("usage: npm run points -- add --wallet <address> --points <number> --reason <text> [--author <name>] | list [--wallet <address>]");
  process.exit(2);
}

async function main(): Promise<void> {
  let parsed;
  try {
    parsed = parseArgs({
      allowPositionals: true,
      options: { wallet: { type: "string" }, points: { type: "string" }, reason: { type: "string" }, author: { type: "string" } },
      strict: true,
    });
  } catch (err) {
    fail(errMessage(err));
  }
  const [cmd, ...rest] = parsed.positionals;
  const a = parsed.values;
  if (rest.length > 0) fail(`unexpected arguments: ${rest.join(" ")}`);
  if (cmd !== "add" && cmd !== "list") fail(cmd ? `unknown command "${cmd}"` : "give a command: add or list");
  if (a.wallet && !/^0x[0-9a-fA-F]{40}$/.test(a.wallet)) fail(`--wallet: "${a.wallet}" is not a 0x-prefixed 20-byte address`);
  if (cmd === "add") {
    if (!a.wallet) fail("add needs --wallet");
    if (!a.points || !/^-?\d+(\.\d{1,18})?$/.test(a.points)) fail(`--points: "${a.points ?? ""}" is not a decimal number (up to 18 decimals)`);
    if (!a.reason?.trim()) fail("add needs --reason");
  }
  const url = process.env.DATABASE_URL;
  if (!url || !/^postgres(ql)?:\/\//.test(url)) fail("DATABASE_URL must be set to a postgres:// URL");
  const pool = createPool(url, 1, "vault-points-cli");
  const db = createDb(pool);
  try {
    await migrateToLatest(db);
    if (cmd === "add") {
      const row = await db
        .insertInto("registry.manual_points")
        .values({ wallet: a.wallet!.toLowerCase(), points: a.points!, reason: a.reason!.trim(), author: a.author ?? userInfo().username })
        .returning(["id", "created_at"])
        .executeTakeFirstOrThrow();
      console.log(`manual points entry ${row.id}: ${a.points} to ${a.wallet!.toLowerCase()} (${a.reason!.trim()})`);
    } else {
      let q = db.selectFrom("registry.manual_points").selectAll().orderBy("id");
      if (a.wallet) q = q.where("wallet", "=", a.wallet.toLowerCase());
      for (const r of await q.execute()) console.log(`${r.id}\t${r.created_at.toISOString()}\t${r.wallet}\t${r.points}\t${r.author}\t${r.reason}`);
    }
  } finally {
    await db.destroy();
  }
}

main().catch((err) => {
  console.error(`points failed: ${errMessage(err)}`);
  process.exit(1);
});
