/**
 * Perp deposits across the simulated chains (issue 14): every chain's subaccounts deposit on its
 * two bridges, and one chain (the core chain) holds the core ledger, where the relayer credits or
 * rejects each deposit of either chain once it is `delaySeconds` old, through `planRelay` (the
 * logic `relayOnce` uses), its transactions mined by the simulator at simulated times.
 *
 * The chains are simulated concurrently, so the core chain's relay pass at time T first waits
 * until every other chain has mined everything up to T - delay (`PerpNetwork.waitUntil`): what the
 * pass sees, and so the history, depends only on the seed.
 */
import type { Address, Hex } from "viem";

export type PerpOutcome =
  | { status: "pending" }
  | { status: "credited"; chainId: number; blockNumber: number; timestamp: number; txHash: Hex }
  | { status: "rejected"; reason: string; chainId: number; blockNumber: number; timestamp: number; txHash: Hex };

export interface PerpDepositRecord {
  chainId: number;
  bridge: Address;
  /** A: Bridge2-like (USDC to perp); B: deposit wallet (tokens, perp or spot) */
  bridgeKind: "A" | "B";
  coreHash: Hex;
  /** the subaccount Safe (the depositor on the bridge) */
  depositor: Address;
  subaccount: string;
  token: Address;
  symbol: string;
  /** raw units, decimal string */
  amount: string;
  /** the bridge's minimum for the token (raw units) */
  minimum: string;
  destination: "perp" | "spot";
  nonce: string;
  blockNumber: number;
  timestamp: number;
  txHash: Hex;
  /** what the core ledger did with it by the end of the history */
  outcome: PerpOutcome;
}

export interface WorldPerp {
  /** the relayer key's address: RELAYER on the core ledger and on every subaccount module */
  relayer: Address;
  /** the chain holding the core ledger (null: none in this simulation) */
  coreChainId: number | null;
  ledger: Address | null;
  delaySeconds: number;
  /** the deposits made on this chain's bridges during the history */
  deposits: PerpDepositRecord[];
  /** relay passes run on this chain (the core chain) */
  relayPasses: number;
}

/** The default delay between a deposit and its credit on the core side, seconds. */
export const PERP_RELAY_DELAY_S = 2 * 3600;

interface Waiter {
  t: number;
  resolve: () => void;
}

/** What the chains of one simulation share about perp deposits. */
export class PerpNetwork {
  private readonly progress = new Map<number, number>();
  private readonly waiters = new Map<number, Waiter[]>();
  private readonly bridges = new Map<number, { promise: Promise<Address[]>; resolve: (b: Address[]) => void }>();
  private readonly records = new Map<Hex, PerpDepositRecord>();

  constructor(
    readonly coreChainId: number,
    readonly delaySeconds: number,
    readonly chains: readonly { chainId: number; rpcUrl: string }[],
  ) {
    for (const c of chains) {
      this.progress.set(c.chainId, 0);
      let resolve!: (b: Address[]) => void;
      const promise = new Promise<Address[]>((r) => (resolve = r));
      this.bridges.set(c.chainId, { promise, resolve });
    }
  }

  /** A chain's bridges, once it deployed them (a chain that failed gives none). */
  bridgesOf(chainId: number): Promise<Address[]> {
    return this.bridges.get(chainId)?.promise ?? Promise.resolve([]);
  }

  registerBridges(chainId: number, bridges: Address[]): void {
    this.bridges.get(chainId)?.resolve(bridges);
  }

  /** Everything `chainId` sends at a timestamp up to `t` is mined. */
  advance(chainId: number, t: number): void {
    if (t <= (this.progress.get(chainId) ?? 0)) return;
    this.progress.set(chainId, t);
    const list = this.waiters.get(chainId) ?? [];
    const still = list.filter((w) => w.t > t);
    for (const w of list) if (w.t <= t) w.resolve();
    this.waiters.set(chainId, still);
  }

  /** The chain's history is done (or failed): nobody waits for it any more. */
  finish(chainId: number): void {
    this.registerBridges(chainId, []);
    this.advance(chainId, Number.POSITIVE_INFINITY);
  }

  waitUntil(chainId: number, t: number): Promise<void> {
    if ((this.progress.get(chainId) ?? Number.POSITIVE_INFINITY) >= t) return Promise.resolve();
    return new Promise((resolve) => {
      const list = this.waiters.get(chainId) ?? [];
      list.push({ t, resolve });
      this.waiters.set(chainId, list);
    });
  }

  record(r: PerpDepositRecord): void {
    this.records.set(r.coreHash, r);
  }

  recordOf(coreHash: Hex): PerpDepositRecord | undefined {
    return this.records.get(coreHash);
  }
}
