/** Interval snapshots: every SNAPSHOT_INTERVAL_<chainId> blocks, each vault deployed by then. */
import { ponder } from "ponder:registry";
import { snapshot } from "./common";
import { vaultsOnChain } from "./registry";

ponder.on("VaultSnapshot:block", async ({ event, context }) => {
  for (const v of vaultsOnChain(context.chain.id)) {
    if (BigInt(v.startBlock) > event.block.number) continue;
    await snapshot(context, v, `${event.id}:${v.address}`, "interval", event.block, null);
  }
});
