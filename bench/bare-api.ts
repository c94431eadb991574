/** The baseline of bench:api: a bare Hono route returning a constant, on @hono/node-server. */
import { serve } from "@hono/node-server";
import { Hono } from "hono";

const port = Number(process.env.PORT ?? 8099);
const app = new Hono();
app.get("/", (c) => c.json({ status: "ok" }));
serve({ fetch: app.fetch, port, hostname: "127.0.0.1" }, () => console.log(`bare api on ${port}`));
