import { defineConfig } from "vitest/config";
import ByNameSequencer from "./test/setup/sequencer";

/**
 * The end-to-end files that use nothing of the shared devnet: each starts its own chains, and
 * those that need a database make their own on the solo cluster (test/setup/cluster.ts).
 */
const SOLO = [
  "test/e2e/0-simulator.test.ts",
  "test/e2e/1-indexer-erc4626.test.ts",
  "test/e2e/3-demo.test.ts",
  "test/e2e/7-migrations.test.ts",
  "test/e2e/7-restore.test.ts",
  "test/e2e/7-safe-v130.test.ts",
  "test/e2e/7-vaults-cli.test.ts",
  "test/e2e/perp-loans.test.ts",
  "test/e2e/protocols.test.ts",
];

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
          exclude: SOLO,
          globalSetup: ["test/setup/devnet.ts"],
          testTimeout: 120_000,
          hookTimeout: 600_000,
          env: { TZ: "UTC" },
        },
      },
      {
        // end-to-end files on chains, databases and ports of their own; `npm test` runs them with
        // the e2e project's, one file at a time
        test: {
          name: "solo",
          include: SOLO,
          globalSetup: ["test/setup/cluster.ts"],
          testTimeout: 120_000,
          hookTimeout: 600_000,
          env: { TZ: "UTC" },
        },
      },
    ],
  },
});
