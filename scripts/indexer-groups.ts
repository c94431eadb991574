/** The indexer groups behind the `indexer` views: `npm run indexer-groups -- --help`. */

import { type Command, commandFailed, databaseUrl, HELP_OPTION, parseCommandLine, refuse } from "./lib/cli.js";
import { GROUP_NAME, listGroups, removeGroup } from "./lib/indexer-groups.js";
import { VIEWS_SCHEMA } from "./lib/paths.js";

const CMD: Command = {
  name: "indexer-groups",
  usage: "usage: npm run indexer-groups -- list | remove <group>   [--views <schema>]",
  help: `
The indexer processes started with INDEXER_GROUP each record their deployment in ops.indexer_group
once it is at their chains' heads; the views show the union of every group's current deployment
(docs/operations.md, section 3).

  list             every recorded deployment: group, chains, deployment schema, when it was at its
                   heads, and whether the views show it (shown) or it waits for the other groups
                   (pending)
  remove <group>   forgets a group (stop its process first: a running group records itself again
                   when it restarts) and re-points the views at the other groups, in one
                   transaction; the last group cannot be removed. Its deployment schema is kept:
                   drop it afterwards (DROP SCHEMA <schema> CASCADE), never before, since the views
                   depend on it until it is removed here
  --views <schema> the views schema (default ${VIEWS_SCHEMA})

Environment: DATABASE_URL (required).`,
};

async function main(): Promise<void> {
  const { positionals, values } = parseCommandLine(CMD, {
    allowPositionals: true,
    options: { ...HELP_OPTION, views: { type: "string" } },
  });
  const [cmd, group, ...rest] = positionals;
  if (rest.length) refuse(CMD, `unexpected arguments: ${rest.join(" ")}`);
  if (cmd !== "list" && cmd !== "remove")
    refuse(CMD, cmd ? `unknown command "${cmd}"` : "give a command: list or remove");
  if (cmd === "list" && group) refuse(CMD, "list takes no argument");
  if (cmd === "remove" && !group) refuse(CMD, "remove needs the group's name");
  if (group && !GROUP_NAME.test(group)) refuse(CMD, `"${group}" is not a group name (${GROUP_NAME.source})`);
  const views = values.views ?? VIEWS_SCHEMA;
  if (!/^[a-z_][a-z0-9_]{0,62}$/.test(views)) refuse(CMD, `--views "${views}" is not a schema name`);
  const url = databaseUrl(CMD);
  if (cmd === "remove") {
    const shown = await removeGroup(url, { group: group!, viewsSchema: views });
    console.log(
      `group ${group} removed; views "${views}" now show ` +
        `${shown.map((d) => `${d.schema} (group ${d.group})`).join(", ")}`,
    );
    return;
  }
  const rows = await listGroups(url, views);
  console.log("group\tchains\tdeployment\tat heads\tstate");
  if (rows.length === 0) console.log(`(no indexer groups behind "${views}": each indexer runs on its own)`);
  for (const r of rows)
    console.log(
      `${r.group}\t${r.chainIds.join(",")}\t${r.schema}\t` +
        `${r.readyAt.toISOString()}\t${r.publishedAt ? "shown" : "pending"}`,
    );
}

main().catch((err) => commandFailed("indexer-groups", err));
