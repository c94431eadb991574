/** Interval snapshots: every SNAPSHOT_INTERVAL_<chainId> blocks, each vault deployed by then. */
import { ponder } from "ponder:registry";
import { readVaultState, snapshot } from "./common";
import { vaultsOnChain } from "./registry";

ponder.on("VaultSnapshot:block", async ({ event, context }) => {
  const due = vaultsOnChain(context.chain.id).filter((v) => BigInt(v.startBlock) <= event.block.number);
  // The vaults' reads run at once (one round trip instead of one per vault; during a backfill the
  // node is busy with Ponder's sync and each can take long); the rows are written in order as before.
  const states = due.map((v) => readVaultState(v, { blockNumber: event.block.number }));
  for (const p of states) p.catch(() => {}); // a failure is thrown by the await below, not left unhandled
  for (const [i, v] of due.entries()) {
    await snapshot(context, v, `${event.id}:${v.address}`, "interval", event.block, null, await states[i]!);
  }
});
