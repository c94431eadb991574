import { afterEach, describe, expect, it, vi } from "vitest";
import { ASK_AGAIN_MS, type Kept, known, remember } from "./node-kept.js";

afterEach(() => {
  vi.useRealTimers();
});

describe("what a node has or lacks, by URL", () => {
  it("is unknown until an answer says, then believed for ASK_AGAIN_MS, per URL", () => {
    vi.useFakeTimers();
    const kept: Kept = new Map();
    expect(known(kept, "http://a")).toBeUndefined();
    remember(kept, "http://a", false);
    remember(kept, "http://b", true);
    expect(known(kept, "http://a")).toBe(false);
    expect(known(kept, "http://b")).toBe(true);
    vi.advanceTimersByTime(ASK_AGAIN_MS - 1);
    expect(known(kept, "http://a")).toBe(false);
    vi.advanceTimersByTime(1);
    expect(known(kept, "http://a")).toBeUndefined();
    // asked again: the new answer holds
    remember(kept, "http://a", true);
    expect(known(kept, "http://a")).toBe(true);
  });
});
