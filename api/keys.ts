/**
 * API keys: `vk_<prefix>_<secret>`, shown once at creation, stored as a SHA-256 hash (the secret
 * has 160 random bits, so a fast hash is enough), looked up by prefix and compared in constant
 * time. Revocation takes effect within KEY_CACHE_MS; a key in use is re-read in the background
 * before then, so its requests do not wait on the table (`recent` in lib/kept.ts).
 */
import { createHash, randomBytes, timingSafeEqual } from "node:crypto";
import type { Kysely } from "kysely";
import type { Database } from "../db/schema.js";
import type { ReadDb } from "./lib/db.js";
import { recent } from "./lib/kept.js";

export const KEY_CACHE_MS = 2000;
const KEY_RE = /^vk_([0-9a-f]{12})_([0-9a-f]{40})$/;
const sha256 = (s: string) => createHash("sha256").update(s).digest();

export async function createKey(
  db: Kysely<Database>,
  name: string,
  scopes: string[] = [],
): Promise<{ id: string; key: string }> {
  const prefix = randomBytes(6).toString("hex");
  const key = `vk_${prefix}_${randomBytes(20).toString("hex")}`;
  const row = await db
    .insertInto("auth.api_key")
    .values({ name, prefix, key_hash: sha256(key).toString("hex"), scopes: [...new Set(scopes)] })
    .returning("id")
    .executeTakeFirstOrThrow();
  return { id: row.id, key };
}

export async function revokeKey(db: Kysely<Database>, idOrPrefix: string): Promise<number> {
  const isUuid = /^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$/i.test(idOrPrefix);
  const res = await db
    .updateTable("auth.api_key")
    .set({ revoked_at: new Date() })
    .where(isUuid ? "id" : "prefix", "=", idOrPrefix)
    .where("revoked_at", "is", null)
    .executeTakeFirst();
  return Number(res.numUpdatedRows);
}

interface KeyRow {
  id: string;
  hash: Buffer;
  revoked: boolean;
  scopes: string[];
}
/** by prefix; `false`: no such key (so a stream of made-up keys reads the table once each) */
const rows = recent<KeyRow | false>(KEY_CACHE_MS);
const DUMMY = sha256("no such key");

export type KeyCheck =
  | { ok: true; id: string; scopes: string[] }
  | { ok: false; reason: "malformed" | "unknown" | "revoked" };

export async function checkKey(db: ReadDb, key: string, now = Date.now()): Promise<KeyCheck> {
  const m = KEY_RE.exec(key);
  const given = sha256(key);
  if (!m) {
    timingSafeEqual(given, DUMMY);
    return { ok: false, reason: "malformed" };
  }
  const prefix = m[1]!;
  const row = await rows.get(
    prefix,
    async () => {
      const r = await db
        .selectFrom("auth.api_key")
        .select(["id", "key_hash", "revoked_at", "scopes"])
        .where("prefix", "=", prefix)
        .executeTakeFirst();
      if (!r) return false;
      return { id: r.id, hash: Buffer.from(r.key_hash, "hex"), revoked: r.revoked_at != null, scopes: r.scopes };
    },
    now,
  );
  const equal = timingSafeEqual(given, row ? row.hash : DUMMY);
  if (!row || !equal) return { ok: false, reason: "unknown" };
  if (row.revoked) return { ok: false, reason: "revoked" };
  return { ok: true, id: row.id, scopes: row.scopes };
}
