/**
 * Facts a builder needs that never change at an address: a token's symbol and decimals, an
 * aToken's pool and underlying, a pool's tokens and fee, a bridge's token. Read once per process
 * and chain and kept, so a warm build spends its RPC round trips on the state it acts on (read at
 * the head in one multicall, `readAtHead`) and on its simulation. Failed reads are not kept; the
 * stores are bounded (MAX_ENTRIES each, the least recently used going first), and concurrent
 * builds share one read in flight.
 * Some facts come with a read a build makes anyway (a position's range, with the position):
 * `learn` keeps them and `learnt` gives them back at once, so a later build can plan its reads
 * on them.
 */
import { LRUCache } from "lru-cache";
import { type Address, getAddress, parseAbi } from "viem";
import { aggregate, readValue } from "./multicall.js";
import { BuildRefusal } from "./refusal.js";
import type { BuildSubaccount } from "./subaccount.js";

export const MAX_ENTRIES = 10_000;
const store = new LRUCache<string, Promise<unknown>>({ max: MAX_ENTRIES });

/** A fact's key in the stores: per chain and node. */
const factKey = (sub: BuildSubaccount, key: string) => `${sub.chainId}:${sub.rpcUrl}:${key}`;

/** `load()`'s answer for `key` on the subaccount's chain, read once and kept. */
export function remember<T>(sub: BuildSubaccount, key: string, load: () => Promise<T>): Promise<T> {
  const k = factKey(sub, key);
  const hit = store.get(k);
  if (hit) return hit as Promise<T>;
  const p = load();
  store.set(k, p);
  p.catch(() => {
    if (store.peek(k) === p) store.delete(k);
  });
  return p;
}

const learnedStore = new LRUCache<string, { value: unknown }>({ max: MAX_ENTRIES });

/** Keeps a fact read on the way (it must be one that never changes at its key). */
export function learn<T>(sub: BuildSubaccount, key: string, value: T): void {
  learnedStore.set(factKey(sub, key), { value });
}

/** A fact `learn` kept, if it has been learnt. */
export function learnt<T>(sub: BuildSubaccount, key: string): T | undefined {
  return learnedStore.get(factKey(sub, key))?.value as T | undefined;
}

export interface TokenFacts {
  address: Address;
  symbol: string;
  decimals: number;
}

const ERC20 = parseAbi(["function symbol() view returns (string)", "function decimals() view returns (uint8)"]);

const tokenKey = (address: string) => `token:${address.toLowerCase()}`;

/** A token's symbol and decimals if known without a read: its protocols entry's, or kept. */
export function knownToken(sub: BuildSubaccount, address: string): TokenFacts | undefined {
  const t = (sub.protocols.tokens ?? []).find((x) => x.address.toLowerCase() === address.toLowerCase());
  if (t) return { address: getAddress(address), symbol: t.symbol, decimals: t.decimals };
  return learnt<TokenFacts>(sub, tokenKey(address));
}

/** Keeps a token's symbol and decimals read along with other state (a swap's read stage). */
export function keepToken(sub: BuildSubaccount, t: TokenFacts): void {
  learn(sub, tokenKey(t.address), t);
}

/**
 * Symbol and decimals of each token: the chain's protocols entry, else kept, else read (one
 * multicall for all that are missing) and kept. A token that does not answer both is a 422 at
 * `loc`.
 */
export async function tokenFacts(
  sub: BuildSubaccount,
  addresses: readonly Address[],
  loc: (string | number)[] = ["body"],
): Promise<TokenFacts[]> {
  const known = new Map(addresses.map((a) => [a.toLowerCase(), knownToken(sub, a)]));
  const missing = [...known].filter(([, t]) => !t).map(([a]) => a);
  await Promise.all(
    missing.map(async (a) => {
      const t = await remember(sub, tokenKey(a), () => readToken(sub, getAddress(a), loc));
      keepToken(sub, t);
      known.set(a, t);
    }),
  );
  return addresses.map((a) => known.get(a.toLowerCase())!);
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
