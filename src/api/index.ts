// Ponder's own small API (required by Ponder 0.16). The service's HTTP API lives in api/.
import { Hono } from "hono";

const app = new Hono();

app.get("/", (c) => c.json({ service: "vault indexer", docs: "docs/schema.md" }));

export default app;
