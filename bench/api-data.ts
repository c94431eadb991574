/**
 * Synthetic data for bench:api: indexed tables (a schema shaped like the `indexer` views, with
 * Ponder's indexes), derived tables and registry rows, written with COPY; and the institutional
 * routes' rows: the indexed perp deposits and the core ledger's answers, a lending pool's indexed
 * loans (deployed on the bench's chain, bench/api-world.ts) and the subaccounts' valuation
 * series (through its writer).
 */
import { createHash } from "node:crypto";
import type pg from "pg";
import { type CopyValue, copyRows } from "../db/copy.js";
import { dayToDate } from "../db/days.js";
import type { Db } from "../jobs/repo.js";
import { replaceSubaccountDays, type SubaccountDayRow } from "../jobs/subaccounts/subaccount-day-write.js";
import { VALUATION_METHOD } from "../jobs/subaccounts/valuation.js";
import type { PoolLoan } from "./api-world.js";

export interface BenchShape {
  schema: string;
  vaults: number;
  events: number;
  days: number;
  users: number;
}

const hex = (n: number, len = 40) => `0x${n.toString(16).padStart(len, "0")}`;
export const vaultAddress = (i: number) => hex(0xa000 + i);
export const subaccountAddress = (i: number) => hex(0xe000 + i);
const wallet = (i: number) => hex(0x100000 + i);

/** A tiny deterministic PRNG (mulberry32). */
function rng(seed: number) {
  let a = seed;
  return () => {
    a |= 0;
    a = (a + 0x6d2b79f5) | 0;
    let t = Math.imul(a ^ (a >>> 15), 1 | a);
    t = (t + Math.imul(t ^ (t >>> 7), 61 | t)) ^ t;
    return ((t ^ (t >>> 14)) >>> 0) / 4294967296;
  };
}

export async function buildApiBenchData(client: pg.Client, s: BenchShape, log: (m: string) => void): Promise<void> {
  const S = `"${s.schema}"`;
  await client.query(`DROP SCHEMA IF EXISTS ${S} CASCADE; CREATE SCHEMA ${S}`);
  await client.query(`
    CREATE TABLE ${S}.vault (chain_id integer, address text, family text, kind text, name text, symbol text,
      decimals integer,
      asset text, asset_symbol text, asset_decimals integer, alt_asset text, alt_asset_symbol text,
      alt_asset_decimals integer, share_token text, price_feed text, timelock text, start_block numeric(78),
      owner text, pending_owner text, operator text, fee_collector text, management_fee_percent numeric(78),
      max_change_percent numeric(78),
      max_supply numeric(78), lag_duration numeric(78), deposits_paused boolean, withdrawals_paused boolean,
      total_assets numeric(78), total_supply numeric(78),
      asset_share_ratio numeric(78,18), last_snapshot_block numeric(78), last_snapshot_timestamp numeric(78),
      withdrawal_queue_head integer, withdrawal_queue_tail integer, PRIMARY KEY (chain_id, address));
    CREATE TABLE ${S}.vault_event (id text PRIMARY KEY, chain_id integer, vault text, kind text, sender text,
      owner text, receiver text,
      assets numeric(78), shares numeric(78), asset text, snapshot_id text, block_number numeric(78),
      timestamp numeric(78), tx_hash text, log_index integer);
    CREATE TABLE ${S}.share_ratio_snapshot (id text PRIMARY KEY, chain_id integer, vault text, source text,
      total_assets numeric(78),
      total_supply numeric(78), asset_share_ratio numeric(78,18), idle_assets numeric(78),
      subaccount_assets numeric(78),
      reserved_assets numeric(78), asset_usd_price numeric(78,18), block_number numeric(78), timestamp numeric(78),
      tx_hash text, log_index integer);
    CREATE TABLE ${S}.withdrawal_request (id text PRIMARY KEY, chain_id integer, vault text, owner text, receiver text,
      shares numeric(78),
      assets numeric(78), fee numeric(78), claimable_date text, status text, processed_assets numeric(78),
      processed_block_number numeric(78),
      processed_timestamp numeric(78), processed_tx_hash text, block_number numeric(78), timestamp numeric(78),
      tx_hash text, log_index integer);
    CREATE TABLE ${S}.share_transfer (id text PRIMARY KEY, chain_id integer, vault text, token text, from_address text,
      to_address text,
      shares numeric(78), block_number numeric(78), timestamp numeric(78), tx_hash text, log_index integer);
    CREATE TABLE ${S}.timelock_operation (id text PRIMARY KEY, chain_id integer, vault text, timelock text,
      operation_hash text, call_index integer,
      target text, value numeric(78), data text, predecessor text, salt text, delay numeric(78), ready_at numeric(78),
      status text,
      executed_at numeric(78), executed_tx_hash text, cancelled_at numeric(78), cancelled_tx_hash text,
      block_number numeric(78), timestamp numeric(78), tx_hash text, log_index integer);
    CREATE TABLE ${S}.governance_event (id text PRIMARY KEY, chain_id integer, vault text, contract text, category text,
      event text, args jsonb, block_number numeric(78), timestamp numeric(78), tx_hash text, log_index integer);
    CREATE TABLE ${S}.fee_event (id text PRIMARY KEY, chain_id integer, vault text, kind text, amount numeric(78),
      block_number numeric(78), timestamp numeric(78), tx_hash text, log_index integer);
    CREATE TABLE ${S}.loan (chain_id integer, address text, vault text, borrower text, principal_token text,
      initial_principal numeric(78),
      principal_outstanding numeric(78), interest_repaid numeric(78), total_repaid numeric(78), apr_bps numeric(78),
      term_days numeric(78),
      state text, block_number numeric(78), timestamp numeric(78), tx_hash text, log_index integer,
      updated_at numeric(78), PRIMARY KEY (chain_id, address));
  `);
  const now = Math.floor(Date.now() / 1000);
  const today = Math.floor(now / 86400);
  const first = today - s.days + 1;
  const r = rng(42);
  const vaults = Array.from({ length: s.vaults }, (_, i) => ({
    chainId: i % 2 === 0 ? 1 : 8453,
    address: vaultAddress(i),
    dec: i % 3 === 0 ? 6 : 18,
  }));
  await copyRows(
    client,
    `${s.schema}.vault`,
    [
      "chain_id",
      "address",
      "family",
      "kind",
      "name",
      "symbol",
      "decimals",
      "asset",
      "asset_symbol",
      "asset_decimals",
      "share_token",
      "start_block",
      "owner",
      "operator",
      "deposits_paused",
      "withdrawals_paused",
      "total_assets",
      "total_supply",
      "asset_share_ratio",
      "last_snapshot_block",
      "last_snapshot_timestamp",
      "withdrawal_queue_head",
      "withdrawal_queue_tail",
      "lag_duration",
    ],
    vaults.map((v, i) => [
      v.chainId,
      v.address,
      i % 2 ? "tokenizedVaultV2" : "lendingPool",
      ["stablecoin", "tokenized_eth", "wrapped_staked_eth", "restaked_eth"][i % 4],
      `Bench vault ${i}`,
      `BV${i}`,
      v.dec,
      hex(0xb000 + i),
      v.dec === 6 ? "USDC" : "WETH",
      v.dec,
      v.address,
      1,
      hex(0xc000 + i),
      hex(0xd000 + i),
      false,
      false,
      "1000000000000",
      "1000000000000",
      "1.050000000000000000",
      s.days * 7200,
      now,
      0,
      100,
      7 * 86400,
    ]),
  );
  // vault events: deposits and withdraws spread over the days and vaults
  const perVault = Math.floor(s.events / s.vaults);
  function* events(): Generator<CopyValue[]> {
    for (let v = 0; v < s.vaults; v++) {
      const vv = vaults[v]!;
      for (let k = 0; k < perVault; k++) {
        const block = Math.floor((k / perVault) * s.days * 7200) + 1;
        const ts = first * 86400 + Math.floor((block / 7200) * 86400);
        const w = wallet(Math.floor(r() * s.users));
        const dep = r() < 0.7;
        yield [
          `${vv.chainId}-${v}-${k}`,
          vv.chainId,
          vv.address,
          dep ? "deposit" : "withdraw",
          w,
          w,
          w,
          String(Math.floor(r() * 1e12)),
          String(Math.floor(r() * 1e12)),
          hex(0xb000 + v),
          `${vv.chainId}:${vv.address}:${block}:flow`,
          block,
          ts,
          hex(k * 131 + v, 64),
          k % 5,
        ];
      }
    }
  }
  let t0 = Date.now();
  await copyRows(
    client,
    `${s.schema}.vault_event`,
    [
      "id",
      "chain_id",
      "vault",
      "kind",
      "sender",
      "owner",
      "receiver",
      "assets",
      "shares",
      "asset",
      "snapshot_id",
      "block_number",
      "timestamp",
      "tx_hash",
      "log_index",
    ],
    events(),
  );
  log(`vault_event: ${perVault * s.vaults} rows in ${((Date.now() - t0) / 1000).toFixed(1)}s`);
  t0 = Date.now();
  function* snaps(): Generator<CopyValue[]> {
    for (let v = 0; v < s.vaults; v++) {
      const vv = vaults[v]!;
      let ratio = 1;
      for (let d = first; d <= today; d++) {
        for (let h = 0; h < 4; h++) {
          ratio *= 1 + (r() - 0.2) * 0.0004;
          const ts = d * 86400 + h * 21600 + 60;
          if (ts > now) continue;
          yield [
            `${vv.chainId}:${vv.address}:${d}:${h}`,
            vv.chainId,
            vv.address,
            "interval",
            "1000000000000",
            "1000000000000",
            ratio.toFixed(18),
            "100000000000",
            "850000000000",
            "1000000000",
            vv.dec === 6 ? "1.000000000000000000" : "3000.000000000000000000",
            (d - first) * 7200 + h * 1800,
            ts,
            null,
            null,
          ];
        }
      }
    }
  }
  await copyRows(
    client,
    `${s.schema}.share_ratio_snapshot`,
    [
      "id",
      "chain_id",
      "vault",
      "source",
      "total_assets",
      "total_supply",
      "asset_share_ratio",
      "idle_assets",
      "subaccount_assets",
      "reserved_assets",
      "asset_usd_price",
      "block_number",
      "timestamp",
      "tx_hash",
      "log_index",
    ],
    snaps(),
  );
  function* requests(): Generator<CopyValue[]> {
    for (let v = 0; v < s.vaults; v++) {
      const vv = vaults[v]!;
      for (let k = 0; k < 1000; k++) {
        const d = today - 20 + Math.floor(r() * 40);
        const date = new Date(d * 86400_000).toISOString().slice(0, 10);
        const w = wallet(Math.floor(r() * s.users));
        yield [
          `wr-${v}-${k}`,
          vv.chainId,
          vv.address,
          w,
          w,
          String(Math.floor(r() * 1e12)),
          String(Math.floor(r() * 1e12)),
          "0",
          vv.chainId === 1 ? date : null,
          k % 3 === 0 ? "processed" : "requested",
          (s.days - 30) * 7200 + k,
          (today - 30) * 86400 + k * 60,
          hex(k + v * 7919, 64),
          0,
        ];
      }
    }
  }
  await copyRows(
    client,
    `${s.schema}.withdrawal_request`,
    [
      "id",
      "chain_id",
      "vault",
      "owner",
      "receiver",
      "shares",
      "assets",
      "fee",
      "claimable_date",
      "status",
      "block_number",
      "timestamp",
      "tx_hash",
      "log_index",
    ],
    requests(),
  );
  log(`snapshots and withdrawal requests in ${((Date.now() - t0) / 1000).toFixed(1)}s`);
  t0 = Date.now();
  // the indexes Ponder declares for these tables (ponder.schema.ts)
  await client.query(`
    CREATE INDEX ON ${S}.vault_event (chain_id, vault, block_number); CREATE INDEX ON ${S}.vault_event (owner);
      CREATE INDEX ON ${S}.vault_event (receiver);
    CREATE INDEX ON ${S}.share_ratio_snapshot (chain_id, vault, timestamp);
    CREATE INDEX ON ${S}.withdrawal_request (chain_id, vault, status); CREATE INDEX ON ${S}.withdrawal_request (owner);
    CREATE INDEX ON ${S}.share_transfer (chain_id, vault, block_number);
    CREATE INDEX ON ${S}.timelock_operation (chain_id, timelock, operation_hash);
      CREATE INDEX ON ${S}.timelock_operation (chain_id, vault, status);
    CREATE INDEX ON ${S}.governance_event (chain_id, vault, block_number);
    CREATE INDEX ON ${S}.fee_event (chain_id, vault, timestamp);
    ANALYZE ${S}.vault_event; ANALYZE ${S}.share_ratio_snapshot; ANALYZE ${S}.withdrawal_request;`);
  log(`indexes in ${((Date.now() - t0) / 1000).toFixed(1)}s`);

  // derived tables, as the jobs would leave them (the series from the snapshots, in SQL)
  t0 = Date.now();
  await client.query(`
    INSERT INTO derived.vault_day (chain_id, vault, day, missing, snapshot_id, snapshot_timestamp, block_number,
      share_price, total_assets, total_shares,
      asset_share_ratio, asset_usd_price, tvl, daily_apy, daily_pnl, fees_charged, gross_daily_apy, fingerprint,
      computed_at)
    SELECT chain_id, vault, date '1970-01-01' + d, false, id, timestamp, block_number, asset_share_ratio, total_assets,
      total_supply, asset_share_ratio, asset_usd_price, trunc(total_assets * asset_usd_price / 1e12, 18),
      power(asset_share_ratio / nullif(lag(asset_share_ratio) OVER w, 0), 365)::float8 - 1,
      trunc((asset_share_ratio - lag(asset_share_ratio) OVER w) * total_supply / 1e12, 18), 0, null, md5(id), now()
    FROM (SELECT DISTINCT ON (chain_id, vault, floor(timestamp / 86400)) *, floor(timestamp / 86400)::int AS d
      FROM ${S}.share_ratio_snapshot
          ORDER BY chain_id, vault, floor(timestamp / 86400), timestamp DESC) x
    WINDOW w AS (PARTITION BY chain_id, vault ORDER BY d)`);
  await client.query(`
    INSERT INTO derived.vault_apy (chain_id, vault, day, horizon, span_days, simple_apy, compound_apy, gross_simple_apy,
      gross_compound_apy, pnl_per_share, daily_pnl_per_share, computed_at)
    SELECT a.chain_id, a.vault, a.day, h::text, h, (a.asset_share_ratio / b.asset_share_ratio - 1)::float8 * 365 / h,
      power((a.asset_share_ratio / b.asset_share_ratio)::float8, 365.0 / h) - 1,
      (a.asset_share_ratio / b.asset_share_ratio - 1)::float8 * 365 / h,
      power((a.asset_share_ratio / b.asset_share_ratio)::float8, 365.0 / h) - 1,
      (a.asset_share_ratio - b.asset_share_ratio)::float8,
      (a.asset_share_ratio - b.asset_share_ratio)::float8 / h, now()
    FROM derived.vault_day a CROSS JOIN unnest(ARRAY[1, 7, 30, 90, 180, 365]) h
    JOIN derived.vault_day b ON b.chain_id = a.chain_id AND b.vault = a.vault AND b.day = a.day - h`);
  await client.query(`
    INSERT INTO derived.vault_metrics (chain_id, vault, as_of_day, first_day, tvl, share_price, historical_apy,
      historical_compound_apy, gross_apy, gross_compound_apy,
      pnl_per_share, daily_pnl_per_share, returns, liquid_apy_7d, liquid_apy_30d, max_drawdown, max_daily_drawdown,
      apy_computed_at, share_ratio_snapshot_at, cached_at)
    SELECT v.chain_id, v.address, current_date, current_date - ${s.days - 1}, 1000000, 1.05,
      coalesce((SELECT jsonb_object_agg(horizon, simple_apy) FROM derived.vault_apy a WHERE a.chain_id = v.chain_id
      AND a.vault = v.address AND a.day = current_date), '{}'),
      coalesce((SELECT jsonb_object_agg(horizon, compound_apy) FROM derived.vault_apy a WHERE a.chain_id = v.chain_id
      AND a.vault = v.address AND a.day = current_date), '{}'),
      '{}', '{}', '{}', '{}', '{"1": 0.0001, "7": 0.001, "30": 0.004}', 0.05, 0.05, 0.01, 0.002, now(), now(), now()
    FROM ${S}.vault v`);
  // points: 100k registered users with balances, ranks and one pool each
  function* users(): Generator<CopyValue[]> {
    for (let i = 0; i < s.users; i++)
      yield [
        wallet(i),
        i > 0 && i % 10 === 0 ? wallet(i - 1) : null,
        1,
        new Date((first + (i % s.days)) * 86400_000).toISOString(),
        i % 10 === 0 && i > 0 ? "100" : "0",
      ];
  }
  await copyRows(
    client,
    "registry.points_user",
    ["address", "referrer", "chain_id", "registered_at", "signup_bonus"],
    users(),
  );
  // Points as the workers leave them: the rules, each vault's index at today, one open
  // position per user (balances and ranks are views over these) and a lifetime deposit; a
  // streak claim today for most users.
  await client.query("INSERT INTO derived.points_rules (points_per_usd_per_day, referral_share) VALUES (1, 0.1)");
  await copyRows(
    client,
    "derived.points_vault",
    ["chain_id", "vault", "day", "asset_decimals", "ratio", "price", "cum_points_per_share", "computed_at"],
    vaults.map((v, k) => [
      v.chainId,
      v.address,
      new Date(today * 86400_000).toISOString().slice(0, 10),
      6,
      "1.05",
      "1",
      `0.${String(1 + k).padStart(8, "0")}${"7".repeat(28)}`,
      new Date().toISOString(),
    ]),
  );
  function* positions(): Generator<CopyValue[]> {
    for (let i = 0; i < s.users; i++) {
      const v = vaults[i % s.vaults]!;
      const shares = Math.floor(r() * 1e12);
      yield [
        v.chainId,
        v.address,
        wallet(i),
        new Date((first + (i % s.days)) * 86400_000).toISOString().slice(0, 10),
        String(shares),
        String(BigInt(shares) * 86_400n), // held all of its first day
        null,
        "0",
        null,
        (r() * 1e4).toFixed(18),
      ];
    }
  }
  await copyRows(
    client,
    "derived.points_position",
    [
      "chain_id",
      "vault",
      "wallet",
      "day",
      "shares",
      "day_share_seconds",
      "next_day",
      "base_points",
      "points",
      "settled_points",
    ],
    positions(),
  );
  function* deposits(): Generator<CopyValue[]> {
    for (let i = 0; i < s.users; i++) {
      const v = vaults[i % s.vaults]!;
      yield [
        v.chainId,
        v.address,
        wallet(i),
        (r() * 1e4).toFixed(18),
        new Date((first + (i % s.days)) * 86400_000).toISOString().slice(0, 10),
      ];
    }
  }
  await copyRows(
    client,
    "derived.points_deposit",
    ["chain_id", "vault", "wallet", "lifetime_deposit", "last_deposit_day"],
    deposits(),
  );
  await client.query(`
    INSERT INTO registry.streak_claim (address, day, streak_days, points, claimed_at)
    SELECT address, current_date, 1 + (hashtext(address) & 31), 10, now() FROM registry.points_user
      WHERE hashtext(address) & 7 <> 0`);
  await client.query("ANALYZE");
  log(`derived and registry rows in ${((Date.now() - t0) / 1000).toFixed(1)}s`);
}

export interface InstitutionalShape {
  schema: string;
  /** the chain of the pool's loans and of the bridges */
  chainId: number;
  pool: string;
  loans: readonly PoolLoan[];
  bridges: { a: string; b: string; usdc: string; weth: string };
  /** the core ledger's chain */
  coreChainId: number;
  deposits: number;
  days: number;
  /** who deposits (the subaccounts) */
  depositors: readonly string[];
}

/** A core hash as the bridges compute it: 32 bytes that look random. */
const coreHash = (i: number) => `0x${createHash("sha256").update(`bench-perp-${i}`).digest("hex")}`;

/**
 * The lending pool's indexed loans and the perp deposits with the core ledger's answers (the
 * newest few without one yet: pending). Returns a core hash of each status, deposited through
 * bridge A.
 */
export async function buildInstitutionalBenchData(
  client: pg.Client,
  s: InstitutionalShape,
): Promise<{ credited: string; rejected: string; pending: string }> {
  const S = `"${s.schema}"`;
  await copyRows(
    client,
    `${s.schema}.loan`,
    [
      "chain_id",
      "address",
      "vault",
      "borrower",
      "principal_token",
      "initial_principal",
      "principal_outstanding",
      "interest_repaid",
      "total_repaid",
      "apr_bps",
      "term_days",
      "state",
      "block_number",
      "timestamp",
      "tx_hash",
      "log_index",
      "updated_at",
    ],
    s.loans.map((l) => [
      s.chainId,
      l.address,
      s.pool,
      l.borrower,
      l.principalToken,
      l.principal,
      l.state === "active" ? l.principal : 0n,
      0n,
      0n,
      l.aprBps,
      l.termDays,
      l.state,
      l.blockNumber,
      l.timestamp,
      l.txHash,
      l.logIndex,
      l.timestamp,
    ]),
  );
  await client.query(`
    CREATE TABLE ${S}.perp_deposit (id text PRIMARY KEY, chain_id integer, bridge text, core_hash text,
      depositor text, token text,
      amount numeric(78), destination integer, nonce numeric(78), block_number numeric(78), timestamp numeric(78),
      tx_hash text, log_index integer);
    CREATE TABLE ${S}.perp_core_event (id text PRIMARY KEY, chain_id integer, ledger text, core_hash text, kind text,
      depositor text,
      bridge text, source_chain_id numeric(78), token text, amount numeric(78), destination integer, reason text,
      block_number numeric(78), timestamp numeric(78), tx_hash text, log_index integer);`);
  const r = rng(7);
  const now = Math.floor(Date.now() / 1000);
  const first = now - s.days * 86_400;
  const span = now - 60 - first;
  const pendingFrom = s.deposits - Math.max(1, Math.floor(s.deposits / 2000));
  const rejected = (i: number) => i % 25 === 7;
  const at = (i: number) => first + Math.floor((i / s.deposits) * span);
  function* deposits(): Generator<CopyValue[]> {
    for (let i = 0; i < s.deposits; i++) {
      const viaA = i % 3 !== 2;
      const weth = !viaA && i % 2 === 1;
      yield [
        `${s.chainId}-perp-${i}`,
        s.chainId,
        viaA ? s.bridges.a : s.bridges.b,
        coreHash(i),
        s.depositors[i % s.depositors.length]!,
        weth ? s.bridges.weth : s.bridges.usdc,
        String(rejected(i) ? 1_000_000 + (i % 3_000_000) : Math.floor(r() * 1e11) + 5e6),
        viaA ? 0 : i % 2,
        i,
        Math.floor(i * 4.3) + 1,
        at(i),
        hex(0x9e000000 + i, 64),
        i % 4,
      ];
    }
  }
  await copyRows(
    client,
    `${s.schema}.perp_deposit`,
    [
      "id",
      "chain_id",
      "bridge",
      "core_hash",
      "depositor",
      "token",
      "amount",
      "destination",
      "nonce",
      "block_number",
      "timestamp",
      "tx_hash",
      "log_index",
    ],
    deposits(),
  );
  function* answers(): Generator<CopyValue[]> {
    for (let i = 0; i < pendingFrom; i++) {
      const viaA = i % 3 !== 2;
      const no = rejected(i);
      yield [
        `${s.coreChainId}-core-${i}`,
        s.coreChainId,
        hex(0xc0e),
        coreHash(i),
        no ? "rejected" : "credited",
        no ? null : s.depositors[i % s.depositors.length]!,
        no ? null : viaA ? s.bridges.a : s.bridges.b,
        no ? null : s.chainId,
        no ? null : s.bridges.usdc,
        no ? null : "1000000",
        no ? null : viaA ? 0 : i % 2,
        no ? "below the bridge's minimum deposit" : null,
        Math.floor(i * 4.3) + 11,
        at(i) + 20,
        hex(0xc0000000 + i, 64),
        0,
      ];
    }
  }
  await copyRows(
    client,
    `${s.schema}.perp_core_event`,
    [
      "id",
      "chain_id",
      "ledger",
      "core_hash",
      "kind",
      "depositor",
      "bridge",
      "source_chain_id",
      "token",
      "amount",
      "destination",
      "reason",
      "block_number",
      "timestamp",
      "tx_hash",
      "log_index",
    ],
    answers(),
  );
  // the indexes Ponder declares for these tables (ponder.schema.ts)
  await client.query(`
    CREATE INDEX ON ${S}.loan (vault);
    CREATE INDEX ON ${S}.perp_deposit (core_hash); CREATE INDEX ON ${S}.perp_deposit (depositor);
    CREATE INDEX ON ${S}.perp_core_event (core_hash); CREATE INDEX ON ${S}.perp_core_event (depositor);
    ANALYZE ${S}.loan; ANALYZE ${S}.perp_deposit; ANALYZE ${S}.perp_core_event;`);
  // deposits through bridge A (perp_relayer_a) from the middle of the history, and the newest
  const viaA = (i: number) => i % 3 !== 2;
  const find = (from: number, ok: (i: number) => boolean, dir = 1) => {
    let i = from;
    while (!ok(i)) i += dir;
    return coreHash(i);
  };
  const mid = Math.floor(s.deposits / 2);
  return {
    credited: find(mid, (i) => viaA(i) && !rejected(i)),
    rejected: find(mid, (i) => viaA(i) && rejected(i)),
    pending: find(s.deposits - 1, viaA, -1),
  };
}

/**
 * Each subaccount's valuation series over `days` days ending today, as the valuation job leaves
 * it (written through its writer, one subaccount per transaction): a random walk of deposits and
 * returns.
 */
export async function buildSubaccountDays(
  db: Db,
  addresses: readonly string[],
  days: number,
  chainId: number,
): Promise<number> {
  const today = Math.floor(Date.now() / 86_400_000);
  const r = rng(11);
  let n = 0;
  for (const address of addresses) {
    const rows: SubaccountDayRow[] = [];
    let deposits = 0;
    let value = 0;
    for (let d = today - days + 1; d <= today; d++) {
      if (deposits === 0 || r() < 0.05) {
        const flow = (r() - 0.2) * 500_000;
        deposits += flow;
        value += flow;
      }
      value *= 1 + (r() - 0.45) * 0.004;
      const collateral = value * 0.6;
      const loans = value * 0.3;
      rows.push({
        address: address.toLowerCase(),
        day: dayToDate(d),
        total_account_value: value + loans,
        total_collateral_value: collateral,
        total_loan_value: loans,
        total_loan_interest_amount: loans * 0.01,
        liquidation_collateral: collateral * 0.8,
        net_account_value: value,
        total_net_deposits: deposits,
        total_pnl: value - deposits,
        health_factor: loans > 0 ? (collateral * 0.8) / loans : null,
        blocks: { [String(chainId)]: 1000 + d },
        funding: [],
        method: VALUATION_METHOD,
      });
    }
    await replaceSubaccountDays(db, rows);
    n += rows.length;
  }
  return n;
}
