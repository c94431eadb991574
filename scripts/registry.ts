/**
 * npm run registry -- load [<file>]   loads the vault registry file (default VAULT_REGISTRY or
 *                                     config/vaults.json) into the registry tables the API serves
 * npm run registry -- show            prints what the tables hold
 * Reads DATABASE_URL. Edit the file and load it again to change metadata; loading is idempotent.
 */
import { loadRegistry, registryPath } from "../config/registry.js";
import { loadRegistryData } from "../api/registry-load.js";
import { createDb, createPool, migrateToLatest } from "../jobs/db/client.js";
import { errMessage } from "./lib/procs.js";

function fail(msg: string): never {
  console.error(`registry: ${msg}`);
  console.error("usage: npm run registry -- load [<file>] | show");
  process.exit(2);
}

async function main(): Promise<void> {
  const [cmd, file, ...rest] = process.argv.slice(2);
  if (rest.length) fail(`unexpected arguments: ${rest.join(" ")}`);
  if (cmd !== "load" && cmd !== "show") fail(cmd ? `unknown command "${cmd}"` : "give a command: load or show");
  const url = process.env.DATABASE_URL;
  if (!url || !/^postgres(ql)?:\/\//.test(url)) fail("DATABASE_URL must be set to a postgres:// URL");
  let reg;
  if (cmd === "load") {
    try {
      reg = loadRegistry(file ?? registryPath());
    } catch (err) {
      fail(errMessage(err));
    }
  }
  const db = createDb(createPool(url, 1, "vault-registry-cli"));
  try {
    await migrateToLatest(db);
    if (reg) {
      const s = await loadRegistryData(db, reg);
      console.log(`registry loaded from ${reg.path}: ${s.vaults} vaults, ${s.strategists} strategists, ${s.subaccounts} subaccounts, ${s.operators} operators`);
    } else {
      for (const v of await db.selectFrom("registry.vault").selectAll().orderBy("chain_id").orderBy("address").execute()) {
        console.log(`${v.chain_id}\t${v.address}\t${v.family}\t${v.status}\t${v.name}`);
      }
    }
  } finally {
    await db.destroy();
  }
}

main().catch((err) => {
  console.error(`registry failed: ${errMessage(err)}`);
  process.exit(1);
});
