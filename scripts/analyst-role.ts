/** The analysts' read-only login role, created or brought up to date: `npm run analyst-role -- --help`. */

import {
  type Command,
  commandFailed,
  databaseUrl,
  HELP_OPTION,
  parseCommandLine,
  refuse,
  settings,
} from "./lib/cli.js";

const SCHEMAS = ["derived", "registry", "ops"];

const CMD: Command = {
  name: "analyst-role",
  usage: "usage: npm run analyst-role -- [--role <name>] [--owner <role>] [--statement-timeout <duration>]",
  help:
    `
Creates the login role analysts connect with, or brings it up to date (its password, its grants):
SELECT on the indexer views and on ${SCHEMAS.join(", ")}, including what the service creates
there later; no other schema (auth stays closed), nothing it can write, no temporary tables; its
statements cancelled after the statement timeout, its idle transactions after 60 s. Run it once
on a new database, after a restore (roles and their grants live in the cluster, not in the
dumps: docs/operations.md, section 5), and to change the password. Idempotent.

  --role <name>                   the role (default analyst; not the owner's). An existing role
                                  is updated only if this command made it
  --owner <role>                  the role the service connects as, which creates the views and
                                  tables later (default the database's owner); what it and each
                                  schema's owner create is readable by the analysts
  --statement-timeout <duration>  a Postgres duration (default 60s), e.g. 5min

Environment: DATABASE_URL (required: the database's owner or a superuser; a role with CREATEROLE
that owns the schemas and is a member of the owner role also does), ANALYST_PASSWORD (required, ` +
    `at least 12 characters; read from
the environment so that it stays out of the shell history and the process list).`,
};

async function main(): Promise<void> {
  const { values, positionals } = parseCommandLine(CMD, {
    allowPositionals: true,
    options: {
      ...HELP_OPTION,
      role: { type: "string" },
      owner: { type: "string" },
      "statement-timeout": { type: "string" },
    },
  });
  if (positionals.length) refuse(CMD, `unexpected arguments: ${positionals.join(" ")}`);
  const role = values.role ?? "analyst";
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(role)) refuse(CMD, `--role "${role}": a lower-case name ([a-z_][a-z0-9_]*)`);
  const owner = values.owner;
  if (owner !== undefined && !/^[a-z_][a-z0-9_]{0,62}$/.test(owner))
    refuse(CMD, `--owner "${owner}": a lower-case name ([a-z_][a-z0-9_]*)`);
  if (owner === role) refuse(CMD, `--owner and --role must differ ("${role}")`);
  const timeout = values["statement-timeout"] ?? "60s";
  if (!/^\d+\s*(ms|s|min|h|d)?$/.test(timeout))
    refuse(CMD, `--statement-timeout "${timeout}" is not a duration such as 60s or 5min`);
  // 0 would turn Postgres's statement timeout off: the analysts' queries must stay bounded
  if (/^0+\s*[a-z]*$/.test(timeout)) refuse(CMD, `--statement-timeout "${timeout}": give more than 0 (0 means none)`);
  const url = databaseUrl(CMD);
  // loaded after the command line (zod for the settings, then the rest): --help and refusals load nothing else
  const { ANALYST_PASSWORD } = await settings(CMD, ({ z }) =>
    z.object({
      ANALYST_PASSWORD: z.string({ error: "required: the analyst role's password" }).min(12, "at least 12 characters"),
    }),
  );
  const { ensureAnalystRole } = await import("./lib/postgres.js");
  const analystUrl = await ensureAnalystRole(url, {
    role,
    ownerRole: owner,
    password: ANALYST_PASSWORD,
    viewsSchema: "indexer",
    extraSchemas: SCHEMAS,
    statementTimeout: timeout,
  });
  const shown = new URL(analystUrl);
  shown.password = "";
  console.log(`role "${role}" reads indexer, ${SCHEMAS.join(", ")}; connect as ${shown.toString()}`);
}

main().catch((err) => commandFailed("analyst-role", err));
