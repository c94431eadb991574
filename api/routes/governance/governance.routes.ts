import { createRoute, z } from "@hono/zod-openapi";
import { parseDateOrDateTime } from "../../../db/days.js";
import { vaultChainQuery } from "../../lib/chain.js";
import {
  errorResponses,
  notFoundResponse,
  openReadAuthResponses,
  openReadSecurity,
  PgText,
  QueryInt,
  vaultJsonResponse,
} from "../../lib/router.js";
import { readKey } from "../../middleware/auth.js";
import { GovernanceParams } from "./governance.lib.js";

const TAG = ["governance"];

const VaultRef = z
  .object({ address: z.string(), chain_id: z.number().int(), name: z.string(), family: z.string() })
  .openapi("GovernanceVault");

export const RoleRowSchema = z
  .object({
    role: z.string().openapi({
      description:
        "`owner`, `pending_owner`, `operator`, `fee_collector`, `timelock`, or a role of the timelock: " +
        "`timelock_admin`, `timelock_proposer`, `timelock_executor`, `timelock_canceller` (`timelock_role:<hash>` " +
        "for others), or an erc4626 vault's own AccessControl role (source `vault`): `vault_admin` " +
        "(DEFAULT_ADMIN_ROLE), `vault_<name>` for a `<NAME>_ROLE` it recognises (manager, strategist, curator, " +
        "allocator, guardian, keeper, operator, pauser, minter, upgrader, emergency), else `vault_role:<hash>`",
    }),
    address: z.string(),
    source: z.enum(["vault", "timelock"]).openapi({
      description:
        "`vault`: the vault's state (indexer.vault); `timelock`: RoleGranted/RoleRevoked of its TimelockController",
    }),
    account_type: z.enum(["eoa", "multisig", "contract", "timelock", "zero_address", "unknown"]).openapi({
      description:
        "What the account is on chain: `multisig` answers getOwners()/getThreshold(), `timelock` getMinDelay() " +
        "(the vault's registry timelock, or another, with a warning); `unknown` when it could not be read (see " +
        "warnings)",
    }),
    is_safe: z.boolean().openapi({
      description:
        "Custody-provider check: a Safe-like multisig answering VERSION() with a version; false when not, or when " +
        "it could not be read",
    }),
    safe_version: z.string().nullable(),
    owners: z
      .array(z.string())
      .nullable()
      .openapi({ description: "getOwners() of a multisig; null when not a multisig or not readable" }),
    threshold: z.number().int().nullable().openapi({ description: "getThreshold() of a multisig" }),
    granted_at: z
      .string()
      .nullable()
      .openapi({ description: "Timelock roles: time of the RoleGranted in force (ISO)" }),
    granted_tx_hash: z.string().nullable(),
  })
  .openapi("GovernanceRole");

export const RolesSchema = z
  .object({
    vault: VaultRef,
    timelock: z.object({ address: z.string(), min_delay_seconds: z.number().int().nullable() }).nullable(),
    roles: z.array(RoleRowSchema),
    warnings: z.array(z.string()).openapi({
      description:
        "Enrichment that failed (RPC down, not a contract, not a multisig): the affected fields are degraded",
    }),
  })
  .openapi("GovernanceRoles");

export const PermissionRowSchema = z
  .object({
    integration: z
      .enum([
        "dex_pool",
        "swap",
        "lending_market",
        "morpho_market",
        "lending_vault",
        "perp_relayer_a",
        "perp_relayer_b",
        "loan",
        "vault",
        "other",
      ])
      .openapi({
        description:
          "What the allowed targets are, from their chain's registry `protocols` entry (Uniswap v3 positions and " +
          "staker: `dex_pool`; the v3 and v2 routers: `swap`; Aave v3: `lending_market`; Morpho Blue: " +
          "`morpho_market`; its lending vaults: `lending_vault`; the perp bridges), the registry's loans (`loan`) " +
          "and vaults (`vault`); `other`: a contract the registry does not name",
        example: "lending_market",
      }),
    chain_id: z.number().int().openapi({ example: 1 }),
    protocol: z.string().openapi({ example: "Aave v3" }),
    tokens: z.array(z.string()).openapi({
      description:
        "Symbols (the chain's catalogue; else the address) of the tokens the modules allowing this integration " +
        "allow, unioned; a module allows its tokens for every call",
      example: ["USDC", "WETH"],
    }),
    roles: z.array(z.string()).openapi({
      description: "The module roles held on those subaccounts (OWNER, TRADER, RELAYER), unioned",
      example: ["OWNER", "TRADER"],
    }),
    spenders: z.array(z.string()).openapi({
      description:
        "The integration's contracts the modules may approve a token to (those with an allowed call), unioned",
    }),
    contracts: z
      .array(z.object({ address: z.string(), functions: z.array(z.string()) }))
      .openapi({ description: "Each allowed contract and its allowed functions (a selector when not a known one)" }),
    subaccounts: z.array(z.string()).openapi({ description: "The vault's subaccounts whose module allows it" }),
  })
  .openapi("GovernancePermission");

/** The spec's "flat vault-wide permissions list": the body is the list itself. */
export const PermissionsSchema = z.array(PermissionRowSchema).openapi("GovernancePermissions");

export const TimelockStatus = z.enum(["scheduled", "executed", "cancelled"]).openapi("TimelockStatus");

const DecodedCall = z
  .object({ function_name: z.string(), args: z.array(z.unknown()) })
  .nullable()
  .openapi({ description: "Calldata decoded with the vault and timelock ABIs; null when unknown" });

export const TimelockCallSchema = z
  .object({
    call_index: z.number().int(),
    target: z.string(),
    value: z.string().openapi({ description: "Native value, wei (exact)" }),
    data: z.string(),
    decoded: DecodedCall,
  })
  .openapi("TimelockCall");

export const TimelockRowSchema = z
  .object({
    id: z.string(),
    chain_id: z.number().int(),
    timelock: z.string(),
    operation_hash: z.string(),
    call_index: z.number().int().openapi({ description: "The first call's index (0); every call is in `calls`" }),
    target: z.string().openapi({ description: "The first call's target" }),
    value: z.string().openapi({ description: "The first call's native value, wei (exact)" }),
    data: z.string().openapi({ description: "The first call's calldata" }),
    decoded: DecodedCall,
    calls: z.array(TimelockCallSchema).openapi({
      description: "Every call of the request, in order: one for `schedule`, several for `scheduleBatch`",
    }),
    predecessor: z.string(),
    salt: z.string().nullable(),
    delay: z.number().int().openapi({ description: "Seconds" }),
    ready_at: z.string().openapi({ description: "Earliest execution time (ISO)" }),
    is_ready: z.boolean().openapi({ description: "Scheduled and past ready_at" }),
    status: TimelockStatus,
    scheduled_at: z.string(),
    scheduled_tx_hash: z.string(),
    scheduled_block: z.number().int(),
    executed_at: z.string().nullable(),
    executed_tx_hash: z.string().nullable(),
    cancelled_at: z.string().nullable(),
    cancelled_tx_hash: z.string().nullable(),
  })
  .openapi("TimelockAction");

export const TimelocksSchema = z.object({ timelocks: z.array(TimelockRowSchema) }).openapi("GovernanceTimelocks");

export const AuditEntrySchema = z
  .object({
    id: z.string(),
    occurred_at: z.string(),
    category: z.string(),
    source: z.enum(["timelock", "chain", "manual"]),
    title: z.string(),
    text: z.string(),
    tx_hash: z.string().nullable(),
    author: z.string().nullable(),
    details: z.record(z.string(), z.unknown()),
  })
  .openapi("AuditEntry");

export const AuditLogSchema = z
  .object({
    entries: z.array(AuditEntrySchema),
    next_before: z
      .string()
      .nullable()
      .openapi({ description: "Pass as `before` for the next (older) page; null when there is none" }),
  })
  .openapi("GovernanceAuditLog");

export const BeforeQuery = z
  .string()
  .transform((s, ctx) => {
    const d = parseDateOrDateTime(s);
    if (!d) {
      ctx.addIssue({ code: "custom", message: "Input should be a valid ISO 8601 date-time" });
      return z.NEVER;
    }
    return new Date(d.ms);
  })
  .optional()
  .openapi({
    type: "string",
    format: "date-time",
    description: "Only entries strictly older than this (a time without offset is UTC)",
  });

const withVault = { params: GovernanceParams };
const responses = <T extends z.ZodTypeAny>(schema: T, what: string) =>
  ({
    200: vaultJsonResponse(what, schema),
    ...notFoundResponse,
    ...openReadAuthResponses,
    ...errorResponses,
  }) as const;

export const roles = createRoute({
  method: "get",
  path: "/platform/governance/{vault_address}/roles",
  tags: TAG,
  summary: "Owner, operator and timelock roles, with multisig metadata",
  description:
    "The vault's owner, pending owner, operator, fee collector and TimelockController (indexer.vault), and the " +
    "members of the timelock's roles (RoleGranted/RoleRevoked), each enriched on chain: contract or not, Safe-like " +
    "multisig owners/threshold/VERSION. Enrichment failures degrade the affected fields (`is_safe` false, `owners` " +
    "null) and add a warning; never a 5xx. 422 for a non-EVM vault.",
  middleware: [readKey] as const,
  security: openReadSecurity,
  request: { ...withVault, query: vaultChainQuery({}) },
  responses: responses(RolesSchema, "Roles"),
});

export const permissions = createRoute({
  method: "get",
  path: "/platform/governance/{vault_address}/permissions",
  tags: TAG,
  summary: "Vault-wide permissions grouped by (integration, chain)",
  description:
    "The flat permissions list of the vault's registry subaccounts, one row per (integration, chain) with token " +
    "symbols, account-abstraction role names and spenders unioned: what each Safe's enabled SubaccountModule " +
    "allows now (its allowed calls, tokens and roles, replayed from the indexed module events), on every chain the " +
    "Safe is on. The body is the list itself; a vault without subaccounts, or whose modules allow no call, answers " +
    "`[]`. The vault's own roles are served by `/roles`.",
  middleware: [readKey] as const,
  security: openReadSecurity,
  request: { ...withVault, query: vaultChainQuery({}) },
  responses: responses(PermissionsSchema, "Permissions"),
});

export const timelocks = createRoute({
  method: "get",
  path: "/platform/governance/{vault_address}/timelocks",
  tags: TAG,
  summary: "Timelock actions, one row per scheduled request, newest first",
  description:
    "Requests of the vault's TimelockController (indexer.timelock_operation), one row per scheduled request: what " +
    "one `schedule` or `scheduleBatch` put in the queue, with all of its calls in `calls`. A request is listed " +
    "when any of its calls targets the vault or the timelock itself. `status` filters: `scheduled` (default, the " +
    "pending queue), `executed`, `cancelled`, or `all`.",
  middleware: [readKey] as const,
  security: openReadSecurity,
  request: {
    ...withVault,
    query: vaultChainQuery({
      status: z
        .enum(["scheduled", "executed", "cancelled", "all"])
        .default("scheduled")
        .openapi({ description: "A TimelockStatus value or `all`" }),
    }),
  },
  responses: responses(TimelocksSchema, "Timelock actions"),
});

export const auditLog = createRoute({
  method: "get",
  path: "/platform/governance/{vault_address}/audit_log",
  tags: TAG,
  summary: "Governance log, newest first",
  description:
    "Merges timelock actions (per request, as the timelocks route lists them: scheduled, executed and cancelled as " +
    "separate entries), the governance events of the vault and its timelock (indexer.governance_event; categories " +
    "role, ownership, config, fee, pause, subaccount, emergency, timelock) and manual entries " +
    "(registry.audit_entry). `before` + `limit` page to older entries: a page never splits entries of the same " +
    "instant (it may hold fewer than `limit`, or more when one instant alone has more); `next_before` is the " +
    "`before` of the next page.",
  middleware: [readKey] as const,
  security: openReadSecurity,
  request: {
    ...withVault,
    query: vaultChainQuery({
      category: PgText()
        .min(1)
        .max(64)
        .optional()
        .openapi({ description: "Only entries of this category (timelock entries: `timelock`)" }),
      before: BeforeQuery,
      limit: QueryInt({ def: 50, min: 1, max: 500 }).openapi({
        type: "integer",
        default: 50,
        minimum: 1,
        maximum: 500,
      }),
    }),
  },
  responses: responses(AuditLogSchema, "Audit log page"),
});
