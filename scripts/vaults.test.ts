/**
 * `npm run vaults`: the deployment-block search, the ERC-4626 consistency rule, and the command
 * itself against a fresh anvil chain holding a LendingPool, a TokenizedVaultV2, a plain
 * OpenZeppelin ERC-4626 vault and a token that is no vault: what `add` writes, `list`, `remove`,
 * and every refusal (readable message, non-zero exit, the file untouched).
 */
import { execFile } from "node:child_process";
import { existsSync, mkdirSync, readFileSync, rmSync, utimesSync, writeFileSync } from "node:fs";
import { join } from "node:path";
import { createPublicClient, http } from "viem";
import { afterAll, beforeAll, describe, expect, it } from "vitest";
import { loadRegistry } from "../config/registry.js";
import { firstBlockWhere } from "../src/module-logs.js";
import { PORT_OFFSET } from "../test/helpers.js";
import { deployVaultWorld, type VaultWorld } from "../test/vault-world.js";
import { startAnvil } from "./lib/anvil.js";
import { REPO_ROOT } from "./lib/indexer.js";
import { stopAll } from "./lib/procs.js";
import { consistent } from "./lib/vault-probe.js";

const tsx = join(REPO_ROOT, "node_modules", ".bin", "tsx");
const CHAIN = 10; // a catalogue chain no other test uses

describe("deployment block: binary search on a monotone predicate", () => {
  it("finds the first block for every deployment block up to every head, in about log2(head) reads", async () => {
    for (const head of [0, 1, 2, 3, 7, 8, 100, 1023, 1024]) {
      for (let deployed = 0; deployed <= head; deployed += head > 100 ? 97 : 1) {
        let reads = 0;
        const found = await firstBlockWhere(BigInt(head), async (b) => {
          reads++;
          return b >= BigInt(deployed);
        });
        expect(found, `head ${head} deployed ${deployed}`).toBe(BigInt(deployed));
        expect(reads).toBeLessThanOrEqual(Math.ceil(Math.log2(head + 1)) + 1);
      }
    }
    // a real chain's head: 20 M blocks in 25 reads
    let reads = 0;
    const atOrAfter = async (b: bigint) => {
      reads++;
      return b >= 12_345_678n;
    };
    expect(await firstBlockWhere(20_000_000n, atOrAfter)).toBe(12_345_678n);
    expect(reads).toBeLessThanOrEqual(25);
    // from a later block on (a module's logs: from the Safe's creation), never below it
    reads = 0;
    expect(await firstBlockWhere(20_000_000n, atOrAfter, 12_000_000n)).toBe(12_345_678n);
    expect(reads).toBeLessThanOrEqual(24);
    expect(await firstBlockWhere(20_000_000n, async () => true, 19_000_000n)).toBe(19_000_000n);
  });

  it("ERC-4626 views agree when the supply at the quoted price is the total assets", () => {
    const v = (totalAssets: bigint, totalSupply: bigint, oneShare: bigint) => ({
      totalAssets,
      totalSupply,
      oneShare,
      decimals: 6,
    });
    expect(consistent(v(0n, 0n, 1_000_000n))).toBe(true); // empty vault quoting 1:1
    expect(consistent(v(0n, 0n, 0n))).toBe(false); // a share worth nothing
    expect(consistent(v(2_000_000n, 1_000_000n, 2_000_000n))).toBe(true);
    expect(consistent(v(2_000_000n, 1_000_000n, 1_999_999n))).toBe(true); // rounding
    expect(consistent(v(2_000_000_000n, 1_000_000_000n, 1_000_000n))).toBe(false); // half the assets missing
    expect(consistent(v(5n, 1_000_000n, 0n))).toBe(false);
  });
});

function run(args: string[], env: Record<string, string | undefined>) {
  return new Promise<{ code: number | null; stdout: string; stderr: string }>((resolve) => {
    const full: NodeJS.ProcessEnv = { ...process.env };
    delete full.DATABASE_URL; // only when a test gives it
    Object.assign(full, env);
    for (const [k, v] of Object.entries(env)) if (v === undefined) delete full[k];
    const opts = { cwd: REPO_ROOT, env: full, encoding: "utf8", timeout: 90_000 } as const;
    execFile(tsx, [join(REPO_ROOT, "scripts", "vaults.ts"), ...args], opts, (err, stdout, stderr) => {
      resolve({ code: err ? (typeof err.code === "number" ? err.code : null) : 0, stdout, stderr });
    });
  });
}

describe("npm run vaults on a fresh chain", { timeout: 180_000 }, () => {
  const dir = join(REPO_ROOT, ".data", `vaults-cli-${PORT_OFFSET}`);
  const file = join(dir, "vaults.json");
  let w: VaultWorld;
  let env: Record<string, string | undefined>;
  // an entry of another chain, kept exactly as it is by every change
  const other = {
    chainId: 8453,
    address: "0x1111111111111111111111111111111111111111",
    family: "lendingPool",
    kind: "stablecoin",
    name: "Someone Else's Pool",
    symbol: "sep",
    startBlock: 7,
    asset: { address: "0x2222222222222222222222222222222222222222", symbol: "USDC", decimals: 6 },
    metadata: { note: "kept as written" },
  };

  beforeAll(async () => {
    rmSync(dir, { recursive: true, force: true });
    mkdirSync(dir, { recursive: true });
    const anvil = await startAnvil({ chainId: CHAIN, port: 19_545 + PORT_OFFSET, logFile: join(dir, "anvil.log") });
    w = await deployVaultWorld(CHAIN, anvil.rpcUrl);
    env = { VAULT_REGISTRY: file, [`PONDER_RPC_URL_${CHAIN}`]: `${anvil.rpcUrl},http://127.0.0.1:9` };
    writeFileSync(file, JSON.stringify({ version: 1, vaults: [other], protocols: [] }, null, 2));
  }, 300_000);
  afterAll(() => stopAll());

  const add = (address: string, extra: string[] = [], e = env) =>
    run(["add", "--chain", String(CHAIN), "--address", address, ...extra], e);
  const entries = () => (JSON.parse(readFileSync(file, "utf8")) as { vaults: Record<string, unknown>[] }).vaults;

  it("add recognises a LendingPool and writes what the chain says, from its deployment block", async () => {
    const r = await add(w.lendingPool.address);
    expect(r.stderr).toBe("");
    expect(r.code).toBe(0);
    expect(r.stdout).toContain(`added lendingPool "Fresh Lending Pool" (fLP), asset tUSD ${w.lendingPool.address}`);
    const client = createPublicClient({ transport: http(w.rpcUrl) });
    const block = await client.getBlock({ blockNumber: BigInt(w.lendingPool.block) });
    expect(entries()[1]).toEqual({
      chainId: CHAIN,
      address: w.lendingPool.address,
      family: "lendingPool",
      kind: "lendingPool",
      name: "Fresh Lending Pool",
      symbol: "fLP",
      status: "active",
      startBlock: w.lendingPool.block,
      startTimestamp: Number(block.timestamp),
      asset: { address: w.asset, symbol: "tUSD", decimals: 6 },
      operator: w.deployer,
      feeCollector: w.deployer,
      timelock: w.lendingPool.timelock,
      timelockStartBlock: w.lendingPool.timelockBlock,
      subaccounts: [],
      subaccountSettings: {},
      metadata: {},
    });
    expect(entries()[0]).toEqual(other);
  });

  it("add recognises a TokenizedVaultV2 (its receipt token) and a plain ERC-4626 vault", async () => {
    // the chain's first URL dead this time: the probe goes on to the next
    const deadFirst = { ...env, [`PONDER_RPC_URL_${CHAIN}`]: `http://127.0.0.1:9,${w.rpcUrl}` };
    const v2 = await add(w.vaultV2.address.toUpperCase().replace("0X", "0x"), ["--kind", "tokenized_eth"], deadFirst);
    expect(v2.code, v2.stderr).toBe(0);
    const e4626 = await add(w.erc4626.address, ["--name", "My First Real Vault"]);
    expect(e4626.code, e4626.stderr).toBe(0);
    const [, , v2Entry, plainEntry] = entries();
    expect(v2Entry).toMatchObject({
      address: w.vaultV2.address,
      family: "tokenizedVaultV2",
      kind: "tokenized_eth",
      name: "Fresh Vault V2",
      symbol: "fV2",
      startBlock: w.vaultV2.block,
      receiptToken: w.vaultV2.receiptToken,
      asset: { address: w.asset, symbol: "tUSD", decimals: 6 },
    });
    expect(plainEntry).toMatchObject({
      address: w.erc4626.address,
      family: "erc4626",
      kind: "erc4626",
      name: "My First Real Vault",
      symbol: "pYV",
      startBlock: w.erc4626.block,
      asset: { address: w.asset, symbol: "tUSD", decimals: 6 },
    });
    expect(plainEntry).not.toHaveProperty("operator");
    expect(v2Entry).not.toHaveProperty("timelock"); // owned by an account, not a timelock
    // the file is a valid registry with every vault once
    expect(loadRegistry(file).evm.map((v) => v.address)).toEqual([
      other.address,
      w.lendingPool.address,
      w.vaultV2.address,
      w.erc4626.address,
    ]);
  });

  it("refuses, readably and changing nothing: duplicate, not a contract, not a vault, no RPC, bad input", async () => {
    const before = readFileSync(file);
    const nowhere = "0x000000000000000000000000000000000000dead";
    const cases: [Promise<{ code: number | null; stdout: string; stderr: string }>, number, RegExp][] = [
      [add(w.lendingPool.address.toUpperCase().replace("0X", "0x")), 1, /is already in .*Fresh Lending Pool/],
      [add(nowhere), 1, new RegExp(`${nowhere} is not a contract on chain ${CHAIN}`)],
      [add(w.token), 1, /not a vault: it does not answer asset\(\), totalAssets\(\)/],
      [
        run(["add", "--chain", "8453", "--address", w.erc4626.address], { ...env, PONDER_RPC_URL_8453: undefined }),
        2,
        /chain 8453 \(Base\) has no RPC here: set PONDER_RPC_URL_8453/,
      ],
      [
        run(["add", "--chain", "8453", "--address", w.erc4626.address], {
          ...env,
          PONDER_RPC_URL_8453: w.rpcUrl,
        }),
        1,
        new RegExp(`PONDER_RPC_URL_8453 \\(${w.rpcUrl}\\) serves chain ${CHAIN}, not 8453`),
      ],
      [
        run(["add", "--chain", "8453", "--address", w.erc4626.address], {
          ...env,
          PONDER_RPC_URL_8453: "http://127.0.0.1:9",
        }),
        1,
        /the RPC of chain 8453 \(http:\/\/127.0.0.1:9\) does not answer/,
      ],
      [add(nowhere, ["--start-block", "x"]), 2, /--start-block: "x" is not a block number/],
      [add("0x1234"), 2, /--address: "0x1234" is not a 0x-prefixed 20-byte hex address/],
      [run(["add", "--chain", "31338", "--address", nowhere], env), 2, /31338 is not a chain of the catalogue/],
      [run(["add", "--chain=-1", "--address", nowhere], env), 2, /-1 \(Solana\) is not an EVM chain/],
      [run(["add", "--chain", "ten", "--address", nowhere], env), 2, /--chain: "ten" is not a chain id/],
      [run(["add", "--address", nowhere], env), 2, /add needs --chain <id>/],
      [run(["frobnicate"], env), 2, /unknown command "frobnicate"/],
      [run(["list", "--chain", "10"], env), 2, /list takes no --chain/],
      [run(["remove", "--chain", "10", "--address", nowhere], env), 1, /no vault 0x0+dead on chain 10 in/],
    ];
    for (const [p, code, message] of cases) {
      const r = await p;
      expect(r.stderr, r.stdout).toMatch(message);
      expect(r.code, r.stderr).toBe(code);
      expect(r.stderr).toMatch(/^vaults: /);
      expect(r.stderr).not.toMatch(/\n\s+at /); // no stack trace
    }
    expect(readFileSync(file)).toEqual(before);
  });

  it("a registry file that is not there is refused (a mistyped path); --create starts one", async () => {
    const typo = join(dir, "nested", "vaults-typo.json");
    const r = await run(["add", "--chain", String(CHAIN), "--address", w.erc4626.address, "--registry", typo], env);
    expect(r.code, r.stderr).toBe(1);
    expect(r.stderr).toContain(`no registry file at ${typo}: check the path, or add --create`);
    expect(existsSync(typo)).toBe(false);
    const rm = await run(["remove", "--chain", String(CHAIN), "--address", w.erc4626.address, "--registry", typo], env);
    expect([rm.code, existsSync(typo)]).toEqual([1, false]);
    const made = await run(
      ["add", "--chain", String(CHAIN), "--address", w.erc4626.address, "--registry", typo, "--create"],
      env,
    );
    expect(made.code, made.stderr).toBe(0);
    expect((JSON.parse(readFileSync(typo, "utf8")) as { vaults: unknown[] }).vaults).toHaveLength(1);
  });

  it("a DATABASE_URL that is bad or answers nothing stops add, remove and list before any change", async () => {
    const before = readFileSync(file);
    const target = ["--chain", String(CHAIN), "--address", w.lendingPool.address];
    for (const [url, message] of [
      ["bogus", /DATABASE_URL must be a postgres:\/\/ URL/],
      [
        "postgresql://postgres:postgres@127.0.0.1:9/vaults",
        /the database \(DATABASE_URL\) is not usable: .*ECONNREFUSED/,
      ],
    ] as const) {
      for (const args of [["remove", ...target], ["list"]]) {
        const r = await run(args, { ...env, DATABASE_URL: url });
        expect(r.code, `${args[0]} ${url}: ${r.stdout}`).toBe(1);
        expect(r.stderr).toMatch(message);
        expect(r.stderr).not.toMatch(/\n\s+at /);
        if (args[0] === "remove") expect(r.stderr).toContain("nothing was changed");
      }
    }
    expect(readFileSync(file)).toEqual(before);
  });

  it("an invalid registry file is refused, not rewritten", async () => {
    const bad = join(dir, "bad.json");
    writeFileSync(bad, JSON.stringify({ version: 1, vaults: [{ chainId: 10, address: "nope" }] }));
    const r = await run(["add", "--chain", "10", "--address", w.erc4626.address, "--registry", bad], env);
    expect(r.code).toBe(1);
    expect(r.stderr).toMatch(/vault registry .*bad.json is invalid/);
    expect(r.stderr).toContain("nothing was changed");
    expect(readFileSync(bad, "utf8")).toBe(JSON.stringify({ version: 1, vaults: [{ chainId: 10, address: "nope" }] }));
  });

  it("concurrent adds and removes of one file keep every change; a duplicate race adds it once", async () => {
    const shared = join(dir, "concurrent.json");
    writeFileSync(shared, JSON.stringify({ version: 1, vaults: [other] }, null, 2));
    const on = (cmd: string, v: string) =>
      run([cmd, "--chain", String(CHAIN), "--address", v, "--registry", shared], env);
    const vaults = [w.lendingPool.address, w.vaultV2.address, w.erc4626.address];
    const added = await Promise.all(vaults.map((v) => on("add", v)));
    for (const r of added) expect(r.code, r.stderr).toBe(0);
    const inFile = () => loadRegistry(shared).evm.map((v) => v.address);
    expect(inFile().sort()).toEqual([other.address, ...vaults].sort());
    // two removes and a re-add at once: each change sees the one before it
    const mixed = await Promise.all([on("remove", vaults[0]!), on("remove", vaults[1]!), on("add", w.token)]);
    expect(mixed.map((r) => r.code)).toEqual([0, 0, 1]); // the token is no vault
    expect(inFile().sort()).toEqual([other.address, vaults[2]!].sort());
    // the same vault twice at once: one adds it, the other finds it there
    const twice = await Promise.all([on("add", vaults[0]!), on("add", vaults[0]!)]);
    expect(twice.map((r) => r.code).sort()).toEqual([0, 1]);
    expect(twice.find((r) => r.code === 1)!.stderr).toMatch(
      /is already in .*\(Fresh Lending Pool\); nothing was changed/,
    );
    expect(inFile().filter((a) => a === vaults[0])).toHaveLength(1);
    expect(existsSync(`${shared}.lock`)).toBe(false);
    // a lock left behind by a command that was killed is taken over once it is stale
    mkdirSync(`${shared}.lock`);
    const minuteAgo = new Date(Date.now() - 60_000);
    utimesSync(`${shared}.lock`, minuteAgo, minuteAgo);
    const after = await on("remove", vaults[0]!);
    expect(after.code, after.stderr).toBe(0);
    expect([inFile().includes(vaults[0]!), existsSync(`${shared}.lock`)]).toEqual([false, false]);
  });

  it("list shows every vault; remove takes one out and keeps the others as written", async () => {
    const l = await run(["list"], env);
    expect(l.code, l.stderr).toBe(0);
    const lines = l.stdout.trim().split("\n");
    expect(lines[0]).toBe("chain\taddress\tfamily\tkind\tstart_block\tname");
    expect(lines.slice(1)).toEqual([
      `8453\t${other.address}\tlendingPool\tstablecoin\t7\t${other.name}`,
      `${CHAIN}\t${w.lendingPool.address}\tlendingPool\tlendingPool\t${w.lendingPool.block}\tFresh Lending Pool`,
      `${CHAIN}\t${w.vaultV2.address}\ttokenizedVaultV2\ttokenized_eth\t${w.vaultV2.block}\tFresh Vault V2`,
      `${CHAIN}\t${w.erc4626.address}\terc4626\terc4626\t${w.erc4626.block}\tMy First Real Vault`,
    ]);
    // --registry relative to where the command is typed (npm's INIT_CWD), not the repository
    const relative = await run(["list", "--registry", "vaults.json"], { ...env, VAULT_REGISTRY: "", INIT_CWD: dir });
    expect(relative.stdout, relative.stderr).toBe(l.stdout);
    const r = await run(["remove", "--chain", String(CHAIN), "--address", w.vaultV2.address], env);
    expect(r.code, r.stderr).toBe(0);
    expect(r.stdout).toContain(`removed Fresh Vault V2 (tokenizedVaultV2) ${w.vaultV2.address} on chain ${CHAIN}`);
    expect(entries().map((v) => v.address)).toEqual([other.address, w.lendingPool.address, w.erc4626.address]);
    expect(entries()[0]).toEqual(other);
  });
});
