/**
 * Operator passwords, hashed with scrypt (memory-hard; node:crypto, no native add-on): the stored
 * form is `scrypt$<log2 N>$<r>$<p>$<salt b64>$<hash b64>`, so the cost can be raised later and old
 * hashes still verify. N = 2^15, r = 8: 32 MiB and ~50–100 ms per hash on these machines.
 */
import { randomBytes, type ScryptOptions, scrypt, timingSafeEqual } from "node:crypto";

const LOG_N = 15;
const R = 8;
const P = 1;
const KEY_LEN = 32;

function scryptAsync(password: string, salt: Buffer, o: ScryptOptions): Promise<Buffer> {
  return new Promise((resolve, reject) =>
    scrypt(
      password.normalize("NFKC"),
      salt,
      KEY_LEN,
      { ...o, maxmem: 256 * (o.N ?? 1) * (o.r ?? 8) + 1024 * 1024 },
      (err, key) => (err ? reject(err) : resolve(key)),
    ),
  );
}

export async function hashPassword(password: string): Promise<string> {
  const salt = randomBytes(16);
  const key = await scryptAsync(password, salt, { N: 2 ** LOG_N, r: R, p: P });
  return `scrypt$${LOG_N}$${R}$${P}$${salt.toString("base64")}$${key.toString("base64")}`;
}

const FORMAT = /^scrypt\$(\d{1,2})\$(\d{1,2})\$(\d{1,2})\$([A-Za-z0-9+/=]+)\$([A-Za-z0-9+/=]+)$/;

export async function verifyPassword(password: string, stored: string): Promise<boolean> {
  const m = FORMAT.exec(stored);
  if (!m) return false;
  const [logN, r, p] = [Number(m[1]), Number(m[2]), Number(m[3])];
  if (logN < 10 || logN > 22 || r < 1 || r > 32 || p < 1 || p > 16) return false;
  const expected = Buffer.from(m[5]!, "base64");
  const key = await scryptAsync(password, Buffer.from(m[4]!, "base64"), { N: 2 ** logN, r, p });
  return key.length === expected.length && timingSafeEqual(key, expected);
}

/** A hash of a random password: checked for unknown users, so the answer takes as long. */
let dummy: Promise<string> | null = null;
export function dummyHash(): Promise<string> {
  dummy ??= hashPassword(randomBytes(16).toString("hex"));
  return dummy;
}

/** Password rules of the operator CLI. */
export function passwordProblem(pw: string): string | null {
  if (pw.length < 12) return "must be at least 12 characters";
  if (pw.length > 1024) return "must be at most 1024 characters";
  return null;
}
