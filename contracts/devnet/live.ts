/**
 * Keeps simulated chains alive after their history, in real time: each chain gets a block at
 * least every `blockEveryS` seconds, timestamped by the wall clock (the history ends "now", so the
 * chain's time goes on from there), and about every `actEveryS` seconds one of the simulator's own
 * actions (simulate.ts: a wallet's deposit, share transfer or redemption request, an operator's
 * total-assets report, a price-feed move followed by the arbitrageur, redemptions processed and
 * claimed, the protocol world's morning: a strategist's swap and the arbitrageur; a subaccount's
 * perp deposit, which the relayer worker credits after its delay). Which kind comes
 * next and when is drawn from the seed, so two runs act alike; the details (vault, wallet,
 * amount) continue the simulation's own seeded stream.
 *
 * Live activity is not in the manifest (written when the history ends); every event it causes is
 * appended to `eventsFile`, one JSON object per line, in the manifest's event format.
 */
import { appendFileSync } from "node:fs";
import { setTimeout as sleep } from "node:timers/promises";
import { Rng } from "./random.js";
import type { ChainActions } from "./simulate.js";

export type LiveKind = "user" | "report" | "price" | "redemptions" | "world" | "perp";

/**
 * How often each kind is drawn: mostly wallets; reports, price moves, processing and the protocol
 * world between.
 */
const KINDS: readonly { kind: LiveKind; weight: number }[] = [
  { kind: "user", weight: 0.52 },
  { kind: "report", weight: 0.18 },
  { kind: "price", weight: 0.1 },
  { kind: "redemptions", weight: 0.08 },
  { kind: "world", weight: 0.05 },
  { kind: "perp", weight: 0.07 },
];

/** A chain stops acting after this many failed steps in a row (its node is gone, say). */
const MAX_FAILURES = 5;

export interface LiveOptions {
  seed: string;
  /** the longest wall-clock time between two blocks of a chain, seconds */
  blockEveryS: number;
  /** the mean time between two actions on a chain, seconds (each gap is 0.5 to 1.5 times it) */
  actEveryS: number;
  /** JSON lines of every event live activity causes */
  eventsFile?: string;
  log?: (msg: string) => void;
}

export interface LiveChainStats {
  chainId: number;
  blocks: number;
  actions: number;
  failures: number;
}

export interface Live {
  /** Stops every chain's loop after its current step (waiting at most `timeoutMs`). */
  stop(timeoutMs?: number): Promise<void>;
  stats(): LiveChainStats[];
}

export function startLive(chains: readonly ChainActions[], opts: LiveOptions): Live {
  const log = opts.log ?? (() => {});
  const abort = new AbortController();
  const stats = chains.map((c) => ({ chainId: c.session.chainId, blocks: 0, actions: 0, failures: 0 }));
  const loops = chains.map((c, i) => runChain(c, stats[i]!, opts, abort.signal, log));
  return {
    async stop(timeoutMs = 10_000) {
      abort.abort();
      await Promise.race([Promise.all(loops), sleep(timeoutMs, undefined, { ref: false })]);
    },
    stats: () => stats.map((s) => ({ ...s })),
  };
}

function pickKind(rng: Rng): LiveKind {
  let roll = rng.next();
  for (const k of KINDS) {
    if (roll < k.weight) return k.kind;
    roll -= k.weight;
  }
  return KINDS[0]!.kind;
}

async function runChain(
  a: ChainActions,
  st: LiveChainStats,
  o: LiveOptions,
  signal: AbortSignal,
  log: (m: string) => void,
): Promise<void> {
  const s = a.session;
  const rng = new Rng(`${o.seed}:${s.chainId}:live`);
  const gap = () => o.actEveryS * (0.5 + rng.next());
  // The history's events stay as the manifest has them; live ones are taken from here on.
  const mark = s.events.length;
  // The protocol world's events (off the manifest) are only counted in the log line.
  const worldMark = s.offManifestEvents.length;
  const nowS = () => Math.floor(Date.now() / 1000);
  let nextAct = nowS() + gap();
  let failures = 0;
  while (!signal.aborted) {
    let step = "clock";
    let note = "";
    try {
      // Others may send transactions too (a user of the demo, a test): each step starts from the head.
      await s.syncClock();
      const t = nowS();
      step = "block";
      if (t >= nextAct) {
        const kind = pickKind(rng);
        step = kind;
        nextAct = t + gap();
        note = (await a[kind](t)) ?? "";
        st.actions++;
      } else if (t >= s.clock + o.blockEveryS) {
        await s.mineAt([t]);
        st.blocks++;
      }
      failures = 0;
    } catch (err) {
      if (signal.aborted) break; // the node is being stopped under us
      st.failures++;
      log(`chain ${s.chainId}: ${step} failed: ${(err as Error).message}`);
      if (++failures >= MAX_FAILURES) {
        log(`chain ${s.chainId}: live activity stopped after ${MAX_FAILURES} failures in a row`);
        break;
      }
    }
    const fresh = s.events.splice(mark);
    const world = s.offManifestEvents.splice(worldMark);
    if (fresh.length > 0 || world.length > 0) {
      const names = new Map<string, number>();
      for (const e of fresh) names.set(e.event, (names.get(e.event) ?? 0) + 1);
      const what = [...names].map(([n, k]) => (k > 1 ? `${n} x${k}` : n));
      if (world.length > 0) what.push(`${world.length} protocol-world events`);
      const block = Math.max(fresh.at(-1)?.blockNumber ?? 0, world.at(-1)?.blockNumber ?? 0);
      log(`chain ${s.chainId} block ${block}: ${step}: ${what.join(", ")}${note ? ` (${note})` : ""}`);
      if (o.eventsFile && fresh.length > 0) {
        try {
          appendFileSync(o.eventsFile, `${fresh.map((e) => JSON.stringify(e)).join("\n")}\n`);
        } catch (err) {
          log(`cannot append live events to ${o.eventsFile}: ${(err as Error).message}`);
        }
      }
    }
    const wakeMs = Math.min(nextAct, s.clock + o.blockEveryS) * 1000 - Date.now();
    await sleep(Math.min(Math.max(wakeMs, 50), 5_000), undefined, { signal }).catch(() => {});
  }
}
