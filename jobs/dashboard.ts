/**
 * The queues dashboard (bull-board): every queue of the derived analytics with its waiting,
 * active, delayed, failed and completed jobs, each job's data, result, failure and retries.
 * Failed jobs stay in their queue for a week (jobs/queues.ts): here an operator reads why and
 * retries them. `npm run queues-dashboard` serves it (scripts/queues-dashboard.ts).
 */
import { createBullBoard } from "@bull-board/api";
import { BullMQAdapter } from "@bull-board/api/bullMQAdapter";
import { HonoAdapter } from "@bull-board/hono";
import { serveStatic } from "@hono/node-server/serve-static";
import { Hono } from "hono";
import { basicAuth } from "hono/basic-auth";
import { z } from "zod";
import { envNum, parseEnv } from "../config/env.js";
import { QUEUES, type QueueKey } from "./queues.js";
import { openQueues } from "./runtime.js";

export interface DashboardOptions {
  /** where the board lives (default /queues); / redirects there */
  basePath?: string;
  /** HTTP basic auth (user `operator`) in front of every page and API call; none when absent */
  password?: string | undefined;
  /** show jobs without the buttons that retry, promote, clean or remove them */
  readOnly?: boolean;
}

export function queuesDashboard(redisUrl: string, opts: DashboardOptions = {}): { app: Hono; close(): Promise<void> } {
  const basePath = opts.basePath ?? "/queues";
  const q = openQueues(redisUrl);
  const serverAdapter = new HonoAdapter(serveStatic).setBasePath(basePath);
  createBullBoard({
    queues: (Object.keys(QUEUES) as QueueKey[]).map(
      (k) => new BullMQAdapter(q.queues[k], { readOnlyMode: opts.readOnly ?? false }),
    ),
    serverAdapter,
    options: { uiConfig: { boardTitle: "Vault jobs" } },
  });
  const app = new Hono();
  if (opts.password) app.use("*", basicAuth({ username: "operator", password: opts.password }));
  app.get("/", (c) => c.redirect(basePath));
  app.route(basePath, serverAdapter.registerPlugin());
  return { app, close: () => q.close() };
}

const LOOPBACK = /^(127\.\d+\.\d+\.\d+|::1|localhost)$/;

const envSchema = z
  .object({
    REDIS_URL: z
      .string()
      .regex(/^rediss?:\/\//, "must be a redis:// or rediss:// URL")
      .optional(),
    QUEUES_DASHBOARD_HOST: z.string().min(1).default("127.0.0.1"),
    QUEUES_DASHBOARD_PORT: envNum((n) => n.int().min(1).max(65535)).default(8090),
    QUEUES_DASHBOARD_PASSWORD: z.string().min(12, "must be at least 12 characters").optional(),
    QUEUES_DASHBOARD_READ_ONLY: z.enum(["0", "1", "true", "false"]).default("0"),
  })
  .refine((e) => LOOPBACK.test(e.QUEUES_DASHBOARD_HOST) || e.QUEUES_DASHBOARD_PASSWORD != null, {
    message: "a host other than loopback needs QUEUES_DASHBOARD_PASSWORD (the board can retry and remove jobs)",
    path: ["QUEUES_DASHBOARD_HOST"],
  });

export interface DashboardConfig {
  redisUrl: string | undefined;
  host: string;
  port: number;
  password: string | undefined;
  readOnly: boolean;
}

/** The dashboard command's settings; throws one readable error listing every bad variable. */
export function dashboardConfig(env: NodeJS.ProcessEnv = process.env): DashboardConfig {
  const e = parseEnv(envSchema, env, "queues dashboard configuration");
  return {
    redisUrl: e.REDIS_URL,
    host: e.QUEUES_DASHBOARD_HOST,
    port: e.QUEUES_DASHBOARD_PORT,
    password: e.QUEUES_DASHBOARD_PASSWORD,
    readOnly: e.QUEUES_DASHBOARD_READ_ONLY === "1" || e.QUEUES_DASHBOARD_READ_ONLY === "true",
  };
}
