/** Shared helpers for the end-to-end tests. */
import { readFileSync } from "node:fs";
import pg from "pg";
import type { Manifest } from "../contracts/devnet/index.js";

export function loadManifest(path: string): Manifest {
  return JSON.parse(readFileSync(path, "utf8")) as Manifest;
}

export async function withDb<T>(url: string, fn: (c: pg.Client) => Promise<T>): Promise<T> {
  const client = new pg.Client({ connectionString: url });
  await client.connect();
  try {
    return await fn(client);
  } finally {
    await client.end();
  }
}

export async function rows<T = Record<string, unknown>>(c: pg.Client, sql: string, params: unknown[] = []): Promise<T[]> {
  return (await c.query(sql, params)).rows as T[];
}

export const key = (chainId: number | string, tx: string, logIndex: number | string) => `${chainId}:${tx}:${logIndex}`;

export async function rpcCall<T>(url: string, method: string, params: unknown[] = []): Promise<T> {
  const res = await fetch(url, {
    method: "POST",
    headers: { "content-type": "application/json" },
    body: JSON.stringify({ jsonrpc: "2.0", id: 1, method, params }),
  });
  const body = (await res.json()) as { result?: T; error?: { message: string } };
  if (body.error) throw new Error(`${method}: ${body.error.message}`);
  return body.result as T;
}

export const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
