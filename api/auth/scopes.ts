/**
 * Scopes a key or an operator account may hold; each write route requires one. Reads need none.
 * Set when the key or account is created (`npm run keys -- create <name> --scope …`,
 * `npm run operators -- create <username> --scope …`).
 */
export const SCOPES = {
  "points:write":
    "register wallets for points and claim daily streaks (POST /platform/points/register, " +
    "/platform/points/daily_streak/claim)",
  "rewards:write": "create, update and delete vault rewards (POST/DELETE /tokenized_vault/rewards)",
  "strategy_apy:write": "store strategy APY snapshots (POST /platform/strategy_apy)",
  "transactions:build":
    "build and simulate subaccount transactions (POST /subaccounts/{address}/swaps, /integrations/dex_pool/…, " +
    "/integrations/lending_market/…, /integrations/perp_relayer_{a,b}/deposit); the service never submits them",
} as const;

export type Scope = keyof typeof SCOPES;
export const SCOPE_NAMES = Object.keys(SCOPES) as Scope[];

export function isScope(s: string): s is Scope {
  return Object.hasOwn(SCOPES, s);
}
