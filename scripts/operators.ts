/** Operator accounts for the bearer tokens of POST /api/v1/token: `npm run operators -- --help`. */
import { randomBytes } from "node:crypto";
import { createOperator, updateOperator, usernameProblem } from "../api/auth/operators.js";
import { passwordProblem } from "../api/auth/passwords.js";
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
} from "./lib/cli.js";
import { errMessage } from "./lib/procs.js";

const CMD: Command = {
  name: "operators",
  usage:
    "usage: npm run operators -- create <username> --scope <scope>... [--password-stdin]\n" +
    "       | passwd <username> [--password-stdin] | scopes <username> --scope <scope>...\n" +
    "       | disable <username> | enable <username> | list",
  help: `
Operator accounts: the username/password side of POST /api/v1/token (OAuth 2.0 password flow),
which gives a bearer token carrying the account's scopes.

  create <username> --scope <scope>... [--password-stdin]   a new account
  passwd <username> [--password-stdin]                      a new password (tokens issued before stop working)
  scopes <username> --scope <scope>...                      replaces the scopes (new tokens carry them)
  disable <username> | enable <username>                    a disabled account's tokens stop within seconds
  list                                                      every account: username, scopes, created, status

Without --password-stdin a random password is generated and printed once; with it the password is
read from a pipe (e.g. printf %s "$PW" | npm run operators -- passwd alice --password-stdin).
Passwords are stored hashed with scrypt. Scopes: ${SCOPE_NAMES.join(", ")}.

Environment: DATABASE_URL (required). Every command but list applies the database migrations
first; list reads only.`,
};

function fail(msg: string): never {
  return refuse(CMD, msg);
}

async function readStdinPassword(): Promise<string> {
  if (process.stdin.isTTY)
    fail('--password-stdin reads the password from a pipe, e.g. `printf %s "$PW" | npm run operators -- …`');
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  const pw = Buffer.concat(chunks)
    .toString("utf8")
    .replace(/\r?\n$/, "");
  const p = passwordProblem(pw);
  if (p) fail(`password ${p}`);
  return pw;
}

async function main(): Promise<void> {
  const parsed = parseCommandLine(CMD, {
    allowPositionals: true,
    options: { ...HELP_OPTION, scope: { type: "string", multiple: true }, "password-stdin": { type: "boolean" } },
  });
  const [cmd, username, ...rest] = parsed.positionals;
  let scopes = parsed.values.scope ?? [];
  const fromStdin = parsed.values["password-stdin"] ?? false;
  if (rest.length) fail(`unexpected arguments: ${rest.join(" ")}`);
  const commands = ["create", "passwd", "scopes", "disable", "enable", "list"];
  if (!commands.includes(cmd ?? "")) fail(cmd ? `unknown command "${cmd}"` : `give a command: ${commands.join(", ")}`);
  if (cmd === "list") {
    if (username) fail("list takes no argument");
  } else {
    if (!username) fail(`${cmd} needs a username`);
    const u = usernameProblem(username);
    if (u) fail(`username "${username}" ${u}`);
  }
  for (const s of scopes) if (!isScope(s)) fail(`--scope: "${s}" is not a scope (known: ${SCOPE_NAMES.join(", ")})`);
  scopes = [...new Set(scopes)]; // stored once each: said once each
  if ((cmd === "create" || cmd === "scopes") && scopes.length === 0)
    fail(`${cmd} needs at least one --scope (known: ${SCOPE_NAMES.join(", ")})`);
  if (!["create", "scopes"].includes(cmd!) && scopes.length) fail(`${cmd} takes no --scope`);
  if (!["create", "passwd"].includes(cmd!) && fromStdin) fail(`${cmd} takes no --password-stdin`);
  const url = databaseUrl(CMD);

  let password: string | null = null;
  let generated = false;
  if (cmd === "create" || cmd === "passwd") {
    if (fromStdin) password = await readStdinPassword();
    else {
      password = randomBytes(18).toString("base64url");
      generated = true;
    }
  }
  // loaded after the command line and the password: --help and refusals load nothing else
  const { createDb, createPool, migrateToLatest } = await import("../db/client.js");
  const db = createDb(createPool(url, 1, "vault-operators-cli", CLI_DB_TIMEOUTS));
  try {
    if (cmd === "list") {
      const absent = await missingTable(db, ["auth.operator_account"]);
      if (absent) {
        console.error(`operators: ${absent}`);
        process.exitCode = 1;
        return;
      }
      const rows = await db
        .selectFrom("auth.operator_account")
        .select(["username", "scopes", "created_at", "disabled_at"])
        .orderBy("username")
        .execute();
      console.log("username\tscopes\tcreated\tstatus");
      if (rows.length === 0) {
        console.log("(no operator accounts yet: npm run operators -- create <username> --scope <scope>)");
      }
      for (const o of rows) {
        const status = o.disabled_at ? `disabled ${new Date(o.disabled_at).toISOString()}` : "active";
        console.log(`${o.username}\t${o.scopes.join(",") || "-"}\t${new Date(o.created_at).toISOString()}\t${status}`);
      }
      return;
    }
    await migrateToLatest(db);
    const missing = () => {
      console.error(`operators: no operator "${username}"`);
      process.exitCode = 1;
    };
    switch (cmd) {
      case "create":
        try {
          await createOperator(db, username!, password!, scopes);
        } catch (err) {
          console.error(`operators: ${errMessage(err)}`);
          process.exitCode = 1;
          return;
        }
        console.log(`operator "${username}" created with scopes ${scopes.join(", ")}`);
        break;
      case "passwd":
        if (!(await updateOperator(db, username!, { password: password! }))) return missing();
        console.log(`password of "${username}" changed (tokens issued before stop working within seconds)`);
        break;
      case "scopes":
        if (!(await updateOperator(db, username!, { scopes }))) return missing();
        console.log(`scopes of "${username}": ${scopes.join(", ")} (new tokens carry them)`);
        break;
      case "disable":
      case "enable":
        if (!(await updateOperator(db, username!, { disabled: cmd === "disable" }))) return missing();
        console.log(
          `operator "${username}" ${cmd}d${cmd === "disable" ? " (its tokens stop working within seconds)" : ""}`,
        );
        break;
    }
    if (generated) {
      console.log("password (shown once; store it now):");
      console.log(password);
    }
  } finally {
    await db.destroy();
  }
}

main().catch((err) => commandFailed("operators", err));
