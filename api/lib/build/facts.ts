/**
 * Facts a builder needs that never change at an address: a token's symbol and decimals, an
 * aToken's pool and underlying, a pool's tokens and fee, a bridge's token. Read once per process
 * and chain and kept, so a warm build spends its RPC round trips on the state it acts on (read at
 * the head in one multicall, `readAtHead`) and on its simulation. Failed reads are not kept; the
 * store is bounded (emptied past MAX_ENTRIES), and concurrent builds share one read in flight.
 * Some facts come with a read a build makes anyway (a position's range, with the position):
 * `learn` keeps them and `learnt` gives them back at once, so a later build can plan its reads
 * on them.
 */
import { type Address, getAddress, parseAbi } from "viem";
import { aggregate, readValue } from "./multicall.js";
import { BuildRefusal } from "./refusal.js";
import type { BuildSubaccount } from "./subaccount.js";

const MAX_ENTRIES = 10_000;
const store = new Map<string, Promise<unknown>>();

/** `load()`'s answer for `key` on the subaccount's chain, read once and kept. */
export function remember<T>(sub: BuildSubaccount, key: string, load: () => Promise<T>): Promise<T> {
  const k = `${sub.chainId}:${sub.rpcUrl}:${key}`;
  const hit = store.get(k);
  if (hit) return hit as Promise<T>;
  if (store.size >= MAX_ENTRIES) store.clear();
  const p = load();
  store.set(k, p);
  p.catch(() => store.delete(k));
  return p;
}

const learnedStore = new Map<string, unknown>();

/** Keeps a fact read on the way (it must be one that never changes at its key). */
export function learn<T>(sub: BuildSubaccount, key: string, value: T): void {
  if (learnedStore.size >= MAX_ENTRIES) learnedStore.clear();
  learnedStore.set(`${sub.chainId}:${sub.rpcUrl}:${key}`, value);
}

/** A fact `learn` kept, if it has been learnt. */
export function learnt<T>(sub: BuildSubaccount, key: string): T | undefined {
  return learnedStore.get(`${sub.chainId}:${sub.rpcUrl}:${key}`) as T | undefined;
}

export interface TokenFacts {
  address: Address;
  symbol: string;
  decimals: number;
}

const ERC20 = parseAbi(["function symbol() view returns (string)", "function decimals() view returns (uint8)"]);

/**
 * Symbol and decimals of each token: the chain's protocols entry, else read (one multicall for all
 * that are missing) and kept. A token that does not answer both is a 422 at `loc`.
 */
export async function tokenFacts(
  sub: BuildSubaccount,
  addresses: readonly Address[],
  loc: (string | number)[] = ["body"],
): Promise<TokenFacts[]> {
  const listed = new Map((sub.protocols.tokens ?? []).map((t) => [t.address.toLowerCase(), t]));
  const missing = [...new Set(addresses.map((a) => a.toLowerCase()))].filter((a) => !listed.has(a));
  const read = new Map<string, TokenFacts>();
  await Promise.all(
    missing.map(async (a) => {
      read.set(a, await remember(sub, `token:${a}`, () => readToken(sub, getAddress(a), loc)));
    }),
  );
  return addresses.map((a) => {
    const t = listed.get(a.toLowerCase());
    if (t) return { address: getAddress(a), symbol: t.symbol, decimals: t.decimals };
    return read.get(a.toLowerCase())!;
  });
}

async function readToken(sub: BuildSubaccount, token: Address, loc: (string | number)[]): Promise<TokenFacts> {
  let res: Awaited<ReturnType<typeof aggregate>>;
  try {
    res = await aggregate(sub.rpcUrl, [
      { address: token, abi: ERC20, functionName: "symbol" },
      { address: token, abi: ERC20, functionName: "decimals" },
    ]);
  } catch (err) {
    throw BuildRefusal.chain(sub.chainId, err);
  }
  const symbol = readValue<string>(res[0]);
  const decimals = readValue<number>(res[1]);
  if (symbol === undefined || decimals === undefined) {
    throw BuildRefusal.field(loc, `${token} is not an ERC-20 token (it answers no symbol() and decimals())`);
  }
  return { address: token, symbol, decimals: Number(decimals) };
}
