import type { Surfaces } from "../index.js";
import { deleteReward, deleteRewardHandler, upsertReward, upsertRewardHandler } from "./rewards.js";
import {
  apyInstHandler,
  apyPublicHandler,
  listInstHandler,
  listPublicHandler,
  portfolioInstHandler,
  readInstHandler,
  readPublicHandler,
  summaryInstHandler,
  timeseriesInstHandler,
} from "./tokenized_vault.handlers.js";
import {
  apyInst,
  apyPublic,
  listInst,
  listPublic,
  portfolioInst,
  readInst,
  readPublic,
  summaryInst,
  timeseriesInst,
} from "./tokenized_vault.routes.js";

export function registerTokenizedVault({ pub, inst }: Surfaces): void {
  pub.openapi(listPublic, listPublicHandler);
  pub.openapi(readPublic, readPublicHandler);
  pub.openapi(apyPublic, apyPublicHandler);
  inst.openapi(listInst, listInstHandler);
  inst.openapi(upsertReward, upsertRewardHandler);
  inst.openapi(deleteReward, deleteRewardHandler);
  // the static second segments before the `{vault_address}` routes
  inst.openapi(apyInst, apyInstHandler);
  inst.openapi(summaryInst, summaryInstHandler);
  inst.openapi(readInst, readInstHandler);
  inst.openapi(timeseriesInst, timeseriesInstHandler);
  inst.openapi(portfolioInst, portfolioInstHandler);
}
