/**
 * Governance routes through the real app, checked against the indexed tables and the devnet's
 * chains: roles (with on-chain multisig metadata, and degraded when the RPC is down), permissions,
 * the timelock queue and the audit log (merged, newest first, paged with `before`), plus the
 * 422/404/401/403 answers.
 */

import { type Address, createPublicClient, http, keccak256, toFunctionSelector, toHex } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { SubaccountModuleAbi } from "../../abis/SubaccountModuleAbi.js";
import { type App, createApp } from "../../api/app.js";
import { createReadDb } from "../../api/lib/db.js";
import { SAFE_VIEWS } from "../../api/routes/governance/governance.chain.js";
import { defaultSubaccountCalls, loanSubaccountCalls } from "../../contracts/devnet/protocols/index.js";
import { type ApiHarness, setupApi } from "../api-harness.js";
import { loadManifest } from "../helpers.js";

let h: ApiHarness;
let read: ReturnType<typeof createReadDb>;
let deadRpcApp: App;
let noRpcApp: App;

interface VaultRow {
  chain_id: number;
  address: string;
  family: string;
  name: string;
  owner: string | null;
  pending_owner: string | null;
  operator: string | null;
  fee_collector: string | null;
  timelock: string | null;
}
let pool: VaultRow; // lendingPool on chain 1
let v2: VaultRow; // tokenizedVaultV2 on chain 1
const SOLANA = "7VaultSo1anaExamp1eAddre55xxxxxxxxxxxxxxxxxx";
const MANUAL_AUTHOR = "governance-test";
const base = (v: VaultRow) => `/api/v1/platform/governance/${v.address}`;

beforeAll(async () => {
  h = await setupApi();
  const vaults = await h.q<VaultRow>(
    "SELECT chain_id, address, family, name, owner, pending_owner, operator, fee_collector, timelock FROM indexer.vault WHERE chain_id = 1 ORDER BY address",
  );
  pool = vaults.find((v) => v.family === "lendingPool")!;
  v2 = vaults.find((v) => v.family === "tokenizedVaultV2")!;
  read = createReadDb(h.devnet.dbUrl, 2);
  const mk = (rpcUrls: Map<number, string>) =>
    createApp({
      db: read.db,
      config: { indexerSchema: "indexer", rpcUrls, corsOrigins: [], rateLimitPerMinute: 1_000_000 },
      redis: null,
      now: () => new Date(),
    });
  // nothing listens on port 9: every RPC call fails at once
  deadRpcApp = mk(new Map(h.devnet.chains.map((c) => [c.chainId, "http://127.0.0.1:9"])));
  noRpcApp = mk(new Map());
}, 400_000);

afterAll(async () => {
  await h?.db.deleteFrom("registry.audit_entry").where("author", "=", MANUAL_AUTHOR).execute();
  await read?.destroy();
  await h?.close();
});

const get = async <T>(app: App, path: string) => {
  const res = await app.request(path, { headers: { "x-api-key": h.key } });
  return { status: res.status, body: (await res.json()) as T };
};

describe("auth and shared validation", () => {
  const paths = () => ["roles", "permissions", "timelocks", "audit_log"].map((p) => `${base(pool)}/${p}?chain_id=1`);

  it("every governance route is an open read: no key needed, a bad key 403, 401 when reads are closed", async () => {
    for (const p of paths()) {
      await h.expectOpenRead(p);
      const r = await h.json<{ detail: string }>(p, { key: h.revokedKey });
      expect(r.status).toBe(403);
      expect(r.body.detail).toBe("API key revoked");
      expect((await h.json(p, { key: "vk_000000000000_0000000000000000000000000000000000000000" })).status).toBe(403);
    }
  });

  it("chain_id must be an integer of the chain catalogue", async () => {
    for (const p of ["roles", "permissions", "timelocks", "audit_log"]) {
      for (const bad of ["abc", "1.5", "12345"]) {
        const r = await h.json<{ detail: { loc: string[]; type: string }[] }>(`${base(pool)}/${p}?chain_id=${bad}`);
        expect(r.status, `${p} chain_id=${bad}`).toBe(422);
        expect(r.body.detail[0]!.loc).toEqual(["query", "chain_id"]);
      }
    }
  });

  it("an address that is a vault on several chains: the lowest chain without chain_id, as every route", async () => {
    const both = await h.q<{ chain_id: number }>(
      "SELECT chain_id FROM registry.vault WHERE address = $1 ORDER BY chain_id",
      [pool.address],
    );
    expect(both.length).toBeGreaterThan(1); // the devnet deploys the same addresses on both chains
    for (const p of ["roles", "permissions", "timelocks", "audit_log"]) {
      const r = await h.json<{ vault: { chain_id: number } }>(`${base(pool)}/${p}`);
      expect(r.status, p).toBe(200);
      expect(r.res.headers.get("x-vault-chain"), p).toBe(String(both[0]!.chain_id));
      const explicit = await h.json(`${base(pool)}/${p}?chain_id=${both[0]!.chain_id}`);
      expect(r.body, p).toEqual(explicit.body);
      const other = await h.json<{ vault: { chain_id: number } }>(`${base(pool)}/${p}?chain=${both[1]!.chain_id}`);
      expect(other.res.headers.get("x-vault-chain"), p).toBe(String(both[1]!.chain_id));
    }
  });

  it("404 for an unknown vault, and for a vault on another chain; 422 for a malformed address", async () => {
    for (const p of ["roles", "permissions", "timelocks", "audit_log"]) {
      const unknown = await h.json<{ detail: string }>(`/api/v1/platform/governance/0x${"ab".repeat(20)}/${p}`);
      expect(unknown.status).toBe(404);
      expect(unknown.body.detail).toMatch(/not found/);
      expect((await h.json(`${base(pool)}/${p}?chain_id=10`)).status).toBe(404);
      const bad = await h.json<{ detail: { loc: string[] }[] }>(`/api/v1/platform/governance/0x12-34/${p}?chain_id=1`);
      expect(bad.status).toBe(422);
      expect(bad.body.detail[0]!.loc).toEqual(["path", "vault_address"]);
    }
  });
});

describe("GET /platform/governance/{vault_address}/roles", () => {
  type Roles = {
    vault: { address: string; chain_id: number; name: string; family: string };
    timelock: { address: string; min_delay_seconds: number | null } | null;
    roles: {
      role: string;
      address: string;
      source: string;
      account_type: string;
      is_safe: boolean;
      safe_version: string | null;
      owners: string[] | null;
      threshold: number | null;
      granted_at: string | null;
    }[];
    warnings: string[];
  };

  it("owner, operator, fee collector and timelock from indexer.vault; timelock roles with Safe metadata read on chain", async () => {
    const r = await h.json<Roles>(`${base(pool)}/roles?chain_id=1`);
    expect(r.status).toBe(200);
    const b = r.body;
    expect(b.vault).toEqual({ address: pool.address, chain_id: 1, name: pool.name, family: "lendingPool" });
    const byRole = (role: string) => b.roles.filter((x) => x.role === role);
    expect(byRole("owner").map((x) => x.address)).toEqual([pool.owner]);
    expect(byRole("operator").map((x) => x.address)).toEqual([pool.operator]);
    expect(byRole("fee_collector").map((x) => x.address)).toEqual([pool.fee_collector]);
    expect(byRole("timelock").map((x) => x.address)).toEqual([pool.timelock]);
    expect(byRole("pending_owner")).toEqual([]);
    // the devnet hands the vaults to the timelock: the owner row is the timelock, not a multisig
    expect(pool.owner).toBe(pool.timelock);
    expect(byRole("owner")[0]).toMatchObject({
      account_type: "timelock",
      is_safe: false,
      owners: null,
      source: "vault",
    });
    expect(byRole("operator")[0]).toMatchObject({ account_type: "eoa", is_safe: false, owners: null });

    // proposers: RoleGranted - RoleRevoked of PROPOSER_ROLE on the timelock
    const proposerRole = keccak256(toHex("PROPOSER_ROLE"));
    const ev = await h.q<{ event: string; account: string }>(
      "SELECT event, args->>'account' AS account FROM indexer.governance_event WHERE chain_id = 1 AND contract = $1 AND args->>'role' = $2 ORDER BY id",
      [pool.timelock, proposerRole],
    );
    const proposers = new Set<string>();
    for (const e of ev) e.event === "RoleGranted" ? proposers.add(e.account) : proposers.delete(e.account);
    expect(proposers.size).toBeGreaterThan(0);
    expect(
      byRole("timelock_proposer")
        .map((x) => x.address)
        .sort(),
    ).toEqual([...proposers].sort());

    // the manifest's multisig is the proposer; its metadata equals what the chain answers
    const manifest = loadManifest(h.devnet.manifestFile);
    const mv = manifest.chains.find((c) => c.chainId === 1)!.vaults.find((v) => v.address === pool.address)!;
    expect([...proposers]).toContain(mv.multisig);
    const client = createPublicClient({ transport: http(h.devnet.chains.find((c) => c.chainId === 1)!.rpcUrl) });
    const owners = (
      await client.readContract({ address: mv.multisig as Address, abi: SAFE_VIEWS, functionName: "getOwners" })
    ).map((o) => o.toLowerCase());
    const threshold = Number(
      await client.readContract({
        address: mv.multisig as Address,
        abi: SAFE_VIEWS,
        functionName: "getThreshold",
      }),
    );
    const proposer = byRole("timelock_proposer").find((x) => x.address === mv.multisig)!;
    expect(proposer).toMatchObject({
      source: "timelock",
      account_type: "multisig",
      is_safe: true,
      safe_version: "1.5.0", // the governance Safe (safe-smart-account 1.5.0)
      threshold,
    });
    expect(proposer.owners).toEqual(owners);
    expect(proposer.granted_at).toMatch(/^\d{4}-\d{2}-\d{2}T/);

    // the guardian was granted the canceller role by a scheduled operation: an EOA
    const cancellers = byRole("timelock_canceller");
    expect(cancellers.some((x) => x.account_type === "eoa")).toBe(true);

    // min delay: the last MinDelayChange of the timelock
    const [d] = await h.q<{ d: string }>(
      "SELECT args->>'newDuration' AS d FROM indexer.governance_event WHERE chain_id = 1 AND contract = $1 AND event = 'MinDelayChange' ORDER BY id DESC LIMIT 1",
      [pool.timelock],
    );
    expect(b.timelock).toEqual({ address: pool.timelock, min_delay_seconds: Number(d!.d) });
    expect(b.warnings).toEqual([]);
  });

  it("addresses are case-insensitive", async () => {
    const r = await h.json<Roles>(
      `/api/v1/platform/governance/${pool.address.toUpperCase().replace("0X", "0x")}/roles?chain_id=1`,
    );
    expect(r.status).toBe(200);
    expect(r.body.vault.address).toBe(pool.address);
  });

  it("RPC down: 200 with degraded fields (is_safe false, owners null) and warnings, never a 5xx", async () => {
    const r = await get<Roles>(deadRpcApp, `${base(pool)}/roles?chain_id=1`);
    expect(r.status).toBe(200);
    expect(r.body.roles.length).toBeGreaterThan(4);
    for (const x of r.body.roles) {
      expect(x.is_safe).toBe(false);
      expect(x.owners).toBeNull();
      if (x.address !== pool.timelock) expect(x.account_type).toBe("unknown");
    }
    expect(r.body.timelock!.min_delay_seconds).toBeNull();
    expect(r.body.warnings.length).toBeGreaterThan(0);
    expect(r.body.warnings.some((w) => /RPC failure/.test(w))).toBe(true);
  });

  it("no RPC configured for the chain: degraded with a warning", async () => {
    const r = await get<Roles>(noRpcApp, `${base(v2)}/roles?chain_id=1`);
    expect(r.status).toBe(200);
    expect(r.body.roles.every((x) => !x.is_safe && x.owners === null)).toBe(true);
    expect(r.body.warnings).toContain("No RPC URL is configured for chain 1: multisig metadata is unavailable");
  });

  it("a non-EVM vault answers 422 on the path's vault_address", async () => {
    const r = await h.json<{ detail: { loc: string[]; msg: string; type: string }[] }>(
      `/api/v1/platform/governance/${SOLANA}/roles`,
    );
    expect(r.status).toBe(422);
    expect(r.body.detail).toHaveLength(1);
    expect(r.body.detail[0]!.loc).toEqual(["path", "vault_address"]);
    expect(r.body.detail[0]!.msg).toMatch(/EVM/);
  });
});

describe("GET /platform/governance/{vault_address}/permissions", () => {
  type Row = {
    integration: string;
    chain_id: number;
    tokens: string[];
    roles: string[];
    spenders: string[];
    contracts: { address: string; functions: string[] }[];
    subaccounts: string[];
  };

  it("what each subaccount's module allows, grouped by (integration, chain), as the chains answer", async () => {
    const manifest = loadManifest(h.devnet.manifestFile);
    const clients = new Map(
      h.devnet.chains.map((c) => [c.chainId, createPublicClient({ transport: http(c.rpcUrl) })] as const),
    );
    // every call the devnet lets a module allow, by chain: (target, selector, function name)
    const known = new Map(
      manifest.chains.map((c) => {
        const lists = [
          ...defaultSubaccountCalls(c.world.protocols),
          ...c.world.loans.flatMap((l) =>
            (["lender", "borrower"] as const).map((role) => loanSubaccountCalls(l.address as Address, role)),
          ),
        ];
        const calls = lists.flatMap((l) =>
          l.signatures.map((sig) => ({
            target: l.target.toLowerCase(),
            selector: toFunctionSelector(sig),
            name: sig.slice(0, sig.indexOf("(")),
          })),
        );
        return [c.chainId, calls] as const;
      }),
    );
    const catalogue = (
      await h.q<{ chain_id: number; tokens: { address: string; symbol: string }[] }>(
        "SELECT chain_id, protocols->'tokens' AS tokens FROM registry.chain_protocols",
      )
    ).flatMap((r) => r.tokens.map((t) => ({ chain: r.chain_id, address: t.address.toLowerCase(), symbol: t.symbol })));
    const vaults = await h.q<{ chain_id: number; vault: string }>(
      "SELECT DISTINCT chain_id, vault FROM registry.subaccount WHERE chain_id > 0 ORDER BY 1, 2",
    );
    expect(vaults.length).toBeGreaterThan(0);
    let checked = 0;
    for (const v of vaults) {
      const r = await h.json<Row[]>(`/api/v1/platform/governance/${v.vault}/permissions?chain_id=${v.chain_id}`);
      expect(r.status).toBe(200);
      const modules = await h.q<{ chain_id: number; safe: string; module: string }>(
        `SELECT s.chain_id, s.safe, s.module FROM indexer.subaccount s
          JOIN registry.subaccount r ON r.address = s.safe AND r.chain_id = $1 AND r.vault = $2
         WHERE s.module IS NOT NULL`,
        [v.chain_id, v.vault],
      );
      expect(modules.length).toBeGreaterThan(0);
      // from the chains: each module's allowed calls and tokens now
      const want = new Set<string>();
      const tokensOf = new Map<string, Set<string>>();
      for (const m of modules) {
        const client = clients.get(m.chain_id)!;
        const allowed = (fn: "callAllowed" | "tokenAllowed", args: readonly unknown[]) =>
          client.readContract({
            address: m.module as Address,
            abi: SubaccountModuleAbi,
            functionName: fn,
            args: args as never,
          }) as Promise<boolean>;
        const mine = new Set<string>();
        for (const t of catalogue.filter((x) => x.chain === m.chain_id)) {
          if (await allowed("tokenAllowed", [t.address])) mine.add(t.symbol);
        }
        for (const k of known.get(m.chain_id) ?? []) {
          if (!(await allowed("callAllowed", [k.target, k.selector]))) continue;
          want.add(`${m.chain_id} ${k.target} ${k.name} ${m.safe}`);
          const tk = `${m.chain_id} ${k.target}`;
          tokensOf.set(tk, new Set([...(tokensOf.get(tk) ?? []), ...mine]));
        }
      }
      const got = new Set<string>();
      for (const row of r.body) {
        expect(row.spenders).toEqual(row.contracts.map((c) => c.address));
        expect(row.roles).toEqual(expect.arrayContaining(["OWNER", "TRADER"]));
        for (const c of row.contracts) {
          // the row's tokens are those allowed by the modules that allow its calls
          expect(row.tokens).toEqual(expect.arrayContaining([...(tokensOf.get(`${row.chain_id} ${c.address}`) ?? [])]));
          for (const f of c.functions) {
            for (const safe of row.subaccounts) {
              if (want.has(`${row.chain_id} ${c.address} ${f} ${safe}`))
                got.add(`${row.chain_id} ${c.address} ${f} ${safe}`);
            }
          }
        }
      }
      // every allowed call is listed, and each listed one is allowed on a module of its row
      expect([...got].sort()).toEqual([...want].sort());
      const listed = r.body.flatMap((row) =>
        row.contracts.flatMap((c) => c.functions.map((f) => `${row.chain_id} ${c.address} ${f}`)),
      );
      const allowedAnywhere = new Set([...want].map((w) => w.split(" ").slice(0, 3).join(" ")));
      for (const l of listed) expect(allowedAnywhere.has(l), l).toBe(true);
      const integrations = new Set(r.body.map((row) => row.integration));
      for (const i of ["dex_pool", "swap", "lending_market", "perp_relayer_a", "perp_relayer_b"]) {
        expect(integrations.has(i), `${v.vault} ${i}`).toBe(true);
      }
      checked += r.body.length;
    }
    expect(checked).toBeGreaterThan(0);
  });

  it("a vault without subaccounts (the non-EVM one): an empty list", async () => {
    const r = await h.json<unknown[]>(`/api/v1/platform/governance/${SOLANA}/permissions`);
    expect(r.status).toBe(200);
    expect(r.body).toEqual([]);
  });
});

type Timelock = {
  id: string;
  chain_id: number;
  timelock: string;
  operation_hash: string;
  call_index: number;
  target: string;
  value: string;
  data: string;
  decoded: { function_name: string; args: unknown[] } | null;
  calls: {
    call_index: number;
    target: string;
    value: string;
    data: string;
    decoded: { function_name: string; args: unknown[] } | null;
  }[];
  predecessor: string;
  salt: string | null;
  delay: number;
  ready_at: string;
  is_ready: boolean;
  status: string;
  scheduled_at: string;
  scheduled_tx_hash: string;
  scheduled_block: number;
  executed_at: string | null;
  executed_tx_hash: string | null;
  cancelled_at: string | null;
  cancelled_tx_hash: string | null;
};

/**
 * The vault's requests straight from the table, one per operation id and scheduling transaction
 * (its first call's row, with every call): those with a call attributed to the vault, or the
 * timelock's own administration.
 */
const opsOf = (v: VaultRow) =>
  h.q<{
    id: string;
    status: string;
    value: string;
    delay: string;
    ready_at: string;
    timestamp: string;
    executed_at: string | null;
    cancelled_at: string | null;
    tx_hash: string;
    target: string;
    data: string;
    salt: string | null;
    executed_tx_hash: string | null;
    cancelled_tx_hash: string | null;
    calls: { call_index: number; target: string; value: string; data: string }[];
  }>(
    `WITH r AS (
       SELECT o.chain_id, o.timelock, o.operation_hash, o.tx_hash,
         json_agg(json_build_object('call_index', o.call_index, 'target', o.target, 'value', o.value::text, 'data', o.data)
                  ORDER BY o.call_index) AS calls
       FROM indexer.timelock_operation o WHERE o.chain_id = $1
       GROUP BY 1, 2, 3, 4
       HAVING bool_or(o.vault = $2 OR (o.timelock = $3 AND o.target NOT IN (SELECT address FROM indexer.vault WHERE chain_id = $1)))
     )
     SELECT o.*, o.value::text AS value, r.calls FROM r
     JOIN indexer.timelock_operation o USING (chain_id, timelock, operation_hash, tx_hash)
     WHERE o.call_index = (r.calls->0->>'call_index')::int
     ORDER BY o.timestamp DESC, o.block_number DESC, o.log_index DESC, o.id`,
    [v.chain_id, v.address, v.timelock],
  );
const iso = (s: string | null) => (s == null ? null : new Date(Number(s) * 1000).toISOString());

describe("GET /platform/governance/{vault_address}/timelocks", () => {
  it("default: the pending queue (status scheduled), newest first, equal to the table", async () => {
    const expected = (await opsOf(pool)).filter((o) => o.status === "scheduled");
    expect(expected.length).toBeGreaterThan(0);
    const r = await h.json<{ timelocks: Timelock[] }>(`${base(pool)}/timelocks?chain_id=1`);
    expect(r.status).toBe(200);
    expect(r.body.timelocks.map((t) => t.id)).toEqual(expected.map((o) => o.id));
    for (const [i, t] of r.body.timelocks.entries()) {
      const o = expected[i]!;
      expect(t).toMatchObject({
        status: "scheduled",
        target: o.target,
        value: o.value,
        data: o.data,
        salt: o.salt,
        delay: Number(o.delay),
        ready_at: iso(o.ready_at),
        scheduled_at: iso(o.timestamp),
        scheduled_tx_hash: o.tx_hash,
        executed_at: null,
        cancelled_at: null,
      });
      expect(t.calls.map(({ decoded, ...c }) => c)).toEqual(o.calls);
      expect(t.is_ready).toBe(Number(o.ready_at) * 1000 <= Date.now());
    }
  });

  it("status=all|executed|cancelled; the timelock's own operations concern every vault it owns", async () => {
    for (const v of [pool, v2]) {
      const expected = await opsOf(v);
      const all = await h.json<{ timelocks: Timelock[] }>(`${base(v)}/timelocks?chain_id=1&status=all`);
      expect(all.status).toBe(200);
      expect(all.body.timelocks.map((t) => t.id)).toEqual(expected.map((o) => o.id));
      for (const s of ["executed", "cancelled"] as const) {
        const r = await h.json<{ timelocks: Timelock[] }>(`${base(v)}/timelocks?chain_id=1&status=${s}`);
        expect(r.body.timelocks.map((t) => t.id)).toEqual(expected.filter((o) => o.status === s).map((o) => o.id));
        for (const t of r.body.timelocks) {
          const o = expected.find((x) => x.id === t.id)!;
          expect(t.executed_at).toBe(iso(o.executed_at));
          expect(t.executed_tx_hash).toBe(o.executed_tx_hash);
          expect(t.cancelled_at).toBe(iso(o.cancelled_at));
          expect(t.cancelled_tx_hash).toBe(o.cancelled_tx_hash);
        }
      }
      // operations that target the timelock itself (roles, delay) are listed for both vaults
      expect(all.body.timelocks.some((t) => t.target === v.timelock)).toBe(true);
    }
    const executed = await h.json<{ timelocks: Timelock[] }>(`${base(pool)}/timelocks?chain_id=1&status=executed`);
    expect(executed.body.timelocks.length).toBeGreaterThan(0);
    const cancelled = await h.json<{ timelocks: Timelock[] }>(`${base(pool)}/timelocks?chain_id=1&status=cancelled`);
    expect(cancelled.body.timelocks.length).toBeGreaterThan(0);
    // calldata is decoded with the vault and timelock ABIs
    const all = await h.json<{ timelocks: Timelock[] }>(`${base(pool)}/timelocks?chain_id=1&status=all`);
    expect(
      all.body.timelocks.find((t) => t.target === pool.timelock && t.decoded?.function_name === "updateDelay")?.decoded
        ?.args,
    ).toEqual(["172800"]);
  });

  it("a scheduleBatch is one request with every call, listed for each vault one of its calls targets", async () => {
    const rows = await h.q<{ operation_hash: string; call_index: number; vault: string; target: string }>(
      `SELECT operation_hash, call_index, vault, target FROM indexer.timelock_operation
       WHERE chain_id = 1 AND operation_hash IN (SELECT operation_hash FROM indexer.timelock_operation WHERE call_index = 1)
       ORDER BY call_index`,
    );
    expect(rows.map((r) => [r.call_index, r.vault])).toEqual([
      [0, v2.address],
      [1, pool.address],
    ]);
    const hash = rows[0]!.operation_hash;
    for (const v of [pool, v2]) {
      const all = await h.json<{ timelocks: Timelock[] }>(`${base(v)}/timelocks?chain_id=1&status=all`);
      const batch = all.body.timelocks.filter((t) => t.operation_hash === hash);
      expect(batch).toHaveLength(1);
      expect(batch[0]).toMatchObject({ status: "executed", call_index: 0, target: v2.address });
      expect(batch[0]!.calls.map((c) => [c.call_index, c.target, c.decoded?.function_name])).toEqual([
        [0, v2.address, "updateMaxChangePercent"],
        [1, pool.address, "updateFeeCollector"],
      ]);
      expect(batch[0]!.calls[0]!.decoded?.args).toEqual(["400"]);
      // the audit log: one entry per action of the request, naming both calls
      const log = await h.json<{
        entries: { id: string; title: string; text: string; details: { calls: unknown[] } }[];
      }>(`${base(v)}/audit_log?chain_id=1&category=timelock&limit=500`);
      const entries = log.body.entries.filter((e) => e.id.startsWith(`timelock:${batch[0]!.id}:`));
      expect(entries.map((e) => e.title)).toEqual([
        "Timelock batch executed: updateMaxChangePercent, updateFeeCollector",
        "Timelock batch scheduled: updateMaxChangePercent, updateFeeCollector",
      ]);
      expect(entries[1]!.text).toMatch(
        /^2 calls: updateMaxChangePercent\(400\) on 0x[0-9a-f]{40}; updateFeeCollector\(/,
      );
      expect(entries[1]!.details.calls).toHaveLength(2);
      expect(log.body.entries.filter((e) => e.id.includes(hash))).toHaveLength(2);
    }
  });

  it("an empty queue is {timelocks: []}; a bad status is 422", async () => {
    const none = await h.json<{ timelocks: Timelock[] }>(`/api/v1/platform/governance/${SOLANA}/timelocks`);
    expect(none.status).toBe(200);
    expect(none.body).toEqual({ timelocks: [] });
    const bad = await h.json<{ detail: { loc: string[]; type: string }[] }>(
      `${base(pool)}/timelocks?chain_id=1&status=pending`,
    );
    expect(bad.status).toBe(422);
    expect(bad.body.detail[0]).toMatchObject({ loc: ["query", "status"], type: "enum" });
  });
});

describe("GET /platform/governance/{vault_address}/audit_log", () => {
  type Entry = {
    id: string;
    occurred_at: string;
    category: string;
    source: string;
    title: string;
    text: string;
    tx_hash: string | null;
    author: string | null;
    details: Record<string, unknown>;
  };
  type Log = { entries: Entry[]; next_before: string | null };

  // the manual entries' times, from the vault's launch (the devnet's history ends now)
  let launch: Date;
  const after = (days: number, hms = "12:00:00.000") => {
    const day = new Date(launch.getTime() + days * 86_400_000).toISOString().slice(0, 10);
    return `${day}T${hms}Z`;
  };
  let SAME_INSTANT: string;
  beforeAll(async () => {
    const [row] = await h.q<{ start_datetime: Date }>(
      "SELECT start_datetime FROM registry.vault WHERE chain_id = 1 AND lower(address) = $1",
      [pool.address],
    );
    launch = new Date(row!.start_datetime);
    SAME_INSTANT = after(2, "03:04:05.000");
    await h.db
      .insertInto("registry.audit_entry")
      .values([
        {
          chain_id: 1,
          vault: pool.address,
          category: "note",
          text: "Strategy review: risk limits unchanged\nSigned off by the committee.",
          occurred_at: after(3),
          author: MANUAL_AUTHOR,
        },
        {
          chain_id: 1,
          vault: pool.address.toUpperCase().replace("0X", "0x"),
          category: "incident",
          text: "Oracle delay investigated",
          occurred_at: after(10, "08:30:00.250"),
          author: MANUAL_AUTHOR,
        },
        ...[1, 2, 3].map((i) => ({
          chain_id: 1,
          vault: pool.address,
          category: "note",
          text: `same instant ${i}`,
          occurred_at: SAME_INSTANT,
          author: MANUAL_AUTHOR,
        })),
        // another chain's vault with the same address: not in chain 1's log
        {
          chain_id: 8453,
          vault: pool.address,
          category: "note",
          text: "Base only",
          occurred_at: after(5),
          author: MANUAL_AUTHOR,
        },
        // before the launch (written past the CLI's check): the log starts at launch
        {
          chain_id: 1,
          vault: pool.address,
          category: "note",
          text: "Before launch",
          occurred_at: new Date(launch.getTime() - 1000),
          author: MANUAL_AUTHOR,
        },
      ])
      .execute();
  });

  async function expectedCounts(v: VaultRow) {
    const ops = await opsOf(v);
    const timelock =
      ops.length + ops.filter((o) => o.executed_at != null).length + ops.filter((o) => o.cancelled_at != null).length;
    const [g] = await h.q<{ n: string }>(
      "SELECT count(*) AS n FROM indexer.governance_event WHERE chain_id = $1 AND (contract = $2 OR contract = $3) AND timestamp >= $4",
      [v.chain_id, v.address, v.timelock, launch.getTime() / 1000],
    );
    const [m] = await h.q<{ n: string }>(
      "SELECT count(*) AS n FROM registry.audit_entry WHERE chain_id = $1 AND lower(vault) = $2 AND occurred_at >= $3",
      [v.chain_id, v.address, launch],
    );
    return { timelock, chain: Number(g!.n), manual: Number(m!.n) };
  }

  it("merges timelock actions, governance events and manual entries, newest first", async () => {
    const r = await h.json<Log>(`${base(pool)}/audit_log?chain_id=1&limit=500`);
    expect(r.status).toBe(200);
    const n = await expectedCounts(pool);
    const count = (s: string) => r.body.entries.filter((e) => e.source === s).length;
    expect({ timelock: count("timelock"), chain: count("chain"), manual: count("manual") }).toEqual(n);
    expect(r.body.next_before).toBeNull();
    const times = r.body.entries.map((e) => Date.parse(e.occurred_at));
    for (let i = 1; i < times.length; i++) expect(times[i]!).toBeLessThanOrEqual(times[i - 1]!);
    expect(new Set(r.body.entries.map((e) => e.id)).size).toBe(r.body.entries.length);

    const manual = r.body.entries.find((e) => e.text.startsWith("Strategy review"))!;
    expect(manual).toMatchObject({
      source: "manual",
      category: "note",
      author: MANUAL_AUTHOR,
      tx_hash: null,
      occurred_at: after(3),
      title: "Strategy review: risk limits unchanged",
    });
    expect(r.body.entries.find((e) => e.text === "Oracle delay investigated")?.occurred_at).toBe(
      after(10, "08:30:00.250"),
    );
    expect(r.body.entries.some((e) => e.text === "Base only")).toBe(false);

    // a timelock operation gives its scheduled and executed entries, at their own times and transactions
    const [op] = await h.q<{
      id: string;
      timestamp: string;
      executed_at: string;
      tx_hash: string;
      executed_tx_hash: string;
    }>(
      "SELECT id, timestamp, executed_at, tx_hash, executed_tx_hash FROM indexer.timelock_operation o WHERE chain_id = 1 AND vault = $1 AND status = 'executed' AND NOT EXISTS (SELECT 1 FROM indexer.timelock_operation y WHERE y.operation_hash = o.operation_hash AND y.call_index > 0) ORDER BY id LIMIT 1",
      [pool.address],
    );
    const sched = r.body.entries.find((e) => e.id === `timelock:${op!.id}:scheduled`)!;
    const exec = r.body.entries.find((e) => e.id === `timelock:${op!.id}:executed`)!;
    expect(sched).toMatchObject({
      source: "timelock",
      category: "timelock",
      occurred_at: iso(op!.timestamp),
      tx_hash: op!.tx_hash,
      author: null,
    });
    expect(exec).toMatchObject({
      source: "timelock",
      category: "timelock",
      occurred_at: iso(op!.executed_at),
      tx_hash: op!.executed_tx_hash,
    });
    expect(sched.title).toMatch(/^Timelock call scheduled: /);

    // a governance event of the vault, with its category and arguments
    const [g] = await h.q<{
      id: string;
      category: string;
      event: string;
      tx_hash: string;
      timestamp: string;
      args: Record<string, unknown>;
    }>(
      "SELECT id, category, event, tx_hash, timestamp, args FROM indexer.governance_event WHERE chain_id = 1 AND contract = $1 AND event = 'OwnershipTransferred' ORDER BY id LIMIT 1",
      [pool.address],
    );
    expect(r.body.entries.find((e) => e.id === `chain:${g!.id}`)).toMatchObject({
      source: "chain",
      category: g!.category,
      title: "OwnershipTransferred",
      tx_hash: g!.tx_hash,
      occurred_at: iso(g!.timestamp),
      details: { args: g!.args },
    });
  });

  it("starts at launch: the contracts' setup before it and earlier manual entries are not listed", async () => {
    const early = await h.q<{ id: string; event: string }>(
      "SELECT id, event FROM indexer.governance_event WHERE chain_id = 1 AND (contract = $1 OR contract = $2) AND timestamp < $3",
      [pool.address, pool.timelock, launch.getTime() / 1000],
    );
    // the timelock is deployed before the vault: its constructor grants its roles then
    expect(early.some((g) => g.event === "RoleGranted")).toBe(true);
    const r = await h.json<Log>(`${base(pool)}/audit_log?chain_id=1&limit=500`);
    const ids = new Set(r.body.entries.map((e) => e.id));
    for (const g of early) expect(ids.has(`chain:${g.id}`), g.event).toBe(false);
    expect(r.body.entries.some((e) => e.text === "Before launch")).toBe(false);
    const oldest = r.body.entries.at(-1)!;
    expect(Date.parse(oldest.occurred_at)).toBeGreaterThanOrEqual(launch.getTime());
  });

  it("category filters every source", async () => {
    for (const cat of ["timelock", "ownership", "note", "role"]) {
      const r = await h.json<Log>(`${base(pool)}/audit_log?chain_id=1&limit=500&category=${cat}`);
      expect(r.status).toBe(200);
      expect(r.body.entries.length, cat).toBeGreaterThan(0);
      expect(r.body.entries.every((e) => e.category === cat)).toBe(true);
    }
    const none = await h.json<Log>(`${base(pool)}/audit_log?chain_id=1&category=no_such_category`);
    expect(none.body).toEqual({ entries: [], next_before: null });
  });

  it("before + limit page to older entries without losing or repeating any (even within one instant)", async () => {
    const all = (await h.json<Log>(`${base(pool)}/audit_log?chain_id=1&limit=500`)).body.entries.map((e) => e.id);
    for (const limit of [1, 2, 3, 7]) {
      const seen: string[] = [];
      let before: string | null = null;
      for (let i = 0; i < 500; i++) {
        const r: { status: number; body: Log } = await h.json<Log>(
          `${base(pool)}/audit_log?chain_id=1&limit=${limit}${before ? `&before=${encodeURIComponent(before)}` : ""}`,
        );
        expect(r.status).toBe(200);
        // a next_before always leads to entries: the last page says null, even when it is one instant
        expect(r.body.entries.length, `limit ${limit} page ${i}`).toBeGreaterThan(0);
        seen.push(...r.body.entries.map((e) => e.id));
        if (r.body.next_before == null) break;
        for (const e of r.body.entries)
          expect(Date.parse(e.occurred_at)).toBeGreaterThanOrEqual(Date.parse(r.body.next_before));
        before = r.body.next_before;
      }
      expect(seen, `limit ${limit}`).toEqual(all);
    }
    // the three entries of one instant come on one page even with limit 2
    const next = new Date(Date.parse(SAME_INSTANT) + 1000).toISOString();
    const r = await h.json<Log>(`${base(pool)}/audit_log?chain_id=1&limit=2&before=${next}&category=note`);
    expect(r.body.entries.map((e) => e.text).sort()).toEqual(["same instant 1", "same instant 2", "same instant 3"]);
  });

  it("before accepts an ISO date or date-time; default limit 50", async () => {
    const day = after(4).slice(0, 10); // the day after the strategy review
    const r = await h.json<Log>(`${base(pool)}/audit_log?chain_id=1&before=${day}`);
    expect(r.status).toBe(200);
    expect(r.body.entries.every((e) => Date.parse(e.occurred_at) < Date.parse(`${day}T00:00:00Z`))).toBe(true);
    expect(r.body.entries.some((e) => e.text.startsWith("Strategy review"))).toBe(true);
    const d = await h.json<Log>(`${base(pool)}/audit_log?chain_id=1`);
    const n = await expectedCounts(pool);
    expect(d.body.entries.length).toBe(Math.min(50, n.timelock + n.chain + n.manual));
  });

  it("a non-EVM vault has only its manual entries", async () => {
    await h.db
      .insertInto("registry.audit_entry")
      .values({
        chain_id: -1,
        vault: SOLANA,
        category: "note",
        text: "Custody wallet rotated",
        occurred_at: "2026-11-05T09:00:00Z",
        author: MANUAL_AUTHOR,
      })
      .execute();
    const r = await h.json<Log>(`/api/v1/platform/governance/${SOLANA}/audit_log`);
    expect(r.status).toBe(200);
    expect(r.body.next_before).toBeNull();
    expect(r.body.entries.map((e) => [e.source, e.category, e.text, e.occurred_at])).toEqual([
      ["manual", "note", "Custody wallet rotated", "2026-11-05T09:00:00.000Z"],
    ]);
  });

  it("422 for a malformed before or category, or a limit out of 1..500", async () => {
    for (const [q, field] of [
      ["before=yesterday", "before"],
      ["before=2026-13-01", "before"],
      ["category=a%00b", "category"],
      // days the calendar does not have and hour 24: refused, not rolled over into the next day
      ["before=2026-02-30", "before"],
      ["before=2026-04-31T10:00:00Z", "before"],
      ["before=2026-01-01T24:00:00Z", "before"],
      ["limit=0", "limit"],
      ["limit=501", "limit"],
      ["limit=ten", "limit"],
    ] as const) {
      const r = await h.json<{ detail: { loc: string[] }[] }>(`${base(pool)}/audit_log?chain_id=1&${q}`);
      expect(r.status, q).toBe(422);
      expect(r.body.detail[0]!.loc).toEqual(["query", field]);
    }
  });
});
