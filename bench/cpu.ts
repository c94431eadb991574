/**
 * CPU time used by process groups during a run, from /proc (Linux only; empty elsewhere):
 * sums utime + stime of every live process, classified by command line, and reports deltas.
 * Processes that exit between two snapshots are not counted (short-lived ones are negligible).
 */
import { readdirSync, readFileSync } from "node:fs";

export type CpuClass = "indexer" | "api" | "postgres" | "redis" | "anvil" | "bench" | "other";

const TICKS = 100; // USER_HZ on Linux

function classify(pid: number, cmdline: string): CpuClass {
  if (pid === process.pid) return "bench";
  if (cmdline.includes("ponder") && cmdline.includes(" start")) return "indexer";
  if (cmdline.includes("scripts/api.ts")) return "api";
  if (cmdline.includes("redis-server")) return "redis";
  if (cmdline.startsWith("postgres") || cmdline.includes("/bin/postgres")) return "postgres";
  if (cmdline.includes("anvil")) return "anvil";
  return "other";
}

/** Per-pid CPU seconds now. */
export function cpuSnapshot(): Map<number, { cls: CpuClass; seconds: number }> {
  const out = new Map<number, { cls: CpuClass; seconds: number }>();
  let pids: string[];
  try {
    pids = readdirSync("/proc").filter((p) => /^\d+$/.test(p));
  } catch {
    return out;
  }
  for (const p of pids) {
    try {
      const stat = readFileSync(`/proc/${p}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      const seconds = (Number(fields[11]) + Number(fields[12])) / TICKS; // utime, stime
      const cmdline = readFileSync(`/proc/${p}/cmdline`, "utf8").replace(/\0/g, " ");
      out.set(Number(p), { cls: classify(Number(p), cmdline), seconds });
    } catch {
      /* gone */
    }
  }
  return out;
}

/** CPU seconds per class used between two snapshots (new processes count from zero). */
export function cpuDelta(
  before: Map<number, { cls: CpuClass; seconds: number }>,
  after: Map<number, { cls: CpuClass; seconds: number }>,
): Record<CpuClass, number> {
  const out: Record<CpuClass, number> = { indexer: 0, api: 0, postgres: 0, redis: 0, anvil: 0, bench: 0, other: 0 };
  for (const [pid, a] of after) {
    const b = before.get(pid);
    out[a.cls] += Math.max(0, a.seconds - (b && b.cls === a.cls ? b.seconds : 0));
  }
  return out;
}

/**
 * CPU seconds of every live process, split into `root`'s process tree (the bench and what it
 * started) and the others (other work on the machine during a measurement).
 */
export function cpuByTree(root: number): { ours: Map<number, number>; others: Map<number, number> } {
  const procs = new Map<number, { ppid: number; seconds: number }>();
  let pids: string[];
  try {
    pids = readdirSync("/proc").filter((p) => /^\d+$/.test(p));
  } catch {
    return { ours: new Map(), others: new Map() };
  }
  for (const p of pids) {
    try {
      const stat = readFileSync(`/proc/${p}/stat`, "utf8");
      const fields = stat.slice(stat.lastIndexOf(")") + 2).split(" ");
      procs.set(Number(p), { ppid: Number(fields[1]), seconds: (Number(fields[11]) + Number(fields[12])) / TICKS });
    } catch {
      /* gone */
    }
  }
  const inTree = (pid: number) => {
    for (let p = pid, hops = 0; p > 1 && hops < 64; hops++) {
      if (p === root) return true;
      p = procs.get(p)?.ppid ?? 0;
    }
    return false;
  };
  const ours = new Map<number, number>();
  const others = new Map<number, number>();
  for (const [pid, x] of procs) (inTree(pid) ? ours : others).set(pid, x.seconds);
  return { ours, others };
}

/** CPU seconds used between two snapshots of `cpuByTree` halves (new processes count from zero). */
export function cpuSeconds(before: Map<number, number>, after: Map<number, number>): number {
  let s = 0;
  for (const [pid, a] of after) s += Math.max(0, a - (before.get(pid) ?? 0));
  return s;
}
