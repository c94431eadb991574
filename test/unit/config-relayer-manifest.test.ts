/** The relayer's devnet manifest (DEVNET_MANIFEST): a file that is not one is refused in one line. */
import { mkdtempSync, rmSync, writeFileSync } from "node:fs";
import { tmpdir } from "node:os";
import { join } from "node:path";
import { afterAll, describe, expect, it } from "vitest";
import { relayerConfig } from "../../jobs/relayer/config.js";

const dir = mkdtempSync(join(tmpdir(), "relayer-manifest-"));
afterAll(() => rmSync(dir, { recursive: true, force: true }));

const A = `0x${"aa".repeat(20)}`;
const B = `0x${"bb".repeat(20)}`;
const LEDGER = `0x${"cc".repeat(20)}`;

const chain = (chainId: number, perp: unknown, core: unknown = null) => ({
  chainId,
  world: { protocols: { perp, core } },
});

function manifest(name: string, body: unknown): string {
  const file = join(dir, name);
  writeFileSync(file, typeof body === "string" ? body : JSON.stringify(body));
  return file;
}

/** relayerConfig on the manifest alone (no PERP_* settings): its message, or "" when accepted. */
function refusal(file: string): string {
  try {
    relayerConfig({ DEVNET_MANIFEST: file, PONDER_RPC_URL_1: "http://a:1", PONDER_RPC_URL_8453: "http://a:2" });
    return "";
  } catch (err) {
    return (err as Error).message;
  }
}

describe("DEVNET_MANIFEST", () => {
  it("reads a devnet manifest: the core ledger, each chain's bridges and the seed's key", () => {
    const file = manifest("ok.json", {
      seed: "demo",
      days: 125,
      chains: [
        chain(1, { bridgeA: A, bridgeB: B }, { ledger: LEDGER, chainId: 1 }),
        chain(8453, { bridgeA: B, bridgeB: A }),
      ],
    });
    const c = relayerConfig({
      DEVNET_MANIFEST: file,
      PONDER_RPC_URL_1: "http://a:1",
      PONDER_RPC_URL_8453: "http://a:2",
    });
    // a devnet's anvil mines only on a transaction: no blocks to wait for by default
    expect(c).toMatchObject({ coreChainId: 1, source: `devnet manifest ${file}`, confirmations: 0 });
    expect(c.ledger.toLowerCase()).toBe(LEDGER);
    expect(c.chains.map((x) => [x.chainId, x.bridges.map((b) => b.toLowerCase())])).toEqual([
      [1, [A, B]],
      [8453, [B, A]],
    ]);
  });

  it("a file that is not a manifest, or holds a bad address, is one line naming the setting and the file", () => {
    const cases: [string, unknown, RegExp][] = [
      ["empty.json", {}, /seed: .*; chains: /],
      ["array.json", [], /\(the file\): /],
      ["no-chains.json", { seed: "demo", chains: "x" }, /chains: /],
      [
        "bad-bridge.json",
        { seed: "demo", chains: [chain(1, { bridgeA: "0xnope", bridgeB: B }, { ledger: LEDGER, chainId: 1 })] },
        /chains\.0\.world\.protocols\.perp\.bridgeA: not a 0x address/,
      ],
      [
        "bad-ledger.json",
        { seed: "demo", chains: [chain(1, { bridgeA: A, bridgeB: B }, { ledger: "0x12", chainId: 1 })] },
        /chains\.0\.world\.protocols\.core\.ledger: not a 0x address/,
      ],
    ];
    for (const [name, body, why] of cases) {
      const file = manifest(name, body);
      const msg = refusal(file);
      const [head, line, ...rest] = msg.split("\n");
      expect(head, name).toBe("invalid relayer configuration:");
      expect(line, name).toMatch(
        new RegExp(`^ {2}DEVNET_MANIFEST: ${file.replace(/[.]/g, "\\.")}: not a devnet manifest`),
      );
      expect(line, name).toMatch(why);
      expect(rest, name).toEqual([]);
    }
  });

  it("a file that is not JSON: one line too", () => {
    const file = manifest("broken.json", "{ nope");
    expect(refusal(file)).toMatch(
      new RegExp(`^invalid relayer configuration:\\n {2}DEVNET_MANIFEST: ${file}: [^\\n]+$`),
    );
  });
});
