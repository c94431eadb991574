/**
 * installSignalHandlers: one stop is one orderly shutdown, even when the signal arrives twice
 * (tsx relays one its child has not acknowledged within 30 ms; a process-group signal reaches
 * both); a second signal a second later is a second Ctrl-C and stops everything at once.
 * spawnManaged's stop sends the signal it was given (Ponder is stopped with SIGINT).
 */
import { spawn } from "node:child_process";
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { REPO_ROOT } from "./lib/paths.js";
import { restartDelayMs, spawnManaged } from "./lib/procs.js";

const PROCS_TS = JSON.stringify(join(REPO_ROOT, "scripts", "lib", "procs.ts"));
const dir = mkdtempSync(join(tmpdir(), "procs-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

// a process whose cleanup takes 1.5 s, printing when it starts and when it has finished
const SCRIPT = `import { installSignalHandlers, registerCleanup } from ${PROCS_TS};
installSignalHandlers();
registerCleanup("slow", async () => {
  console.log("cleanup started");
  await new Promise((r) => setTimeout(r, 1500));
  console.log("cleanup done");
});
console.log("ready");
setInterval(() => {}, 1000);
`;

/** Runs the script with node and tsx's loader (no tsx parent to relay), sending `signals`. */
async function stopWith(signals: { signal: NodeJS.Signals; afterMs: number }[]) {
  const file = join(dir, "probe.mts");
  writeFileSync(file, SCRIPT);
  const child = spawn(process.execPath, ["--import", "tsx", file], { cwd: REPO_ROOT });
  let out = "";
  child.stdout.on("data", (d: Buffer) => (out += d.toString()));
  child.stderr.on("data", (d: Buffer) => (out += d.toString()));
  const exited = new Promise<number | null>((r) => child.once("exit", (code) => r(code)));
  await new Promise<void>((resolve) => {
    const check = () => (out.includes("ready") ? resolve() : setTimeout(check, 20));
    check();
  });
  for (const s of signals) {
    await new Promise((r) => setTimeout(r, s.afterMs));
    child.kill(s.signal);
  }
  return { code: await exited, out };
}

describe("installSignalHandlers", () => {
  it("takes the same signal again within a second as the first one relayed: one orderly stop", async () => {
    const r = await stopWith([
      { signal: "SIGTERM", afterMs: 0 },
      { signal: "SIGTERM", afterMs: 100 },
    ]);
    expect(r.code, r.out).toBe(143);
    expect(r.out).toContain("SIGTERM repeated within 1 s (relayed): still stopping in order");
    expect(r.out).toContain("cleanup done");
    expect(r.out).not.toContain("killing everything now");
  }, 30_000);

  it("takes a second Ctrl-C a second later as a request to stop at once", async () => {
    const r = await stopWith([
      { signal: "SIGINT", afterMs: 0 },
      { signal: "SIGINT", afterMs: 1200 },
    ]);
    expect(r.code, r.out).toBe(130);
    expect(r.out).toContain("cleanup started");
    expect(r.out).toContain("SIGINT again: killing everything now");
    expect(r.out).not.toContain("cleanup done");
  }, 30_000);
});

describe("spawnManaged", () => {
  it("stops a child with its stop signal, SIGTERM unless told", async () => {
    const probe = `for (const s of ["SIGINT", "SIGTERM"]) process.on(s, () => { console.log("got " + s); process.exit(0); });
console.log("ready"); setInterval(() => {}, 1000);`;
    for (const stopSignal of [undefined, "SIGINT"] as const) {
      const lines: string[] = [];
      const p = spawnManaged("probe", process.execPath, ["-e", probe], {
        ...(stopSignal ? { stopSignal } : {}),
        onLine: (l) => lines.push(l),
      });
      while (!lines.includes("ready")) await new Promise((r) => setTimeout(r, 20));
      await p.stop();
      expect(lines).toContain(`got ${stopSignal ?? "SIGTERM"}`);
      expect(p.exitInfo()).toEqual({ code: 0, signal: null });
    }
  }, 30_000);
});

describe("restartDelayMs", () => {
  it("waits longer after each start that lived under a minute, at most 30 s", () => {
    expect([0, 1, 2, 3, 5, 6, 20].map(restartDelayMs)).toEqual([1000, 1000, 2000, 4000, 16_000, 30_000, 30_000]);
  });
});
