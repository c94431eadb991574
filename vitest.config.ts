import { defineConfig } from "vitest/config";
import ByNameSequencer from "./test/setup/sequencer";

export default defineConfig({
  test: {
    globalSetup: ["test/setup/devnet.ts"],
    include: ["test/**/*.test.ts", "config/**/*.test.ts", "src/**/*.test.ts", "contracts/**/*.test.ts"],
    // The end-to-end files share one devnet and change its chains: run files one after another.
    fileParallelism: false,
    sequence: { sequencer: ByNameSequencer },
    testTimeout: 60_000,
    hookTimeout: 600_000,
    env: { TZ: "UTC" },
  },
});
