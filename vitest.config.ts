import { defineConfig } from "vitest/config";
import ByNameSequencer from "./test/setup/sequencer";

export default defineConfig({
  test: {
    env: { TZ: "UTC" },
    // The end-to-end files share one devnet and change its chains: files run one after another,
    // in name order. The unit files share nothing: `npm run test:unit` runs them two at a time.
    fileParallelism: false,
    sequence: { sequencer: ByNameSequencer },
    projects: [
      {
        test: {
          name: "unit",
          include: [
            "config/**/*.test.ts",
            "src/**/*.test.ts",
            "db/**/*.test.ts",
            "jobs/**/*.test.ts",
            "api/**/*.test.ts",
            "contracts/**/*.test.ts",
            "onchain/**/*.test.ts",
            "scripts/**/*.test.ts",
            "test/unit/**/*.test.ts",
          ],
          env: { TZ: "UTC" },
        },
      },
      {
        test: {
          name: "e2e",
          include: ["test/e2e/**/*.test.ts"],
          globalSetup: ["test/setup/devnet.ts"],
          testTimeout: 120_000,
          hookTimeout: 600_000,
          env: { TZ: "UTC" },
        },
      },
    ],
  },
});
