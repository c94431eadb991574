import type { RouteHandler } from "@hono/zod-openapi";
import { sql } from "kysely";
import { type Abi, decodeFunctionData, type Hex, keccak256, toHex } from "viem";
import { LendingPoolAbi } from "../../../abis/LendingPoolAbi.js";
import { TimelockControllerAbi } from "../../../abis/TimelockControllerAbi.js";
import { TokenizedVaultV2Abi } from "../../../abis/TokenizedVaultV2Abi.js";
import { requestedChain } from "../../lib/chain.js";
import { indexer } from "../../lib/db.js";
import { withDeadline } from "../../lib/deadline.js";
import { validationError } from "../../lib/errors.js";
import type { AppEnv } from "../../lib/router.js";
import { type AccountInfo, RPC_TIMEOUT_MS, readAccount, readMinDelay, readOwner } from "./governance.chain.js";
import {
  governanceEventsOf,
  indexerRead,
  ix,
  type ResolvedVault,
  resolveVault,
  timelockRequestsOf,
  unixToIso,
} from "./governance.lib.js";
import { vaultPermissions } from "./governance.permissions.js";
import type { auditLog, permissions, roles, timelocks } from "./governance.routes.js";

// ---- timelock roles ------------------------------------------------------------------------

const ROLE_NAMES = new Map<string, string>([
  ["0x0000000000000000000000000000000000000000000000000000000000000000", "timelock_admin"],
  ...(["PROPOSER", "EXECUTOR", "CANCELLER"] as const).map(
    (r) => [keccak256(toHex(`${r}_ROLE`)), `timelock_${r.toLowerCase()}`] as [string, string],
  ),
]);
export const roleName = (hash: string) => ROLE_NAMES.get(hash.toLowerCase()) ?? `timelock_role:${hash.toLowerCase()}`;

/**
 * An erc4626 vault's own OpenZeppelin AccessControl roles: DEFAULT_ADMIN_ROLE, and the usual
 * `<NAME>_ROLE` constants recognised by their keccak (a hash matching one is that name); any
 * other role is named by its hash.
 */
const VAULT_ROLE_NAMES = new Map<string, string>([
  ["0x0000000000000000000000000000000000000000000000000000000000000000", "vault_admin"],
  ...(
    [
      "MANAGER",
      "STRATEGIST",
      "CURATOR",
      "ALLOCATOR",
      "GUARDIAN",
      "KEEPER",
      "OPERATOR",
      "PAUSER",
      "MINTER",
      "UPGRADER",
      "EMERGENCY",
    ] as const
  ).map((r) => [keccak256(toHex(`${r}_ROLE`)), `vault_${r.toLowerCase()}`] as [string, string]),
]);
const vaultRoleName = (hash: string) => VAULT_ROLE_NAMES.get(hash.toLowerCase()) ?? `vault_role:${hash.toLowerCase()}`;

type RoleEvent = { event: string; args: Record<string, unknown>; timestamp: string; tx_hash: string };

/** The members of each role after replaying RoleGranted / RoleRevoked in chain order. */
function roleMembers(events: RoleEvent[]): Map<string, Map<string, { at: string; tx: string }>> {
  const members = new Map<string, Map<string, { at: string; tx: string }>>();
  for (const e of events) {
    const role = String(e.args.role ?? "").toLowerCase();
    const account = String(e.args.account ?? "").toLowerCase();
    if (!role || !account) continue;
    const m = members.get(role) ?? new Map();
    members.set(role, m);
    if (e.event === "RoleGranted") {
      if (!m.has(account)) m.set(account, { at: e.timestamp, tx: e.tx_hash });
    } else m.delete(account);
  }
  return members;
}

/** Roles expected to be held by a multisig: an EOA or another contract there is worth a warning. */
const MULTISIG_ROLES = new Set(["owner", "pending_owner", "timelock_proposer"]);

interface Holder {
  role: string;
  address: string;
  source: "vault" | "timelock";
  granted_at: string | null;
  granted_tx_hash: string | null;
}

export const rolesHandler: RouteHandler<typeof roles, AppEnv> = async (c) => {
  const { vault_address } = c.req.valid("param");
  const r = await resolveVault(c, vault_address, requestedChain(c.req.valid("query")));
  if (!r.ok) return r.res as never;
  const v = r.vault;
  if (!v.evm) {
    return validationError(c, [
      {
        loc: ["path", "vault_address"],
        msg:
          `Governance roles are only available for EVM vaults: ${v.address} is on chain ${v.chain_id}, which is not ` +
          `an EVM chain`,
        type: "value_error",
      },
    ]) as never;
  }
  const { db, config } = c.var.deps;
  const warnings: string[] = [];
  const warn = (w: string) => {
    if (!warnings.includes(w)) warnings.push(w);
  };
  const vaultRef = { address: v.address, chain_id: v.chain_id, name: v.name, family: v.family };
  const iv = v.indexed;
  if (!iv) {
    warn(`Vault ${v.address} is not indexed on chain ${v.chain_id}: its on-chain roles are unknown`);
    return c.json({ vault: vaultRef, timelock: null, roles: [], warnings }, 200);
  }

  const holders: Holder[] = [];
  const fromVault = (role: string, address: string | null) => {
    if (address)
      holders.push({ role, address: address.toLowerCase(), source: "vault", granted_at: null, granted_tx_hash: null });
  };
  let owner = iv.owner;
  if (!owner && v.family === "erc4626") {
    // no OwnershipTransferred since its start block: ask the vault (an ERC-4626 need not be Ownable)
    const rpc = config.rpcUrls.get(v.chain_id);
    const o = await withDeadline(
      RPC_TIMEOUT_MS + 1000,
      () => readOwner(rpc, v.address),
      () => ({ owner: null, exposed: null, error: "RPC timed out" }),
    );
    owner = o.owner;
    if (o.owner)
      warn(`The owner of ${v.address} is what owner() answers now: no OwnershipTransferred has been indexed`);
    else if (o.exposed === false)
      warn(`${v.address} exposes no owner: owner() reverts and no OwnershipTransferred has been indexed`);
    else
      warn(
        `The owner of ${v.address} is unknown: no OwnershipTransferred has been indexed, owner() unread (${o.error})`,
      );
  } else if (!owner) warn(`The owner of ${v.address} is unknown: no OwnershipTransferred has been indexed`);
  fromVault("owner", owner);
  fromVault("pending_owner", iv.pending_owner);
  fromVault("operator", iv.operator);
  fromVault("fee_collector", iv.fee_collector);
  fromVault("timelock", iv.timelock);

  // RoleGranted / RoleRevoked of one contract, in chain order
  const roleEvents = (contract: string) =>
    indexerRead(
      () =>
        indexer(db, config.indexerSchema)
          .selectFrom("governance_event")
          .select(["event", "args", "timestamp", "tx_hash"])
          .where("chain_id", "=", v.chain_id)
          .where("contract", "=", contract)
          .where("event", "in", ["RoleGranted", "RoleRevoked"])
          .orderBy("id")
          .execute(),
      [] as RoleEvent[],
    );

  if (v.family === "erc4626") {
    // the vault's own AccessControl roles, when it has them (an Ownable vault has none)
    const members = roleMembers((await roleEvents(v.address)) as RoleEvent[]);
    for (const [hash, m] of [...members].sort((a, b) => a[0].localeCompare(b[0]))) {
      for (const [account, g] of m)
        holders.push({
          role: vaultRoleName(hash),
          address: account,
          source: "vault",
          granted_at: unixToIso(g.at),
          granted_tx_hash: g.tx,
        });
    }
  }

  const tl = iv.timelock?.toLowerCase() ?? null;
  if (tl) {
    // replay RoleGranted / RoleRevoked of the timelock in chain order
    const members = roleMembers((await roleEvents(tl)) as RoleEvent[]);
    const order = [...ROLE_NAMES.keys()];
    const roleOrder = (h: string) => (order.indexOf(h) < 0 ? order.length : order.indexOf(h));
    for (const [hash, m] of [...members].sort(
      (a, b) => roleOrder(a[0]) - roleOrder(b[0]) || a[0].localeCompare(b[0]),
    )) {
      for (const [account, g] of m)
        holders.push({
          role: roleName(hash),
          address: account,
          source: "timelock",
          granted_at: unixToIso(g.at),
          granted_tx_hash: g.tx,
        });
    }
  }

  // on-chain enrichment: every distinct account but the timelock, batched JSON-RPC, short deadline
  const rpcUrl = config.rpcUrls.get(v.chain_id);
  const addresses = [...new Set(holders.map((h) => h.address))].filter((a) => a !== tl);
  const timedOut = (): AccountInfo => ({
    account_type: "unknown",
    is_safe: false,
    safe_version: null,
    owners: null,
    threshold: null,
    error: "RPC timed out",
  });
  const [infos, minDelay] = await withDeadline(
    RPC_TIMEOUT_MS + 1000,
    () =>
      Promise.all([
        Promise.all(addresses.map((a) => readAccount(rpcUrl, a))),
        tl ? readMinDelay(rpcUrl, tl) : Promise.resolve({ value: null, error: null }),
      ]),
    () => [addresses.map(timedOut), { value: null, error: "RPC timed out" }] as const,
  );
  const info = new Map(addresses.map((a, i) => [a, infos[i]!]));
  if (!rpcUrl) warn(`No RPC URL is configured for chain ${v.chain_id}: multisig metadata is unavailable`);

  const rolesOf = (a: string) => holders.filter((h) => h.address === a).map((h) => h.role);
  for (const a of addresses) {
    const i = info.get(a)!;
    const rs = rolesOf(a);
    if (i.error) {
      if (rpcUrl)
        warn(
          `Could not read ${a} (${rs.join(", ")}) on chain ${v.chain_id}: ${i.error}; its is_safe and owners are ` +
            `degraded`,
        );
      continue;
    }
    if (i.account_type === "timelock") {
      // the vault's own timelock is not in `addresses`: this one's roles and operations are not indexed
      warn(
        `${a} (${rs.join(", ")}) is a TimelockController other than the vault's timelock (${tl ?? "none"}): its ` +
          `roles and operations are not indexed`,
      );
      continue;
    }
    const expected = rs.filter((r) => MULTISIG_ROLES.has(r));
    if (expected.length === 0) continue;
    if (i.account_type === "eoa") warn(`${a} (${expected.join(", ")}) is not a contract: no multisig metadata`);
    if (i.account_type === "contract")
      warn(
        `${a} (${expected.join(", ")}) is a contract that does not answer getOwners()/getThreshold(): not a multisig`,
      );
  }
  const rows = holders.map((h) => {
    const i: AccountInfo =
      h.address === tl
        ? { account_type: "timelock", is_safe: false, safe_version: null, owners: null, threshold: null, error: null }
        : info.get(h.address)!;
    return {
      role: h.role,
      address: h.address,
      source: h.source,
      account_type: i.account_type,
      is_safe: i.is_safe,
      safe_version: i.safe_version,
      owners: i.owners,
      threshold: i.threshold,
      granted_at: h.granted_at,
      granted_tx_hash: h.granted_tx_hash,
    };
  });
  if (tl && minDelay.error && rpcUrl) warn(`Could not read the minimum delay of timelock ${tl} (${minDelay.error})`);
  return c.json(
    {
      vault: vaultRef,
      timelock: tl ? { address: tl, min_delay_seconds: minDelay.value } : null,
      roles: rows,
      warnings,
    },
    200,
  );
};

// ---- permissions ---------------------------------------------------------------------------

export const permissionsHandler: RouteHandler<typeof permissions, AppEnv> = async (c) => {
  const { vault_address } = c.req.valid("param");
  const r = await resolveVault(c, vault_address, requestedChain(c.req.valid("query")));
  if (!r.ok) return r.res as never;
  const { db, config } = c.var.deps;
  const v = r.vault;
  return c.json(await vaultPermissions(db, config.indexerSchema, v.chain_id, v.address), 200);
};

// ---- timelocks -----------------------------------------------------------------------------

const ABIS: Abi[] = [LendingPoolAbi as Abi, TokenizedVaultV2Abi as Abi, TimelockControllerAbi as Abi];

const jsonSafe = (x: unknown): unknown => {
  if (typeof x === "bigint") return x.toString();
  if (typeof x === "string") return x.startsWith("0x") ? x.toLowerCase() : x;
  if (Array.isArray(x)) return x.map(jsonSafe);
  if (x && typeof x === "object") return Object.fromEntries(Object.entries(x).map(([k, v]) => [k, jsonSafe(v)]));
  return x;
};

/** The call decoded with the vault and timelock ABIs, or null. */
export function decodeCall(data: string): { function_name: string; args: unknown[] } | null {
  if (!/^0x[0-9a-fA-F]{8}/.test(data)) return null;
  for (const abi of ABIS) {
    try {
      const d = decodeFunctionData({ abi, data: data as Hex });
      return { function_name: d.functionName, args: ((d.args ?? []) as unknown[]).map(jsonSafe) };
    } catch {
      // not this ABI
    }
  }
  return null;
}

type CallRow = { call_index: number; target: string; value: string; data: string };

type OpRow = {
  id: string;
  chain_id: number;
  timelock: string;
  operation_hash: string;
  call_index: number;
  target: string;
  value: string;
  data: string;
  predecessor: string;
  salt: string | null;
  delay: string;
  ready_at: string;
  status: string;
  executed_at: string | null;
  executed_tx_hash: string | null;
  cancelled_at: string | null;
  cancelled_tx_hash: string | null;
  block_number: string;
  timestamp: string;
  tx_hash: string;
  calls: CallRow[];
};

export const timelocksHandler: RouteHandler<typeof timelocks, AppEnv> = async (c) => {
  const { vault_address } = c.req.valid("param");
  const q = c.req.valid("query");
  const { status } = q;
  const r = await resolveVault(c, vault_address, requestedChain(q));
  if (!r.ok) return r.res as never;
  const v = r.vault;
  if (!v.evm) return c.json({ timelocks: [] }, 200);
  const { db, config, now } = c.var.deps;
  const s = config.indexerSchema;
  const rows = await indexerRead(
    async () =>
      (
        await sql<OpRow>`
          SELECT o.id, o.chain_id, o.timelock, o.operation_hash, o.call_index, o.target, o.value::text AS value, o.data,
                 o.predecessor, o.salt,
                 o.delay::text AS delay, o.ready_at::text AS ready_at, o.status, o.executed_at::text AS executed_at,
                 o.executed_tx_hash,
                 o.cancelled_at::text AS cancelled_at, o.cancelled_tx_hash, o.block_number::text AS block_number,
                 o.timestamp::text AS timestamp, o.tx_hash, o.calls
          FROM (${timelockRequestsOf(s, v)}) o
          WHERE ${status} = 'all' OR o.status = ${status}
          ORDER BY o.timestamp DESC, o.block_number DESC, o.log_index DESC, o.id`.execute(db)
      ).rows,
    [] as OpRow[],
  );
  const nowS = now().getTime() / 1000;
  return c.json(
    {
      timelocks: rows.map((o) => {
        const calls = o.calls.map((x) => ({ ...x, decoded: decodeCall(x.data) }));
        return {
          id: o.id,
          chain_id: o.chain_id,
          timelock: o.timelock,
          operation_hash: o.operation_hash,
          call_index: o.call_index,
          target: o.target,
          value: o.value,
          data: o.data,
          decoded: calls[0]!.decoded, // the first call's, as target and data are
          calls,
          predecessor: o.predecessor,
          salt: o.salt,
          delay: Number(o.delay),
          ready_at: unixToIso(o.ready_at)!,
          is_ready: o.status === "scheduled" && Number(o.ready_at) <= nowS,
          status: o.status as "scheduled" | "executed" | "cancelled",
          scheduled_at: unixToIso(o.timestamp)!,
          scheduled_tx_hash: o.tx_hash,
          scheduled_block: Number(o.block_number),
          executed_at: unixToIso(o.executed_at),
          executed_tx_hash: o.executed_tx_hash,
          cancelled_at: unixToIso(o.cancelled_at),
          cancelled_tx_hash: o.cancelled_tx_hash,
        };
      }),
    },
    200,
  );
};

// ---- audit log -----------------------------------------------------------------------------

interface LogRow {
  id: string;
  occurred_at: Date;
  category: string;
  source: "timelock" | "chain" | "manual";
  action: string | null;
  tx_hash: string | null;
  author: string | null;
  text: string | null;
  details: Record<string, unknown>;
}

function describeTimelock(
  action: string,
  d: Record<string, unknown>,
): { title: string; text: string; details: Record<string, unknown> } {
  const calls = d.calls as Record<string, unknown>[]; // the request's calls, in order (never empty)
  const described = calls.map((c) => {
    const decoded = decodeCall(String(c.data ?? ""));
    const fn = decoded ? decoded.function_name : String(c.data ?? "").slice(0, 10);
    const args = decoded?.args.map((a) => (typeof a === "object" ? JSON.stringify(a) : String(a)));
    return { fn, decoded, text: `${decoded ? `${fn}(${args!.join(", ")})` : `call ${fn}`} on ${String(c.target)}` };
  });
  const what =
    described.length === 1
      ? described[0]!.text
      : `${described.length} calls: ${described.map((x) => x.text).join("; ")}`;
  const timelock = String(d.timelock);
  const title =
    described.length === 1
      ? `Timelock call ${action}: ${described[0]!.fn}`
      : `Timelock batch ${action}: ${described.map((x) => x.fn).join(", ")}`;
  const text =
    action === "scheduled"
      ? `${what} scheduled through timelock ${timelock} with a delay of ${d.delay} s, executable from ` +
        `${unixToIso(String(d.ready_at))}`
      : action === "executed"
        ? `${what} executed through timelock ${timelock}`
        : `${what} cancelled on timelock ${timelock}`;
  return {
    title,
    text,
    details: {
      ...d,
      delay: Number(d.delay),
      ready_at: unixToIso(String(d.ready_at)),
      action,
      decoded: described[0]!.decoded,
      calls: calls.map((c, i) => ({ ...c, decoded: described[i]!.decoded })),
    },
  };
}

function describeEvent(event: string, d: Record<string, unknown>): { title: string; text: string } {
  const args = (d.args ?? {}) as Record<string, unknown>;
  const parts = Object.entries(args).map(([k, v]) => `${k}=${k === "role" ? roleName(String(v)) : String(v)}`);
  return { title: event, text: `${event}(${parts.join(", ")}) emitted by ${d.contract}` };
}

export const auditLogHandler: RouteHandler<typeof auditLog, AppEnv> = async (c) => {
  const { vault_address } = c.req.valid("param");
  const q = c.req.valid("query");
  const { category, before, limit } = q;
  const res = await resolveVault(c, vault_address, requestedChain(q));
  if (!res.ok) return res.res as never;
  const v: ResolvedVault = res.vault;
  const { db, config } = c.var.deps;
  const s = config.indexerSchema;

  const manual = sql`
    SELECT 'manual:' || a.id::text AS id, a.occurred_at AS t, a.category, 'manual' AS source, NULL::text AS action,
           NULL::text AS tx_hash,
           a.author, a.text, jsonb_build_object('created_at', a.created_at) AS details, NULL::numeric AS blk,
           NULL::integer AS li
    FROM registry.audit_entry a
    WHERE a.chain_id = ${v.chain_id} AND ${v.evm ? sql`lower(a.vault) = ${v.address}` : sql`a.vault = ${v.address}`}`;
  const onChain = sql`
    SELECT 'timelock:' || o.id || ':' || x.action AS id, to_timestamp(x.at::double precision) AS t,
           'timelock' AS category, 'timelock' AS source,
           x.action, x.tx AS tx_hash, NULL::text AS author, NULL::text AS text,
           jsonb_build_object('timelock', o.timelock, 'operation_hash', o.operation_hash, 'call_index', o.call_index,
             'target', o.target,
             'value', o.value::text, 'data', o.data, 'predecessor', o.predecessor, 'salt', o.salt, 'delay',
             o.delay::text,
             'ready_at', o.ready_at::text, 'status', o.status, 'scheduled_tx_hash', o.tx_hash, 'calls',
             o.calls) AS details,
           CASE WHEN x.action = 'scheduled' THEN o.block_number END AS blk, CASE WHEN x.action = 'scheduled'
           THEN o.log_index END AS li
    FROM (${timelockRequestsOf(s, v)}) o
    CROSS JOIN LATERAL (VALUES ('scheduled', o.timestamp, o.tx_hash), ('executed', o.executed_at, o.executed_tx_hash),
      ('cancelled', o.cancelled_at, o.cancelled_tx_hash)) AS x(action, at, tx)
    WHERE x.at IS NOT NULL
    UNION ALL
    SELECT 'chain:' || g.id AS id, to_timestamp(g.timestamp::double precision) AS t, g.category, 'chain' AS source,
           g.event AS action, g.tx_hash, NULL::text AS author, NULL::text AS text,
           jsonb_build_object('contract', g.contract, 'event', g.event, 'args', g.args, 'block_number',
           g.block_number::text, 'log_index', g.log_index) AS details,
           g.block_number AS blk, g.log_index AS li
    FROM ${ix(s, "governance_event")} g
    WHERE ${governanceEventsOf(v)}`;

  // the log starts at launch (spec): the contracts' own setup before it (the timelock's
  // constructor granting its roles) is not part of it
  const sinceLaunch = v.launched ? sql`AND t >= ${v.launched}` : sql``;
  const run = async (withChain: boolean, where: ReturnType<typeof sql>, lim: number | null) =>
    (
      await sql<LogRow>`
        SELECT id, date_trunc('milliseconds', t) AS occurred_at, category, source, action, tx_hash, author,
          text, details
        FROM (${withChain ? sql`${manual} UNION ALL ${onChain}` : manual}) e
        WHERE ${where} ${category !== undefined ? sql`AND category = ${category}` : sql``} ${sinceLaunch}
        ORDER BY date_trunc('milliseconds', t) DESC, blk DESC NULLS LAST, li DESC NULLS LAST, id DESC
        ${lim != null ? sql`LIMIT ${lim}` : sql``}`.execute(db)
    ).rows;
  const query = async (where: ReturnType<typeof sql>, lim: number | null) => {
    if (!v.evm) return run(false, where, lim);
    try {
      return await run(true, where, lim);
    } catch (e) {
      if ((e as { code?: string })?.code === "42P01") return run(false, where, lim); // indexer views not there yet
      throw e;
    }
  };

  const beforeCond = before ? sql`date_trunc('milliseconds', t) < ${before}` : sql`true`;
  let rows = await query(beforeCond, limit + 1);
  let nextBefore: string | null = null;
  if (rows.length > limit) {
    const boundary = rows[limit - 1]!.occurred_at.getTime();
    const page = rows.slice(0, limit);
    let more = true;
    if (rows[limit]!.occurred_at.getTime() !== boundary) rows = page;
    else {
      // never split one instant across pages: the next page starts strictly before it
      const kept = page.filter((x) => x.occurred_at.getTime() !== boundary);
      if (kept.length > 0) rows = kept;
      else {
        // the whole page is one instant: all of it, and a next page only if anything is older
        const at = new Date(boundary);
        rows = await query(sql`date_trunc('milliseconds', t) = ${at}`, null);
        more = (await query(sql`date_trunc('milliseconds', t) < ${at}`, 1)).length > 0;
      }
    }
    if (more) nextBefore = rows[rows.length - 1]!.occurred_at.toISOString();
  }

  const entries = rows.map((x) => {
    let d: { title: string; text: string; details: Record<string, unknown> };
    if (x.source === "timelock") d = describeTimelock(x.action!, x.details);
    else if (x.source === "chain") d = { ...describeEvent(x.action!, x.details), details: x.details };
    else {
      const text = x.text ?? "";
      const first = text.split("\n")[0]!;
      d = { title: first.length > 120 ? `${first.slice(0, 117)}...` : first, text, details: x.details };
    }
    return {
      id: x.id,
      occurred_at: x.occurred_at.toISOString(),
      category: x.category,
      source: x.source,
      title: d.title,
      text: d.text,
      tx_hash: x.tx_hash,
      author: x.author,
      details: d.details,
    };
  });
  return c.json({ entries, next_before: nextBefore }, 200);
};
