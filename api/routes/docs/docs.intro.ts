/**
 * The introduction of each OpenAPI document (`info.description`, markdown), which the reference
 * pages show above the operations: what the figures mean, how keys and rate limits work, which
 * chain a route serves, and what an error looks like. It is built from the running
 * configuration, so it states what this deployment enforces.
 */

export interface IntroConfig {
  /** RATE_LIMIT_PER_MINUTE */
  rateLimitPerMinute: number;
  /** API_READS_REQUIRE_KEY=1: every read of the institutional surface needs a key too */
  readsRequireKey?: boolean;
}

export type Surface = "public" | "institutional";

const FIGURES = `## Figures

APYs, returns and other rates are **fractions**, not percentages: \`0.05\` means 5\u00a0%, \`-0.012\` means
−1.2\u00a0%.`;

/** The routes the interface marks with a key requirement (its Authentication section). */
const MARKED = `the subaccount list, health factor, summary and swaps, every pool and lending-market operation,
both relayer deposits and strategy APY create`;

function keys(surface: Surface, readsRequireKey: boolean): string {
  const checked = `A key that is sent is always checked: a wrong or revoked one is refused with **403**, so a
misconfigured integration learns it early, and the key's own rate limit applies (below).`;
  if (surface === "public") {
    return `## API keys

This surface needs no credentials. ${checked}`;
  }
  const reads = readsRequireKey
    ? `This deployment also requires a key on **every other read** of this surface (the operator set
\`API_READS_REQUIRE_KEY=1\`): without one such a read answers **401**. \`/ping\`, the strategy APY
reads, the strategist list, the loan books, \`/revert_reason\`, the lending-vault APY and the relayers'
status checks stay open, as the interface leaves them.`
    : `Every other read answers without a key. An operator can require a key on every read of this
surface with the setting \`API_READS_REQUIRE_KEY=1\`.`;
  return `## API keys

Send your key in the \`x-api-key\` header. Keys are issued per integration by the operator.

- **Required** (401 without one) on the routes the interface marks: ${MARKED}; and on every write,
  where the key must also hold the scope the operation names (403 \`insufficient_scope\` otherwise).
  The transaction builders (swaps, pool, lending-market and relayer deposits) need the scope
  \`transactions:build\`.
  Strategy APY create also accepts an operator's bearer token from \`POST /api/v1/token\`.
- ${reads}
- ${checked}

Each operation's security requirement in this document is the one the service enforces.`;
}

function rateLimits(perMinute: number): string {
  return (
    `## Rate limits

Each API key may make **${perMinute} requests per minute** (\`RATE_LIMIT_PER_MINUTE\`); requests without a
key, or with a key that is not valid, count against the client address instead. ` +
    `Both surfaces count against the same limit. Every answer
reports the state, so a client can throttle itself:

| header | meaning |
|---|---|
| \`RateLimit-Policy\` | the quota and window, e.g. \`${perMinute};w=60\` |
| \`RateLimit-Limit\` | requests per window |
| \`RateLimit-Remaining\` | requests left in the current window |
| \`RateLimit-Reset\` | seconds until the window resets |

Past the limit the answer is **429** with a \`Retry-After\` header (seconds) and a \`{"detail": "..."}\` body.

A request body is at most **1 MiB**; a larger one is answered **413** (\`{"detail": "..."}\`) before it is read.
JSON nested deeper than 64 levels is a **422**.`
  );
}

const CHAINS = `## Chains

Vaults are addressed by contract address, and the same address can hold a vault on several chains.
A route about one vault takes the chain parameter the interface names for it: the query parameter
\`chain_id\` (also accepted as \`chain\`), or the \`{chain}\` path segment of the withdrawal queue.
Without it, the route serves the vault on the **lowest chain id** the vault is on. Every such answer
says which chain it served: in the \`X-Vault-Chain\` header, and in its body's chain field (\`chain\`
or \`chain_id\`, as the shape names it). The two spellings given with different values answer 422; a
query parameter the route does not know is ignored, as on every route, and one given twice is its
last value (as FastAPI reads a single-valued parameter). A list that holds records of
several vaults names each record's chain.`;

const ERRORS = `## Errors

A malformed request (a missing parameter, a wrong type, a value outside its range or
enumeration) answers **422** with one entry per problem:

\`\`\`json
{"detail": [{"loc": ["query", "n_days"], "msg": "Input should be greater than or equal to 1",
             "type": "greater_than_equal"}]}
\`\`\`

Other refusals (401, 403, 404, 429, 503) answer \`{"detail": "<message>"}\`.`;

const OPENING: Record<Surface, string> = {
  public: `The public read surface of the vault yield service: vault listings, APYs, user points and a health check.
All bodies are JSON.`,
  institutional: `The institutional surface of the vault yield service: vault analytics, governance, points,
redemptions and withdrawals, and the write routes of the points programme, rewards and strategy APY
snapshots. All bodies are JSON.`,
};

/** The markdown introduction of one surface's document, for this configuration. */
export function introduction(surface: Surface, config: IntroConfig): string {
  return [
    OPENING[surface],
    FIGURES,
    keys(surface, config.readsRequireKey ?? false),
    rateLimits(config.rateLimitPerMinute),
    CHAINS,
    ERRORS,
  ].join("\n\n");
}
