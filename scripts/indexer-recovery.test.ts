/**
 * RecoveryProgress: after Ponder's crash recovery, a chain is at its head only once Ponder has
 * indexed live up to it again (its checkpoint table says so from the start). Lines as Ponder's
 * pretty log writes them, colour codes included.
 */
import { describe, expect, it } from "vitest";
import { RecoveryProgress } from "./lib/indexer.js";

const E = "\x1b";
const line = (msg: string, fields: string) =>
  `[indexer] ${E}[2m13:11:16.199${E}[22m ${E}[32mINFO ${E}[39m ${E}[0m${msg}${E}[0m${E}[2m ${fields}${E}[22m`;

describe("RecoveryProgress: Ponder re-indexing after its crash recovery", () => {
  it("holds a recovered chain until an Indexed block line reaches the head", () => {
    const r = new RecoveryProgress();
    r.read(line("Detected crash recovery", "build_id=5bcc5c784a last_active=25ss schema=app_x"));
    expect(r.caughtUp("polygon", 133)).toBe(false); // reverted, not yet live
    r.read(line("Started live indexing", "chain=polygon finalized_block=0 factory_address_count=0"));
    r.read(line("Indexed block", "chain=polygon number=1 event_count=0"));
    expect(r.caughtUp("polygon", 133)).toBe(false);
    r.read(line("Indexed block", "chain=base number=200 event_count=0"));
    expect(r.caughtUp("polygon", 133)).toBe(false); // another chain's block
    r.read(line("Indexed block", "chain=polygon number=133 event_count=6"));
    expect(r.caughtUp("polygon", 133)).toBe(true);
    expect(r.caughtUp("polygon", 134)).toBe(false);
  });

  it("is at the head at once where nothing was unfinalized, or nothing was recovered", () => {
    const r = new RecoveryProgress();
    r.read(line("Started live indexing", "chain=polygon finalized_block=0 factory_address_count=0"));
    expect(r.caughtUp("polygon", 133)).toBe(true); // a fresh start: the checkpoint is the truth
    r.read(line("Detected crash recovery", "build_id=5bcc5c784a"));
    r.read(line("Started live indexing", "chain=mainnet finalized_block=500 factory_address_count=0"));
    expect(r.caughtUp("mainnet", 500)).toBe(true);
  });
});
