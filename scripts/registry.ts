/** The vault registry file's data in the registry tables the API serves: `npm run registry -- --help`. */

import type { Registry } from "../config/registry.js";
import {
  argumentPath,
  CLI_DB_TIMEOUTS,
  type Command,
  commandFailed,
  databaseUrl,
  HELP_OPTION,
  missingTable,
  parseCommandLine,
  refuse,
} from "./lib/cli.js";
import { errMessage } from "./lib/procs.js";

const CMD: Command = {
  name: "registry",
  usage: "usage: npm run registry -- load [<file>] [--allow-empty] | show",
  help: `
What the chain cannot say about the vaults (metadata, strategists, subaccounts, operators), from
the vault registry file into the registry tables the API serves.

  load [<file>]   loads the file (relative to the directory the command is typed in; default
                  VAULT_REGISTRY, else config/vaults.json); idempotent: edit the file and load it
                  again to change metadata; vaults no longer in the file are removed from the
                  tables. A file listing no vault is refused while the tables hold some (it would
                  empty them: a file cut short, the wrong file): --allow-empty loads it anyway
  show            every vault the tables hold: chain, address, family, status, name

Environment: DATABASE_URL (required), VAULT_REGISTRY (load's default file). load applies the
database migrations first; show reads only.`,
};

async function main(): Promise<void> {
  const { positionals, values } = parseCommandLine(CMD, {
    allowPositionals: true,
    options: { ...HELP_OPTION, "allow-empty": { type: "boolean" } },
  });
  const [cmd, file, ...rest] = positionals;
  if (rest.length) refuse(CMD, `unexpected arguments: ${rest.join(" ")}`);
  if (cmd !== "load" && cmd !== "show") refuse(CMD, cmd ? `unknown command "${cmd}"` : "give a command: load or show");
  if (cmd === "show" && file) refuse(CMD, "show takes no argument");
  if (cmd === "show" && values["allow-empty"]) refuse(CMD, "show takes no --allow-empty");
  const url = databaseUrl(CMD);
  // loaded after the command line: --help and refusals load nothing else
  const [{ loadRegistry, registryPath }, { createDb, createPool, migrateToLatest }, { loadRegistryData }] =
    await Promise.all([import("../config/registry.js"), import("../db/client.js"), import("../db/registry-load.js")]);
  let reg: Registry | undefined;
  if (cmd === "load") {
    try {
      reg = loadRegistry(file === undefined ? registryPath() : argumentPath(file));
    } catch (err) {
      refuse(CMD, errMessage(err));
    }
  }
  const db = createDb(createPool(url, 1, "vault-registry-cli", CLI_DB_TIMEOUTS));
  try {
    if (reg) {
      await migrateToLatest(db);
      const listed = reg.evm.length + reg.nonEvm.length;
      const held = await db
        .selectFrom("registry.vault")
        .select((e) => e.fn.countAll<string>().as("n"))
        .executeTakeFirstOrThrow();
      if (listed === 0 && Number(held.n) > 0 && !values["allow-empty"]) {
        console.error(
          `registry: ${reg.path} lists no vault: loading it would remove all ${held.n} vaults from the tables ` +
            "(nothing was changed; --allow-empty loads it anyway)",
        );
        process.exitCode = 1;
        return;
      }
      const s = await loadRegistryData(db, reg);
      const counts = `${s.strategists} strategists, ${s.subaccounts} subaccounts, ${s.operators} operators`;
      console.log(`registry loaded from ${reg.path}: ${s.vaults} vaults, ${counts}`);
      return;
    }
    const missing = await missingTable(db, ["registry.vault"]);
    if (missing) {
      console.error(`registry: ${missing}`);
      process.exitCode = 1;
      return;
    }
    const vaults = await db.selectFrom("registry.vault").selectAll().orderBy("chain_id").orderBy("address").execute();
    console.log("chain\taddress\tfamily\tstatus\tname");
    if (vaults.length === 0) console.log("(no vaults in the registry tables yet: npm run registry -- load [<file>])");
    for (const v of vaults) console.log(`${v.chain_id}\t${v.address}\t${v.family}\t${v.status}\t${v.name}`);
  } finally {
    await db.destroy();
  }
}

main().catch((err) => commandFailed("registry", err));
