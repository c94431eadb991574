/** Old indexer deployment schemas, listed and dropped: `npm run indexer-prune -- --help`. */

import { type Command, commandFailed, databaseUrl, HELP_OPTION, parseCommandLine, refuse } from "./lib/cli.js";
import type { Deployment } from "./lib/deployments.js";

const CMD: Command = {
  name: "indexer-prune",
  usage: "usage: npm run indexer-prune -- [--idle-hours <n>] [--yes]",
  help: `
Every registry change and every new indexer build leaves its previous deployment schema
(app_<hash>, app_<hash>_<group>) in the database, a full copy of the indexed tables, so that a
return to it resumes it. This lists every deployment with its size and what needs it, and with
--yes drops those nothing needs:

  kept     a view outside it reads it (the indexer views, a group union, an analyst's own view),
           a running indexer holds it (Ponder's lock, its heartbeat under 25 s old), or an
           indexer group records it (npm run indexer-groups -- list)
  dropped  the others, each checked again with its tables locked, then DROP SCHEMA ... CASCADE
           (one another prune dropped first, two running at once, is "already dropped")

  --idle-hours <n>  drop only deployments whose indexer last ran more than n hours ago (default
                    0), e.g. 168 to keep a week of deployments to switch back to
  --yes             drop; without it nothing changes (a dry run)

Environment: DATABASE_URL (required). docs/operations.md, section 7.`,
};

const mib = (bytes: number) => `${(bytes / 2 ** 20).toFixed(1)} MiB`;

async function main(): Promise<void> {
  const { values, positionals } = parseCommandLine(CMD, {
    allowPositionals: true,
    options: { ...HELP_OPTION, yes: { type: "boolean" }, "idle-hours": { type: "string" } },
  });
  if (positionals.length) refuse(CMD, `unexpected arguments: ${positionals.join(" ")}`);
  const idleRaw = values["idle-hours"] ?? "0";
  const idleHours = Number(idleRaw);
  if (!/^\d+(\.\d+)?$/.test(idleRaw) || !Number.isFinite(idleHours))
    refuse(CMD, `--idle-hours "${idleRaw}" is not a number of hours`);
  const url = databaseUrl(CMD);
  // loaded after the command line: --help and refusals load nothing else
  const { dropDeployment, droppable, keptBecause, listDeployments } = await import("./lib/deployments.js");
  const state = (d: Deployment) => {
    const why = keptBecause(d);
    return why ? `kept: ${why}` : "unused";
  };
  const all = await listDeployments(url);
  if (all.length === 0) {
    console.log("no indexer deployment schemas in this database");
    return;
  }
  const cutoff = Date.now() - idleHours * 3600_000;
  const idle = (d: Deployment) => d.lastActive === null || d.lastActive.getTime() <= cutoff;
  console.log("deployment\tsize\tlast active\tstate");
  for (const d of all) {
    const s = droppable(d) && !idle(d) ? `unused, active within ${idleHours} h: kept` : state(d);
    console.log(`${d.schema}\t${mib(d.bytes)}\t${d.lastActive?.toISOString() ?? "-"}\t${s}`);
  }
  const victims = all.filter((d) => droppable(d) && idle(d));
  const total = mib(victims.reduce((n, d) => n + d.bytes, 0));
  if (victims.length === 0) {
    console.log("nothing to drop");
    return;
  }
  if (!values.yes) {
    console.log(`${victims.length} unused deployment(s), ${total}: run again with --yes to drop them`);
    return;
  }
  let dropped = 0;
  let gone = 0;
  for (const d of victims) {
    const done = await dropDeployment(url, d.schema);
    if (done.outcome === "kept") console.log(`${d.schema}: kept (${done.why})`);
    else if (done.outcome === "gone") {
      gone++;
      console.log(`${d.schema}: already dropped (by another command meanwhile)`);
    } else {
      dropped++;
      console.log(`${d.schema}: dropped (${mib(d.bytes)})`);
    }
  }
  console.log(`${dropped} deployment(s) dropped${gone ? `, ${gone} dropped meanwhile by another command` : ""}`);
}

main().catch((err) => commandFailed("indexer-prune", err));
