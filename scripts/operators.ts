/**
 * Operator accounts: the username/password side of POST /api/v1/token (OAuth 2.0 password flow).
 *
 *   npm run operators -- create <username> --scope <scope>... [--password-stdin]
 *   npm run operators -- passwd <username> [--password-stdin]
 *   npm run operators -- scopes <username> --scope <scope>...
 *   npm run operators -- disable <username> | enable <username>
 *   npm run operators -- list
 *
 * Without --password-stdin a random password is generated and printed once. Passwords are
 * stored hashed with scrypt. Reads DATABASE_URL.
 */
import { randomBytes } from "node:crypto";
import { parseArgs } from "node:util";
import { createOperator, updateOperator, usernameProblem } from "../api/auth/operators.js";
import { passwordProblem } from "../api/auth/passwords.js";
import { isScope, SCOPE_NAMES } from "../api/auth/scopes.js";
import { createDb, createPool, migrateToLatest } from "../jobs/db/client.js";
import { errMessage } from "./lib/procs.js";

const USAGE =
  "usage: npm run operators -- create <username> --scope <scope>... [--password-stdin] | passwd <username> [--password-stdin] | scopes <username> --scope <scope>... | disable <username> | enable <username> | list";

function fail(msg: string): never {
  console.error(`operators: ${msg}`);
  console.error(USAGE);
  process.exit(2);
}

async function readStdinPassword(): Promise<string> {
  if (process.stdin.isTTY) fail("--password-stdin reads the password from a pipe, e.g. `printf %s \"$PW\" | npm run operators -- …`");
  const chunks: Buffer[] = [];
  for await (const c of process.stdin) chunks.push(c as Buffer);
  const pw = Buffer.concat(chunks).toString("utf8").replace(/\r?\n$/, "");
  const p = passwordProblem(pw);
  if (p) fail(`password ${p}`);
  return pw;
}

async function main(): Promise<void> {
  let parsed;
  try {
    parsed = parseArgs({ allowPositionals: true, options: { scope: { type: "string", multiple: true }, "password-stdin": { type: "boolean" } }, strict: true });
  } catch (err) {
    fail(errMessage(err));
  }
  const [cmd, username, ...rest] = parsed.positionals;
  const scopes = parsed.values.scope ?? [];
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
  if ((cmd === "create" || cmd === "scopes") && scopes.length === 0) fail(`${cmd} needs at least one --scope (known: ${SCOPE_NAMES.join(", ")})`);
  if (!["create", "scopes"].includes(cmd!) && scopes.length) fail(`${cmd} takes no --scope`);
  if (!["create", "passwd"].includes(cmd!) && fromStdin) fail(`${cmd} takes no --password-stdin`);
  const url = process.env.DATABASE_URL;
  if (!url || !/^postgres(ql)?:\/\//.test(url)) fail("DATABASE_URL must be set to a postgres:// URL");

  let password: string | null = null;
  let generated = false;
  if (cmd === "create" || cmd === "passwd") {
    if (fromStdin) password = await readStdinPassword();
    else {
      password = randomBytes(18).toString("base64url");
      generated = true;
    }
  }
  const db = createDb(createPool(url, 1, "vault-operators-cli"));
  try {
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
        console.log(`password of "${username}" changed (tokens issued before stay valid until they expire)`);
        break;
      case "scopes":
        if (!(await updateOperator(db, username!, { scopes }))) return missing();
        console.log(`scopes of "${username}": ${scopes.join(", ")} (new tokens carry them)`);
        break;
      case "disable":
      case "enable":
        if (!(await updateOperator(db, username!, { disabled: cmd === "disable" }))) return missing();
        console.log(`operator "${username}" ${cmd}d${cmd === "disable" ? " (its tokens stop working within seconds)" : ""}`);
        break;
      case "list":
        for (const o of await db.selectFrom("auth.operator_account").select(["username", "scopes", "created_at", "updated_at", "disabled_at"]).orderBy("username").execute()) {
          console.log(`${o.username}\t${o.scopes.join(",") || "-"}\t${new Date(o.created_at).toISOString()}\t${o.disabled_at ? `disabled ${new Date(o.disabled_at).toISOString()}` : "active"}`);
        }
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

main().catch((err) => {
  console.error(`operators failed: ${errMessage(err)}`);
  process.exit(1);
});
