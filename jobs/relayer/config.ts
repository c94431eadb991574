/**
 * The perp relayer's settings, from the environment, parsed and checked once at start-up.
 *
 * What to relay (the core ledger and each chain's bridges) comes from `PERP_CORE_LEDGER` and
 * `PERP_BRIDGES_<chainId>` when set, else from the devnet's manifest (`DEVNET_MANIFEST`, default
 * `.data/demo/manifest.json`), which also gives the devnet's relayer key when `RELAYER_PRIVATE_KEY`
 * is unset. Every chain needs `PONDER_RPC_URL_<chainId>` (the first URL of the list is used).
 * `RELAYER_CONFIRMATIONS` (blocks on top of a deposit's before it is relayed) defaults to 12, or
 * to 0 when the devnet's manifest is read.
 */
import { existsSync, readFileSync } from "node:fs";
import { resolve } from "node:path";
import { type Address, getAddress, type Hex, isAddress } from "viem";
import { z } from "zod";
import { isEvmChain } from "../../config/chains.js";
import { envNum, envRedisUrl, parseEnv } from "../../config/env.js";
import { primaryUrls, rpcUrlsFromEnv } from "../../config/rpc-urls.js";
import { actorKey } from "../../contracts/devnet/random.js";

export const DEFAULT_DEVNET_MANIFEST = ".data/demo/manifest.json";
/** RELAYER_CONFIRMATIONS when the bridges come from the environment (0 from a devnet manifest) */
export const DEFAULT_CONFIRMATIONS = 12;

const hexKey = z.string().regex(/^0x[0-9a-fA-F]{64}$/, "must be a 0x-prefixed 32-byte hex private key");
const address = z.string().refine((a) => isAddress(a, { strict: false }), "must be a 0x address");

const schema = z.object({
  RELAYER_PRIVATE_KEY: hexKey.optional(),
  CORE_CHAIN_ID: envNum((n) => n.int().positive()).optional(),
  PERP_CORE_LEDGER: address.optional(),
  RELAYER_DELAY_S: envNum((n) =>
    n
      .int()
      .min(0)
      .max(7 * 86_400),
  ).default(30),
  RELAYER_CONFIRMATIONS: envNum((n) => n.int().min(0).max(10_000)).optional(),
  RELAYER_POLL_MS: envNum((n) => n.int().min(200).max(600_000)).default(2000),
  RELAYER_ATTEMPTS: envNum((n) => n.int().min(1).max(100)).default(5),
  RELAYER_METRICS_PORT: envNum((n) => n.int().min(0).max(65535)).default(9465),
  RELAYER_METRICS_HOST: z.string().min(1).default("127.0.0.1"),
  REDIS_URL: envRedisUrl,
  DEVNET_MANIFEST: z.string().optional(),
});

export interface RelayerChain {
  chainId: number;
  rpcUrl: string;
  /** the bridges whose deposits are relayed (none on a chain that is only the core) */
  bridges: Address[];
}

export interface RelayerConfig {
  privateKey: Hex;
  coreChainId: number;
  ledger: Address;
  /** the core chain and every bridge chain */
  chains: RelayerChain[];
  delaySeconds: number;
  /** blocks on top of a deposit's before it is relayed (RELAYER_CONFIRMATIONS) */
  confirmations: number;
  pollMs: number;
  attempts: number;
  /** where `npm run relayer` serves its Prometheus metrics; port 0: nowhere */
  metrics: { port: number; host: string };
  redisUrl: string | undefined;
  /** where the addresses came from, for the start-up line */
  source: string;
  /** chain id -> all its URLs, in order: a call to the first fails over to the others */
  rpcUrlLists: Map<number, string[]>;
}

const manifestAddress = z.string().refine((a) => isAddress(a, { strict: false }), "not a 0x address");

/** What the relayer needs of a devnet manifest (contracts/devnet: `Manifest`). */
const manifestSchema = z.object({
  seed: z.string().min(1),
  chains: z.array(
    z.object({
      chainId: z.number().int().positive(),
      world: z
        .object({
          protocols: z
            .object({
              perp: z.object({ bridgeA: manifestAddress, bridgeB: manifestAddress }).optional(),
              core: z.object({ ledger: manifestAddress, chainId: z.number().int().positive() }).nullish(),
            })
            .optional(),
        })
        .optional(),
    }),
  ),
});

/** The manifest at `path`; throws one readable line naming DEVNET_MANIFEST and the file. */
function readManifest(path: string): z.output<typeof manifestSchema> {
  const bad = (why: string) => new Error(`invalid relayer configuration:\n  DEVNET_MANIFEST: ${path}: ${why}`);
  if (!existsSync(path)) {
    throw new Error(
      `invalid relayer configuration:\n  DEVNET_MANIFEST: ${path} not found ` +
        '(run "npm run demo", or set PERP_CORE_LEDGER, PERP_BRIDGES_<chainId> and RELAYER_PRIVATE_KEY)',
    );
  }
  let raw: unknown;
  try {
    raw = JSON.parse(readFileSync(path, "utf8"));
  } catch (err) {
    throw bad((err as Error).message);
  }
  const parsed = manifestSchema.safeParse(raw);
  if (!parsed.success) {
    const issues = parsed.error.issues.slice(0, 3).map((i) => `${i.path.join(".") || "(the file)"}: ${i.message}`);
    throw bad(`not a devnet manifest (${issues.join("; ")}${parsed.error.issues.length > 3 ? "; ..." : ""})`);
  }
  return parsed.data;
}

/** The devnet's relayer key for a seed (contracts/devnet/world.ts `relayerKey`). */
export function devnetRelayerKey(seed: string): Hex {
  return actorKey(seed, "relayer");
}

/** Throws one readable error listing every bad variable. */
export function relayerConfig(env: NodeJS.ProcessEnv = process.env, cwd = process.cwd()): RelayerConfig {
  const rpc = rpcUrlsFromEnv(env);
  const e = parseEnv(schema, env, "relayer configuration", rpc.problems);
  const problems: string[] = [];
  const rpcUrls = primaryUrls(rpc);
  const bridges = new Map<number, Address[]>();
  for (const [k, v] of Object.entries(env)) {
    const br = /^PERP_BRIDGES_(\d+)$/.exec(k);
    if (br && v) {
      const list = v
        .split(",")
        .map((x) => x.trim())
        .filter(Boolean);
      const bad = list.filter((a) => !isAddress(a, { strict: false }));
      if (bad.length > 0) problems.push(`${k}: not addresses: ${bad.join(", ")}`);
      else
        bridges.set(
          Number(br[1]),
          list.map((a) => getAddress(a)),
        );
    }
  }
  let ledger = e.PERP_CORE_LEDGER ? getAddress(e.PERP_CORE_LEDGER) : undefined;
  let coreChainId = e.CORE_CHAIN_ID;
  let privateKey = e.RELAYER_PRIVATE_KEY as Hex | undefined;
  let source = "environment";
  if (!ledger || bridges.size === 0 || !privateKey) {
    const path = resolve(cwd, e.DEVNET_MANIFEST ?? DEFAULT_DEVNET_MANIFEST);
    const m = readManifest(path);
    source = `devnet manifest ${path}`;
    const core = m.chains.map((c) => c.world?.protocols?.core).find((c) => c != null);
    if (!ledger && core) ledger = getAddress(core.ledger);
    if (coreChainId === undefined && core) coreChainId = core.chainId;
    if (bridges.size === 0) {
      for (const c of m.chains) {
        const p = c.world?.protocols?.perp;
        if (p) bridges.set(c.chainId, [getAddress(p.bridgeA), getAddress(p.bridgeB)]);
      }
    }
    privateKey ??= devnetRelayerKey(m.seed);
  }
  if (!ledger) problems.push("PERP_CORE_LEDGER: not set, and the manifest has no core ledger");
  if (coreChainId === undefined) problems.push("CORE_CHAIN_ID: not set, and the manifest has no core ledger");
  if (bridges.size === 0) problems.push("PERP_BRIDGES_<chainId>: no bridges to relay");
  // a chain outside the catalogue is a typo, not a chain without an RPC
  const unknown = (id: number) => !isEvmChain(id);
  if (coreChainId !== undefined && unknown(coreChainId)) {
    problems.push(`CORE_CHAIN_ID: ${coreChainId} is not an EVM chain of the catalogue (config/chains.ts)`);
  }
  for (const id of bridges.keys()) {
    if (unknown(id)) problems.push(`PERP_BRIDGES_${id}: ${id} is not an EVM chain of the catalogue (config/chains.ts)`);
  }
  const ids = [...new Set([...(coreChainId !== undefined ? [coreChainId] : []), ...bridges.keys()])].sort(
    (a, b) => a - b,
  );
  for (const id of ids) {
    if (!unknown(id) && !rpcUrls.get(id)) problems.push(`PONDER_RPC_URL_${id}: required (chain ${id})`);
  }
  if (problems.length > 0 || !ledger || coreChainId === undefined || !privateKey) {
    throw new Error(`invalid relayer configuration:\n  ${problems.join("\n  ")}`);
  }
  return {
    privateKey,
    coreChainId,
    ledger,
    chains: ids.map((chainId) => ({
      chainId,
      rpcUrl: rpcUrls.get(chainId) as string,
      bridges: bridges.get(chainId) ?? [],
    })),
    delaySeconds: e.RELAYER_DELAY_S,
    // a real chain may reorg its last blocks; a devnet's anvil mines only on a transaction, so a
    // wait for blocks would hold its deposits until the next one
    confirmations: e.RELAYER_CONFIRMATIONS ?? (source === "environment" ? DEFAULT_CONFIRMATIONS : 0),
    pollMs: e.RELAYER_POLL_MS,
    attempts: e.RELAYER_ATTEMPTS,
    metrics: { port: e.RELAYER_METRICS_PORT, host: e.RELAYER_METRICS_HOST },
    redisUrl: e.REDIS_URL,
    rpcUrlLists: rpc.urls,
    source,
  };
}
