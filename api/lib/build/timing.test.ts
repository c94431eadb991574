/** Server-Timing phases: nested under the build, parallel spans counted once, none outside a build. */
import { describe, expect, it } from "vitest";
import { BuildTimings, phase } from "./timing.js";

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms));
const durations = (header: string) =>
  Object.fromEntries(header.split(", ").map((p) => [p.split(";")[0], Number(p.split("=")[1])]));

describe("BuildTimings", () => {
  it("parallel simulations count once, sequential ones add up, all inside the build", async () => {
    const t = new BuildTimings();
    await t.run(async () => {
      await phase("read", () => sleep(20));
      await Promise.all([phase("simulate", () => sleep(100)), phase("simulate", () => sleep(100))]);
      await phase("simulate", () => sleep(20));
    });
    await t.add("audit", () => sleep(10));
    const header = t.header();
    expect(header).toMatch(/^read;dur=[\d.]+, simulate;dur=[\d.]+, build;dur=[\d.]+, audit;dur=[\d.]+$/);
    const d = durations(header);
    expect(d.simulate).toBeGreaterThanOrEqual(119);
    // not 220: the two parallel ones overlap (a loaded machine's late timers fit in the margin)
    expect(d.simulate).toBeLessThan(220);
    // each figure is rounded to 0.1 ms: the two parts may sum up to 0.1 over the rounded whole
    expect(d.build).toBeGreaterThanOrEqual(d.read! + d.simulate! - 0.1 - 1e-9);
    expect(d.audit).toBeGreaterThanOrEqual(9);
  });

  it("a phase outside any build records nothing; a failing phase is still timed", async () => {
    expect(await phase("read", async () => 7)).toBe(7);
    const t = new BuildTimings();
    await expect(t.run(() => phase("read", () => Promise.reject(new Error("no chain"))))).rejects.toThrow("no chain");
    expect(t.header()).toMatch(/^read;dur=[\d.]+, build;dur=[\d.]+$/);
  });

  it("`before` runs from the request's arrival to the build's start, and comes first", async () => {
    const arrived = performance.now();
    await sleep(15);
    const t = new BuildTimings();
    t.since("before", arrived);
    await t.run(() => phase("read", () => sleep(5)));
    const header = t.header();
    expect(header).toMatch(/^before;dur=[\d.]+, read;dur=[\d.]+, build;dur=[\d.]+$/);
    expect(durations(header).before).toBeGreaterThanOrEqual(14);
  });
});
