/**
 * The chains' nodes, from `PONDER_RPC_URL_<chainId>` (a comma-separated list of http(s) URLs, the
 * first one the primary): read here by every process, the indexer, the API, the workers and the
 * relayer, so each one refuses the same bad values at start-up instead of failing per request.
 */
import { getChain } from "./chains.js";

export interface RpcUrls {
  /** chain id -> its URLs, in the order given */
  urls: Map<number, string[]>;
  /** one readable line per bad variable (empty when all are good) */
  problems: string[];
}

const KEY = /^PONDER_RPC_URL_(-?\d+)$/;

function isHttpUrl(u: string): boolean {
  try {
    const url = new URL(u);
    return (url.protocol === "http:" || url.protocol === "https:") && url.host !== "";
  } catch {
    return false;
  }
}

export function rpcUrlsFromEnv(env: NodeJS.ProcessEnv): RpcUrls {
  const urls = new Map<number, string[]>();
  const problems: string[] = [];
  for (const [key, raw] of Object.entries(env)) {
    const m = KEY.exec(key);
    if (!m || !raw?.trim()) continue;
    const id = Number(m[1]);
    const chain = getChain(id);
    if (!chain) {
      problems.push(`${key}: chain ${id} is not in the catalogue (config/chains.ts)`);
      continue;
    }
    if (chain.kind !== "evm") {
      problems.push(`${key}: chain ${id} (${chain.name}) is not an EVM chain`);
      continue;
    }
    const list = raw
      .split(",")
      .map((u) => u.trim())
      .filter(Boolean);
    if (list.length === 0) {
      problems.push(`${key}: "${raw}" holds no URL`);
      continue;
    }
    const bad = list.filter((u) => !isHttpUrl(u));
    for (const u of bad) problems.push(`${key}: "${u}" is not an http(s) URL`);
    if (bad.length === 0) urls.set(id, list);
  }
  return { urls, problems };
}

/** Each chain's primary URL (the first of its list). */
export const primaryUrls = (r: RpcUrls): Map<number, string> =>
  new Map([...r.urls].map(([id, list]) => [id, list[0]!]));
