import type { Surfaces } from "../index.js";
import { streakClaim, streakClaimHandler } from "./daily-streak-claim.js";
import {
  leaderboardHandler,
  platformPointsHandler,
  publicPointsHandler,
  streakStatusHandler,
} from "./points.handlers.js";
import { leaderboard, platformPoints, publicPoints, streakStatus } from "./points.routes.js";
import { register, registerHandler } from "./register.js";

/**
 * Points: the public record (/v1/points/{user_address}) and the institutional routes (key
 * required). The static paths are registered before /platform/points/{user_address}, which
 * would otherwise take `leaderboard` for an address.
 */
export function registerPoints({ pub, inst }: Surfaces): void {
  pub.openapi(publicPoints, publicPointsHandler);
  inst.openapi(leaderboard, leaderboardHandler);
  inst.openapi(streakStatus, streakStatusHandler);
  inst.openapi(register, registerHandler);
  inst.openapi(streakClaim, streakClaimHandler);
  inst.openapi(platformPoints, platformPointsHandler);
}
