/**
 * Vault rewards written through the API (issue 5) with the workers running: a reward changes
 * the holding points of exactly the days it covers by exactly its multiplier once the derived
 * tables are settled, an update changes them again and a delete restores them; each write asks
 * the workers for a fan-out and has its audit row. Idempotency-Key on the write routes: a retry
 * gets the first answer without acting again, another body with the same key 422, concurrent
 * requests with one key act once, keys are per credential.
 */
import { randomUUID } from "node:crypto";
import { Queue } from "bullmq";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { createKey } from "../../api/keys.js";
import { DAY_SECONDS, dateToDay } from "../../db/days.js";
import { parseFixed } from "../../db/fixed.js";
import { jobsConfig } from "../../jobs/config.js";
import { PREFIX, QUEUES } from "../../jobs/queues.js";
import { redisConnection, settle, startWorkers, type WorkerHandle } from "../../jobs/runtime.js";
import { type ApiHarness, setupApi } from "../api-harness.js";
import { until } from "../helpers.js";
import { auditOf, dropCredentialTraces, type Invalid, newAudits, type Refused, send } from "../write-helpers.js";

const REWARDS = "/api/v1/tokenized_vault/rewards";

let h: ApiHarness;
let workers: WorkerHandle | undefined;
let rewardsKey: { id: string; key: string };
let rewardsKey2: { id: string; key: string };
let pointsOnlyKey: { id: string; key: string };
const keyIds: string[] = [];
const rewardIds = new Set<string>();

type Written = {
  id: string;
  tokenizedvault_id: string;
  vault_address: string;
  chain_id: number;
  text: string;
  img_url: string | null;
  multiplier: number;
  start_datetime: string;
  end_datetime: string | null;
  updated_at: string;
  created_at: string;
  created: boolean;
};

const post = (body: unknown, key: string | null = rewardsKey.key, headers: Record<string, string> = {}) =>
  send<Written & Refused & Invalid>(h.app, "POST", REWARDS, body, { ...(key ? { "x-api-key": key } : {}), ...headers });
const del = (body: unknown, key: string | null = rewardsKey.key, headers: Record<string, string> = {}) =>
  send<{ deleted: true; reward_id: string } & Refused & Invalid>(h.app, "DELETE", REWARDS, body, {
    ...(key ? { "x-api-key": key } : {}),
    ...headers,
  });
const track = <T extends { status: number; body: { id?: string } }>(r: T): T => {
  if (r.status === 200 && r.body.id) rewardIds.add(r.body.id);
  return r;
};
const iso = (day: number) => new Date(day * DAY_SECONDS * 1000).toISOString();
/** a window far in the future: in force on no day the workers compute */
const FUTURE = { start_datetime: "2031-01-01T00:00:00Z", end_datetime: "2031-02-01T00:00:00Z" };

beforeAll(async () => {
  h = await setupApi();
  rewardsKey = await createKey(h.db, "w6-rewards", ["rewards:write"]);
  rewardsKey2 = await createKey(h.db, "w6-rewards-2", ["rewards:write"]);
  pointsOnlyKey = await createKey(h.db, "w6-rewards-points-only", ["points:write"]);
  keyIds.push(rewardsKey.id, rewardsKey2.id, pointsOnlyKey.id);
  const cfg = jobsConfig({ DATABASE_URL: h.devnet.dbUrl, VAULT_REGISTRY: h.devnet.registryFile });
  workers = await startWorkers({ ...cfg, redisUrl: h.redisUrl }, () => {}, Date.now, { schedule: false });
  await settle(h.redisUrl, 300_000);
}, 600_000);

afterAll(async () => {
  if (h) {
    if (rewardIds.size)
      await h.db
        .deleteFrom("registry.reward")
        .where("id", "in", [...rewardIds])
        .execute();
    // the derived tables as they were (the rewards this file wrote no longer count)
    if (workers) await settle(h.redisUrl, 300_000);
    await dropCredentialTraces(h, keyIds);
  }
  await workers?.close();
  await h?.close();
}, 600_000);

describe("rewards change the points of the days they cover (workers running)", () => {
  interface Row {
    day: string;
    wallet: string;
    points: string;
  }
  let vault: { chain_id: number; vault: string; first: string; id: string };
  let x: number; // first covered day
  let y: number; // last covered day
  // the days before the first read's UTC day: later reads compare the same days, even across midnight
  let cutoff: string | undefined;
  const ledger = async () => {
    cutoff ??= (await h.q<{ d: string }>("SELECT ((now() AT TIME ZONE 'UTC')::date)::text AS d"))[0]!.d;
    return new Map(
      (
        await h.q<Row>(
          `SELECT day::text, wallet, points::text FROM derived.points_ledger
           WHERE chain_id = $1 AND vault = $2 AND source = 'holding' AND day < $3::date`,
          [vault.chain_id, vault.vault, cutoff],
        )
      ).map((r) => [`${r.day}|${r.wallet}`, r]),
    );
  };
  let before: Map<string, Row>;
  const expectScaled = async (from: number, to: number, factor: bigint) => {
    const after = await ledger();
    expect([...after.keys()].sort()).toEqual([...before.keys()].sort());
    let scaled = 0;
    const wrong: string[] = [];
    for (const [k, b] of before) {
      const d = dateToDay(b.day);
      const covered = d >= from && d <= to;
      if (covered) scaled++;
      const want = parseFixed(b.points) * (covered ? factor : 1n);
      // Days before the reward are untouched, and removing it restores every day exactly. On the
      // days from the reward on, points come from the cumulative index (docs/metrics.md): its 36th
      // decimal and the once-only truncation move a day by far less than 10^-9 points.
      const diff = parseFixed(after.get(k)!.points) - want;
      const exact = factor === 1n || d < from;
      if (exact ? diff !== 0n : (diff < 0n ? -diff : diff) > 10n ** 9n)
        wrong.push(`${k}: ${b.points} -> ${after.get(k)!.points} (want x${covered ? factor : 1n})`);
    }
    expect(wrong).toEqual([]);
    return scaled;
  };
  let rewardId: string;

  beforeAll(async () => {
    const [v] = await h.q<{ chain_id: number; vault: string; first: string; holders: number }>(
      `SELECT chain_id, vault, min(day)::text AS first, count(DISTINCT wallet)::int AS holders FROM derived.points_ledger
       WHERE source = 'holding' AND chain_id <> 0 GROUP BY 1, 2 ORDER BY holders DESC, chain_id, vault LIMIT 1`,
    );
    expect(v!.holders).toBeGreaterThan(3);
    const [reg] = await h.q<{ id: string }>(
      "SELECT id::text FROM registry.vault WHERE chain_id = $1 AND address = $2",
      [v!.chain_id, v!.vault],
    );
    vault = { ...v!, id: reg!.id };
    // the ledger can change by exactly the multiplier only where the multipliers in force are whole numbers
    const fractional = await h.q(
      "SELECT 1 FROM registry.reward WHERE chain_id = $1 AND vault = $2 AND multiplier <> trunc(multiplier)",
      [vault.chain_id, vault.vault],
    );
    expect(fractional).toEqual([]);
    x = dateToDay(vault.first) + 5;
    y = x + 2;
    before = await ledger();
    expect([...before.values()].filter((r) => dateToDay(r.day) >= x && dateToDay(r.day) <= y).length).toBeGreaterThan(
      3,
    );
  });

  it("POST a reward x3 over three past days: it is stored, audited, a fan-out is asked for, and after settling those days' holding points triple and earlier days are unchanged", async () => {
    const queue = new Queue(QUEUES.fanout.name, { connection: redisConnection(h.redisUrl), prefix: PREFIX });
    try {
      const writeJobs = async () =>
        new Set(
          (await queue.getJobs(["delayed", "waiting", "active", "completed", "failed", "prioritized"]))
            .map((j) => j.id!)
            .filter((id) => id.startsWith("fanout-write-")),
        );
      const jobsBefore = await writeJobs();
      const auditsBefore = (await auditOf(h, rewardsKey.id)).length;
      const r = track(
        await post({
          vault_address: `0x${vault.vault.slice(2).toUpperCase()}`,
          chain_id: vault.chain_id,
          text: "w6 triple points",
          multiplier: 3,
          img_url: "https://example.com/x3.png",
          start_datetime: iso(x),
          end_datetime: iso(y + 1),
        }),
      );
      expect(r.status, JSON.stringify(r.body)).toBe(200);
      expect(r.body).toEqual({
        id: expect.any(String),
        tokenizedvault_id: vault.id,
        vault_address: vault.vault,
        chain_id: vault.chain_id,
        text: "w6 triple points",
        img_url: "https://example.com/x3.png",
        multiplier: 3,
        start_datetime: iso(x),
        end_datetime: iso(y + 1),
        updated_at: expect.any(String),
        created_at: expect.any(String),
        created: true,
      });
      rewardId = r.body.id;
      const [row] = await h.q<{ vault: string; multiplier: string; start: string; end: string }>(
        "SELECT vault, multiplier::text, to_char(start_datetime AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS') AS start, to_char(end_datetime AT TIME ZONE 'UTC', 'YYYY-MM-DD\"T\"HH24:MI:SS') AS end FROM registry.reward WHERE id = $1",
        [rewardId],
      );
      expect(row).toEqual({
        vault: vault.vault,
        multiplier: "3.000000",
        start: iso(x).slice(0, 19),
        end: iso(y + 1).slice(0, 19),
      });
      expect(await newAudits(h, rewardsKey.id, auditsBefore)).toEqual([
        expect.objectContaining({
          principal_kind: "api_key",
          action: "reward.upsert",
          target: `reward:${rewardId}`,
          method: "POST",
          path: REWARDS,
          status: 200,
          outcome: "ok",
          code: null,
          detail: { vault: vault.vault, chain_id: vault.chain_id, multiplier: 3, created: true },
        }),
      ]);
      // the write asked the workers for a fan-out (queued after the answer, so wait for it)
      const id = await until("a fanout-write job", 60_000, async () =>
        [...(await writeJobs())].find((id) => !jobsBefore.has(id)),
      );
      // retried, and kept as the schedule's runs are (BullMQ trims the queue by the last job's)
      const job = (await queue.getJob(id))!;
      expect(job.opts.attempts).toBeGreaterThan(1);
      expect(job.opts.removeOnFail).toEqual({ age: 7 * 24 * 3600, count: 5000 });
      expect(job.opts.removeOnComplete).toEqual({ age: 3600, count: 100 });
    } finally {
      await queue.close();
    }
    await settle(h.redisUrl, 300_000);
    expect(await expectScaled(x, y, 3n)).toBeGreaterThan(3);
  });

  it("POST with reward_id updates it (x2, one day shorter): after settling the covered days are x2 of the original", async () => {
    const auditsBefore = (await auditOf(h, rewardsKey.id)).length;
    const r = await post({
      reward_id: rewardId,
      vault_address: vault.vault,
      chain_id: vault.chain_id,
      text: "w6 double points",
      multiplier: 2,
      end_datetime: iso(y),
    });
    expect(r.status, JSON.stringify(r.body)).toBe(200);
    expect(r.body).toMatchObject({
      id: rewardId,
      created: false,
      multiplier: 2,
      text: "w6 double points",
      start_datetime: iso(x),
      end_datetime: iso(y),
      img_url: "https://example.com/x3.png",
    });
    expect(await h.q("SELECT count(*)::int AS n FROM registry.reward WHERE id = $1", [rewardId])).toEqual([{ n: 1 }]);
    expect(
      (await newAudits(h, rewardsKey.id, auditsBefore)).map((a) => [a.action, a.outcome, a.target, a.detail]),
    ).toEqual([
      [
        "reward.upsert",
        "ok",
        `reward:${rewardId}`,
        { vault: vault.vault, chain_id: vault.chain_id, multiplier: 2, created: false },
      ],
    ]);
    await settle(h.redisUrl, 300_000);
    await expectScaled(x, y - 1, 2n);
  });

  it("DELETE the reward: after settling every day's points are back; a second DELETE is 404 reward_not_found", async () => {
    const auditsBefore = (await auditOf(h, rewardsKey.id)).length;
    const r = await del({ reward_id: rewardId });
    expect(r.status).toBe(200);
    expect(r.body).toEqual({ deleted: true, reward_id: rewardId });
    expect(await h.q("SELECT 1 FROM registry.reward WHERE id = $1", [rewardId])).toEqual([]);
    await settle(h.redisUrl, 300_000);
    await expectScaled(x, y, 1n);
    const again = await del({ reward_id: rewardId });
    expect(again.status).toBe(404);
    expect(again.body).toEqual({ detail: expect.any(String), code: "reward_not_found" });
    expect(
      (await newAudits(h, rewardsKey.id, auditsBefore)).map((a) => [
        a.action,
        a.status,
        a.outcome,
        a.code,
        a.target,
        a.detail,
      ]),
    ).toEqual([
      [
        "reward.delete",
        200,
        "ok",
        null,
        `reward:${rewardId}`,
        { vault: vault.vault, chain_id: vault.chain_id, multiplier: 2 },
      ],
      ["reward.delete", 404, "refused", "reward_not_found", null, {}],
    ]);
  });
});

describe("rewards: refusals, 422, credentials", () => {
  let vaults: { chain_id: number; address: string }[];
  beforeAll(async () => {
    vaults = await h.q<{ chain_id: number; address: string }>(
      "SELECT chain_id, address FROM registry.vault WHERE chain_id > 0 ORDER BY chain_id, address",
    );
    expect(vaults.length).toBeGreaterThanOrEqual(2);
  });
  const base = () => ({
    vault_address: vaults[0]!.address,
    chain_id: vaults[0]!.chain_id,
    text: "w6 refusals",
    multiplier: 1.5,
    ...FUTURE,
  });

  it("404 vault_not_found, 400 invalid_window, 409 reward_vault_mismatch; a new reward_id creates a reward with that id", async () => {
    const before = (await auditOf(h, rewardsKey.id)).length;
    const unknown = await post({ ...base(), vault_address: `0x${"ab".repeat(20)}` });
    expect(unknown.status).toBe(404);
    expect(unknown.body).toEqual({ detail: expect.any(String), code: "vault_not_found" });
    const wrongChain = await post({ ...base(), chain_id: 424242 });
    expect(wrongChain.body.code).toBe("vault_not_found");
    for (const w of [
      { start_datetime: "2031-01-02T00:00:00Z", end_datetime: "2031-01-01T00:00:00Z" },
      { start_datetime: "2031-01-01T00:00:00Z", end_datetime: "2031-01-01T00:00:00Z" },
    ]) {
      const r = await post({ ...base(), ...w });
      expect(r.status).toBe(400);
      expect(r.body.code).toBe("invalid_window");
    }
    const id = randomUUID();
    const created = track(await post({ ...base(), reward_id: id }));
    expect(created.status).toBe(200);
    expect(created.body).toMatchObject({
      id,
      created: true,
      multiplier: 1.5,
      start_datetime: "2031-01-01T00:00:00.000Z",
      end_datetime: "2031-02-01T00:00:00.000Z",
    });
    const other = vaults.find((v) => v.address !== vaults[0]!.address)!;
    const mismatch = await post({ ...base(), reward_id: id, vault_address: other.address, chain_id: other.chain_id });
    expect(mismatch.status).toBe(409);
    expect(mismatch.body.code).toBe("reward_vault_mismatch");
    expect(await h.q("SELECT vault, multiplier::text FROM registry.reward WHERE id = $1", [id])).toEqual([
      { vault: vaults[0]!.address, multiplier: "1.500000" },
    ]);
    expect((await newAudits(h, rewardsKey.id, before)).map((a) => [a.status, a.outcome, a.code])).toEqual([
      [404, "refused", "vault_not_found"],
      [404, "refused", "vault_not_found"],
      [400, "refused", "invalid_window"],
      [400, "refused", "invalid_window"],
      [200, "ok", null],
      [409, "refused", "reward_vault_mismatch"],
    ]);
    // numbers written as text, as FastAPI (pydantic) reads them
    const asText = { ...base(), reward_id: id, chain_id: String(vaults[0]!.chain_id), multiplier: "2.5" };
    expect(track(await post(asText)).body).toMatchObject({ id, created: false, multiplier: 2.5 });
  });

  it("concurrent writes naming one new reward_id: one creates it, the others update it (one row, no error)", async () => {
    // a few rounds: each is a race the route must win every time, the id in either case
    for (let round = 0; round < 5; round++) {
      const id = randomUUID();
      const rs = await Promise.all(
        [1, 2, 3, 4].map((m) => post({ ...base(), reward_id: m % 2 ? id.toUpperCase() : id, multiplier: m })),
      );
      rs.forEach(track);
      expect(
        rs.map((r) => r.status),
        JSON.stringify(rs.map((r) => r.body)),
      ).toEqual([200, 200, 200, 200]);
      expect(rs.filter((r) => r.body.created)).toHaveLength(1);
      const rows = await h.q<{ multiplier: string }>("SELECT multiplier::text FROM registry.reward WHERE id = $1", [
        id,
      ]);
      expect(rows).toHaveLength(1);
      expect([1, 2, 3, 4]).toContain(Number(rows[0]!.multiplier));
    }
  });

  it("an address deployed on several chains needs chain_id (422)", async () => {
    const multi = await h.q<{ address: string }>(
      "SELECT address FROM registry.vault WHERE chain_id > 0 GROUP BY address HAVING count(*) > 1 LIMIT 1",
    );
    // the devnet deploys the same vault addresses on both chains
    expect(multi.length).toBeGreaterThan(0);
    const r = await post({ ...base(), vault_address: multi[0]!.address, chain_id: undefined });
    expect(r.status).toBe(422);
    expect(r.body.detail[0]!.loc).toEqual(["body", "chain_id"]);
  });

  it("a retry under its Idempotency-Key gets its first answer though the address is on another chain since", async () => {
    const solana = "7VaultSo1anaExamp1eAddre55xxxxxxxxxxxxxxxxxx"; // on chain -1 only
    const body = { ...base(), vault_address: solana, chain_id: undefined, text: "w6 one chain, then two" };
    const key = { "idempotency-key": `w6-second-chain-${randomUUID()}` };
    const first = track(await post(body, undefined, key));
    expect(first.status, JSON.stringify(first.body)).toBe(200);
    expect(first.body.chain_id).toBe(-1);
    await h.q(
      `INSERT INTO registry.vault (chain_id, address, family, name, symbol, chain_type)
       VALUES (-2, $1, 'solanaVault', 'w6 second chain', 'x', 'solana')`,
      [solana],
    );
    try {
      const retry = await post(body, undefined, key);
      expect(retry.status).toBe(200);
      expect(retry.res.headers.get("idempotent-replayed")).toBe("true");
      expect(retry.body).toEqual(first.body);
      // a new request is ambiguous now
      const fresh = await post(body);
      expect(fresh.status).toBe(422);
      expect(fresh.body.detail[0]).toMatchObject({ loc: ["body", "chain_id"], type: "missing" });
      expect(fresh.body.detail[0]!.msg).toContain("-2, -1");
    } finally {
      await h.q("DELETE FROM registry.vault WHERE chain_id = -2 AND address = $1", [solana]);
    }
  });

  it("422 with FastAPI bodies for malformed input; nothing written", async () => {
    const count = async () => (await h.q<{ n: number }>("SELECT count(*)::int AS n FROM registry.reward"))[0]!.n;
    const n0 = await count();
    const cases: [string, unknown, (string | number)[]][] = [
      ["no vault_address", { ...base(), vault_address: undefined }, ["body", "vault_address"]],
      ["vault_address with symbols", { ...base(), vault_address: "0x12;drop" }, ["body", "vault_address"]],
      ["negative multiplier", { ...base(), multiplier: -1 }, ["body", "multiplier"]],
      ["huge multiplier", { ...base(), multiplier: 1001 }, ["body", "multiplier"]],
      ["multiplier as a word", { ...base(), multiplier: "two" }, ["body", "multiplier"]],
      ["multiplier as text, out of range", { ...base(), multiplier: "1001" }, ["body", "multiplier"]],
      ["chain_id as a word", { ...base(), chain_id: "base" }, ["body", "chain_id"]],
      ["blank text", { ...base(), text: "   " }, ["body", "text"]],
      ["no text", { ...base(), text: undefined }, ["body", "text"]],
      ["date that is not ISO", { ...base(), start_datetime: "yesterday" }, ["body", "start_datetime"]],
      ["an impossible month", { ...base(), end_datetime: "2031-13-01T00:00:00Z" }, ["body", "end_datetime"]],
      ["reward_id not a uuid", { ...base(), reward_id: "123" }, ["body", "reward_id"]],
      ["img_url not a URL", { ...base(), img_url: "not a url" }, ["body", "img_url"]],
      ["img_url not http(s)", { ...base(), img_url: "javascript:alert(1)" }, ["body", "img_url"]],
      ["chain_id 0", { ...base(), chain_id: 0 }, ["body", "chain_id"]],
      ["chain_id past a 32-bit column", { ...base(), chain_id: 2 ** 31 }, ["body", "chain_id"]],
    ];
    for (const [what, body, loc] of cases) {
      const r = await post(body);
      expect(r.status, what).toBe(422);
      expect(r.body.detail, what).toEqual(
        expect.arrayContaining([expect.objectContaining({ loc, msg: expect.any(String), type: expect.any(String) })]),
      );
    }
    for (const [what, body] of [
      ["no reward_id", {}],
      ["reward_id not a uuid", { reward_id: "x" }],
    ] as const) {
      const r = await del(body);
      expect(r.status, what).toBe(422);
      expect(r.body.detail[0]!.loc).toEqual(["body", "reward_id"]);
    }
    const notJson = await post("[1,");
    expect(notJson.status).toBe(422);
    expect(notJson.body.detail[0]!.loc).toEqual(["body"]);
    expect(await count()).toBe(n0);
  });

  it("no key 401, revoked 403, a key without rewards:write 403 insufficient_scope (POST and DELETE); a bearer token is no credential here", async () => {
    const id = randomUUID();
    for (const f of [post, del]) {
      const body = f === post ? base() : { reward_id: id };
      expect((await f(body, null)).status).toBe(401);
      expect((await f(body, h.revokedKey)).status).toBe(403);
      for (const key of [h.key, pointsOnlyKey.key]) {
        const r = await f(body, key);
        expect(r.status).toBe(403);
        expect(r.body).toEqual({ detail: expect.stringContaining("rewards:write"), code: "insufficient_scope" });
      }
      expect((await f(body, null, { authorization: "Bearer abc.def.ghi" })).status).toBe(401);
    }
    expect(
      await h.q("SELECT 1 FROM registry.reward WHERE text = 'w6 refusals' AND id <> ALL($1::uuid[])", [[...rewardIds]]),
    ).toEqual([]);
  });
});

describe("Idempotency-Key", () => {
  const vaultOf = async () =>
    (
      await h.q<{ chain_id: number; address: string }>(
        "SELECT chain_id, address FROM registry.vault WHERE chain_id > 0 ORDER BY chain_id, address LIMIT 1",
      )
    )[0]!;
  const rewardsNamed = (text: string) =>
    h.q<{ id: string }>("SELECT id::text FROM registry.reward WHERE text = $1", [text]);
  const auditsWith = (k: string) =>
    h.q<{ principal_id: string; outcome: string; status: number }>(
      "SELECT principal_id, outcome, status FROM registry.write_audit WHERE idempotency_key = $1 ORDER BY id",
      [k],
    );
  const idem = (k: string) => ({ "idempotency-key": k });

  it("a retry with the same key and body gets the first answer (Idempotent-Replayed: true) and acts once; key order does not matter", async () => {
    const v = await vaultOf();
    const k = `w6-idem-${randomUUID()}`;
    const body = { vault_address: v.address, chain_id: v.chain_id, text: `w6 idem ${k}`, multiplier: 4, ...FUTURE };
    const first = track(await post(body, rewardsKey.key, idem(k)));
    expect(first.status).toBe(200);
    expect(first.res.headers.get("idempotent-replayed")).toBeNull();
    const again = await post(body, rewardsKey.key, idem(k));
    expect(again.status).toBe(200);
    expect(again.res.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body).toEqual(first.body);
    const reordered = Object.fromEntries(Object.entries(body).reverse());
    const third = await post(reordered, rewardsKey.key, idem(k));
    expect(third.res.headers.get("idempotent-replayed")).toBe("true");
    expect(third.body).toEqual(first.body);
    expect(await rewardsNamed(body.text)).toEqual([{ id: first.body.id }]);
    expect(await auditsWith(k)).toEqual([{ principal_id: rewardsKey.id, outcome: "ok", status: 200 }]);
    expect(await h.q("SELECT principal, status FROM registry.idempotency WHERE key = $1", [k])).toEqual([
      { principal: `api_key:${rewardsKey.id}`, status: 200 },
    ]);
  });

  it("the same key with another body or on another route: 422 on the header, nothing done", async () => {
    const v = await vaultOf();
    const k = `w6-idem-${randomUUID()}`;
    const body = { vault_address: v.address, chain_id: v.chain_id, text: `w6 idem ${k}`, multiplier: 4, ...FUTURE };
    const first = track(await post(body, rewardsKey.key, idem(k)));
    expect(first.status).toBe(200);
    const other = await post({ ...body, multiplier: 5 }, rewardsKey.key, idem(k));
    expect(other.status).toBe(422);
    expect(other.body.detail).toEqual([
      { loc: ["header", "idempotency-key"], msg: expect.any(String), type: "value_error" },
    ]);
    const otherRoute = await del({ reward_id: first.body.id }, rewardsKey.key, idem(k));
    expect(otherRoute.status).toBe(422);
    expect(otherRoute.body.detail[0]!.loc).toEqual(["header", "idempotency-key"]);
    expect(await h.q("SELECT multiplier::text FROM registry.reward WHERE id = $1", [first.body.id])).toEqual([
      { multiplier: "4.000000" },
    ]);
    expect(await auditsWith(k)).toHaveLength(1);
  });

  it("keys are per credential: another key with the same Idempotency-Key acts on its own", async () => {
    const v = await vaultOf();
    const k = `w6-idem-${randomUUID()}`;
    const body = { vault_address: v.address, chain_id: v.chain_id, text: `w6 idem ${k}`, multiplier: 4, ...FUTURE };
    const a = track(await post(body, rewardsKey.key, idem(k)));
    const b = track(await post(body, rewardsKey2.key, idem(k)));
    expect([a.status, b.status]).toEqual([200, 200]);
    expect(b.res.headers.get("idempotent-replayed")).toBeNull();
    expect(b.body.id).not.toBe(a.body.id);
    expect((await rewardsNamed(body.text)).length).toBe(2);
  });

  it("concurrent requests with one key act once: one answer is the original, the others replay it", async () => {
    const v = await vaultOf();
    const k = `w6-idem-${randomUUID()}`;
    const body = { vault_address: v.address, chain_id: v.chain_id, text: `w6 idem ${k}`, multiplier: 4, ...FUTURE };
    const rs = await Promise.all(Array.from({ length: 6 }, () => post(body, rewardsKey.key, idem(k))));
    rs.forEach(track);
    expect(rs.map((r) => r.status)).toEqual(Array(6).fill(200));
    expect(new Set(rs.map((r) => r.body.id)).size).toBe(1);
    expect(rs.filter((r) => r.res.headers.get("idempotent-replayed") === "true")).toHaveLength(5);
    expect(await rewardsNamed(body.text)).toEqual([{ id: rs[0]!.body.id }]);
    expect(await auditsWith(k)).toEqual([{ principal_id: rewardsKey.id, outcome: "ok", status: 200 }]);
  });

  it("a refusal is an answer too: replayed, recorded once", async () => {
    const k = `w6-idem-${randomUUID()}`;
    const body = { vault_address: `0x${"cd".repeat(20)}`, text: "w6 idem refused", multiplier: 2, ...FUTURE };
    const first = await post(body, rewardsKey.key, idem(k));
    expect(first.status).toBe(404);
    expect(first.body.code).toBe("vault_not_found");
    const again = await post(body, rewardsKey.key, idem(k));
    expect(again.status).toBe(404);
    expect(again.res.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body).toEqual(first.body);
    expect(await auditsWith(k)).toEqual([{ principal_id: rewardsKey.id, outcome: "refused", status: 404 }]);
  });

  it("DELETE with a key: the retry replays the 200 (not 404), the reward is deleted once", async () => {
    const v = await vaultOf();
    const created = track(
      await post({ vault_address: v.address, chain_id: v.chain_id, text: "w6 idem delete", multiplier: 2, ...FUTURE }),
    );
    const k = `w6-idem-${randomUUID()}`;
    const first = await del({ reward_id: created.body.id }, rewardsKey.key, idem(k));
    const again = await del({ reward_id: created.body.id }, rewardsKey.key, idem(k));
    expect([first.status, again.status]).toEqual([200, 200]);
    expect(again.res.headers.get("idempotent-replayed")).toBe("true");
    expect(again.body).toEqual({ deleted: true, reward_id: created.body.id });
    expect(await auditsWith(k)).toEqual([{ principal_id: rewardsKey.id, outcome: "ok", status: 200 }]);
  });

  it("a malformed key: 422 on the header", async () => {
    const v = await vaultOf();
    const body = {
      vault_address: v.address,
      chain_id: v.chain_id,
      text: "w6 idem malformed",
      multiplier: 2,
      ...FUTURE,
    };
    for (const k of ["has space", "k".repeat(256), "tab\tkey"]) {
      const r = await post(body, rewardsKey.key, idem(k));
      expect(r.status, k.slice(0, 20)).toBe(422);
      expect(r.body.detail[0]!.loc).toEqual(["header", "idempotency-key"]);
    }
    expect(await rewardsNamed(body.text)).toEqual([]);
  });
});
