// Read by the Vite dev server inside `ponder start` (vitest uses vitest.config.ts instead).
// Ponder watches its root; .data/ holds Postgres clusters and logs that change all the time, and
// watching them cost the indexer about half its backfill time (docs/performance.md).
import { defineConfig } from "vite";

export default defineConfig({
  server: { watch: { ignored: ["**/.data/**", "**/node_modules/**", "**/.git/**"] } },
});
